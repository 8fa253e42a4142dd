"""One assertion for the house rule on errors: a typed vn.VyreError whose message names
the values involved and says "Fix:". In-process (``typed``, ``check_message``) and for a
call a child described with ``support.childlib.outcome`` (``raised``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import vyre_native as vn

Classes = type[BaseException] | str | tuple[type[BaseException] | str, ...]


def check_message(msg: object, *values: object) -> str:
    """The message (an exception or its text) names every value and has a Fix; the text."""
    text = str(msg)
    for v in values:
        assert str(v) in text, f"{v!r} is not named in the message: {text!r}"
    assert "Fix:" in text, f"no 'Fix:' in the message: {text!r}"
    return text


def typed(fn: Callable[[], Any], cls: type[BaseException], *values: object) -> str:
    """fn() raises cls, a vn.VyreError, whose message names every value and has a Fix."""
    with pytest.raises(cls) as info:
        fn()
    assert isinstance(info.value, vn.VyreError), (
        f"{type(info.value).__name__} is not a vn.VyreError: {info.value}"
    )
    return check_message(info.value, *values)


def raised(res: dict[str, Any], cls: Classes, *values: object) -> str:
    """The child's call (an outcome) raised cls (a class or its name, or a tuple of
    them), a vn.VyreError, whose message names every value and has a Fix."""
    names = [c if isinstance(c, str) else c.__name__ for c in (cls if isinstance(cls, tuple) else (cls,))]
    wanted = " or ".join(names)
    assert not res.get("hang"), f"expected {wanted}, but the call hung (did not return within its time limit)"
    assert not res["ok"], f"expected {wanted}, but the call succeeded"
    assert any(n in res["mro"] for n in names), f"expected {wanted}, got {res['mro'][0]}: {res['msg']}"
    assert "VyreError" in res["mro"], f"{res['mro'][0]} is not a vn.VyreError"
    return check_message(res["msg"], *values)
