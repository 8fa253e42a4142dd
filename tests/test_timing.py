"""GPU timing of replays through timestamp queries (lavapipe and the H200 both have them)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from support.child import run_scenario
from support.kernels import COUNTER
from support.timestamps import require_timestamps

import vyre_native as vn

# Every test here times work on the GPU.
pytestmark = pytest.mark.timestamps


@pytest.fixture()
def counter(device: vn.Device):  # type: ignore[no-untyped-def]
    require_timestamps(device)
    pipeline = device.compile(COUNTER, preserve=["acc"])
    acc = device.alloc(4 * 4096)
    return pipeline, acc


def test_untimed_replay_reports_no_gpu_time(device: vn.Device, counter) -> None:  # type: ignore[no-untyped-def]
    pipeline, acc = counter
    sub = pipeline.record([], [acc], workgroups=(64, 1, 1)).replay()
    assert sub.gpu_time_ns is None and sub.dispatch_times_ns is None


def test_timed_replay_reports_a_positive_total(device: vn.Device, counter) -> None:  # type: ignore[no-untyped-def]
    pipeline, acc = counter
    sub = pipeline.record([], [acc], workgroups=(64, 1, 1)).replay(8, timing=True)
    assert isinstance(sub.gpu_time_ns, int) and sub.gpu_time_ns > 0
    assert sub.dispatch_times_ns is None
    assert sub.done


def test_per_dispatch_timing_times_each_launch_and_keeps_results(device: vn.Device, counter) -> None:  # type: ignore[no-untyped-def]
    pipeline, acc = counter
    acc.write(np.zeros(4096, np.uint32))
    sub = pipeline.record([], [acc], workgroups=(64, 1, 1)).replay(5, timing="dispatch")
    times = sub.dispatch_times_ns
    assert times is not None and len(times) == 5 and all(t > 0 for t in times)
    assert sub.gpu_time_ns is not None and sub.gpu_time_ns >= max(times)
    assert (np.frombuffer(acc.read(), np.uint32) == 5).all()


def test_sequence_per_dispatch_timing_counts_every_dispatch(device: vn.Device, counter) -> None:  # type: ignore[no-untyped-def]
    pipeline, acc = counter
    seq = device.sequence()
    seq.add(pipeline, [], [acc], workgroups=(64, 1, 1)).add(pipeline, [], [acc], workgroups=(64, 1, 1))
    seq.clear(acc)
    seq.add(pipeline, [], [acc], workgroups=(64, 1, 1))
    sub = seq.replay(2, timing="dispatch")
    assert sub.dispatch_times_ns is not None and len(sub.dispatch_times_ns) == 6
    assert (np.frombuffer(acc.read(), np.uint32) == 1).all()


def test_batched_submit_can_be_timed(device: vn.Device, counter) -> None:  # type: ignore[no-untyped-def]
    pipeline, acc = counter
    rec = pipeline.record([], [acc], workgroups=(64, 1, 1))
    sub = device.submit([rec, rec, rec], timing=True)
    assert sub.gpu_time_ns is not None and sub.gpu_time_ns > 0


def test_unknown_timing_mode_raises_value_error(device: vn.Device, counter) -> None:  # type: ignore[no-untyped-def]
    pipeline, acc = counter
    rec = pipeline.record([], [acc], workgroups=(1, 1, 1))
    with pytest.raises(vn.InvalidArgumentError, match="timing='fast'.*Fix:"):
        rec.replay(timing="fast")


def test_per_dispatch_timing_beyond_the_query_limit_raises(device: vn.Device, counter) -> None:  # type: ignore[no-untyped-def]
    # One submit holds at most 256 launches of a recording (test_bounds.py), so the
    # 4096-query limit is reached through one replay of a long sequence.
    pipeline, acc = counter
    seq = device.sequence()
    for _ in range(3000):
        seq.add(pipeline, [], [acc], clear_outputs=False)
    with pytest.raises(vn.InvalidArgumentError, match=r"3000 dispatches.*Fix:"):
        seq.replay(timing="dispatch")
    seq = device.sequence()
    for _ in range(2048):
        seq.add(pipeline, [], [acc], clear_outputs=False)
    assert len(seq.replay(timing="dispatch").dispatch_times_ns or []) == 2048


# ---- the passes counted are the passes encoded --------------------------------------------

# A timed encode sizes its query set by counting the passes it will begin; a count that
# differed from the encode would leave passes without timestamps (C refuses such an
# encode as an InternalError). Each piece of work below changes pass at another kind of
# boundary, on lavapipe: a copy step; a clear step filled inside the pass (a buffer of
# at most 16 KiB) or cleared by clear_buffer outside it (larger); a dispatch whose
# clear is a fill or a clear_buffer; a recording sharing one pass or not; a batch; each
# replayed twice, so the last step of one launch meets the first of the next.
SMALL, LARGE = 4 * 1024, 64 * 1024


def _boundary_work(device: vn.Device, kind: str) -> tuple[Any, int]:
    """Work whose steps change pass at boundary `kind`, and the dispatches it launches."""
    counting = device.compile(COUNTER)  # its output is cleared before each dispatch
    kept = device.compile(COUNTER, preserve=["acc"])
    small, large, other = device.alloc(SMALL), device.alloc(LARGE), device.alloc(LARGE)
    grid = {"workgroups": (LARGE // 4 // 64, 1, 1)}
    seq = device.sequence()
    if kind == "copy":
        seq.add(kept, [], [large], **grid).copy(large, other).add(kept, [], [other], **grid)
        return lambda t: seq.replay(2, timing=t), 4
    if kind in ("fill step", "clear_buffer step"):
        cleared = small if kind == "fill step" else large
        seq.add(kept, [], [large], **grid).clear(cleared).add(kept, [], [large], **grid).clear(cleared)
        return lambda t: seq.replay(2, timing=t), 4
    if kind in ("filled output", "clear_buffer output"):
        out = small if kind == "filled output" else large
        seq.add(counting, [], [out], **grid).add(kept, [], [large], **grid).add(counting, [], [out], **grid)
        return lambda t: seq.replay(2, timing=t), 6
    if kind in ("recording sharing a pass", "recording with clear_buffer"):
        rec = counting.record([], [small if kind == "recording sharing a pass" else large], **grid)
        return lambda t: rec.replay(3, timing=t), 3
    assert kind == "batch"
    seq.add(kept, [], [large], **grid).clear(small).copy(large, other).add(counting, [], [large], **grid)
    rec = counting.record([], [large], **grid)
    return lambda t: device.submit([rec, seq, rec, seq], timing=t), 6


BOUNDARIES = ["copy", "fill step", "clear_buffer step", "filled output", "clear_buffer output",
              "recording sharing a pass", "recording with clear_buffer", "batch"]


@pytest.mark.parametrize("kind", BOUNDARIES)
def test_every_pass_a_timed_encode_begins_has_its_timestamps(device: vn.Device, kind: str) -> None:
    require_timestamps(device)
    run, dispatches = _boundary_work(device, kind)
    # timing="dispatch": one pass a dispatch, each timed (a pass past the count reads 0)
    times = run("dispatch").dispatch_times_ns
    assert times is not None and len(times) == dispatches and all(t > 0 for t in times), times
    # timing=True: the last pass counted is the last begun, which writes the end
    total = run(True).gpu_time_ns
    assert total is not None and total > 0


# ---- timing=True times the same work ---------------------------------------------------------

# What each replay encodes, untimed and timed, comes from tests/scenarios/encode_trace.py.
COMMANDS = ("compute pass", "Pass::", "ComputePass::", "clear_buffer", "copy_buffer_to_buffer", "Queue::")


def test_timed_replay_encodes_the_same_passes_and_commands_as_untimed(device: vn.Device) -> None:
    """timing=True adds timestamp writes to the first and last pass and nothing else: the
    same passes, fills, dispatches and copies as the untimed replay, so its GPU time is
    the untimed replay's (only timing="dispatch" splits passes and clears outside them)."""
    require_timestamps(device)
    trace: dict[str, list[str]] = {}
    lines: list[str] = []
    for _, message in run_scenario("encode_trace", timeout=120):
        message = message.removeprefix("wgpu-native: ")
        if message.startswith("=== "):
            lines = trace[message[4:]] = []  # a section made again (records dropped) replaces the first
        elif any(c in message for c in COMMANDS):
            lines.append(message)
    # what each replay encoded: its commands up to its submit
    for name, found in trace.items():
        del found[next(i for i, m in enumerate(found) if m.startswith("Queue::submit")) :]
    passes = {"sequence": 1, "copy": 2, "recording": 1}
    for name, count in passes.items():
        untimed, timed = trace[f"{name} False"], trace[f"{name} True"]
        assert untimed == timed, f"{name}: timing=True encodes other commands"
        assert sum(line.startswith("Begin encoding compute pass") for line in timed) == count, timed
        assert not any("clear_buffer" in line for line in timed), timed
    # the fills are inside the pass: two cleared steps and a clear step, replayed twice
    assert sum("zero fill" in line for line in trace["sequence True"]) == 2 * 3
