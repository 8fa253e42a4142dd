"""Moved to tests/support/kernels.py; kept so that test files written against the old
name still import. New code imports from support.kernels."""

from support.kernels import ADD_IMMEDIATE, COUNTER, DOUBLE, SCALE

__all__ = ["ADD_IMMEDIATE", "COUNTER", "DOUBLE", "SCALE"]
