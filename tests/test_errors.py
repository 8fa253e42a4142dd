"""The status codes have one table (csrc/include/status_codes.h): C's enum is made of it, cffi's
cdef is written out of it (scripts/ffi_build.py), and every error code in it maps to exactly
one exception class (vyre_native/errors.py), each listed once in the guide's table
(docs/guide/errors.md) with the built-in class it also is."""

from __future__ import annotations

import importlib
import pathlib
import re

from support.tables import rows

import vyre_native as vn
from vyre_native import errors
from vyre_native._lib import ffi, lib

ROOT = pathlib.Path(__file__).resolve().parent.parent
# The two codes that are no error: success, and a wait that goes on.
NOT_ERRORS = {"VN_OK", "VN_PENDING"}


def _table() -> dict[str, int]:
    """csrc/include/status_codes.h's rows, name -> value."""
    return {name: int(value) for name, value in rows("status_codes.h", "VN_STATUS")}


def _classes() -> list[type[vn.VyreError]]:
    return [
        cls
        for cls in vars(errors).values()
        if isinstance(cls, type) and issubclass(cls, vn.VyreError) and cls is not vn.VyreError
    ]


def test_the_compiled_module_holds_the_status_table_as_written() -> None:
    table = _table()
    assert len(table) >= 20 and len(set(table.values())) == len(table)
    assert dict(ffi.typeof("vn_status").relements) == table
    assert all(getattr(lib, name) == value for name, value in table.items())


def test_every_error_code_maps_to_exactly_one_class_and_every_class_to_a_code() -> None:
    codes = {name: value for name, value in ffi.typeof("vn_status").relements.items() if name not in NOT_ERRORS}
    assert all(name.startswith("VN_ERROR_") for name in codes)
    by_code: dict[int, list[str]] = {}
    for cls in _classes():
        by_code.setdefault(cls.code, []).append(cls.__name__)
    assert {code: len(names) for code, names in by_code.items()} == {code: 1 for code in codes.values()}, by_code
    for value in codes.values():
        assert errors.error_class(value).code == value
    for name in NOT_ERRORS:
        assert errors.error_class(getattr(lib, name)) is vn.VyreError


def _resolve(name: str) -> type:
    """A class the guide names: a built-in (`ValueError`) or a module's (`pickle.PicklingError`)."""
    module, _, attr = name.rpartition(".")
    found = getattr(importlib.import_module(module or "builtins"), attr)
    assert isinstance(found, type), name
    return found


def test_every_class_is_public_and_in_the_guide_with_the_builtin_it_also_is() -> None:
    rows = re.findall(r"^\| `(\w+)` \|([^|]*)\|", (ROOT / "docs" / "guide" / "errors.md").read_text(), re.M)
    guide = {name: [_resolve(n) for n in re.findall(r"`([\w.]+)`", also)] for name, also in rows}
    assert len(guide) == len(rows), "a class is listed twice"
    classes = {cls.__name__: [b for b in cls.__bases__ if b is not vn.VyreError] for cls in _classes()}
    assert guide == classes
    for name in classes:
        assert name in vn.__all__ and getattr(vn, name) is getattr(errors, name)
