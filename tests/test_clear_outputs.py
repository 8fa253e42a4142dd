"""``clear_outputs``: one argument, on every call that records a dispatch, that says whether
its outputs are cleared before it.

The default (``True``) is the seed's: every read_write output that is not preserved
starts at zero. ``clear_outputs=False`` clears none, so a kernel sees what its outputs
hold, which a tensor library (whose kernels write every element, or accumulate) wants.
A borrowed dispatch takes no such argument: its outputs are new buffers, zero already,
and it clears nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from support.kernels import COUNTER

import vyre_native as vn

# acc[i] += 1, compiled without preserve: whether it was cleared decides what it holds after.
ADD_ONE = COUNTER

HELD = np.arange(100, 164, dtype=np.uint32)  # what the output holds before the dispatch


@pytest.fixture(scope="module")
def add_one(device: vn.Device) -> vn.Pipeline:
    return device.compile(ADD_ONE)


def launch(how: str, prog: vn.Pipeline, out: Any, **kw: Any) -> None:
    """Record one dispatch of prog over `out` the given way, run it once, and wait."""
    if how == "record":
        prog.record([], [out], **kw).replay().wait()
    elif how == "prerecord":
        prog.prerecord_persistent_dispatch([], [out], **kw).replay()
    else:
        prog.device.sequence().add(prog, [], [out], **kw).replay().wait()


HOWS = ["record", "prerecord", "sequence_add"]


@pytest.mark.parametrize("how", HOWS)
def test_an_output_recorded_with_clear_outputs_false_keeps_what_it_held(
    device: vn.Device, add_one: vn.Pipeline, how: str
) -> None:
    out = device.upload(HELD)
    launch(how, add_one, out, clear_outputs=False)
    np.testing.assert_array_equal(out.read(np.uint32), HELD + 1)


@pytest.mark.parametrize("clear", [{}, {"clear_outputs": True}], ids=["by default", "clear_outputs=True"])
@pytest.mark.parametrize("how", HOWS)
def test_outputs_are_cleared_by_default_and_with_clear_outputs_true(
    device: vn.Device, add_one: vn.Pipeline, how: str, clear: dict[str, bool]
) -> None:
    out = device.upload(HELD)
    launch(how, add_one, out, **clear)
    np.testing.assert_array_equal(out.read(np.uint32), np.ones(64, np.uint32))


def test_a_recording_without_clears_replayed_n_times_accumulates_n(
    device: vn.Device, add_one: vn.Pipeline
) -> None:
    out = device.upload(HELD)
    rec = add_one.record([], [out], clear_outputs=False)
    rec.replay(5).wait()
    rec.replay(2).wait()
    np.testing.assert_array_equal(out.read(np.uint32), HELD + 7)


def test_a_view_kept_uncleared_changes_only_its_own_range(device: vn.Device, add_one: vn.Pipeline) -> None:
    arena = device.upload(np.tile(HELD, 3))
    add_one.record([], [arena.view(256, 256)], clear_outputs=False).replay().wait()
    np.testing.assert_array_equal(arena.read(np.uint32), np.concatenate([HELD, HELD + 1, HELD]))


def test_a_recording_without_clears_in_a_device_submit_keeps_its_output(
    device: vn.Device, add_one: vn.Pipeline
) -> None:
    out = device.upload(HELD)
    rec = add_one.record([], [out], clear_outputs=False)
    device.submit([rec, rec, rec]).wait()
    np.testing.assert_array_equal(out.read(np.uint32), HELD + 3)


@pytest.mark.parametrize("how", HOWS)
def test_clear_outputs_that_is_not_a_bool_raises_wrong_type_error(
    device: vn.Device, add_one: vn.Pipeline, how: str
) -> None:
    with pytest.raises(vn.WrongTypeError, match=r"clear_outputs.*Fix:"):
        launch(how, add_one, device.alloc(256), clear_outputs=0)


def _bind_groups() -> int:
    return vn.debug.live_objects()["bind_groups"]


def test_a_borrowed_dispatch_clears_nothing_and_its_new_outputs_start_at_zero(
    device: vn.Device, add_one: vn.Pipeline
) -> None:
    before = _bind_groups()
    rec = add_one.prerecord_borrowed_dispatch([], output_sizes=[256])
    made = _bind_groups() - before
    rec.replay()
    np.testing.assert_array_equal(np.frombuffer(rec.read_output(0), np.uint32), np.ones(64, np.uint32))
    # The kernel's group, held by the pipeline's cache and by the recording: no fill's.
    assert made == 2
