"""Values crossing into C: one marshalling step per entry point, and typed errors for
every Python value that has no C value.

Each test states one behaviour. Where a rule concerns many entry points, the test is
parametrized over all of them, so an entry point that skips the marshalling step
fails by name.
"""

from __future__ import annotations

import vyre_native as vn
from vyre_native import errors
from vyre_native._native import lib

# ================================================================ codes and enums


def test_every_c_status_code_maps_to_its_own_exception_class() -> None:
    codes = {name: getattr(lib, name) for name in dir(lib) if name.startswith("VN_ERROR_")}
    classes = {code: errors.error_class(code) for code in codes.values()}
    assert all(cls is not vn.VyreError for cls in classes.values()), classes
    assert len(set(classes.values())) == len(codes)
    for code, cls in classes.items():
        assert cls.code == code


def test_buffer_usage_flags_are_the_c_enum_values() -> None:
    for flag in vn.BufferUsage:
        assert flag.value == getattr(lib, f"VN_USAGE_{flag.name}")
