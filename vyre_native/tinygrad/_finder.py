"""The import hook behind vyre_native_tinygrad.pth: ``tinygrad.runtime.ops_vn`` is
``vyre_native.tinygrad.ops_vn``, one module under two names (never executed twice)."""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import Any

NAME = "tinygrad.runtime.ops_vn"
OURS = "vyre_native.tinygrad.ops_vn"


class _Alias:
    """A loader whose module is the already imported ``vyre_native.tinygrad.ops_vn``."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        importlib.import_module("vyre_native.tinygrad")  # registers and imports ops_vn
        module = importlib.import_module(OURS)
        self.own_spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # executed once, under its own name; importlib gave it this alias's spec: undo that
        module.__spec__ = self.own_spec


def find_spec(name: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
    if name != NAME:
        return None
    # Importing this module ran vyre_native.tinygrad's __init__, which registers NAME. A
    # NAME in sys.modules once a finder answers makes importlib load that module's own spec
    # again: a second ops_vn (VN:1 a VNDevice of the other copy, whose renderer tinygrad's
    # compile workers cannot pickle). Without the entry, importlib loads the alias below.
    if NAME in sys.modules and sys.modules[NAME] is sys.modules.get(OURS):
        del sys.modules[NAME]
    return importlib.util.spec_from_loader(name, _Alias())  # type: ignore[arg-type]
