"""Handle lifetime: a release on another thread never frees an object mid-call, and the C
boundary refuses handles of the wrong kind and released ones with a typed error.

Every handle is an id (a slot and its generation) of a C object that starts with one
header (kind, references, destroy), and each entry point translates the ids it
receives, checks their kinds and holds a reference on each object for the length of
the call (csrc/object/object.c, docs/LOCKING.md). The
races run in a child interpreter, so a crash fails one test rather than the suite; each
round must either succeed or raise ReleasedError.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from scenarios.release_races import RACES
from support.child import run_scenario
from support.errors import check_message
from support.kernels import DOUBLE

import vyre_native as vn
from vyre_native._lib import check, ffi, lib

# ---------------------------------------------------------------- releases racing calls

# Each race (tests/scenarios/release_races.py): fresh handles, then the call on this
# thread while another thread releases the victim, each after a random pause.


@pytest.mark.parametrize("race", list(RACES))
def test_a_release_on_another_thread_during_a_call_raises_released_error_or_lets_it_finish(race: str) -> None:
    rounds = 25 if "256" in race else 60
    res = run_scenario("release_races", race, str(rounds), timeout=300)
    assert res["ok"] + res["released"] == rounds, res


# ---------------------------------------------------------------- the C boundary


@pytest.fixture(scope="module")
def handles(device: vn.Device) -> dict[str, Any]:
    """One live handle of each kind, for calls that pass them where another kind belongs."""
    prog = device.compile(DOUBLE)
    a = device.upload(np.arange(64, dtype=np.float32))
    o = device.alloc(256)
    rec = prog.record([a], [o])
    seq = device.sequence().add(prog, [a], [o])
    sub = rec.replay()
    sub.wait()
    return {
        "device": device,
        "pipeline": prog,
        "buffer": a,
        "output": o,
        "recording": rec,
        "sequence": seq,
        "submission": sub,
    }


def _as(handle: Any, ctype: str) -> Any:
    """The handle's C pointer typed as another kind's (what a bug in a caller would pass)."""
    return ffi.cast(ctype, handle._ptr)


_KEPT: list[Any] = []  # what the C structs _args makes point into


def _args(inputs: list[Any], outputs: list[Any]) -> Any:
    """A positional vn_dispatch_args of whole buffers (views {ptr, 0, 0, to_end=1}), one workgroup."""
    views = ffi.new("vn_view[]", [(p, 0, 0, 1) for p in inputs + outputs])
    _KEPT.append(views)
    return ffi.new(
        "vn_dispatch_args *",
        [lib.VN_BIND_POSITIONAL, 1, 1, 1, views, len(inputs), views + len(inputs), len(outputs)],
    )


def _work(item_ptr: Any) -> Any:
    work = ffi.new("vn_work[]", 1)
    work[0].recording = item_ptr
    return work


# (C call given the handles, the kind it got, the kind it needed)
WRONG_KINDS: dict[str, tuple[Callable[[dict[str, Any]], int], str, str]] = {
    "buffer_as_recording_to_replay": (
        lambda h: lib.vn_recording_replay(
            _as(h["buffer"], "vn_recording *"), 1, 0, ffi.new("vn_submission **")
        ),
        "Buffer",
        "Recording",
    ),
    "recording_as_buffer_to_write": (
        lambda h: lib.vn_buffer_write(_as(h["recording"], "vn_buffer *"), 0, b"abcd", 4),
        "Recording",
        "Buffer",
    ),
    "pipeline_as_sequence_to_replay": (
        lambda h: lib.vn_sequence_replay(
            _as(h["pipeline"], "vn_sequence *"), 1, 0, ffi.new("vn_submission **")
        ),
        "Pipeline",
        "Sequence",
    ),
    "buffer_as_submission_to_wait": (
        lambda h: lib.vn_submission_wait(_as(h["buffer"], "vn_submission *"), 0.0, ffi.new("double *")),
        "Buffer",
        "Submission",
    ),
    "buffer_as_shader_to_pipeline_create": (
        lambda h: lib.vn_pipeline_create(
            h["device"]._ptr,
            _as(h["buffer"], "vn_shader *"),
            ffi.new("vn_pipeline_desc *"),
            ffi.new("vn_pipeline **"),
        ),
        "Buffer",
        "shader module",
    ),
    "pipeline_as_device_to_buffer_create": (
        lambda h: lib.vn_buffer_create(
            _as(h["pipeline"], "vn_device *"), 4, lib.VN_USAGE_DEFAULT, ffi.NULL, ffi.new("vn_buffer **")
        ),
        "Pipeline",
        "Device",
    ),
    "recording_as_input_buffer_to_record": (
        lambda h: lib.vn_recording_create(
            h["pipeline"]._ptr,
            _args([_as(h["recording"], "vn_buffer *")], [h["output"]._ptr]),
            ffi.new("vn_recording **"),
        ),
        "Recording",
        "Buffer",
    ),
    "buffer_as_work_item_to_submit": (
        lambda h: lib.vn_device_submit(
            h["device"]._ptr, _work(_as(h["buffer"], "vn_recording *")), 1, 0, ffi.new("vn_submission **")
        ),
        "Buffer",
        "Recording",
    ),
    "sequence_as_pipeline_to_sequence_add": (
        lambda h: lib.vn_sequence_add(
            h["sequence"]._ptr,
            _as(h["sequence"], "vn_pipeline *"),
            _args([h["buffer"]._ptr], [h["output"]._ptr]),
        ),
        "Sequence",
        "Pipeline",
    ),
}


@pytest.mark.parametrize("case", list(WRONG_KINDS))
def test_a_c_entry_point_given_another_kind_of_handle_raises_wrong_type_error(
    case: str, handles: dict[str, Any]
) -> None:
    call, got, needed = WRONG_KINDS[case]
    live = vn.debug.live_objects()
    with pytest.raises(vn.WrongTypeError) as info:
        check(call(handles))
    check_message(info.value, f"vn.{got}", f"vn.{needed}")
    assert vn.debug.live_objects() == live, "the refused call made or freed something"
    handles["recording"].replay().wait()  # the handles it was given still work


def test_a_release_function_given_another_kind_of_handle_leaves_both_objects_alone(
    handles: dict[str, Any],
) -> None:
    live = vn.debug.live_objects()
    lib.vn_buffer_release(_as(handles["recording"], "vn_buffer *"))
    lib.vn_recording_release(_as(handles["buffer"], "vn_recording *"))
    assert vn.debug.live_objects() == live
    handles["recording"].replay().wait()
    assert handles["buffer"].read() == np.arange(64, dtype=np.float32).tobytes()


def test_a_null_handle_at_the_c_boundary_raises_a_typed_error_naming_the_kind() -> None:
    with pytest.raises(vn.InvalidArgumentError) as info:
        check(lib.vn_recording_replay(ffi.NULL, 1, 0, ffi.new("vn_submission **")))
    check_message(info.value, "vn_recording_replay", "Recording")


def test_a_released_submission_still_tracked_by_its_callback_reads_as_released_at_the_c_boundary(
    handles: dict[str, Any],
) -> None:
    # The record itself lives on until the work-done callback, which fires only when the
    # device is next polled; the handle is an id, stale from its release whether the
    # record is still there or already freed.
    sub = handles["recording"].replay()
    stale = ffi.cast("vn_submission *", sub._ptr)
    ffi.release(sub._ptr)  # the handle's C reference, dropped now
    with pytest.raises(vn.ReleasedError) as info:
        check(lib.vn_submission_wait(stale, 0.0, ffi.new("double *")))
    check_message(info.value, "Submission", "released")
    assert lib.vn_submission_index(stale) == 0
    handles["device"].wait_idle()


# ---------------------------------------------------------------- use after release


def test_a_released_input_in_a_list_raises_released_error_naming_it(handles: dict[str, Any]) -> None:
    device, prog = handles["device"], handles["pipeline"]
    gone = device.upload(np.arange(64, dtype=np.float32))
    gone.release()
    with pytest.raises(vn.ReleasedError) as info:
        prog.record([gone], [handles["output"]])
    check_message(info.value, "inputs[0]")


def test_a_released_recording_in_a_submit_raises_released_error_naming_its_index(
    handles: dict[str, Any],
) -> None:
    device, prog = handles["device"], handles["pipeline"]
    rec = prog.record([handles["buffer"]], [handles["output"]])
    rec.release()
    with pytest.raises(vn.ReleasedError) as info:
        device.submit([handles["recording"], rec])
    check_message(info.value, "work[1]")


def test_a_recording_keeps_a_released_pipeline_and_buffers_alive_until_it_goes(device: vn.Device) -> None:
    before = vn.debug.live_objects()
    prog = device.compile(DOUBLE)
    a, o = device.upload(np.arange(64, dtype=np.float32)), device.alloc(256)
    rec = prog.record([a], [o])
    prog.release()
    a.release()
    o.release()
    rec.replay().wait()
    np.testing.assert_array_equal(np.frombuffer(rec.read_output(0), np.float32), np.arange(64) * 2)
    del rec  # its output handles go with it
    after = vn.debug.live_objects()
    assert (after["pipelines"], after["buffers"], after["recordings"]) == (
        before["pipelines"],
        before["buffers"],
        before["recordings"],
    )
