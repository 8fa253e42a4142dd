"""Moved to tests/support/ (child.py, errors.py); kept so that test files written
against the old names still import. New code imports from support."""

from support.child import PRELUDE, run_child
from support.errors import raised

__all__ = ["PRELUDE", "raised", "run_child"]
