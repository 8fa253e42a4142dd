"""GPU timing of replays through timestamp queries (lavapipe and the H200 both have them)."""

from __future__ import annotations

import numpy as np
import pytest

import vyre_native as vn

ADD_ONE = """
@group(0) @binding(0) var<storage, read_write> acc: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < arrayLength(&acc)) { acc[gid.x] = acc[gid.x] + 1u; }
}
"""


@pytest.fixture()
def counter(device: vn.Device):  # type: ignore[no-untyped-def]
    if not device.timestamps:
        pytest.fail(f"adapter {device.info['name']} reports no timestamp queries; these tests need them")
    pipeline = device.compile(ADD_ONE, preserve=["acc"])
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
