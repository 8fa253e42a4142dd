"""An exception at any step after a creating call leaks nothing and frees nothing twice.

An exception can land between any two Python-level steps of a call that creates a native
object: after the C call has made the object and before the handle owns it. Each scenario
below is run again and again with the exception raised one step later each time, until
the call completes; after each run every native object of a handle kind must be back at
its count from before. Two sources of exceptions, each its own sweep:
- "interrupt": KeyboardInterrupt where CPython can raise a pending signal's exception (a
  function's start or a call's return), raised by a profiler at the k-th such point after
  the C creating function returns;
- "trace": an exception raised by a trace and profile hook on every event it sees after
  that (each line of the frames on the stack and of every frame called from then on, each
  call and return, each C call's return): what a hostile ``sys.settrace`` /
  ``sys.setprofile`` can do. Except on a ``with`` line: its line event also fires in the
  block's cleanup, before ``__exit__``, so an exception there skips ``__exit__`` in any
  Python code (a lock stays held); no signal can land there.
Run in a child interpreter (tests/scenarios/interrupted_creation.py; hooks and KeyboardInterrupt are process-wide state); the ASan
stage of CI runs it too, which would report a second release of any object.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
from support.child import run_scenario


@functools.cache
def _sweep(mode: str) -> dict[str, Any]:
    return run_scenario("interrupted_creation", mode, timeout=600)  # type: ignore[no-any-return]


SCENARIOS = [
    "Device()",
    "alloc",
    "upload",
    "sequence",
    "compile (shader)",
    "compile (pipeline)",
    "record",
    "record (its outputs)",
    "prerecord",
    "prerecord (converted)",
    "prerecord borrowed",
    "recording replay",
    "recording replay(2)",
    "sequence replay",
    "sequence replay(2)",
    "submit",
    "read_async",
    "read (sliced)",
    "read zero-copy (pin)",
    "Device.from_wgpu",
    "Device.from_wgpu (second handle)",
    "Buffer.from_wgpu",
    "Buffer.from_wgpu (second handle)",
    "Buffer.to_wgpu",
]


@pytest.mark.parametrize("mode", ["interrupt", "trace"])
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_an_exception_at_any_step_after_the_c_call_leaks_nothing(scenario: str, mode: str) -> None:
    res = _sweep(mode)[scenario]
    assert not res["errors"], res["errors"]
    assert res["completed"], f"{scenario}: still interrupted after {res['interrupted']} steps"
    assert res["interrupted"] >= 1, f"{scenario}: no interrupt landed after the C call"
    assert not res["leaks"], f"{scenario}: native objects left after an interrupt: {res['leaks']}"
