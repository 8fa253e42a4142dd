"""The import hook behind vyre_native_tinygrad.pth: ``tinygrad.runtime.ops_vn`` is
``vyre_native.tinygrad.ops_vn``, one module under two names (never executed twice)."""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
from types import ModuleType
from typing import Any

NAME = "tinygrad.runtime.ops_vn"


class _Alias:
    """A loader whose module is the already imported ``vyre_native.tinygrad.ops_vn``."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        importlib.import_module("vyre_native.tinygrad")  # registers and imports ops_vn
        return importlib.import_module("vyre_native.tinygrad.ops_vn")

    def exec_module(self, module: ModuleType) -> None:
        pass  # executed once, under its own name


def find_spec(name: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
    if name != NAME:
        return None
    return importlib.util.spec_from_loader(name, _Alias())  # type: ignore[arg-type]
