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



# ---- timing=True times the same work ---------------------------------------------------------

# Run by test_log.run_child (wgpu-native's log route is set up once per process): replays
# each piece of work untimed and with timing=True, with wgpu-native logging at trace level,
# a marker record before each replay. Clears are on, so the dispatches' outputs are zeroed
# by fill dispatches inside the pass; `copy` adds a copy step.
ENCODE_TRACE_CHILD = """
logging.getLogger("vyre_native").setLevel(logging.DEBUG)
import numpy as np
import vyre_native as vn
from vyre_native._lib import lib

WGSL = '''
@group(0) @binding(0) var<storage, read> a: array<u32>;
@group(0) @binding(1) var<storage, read_write> o: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < arrayLength(&a)) { o[g.x] = o[g.x] + a[g.x]; }
}
'''
dev = vn.Device()
p = dev.compile(WGSL)
a = dev.upload(np.arange(256, dtype=np.uint32))
o1, o2, o3 = dev.alloc(1024), dev.alloc(1024), dev.alloc(1024)
seq = dev.sequence()
seq.add(p, [a], [o1], workgroups=(4, 1, 1))
seq.add(p, [a], [o2], workgroups=(4, 1, 1))
seq.add(p, [a], [o1], workgroups=(4, 1, 1), clear_outputs=False)
seq.clear(o3)
copied = dev.sequence()
copied.add(p, [a], [o1], workgroups=(4, 1, 1))
copied.copy(o1, o2)
copied.add(p, [a], [o3], workgroups=(4, 1, 1))
rec = p.record([a], [o1], workgroups=(4, 1, 1))
work = {"sequence": lambda t: seq.replay(2, timing=t), "copy": lambda t: copied.replay(timing=t),
        "recording": lambda t: rec.replay(3, timing=t)}
for run in work.values():
    run(False).wait()

def settle():  # until the forwarding thread has had nothing new for half a second
    seen, quiet = -1, time.monotonic()
    while time.monotonic() - quiet < 0.5:
        if len(records) != seen:
            seen, quiet = len(records), time.monotonic()
        time.sleep(0.02)

lib.vn_log_set_level(5)
for name, run in work.items():
    for timed in (False, True):
        settle()
        records.append(["MARK", f"wgpu-native: === {name} {timed}"])
        sub = run(timed)
        assert (sub.gpu_time_ns is not None) == timed  # waits, and reads the timestamps back
settle()
lib.vn_log_set_level(2)
"""
COMMANDS = ("compute pass", "Pass::", "ComputePass::", "clear_buffer", "copy_buffer_to_buffer", "Queue::")


def test_timed_replay_encodes_the_same_passes_and_commands_as_untimed(device: vn.Device) -> None:
    """timing=True adds timestamp writes to the first and last pass and nothing else: the
    same passes, fills, dispatches and copies as the untimed replay, so its GPU time is
    the untimed replay's (only timing="dispatch" splits passes and clears outside them)."""
    if not device.timestamps:
        pytest.skip("the adapter has no timestamp queries")
    from test_log import run_child

    trace: dict[str, list[str]] = {}
    lines: list[str] = []
    for _, message in run_child(ENCODE_TRACE_CHILD):
        message = message.removeprefix("wgpu-native: ")
        if message.startswith("=== "):
            lines = trace.setdefault(message[4:], [])
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
