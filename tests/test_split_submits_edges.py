"""Split sequence replays (csrc/replay.c, replay_in_submits) at their edges: the
256-step bound, a one-step sequence launched 256 times, per-step immediates across part
boundaries, views, indirect counts an earlier step wrote, non-cleared ping-pong, timed
replays of a sequence already split, and live objects after many split replays. Each
result is checked against a model; splitting is forced on (lavapipe never splits)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import vyre_native as vn
from vyre_native._lib import lib
from wgsl_kernels import ADD_IMMEDIATE, DOUBLE

INCREMENT = """
@group(0) @binding(0) var<storage, read_write> acc: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < arrayLength(&acc)) { acc[g.x] = acc[g.x] + 1u; }
}
"""

# args = (n[0] groups, 1, 1): the next step's indirect counts, written on the GPU.
COUNT = """
@group(0) @binding(0) var<storage, read> n: array<u32, 1>;
@group(0) @binding(1) var<storage, read_write> args: array<u32, 3>;
@compute @workgroup_size(1)
fn main() { args[0] = n[0]; args[1] = 1u; args[2] = 1u; }
"""

N = 64


@pytest.fixture
def split_everywhere() -> Iterator[None]:
    lib.vn_debug_split_submits_everywhere(1)
    try:
        yield
    finally:
        lib.vn_debug_split_submits_everywhere(0)


def u32(buf: vn.Buffer) -> np.ndarray:
    return np.frombuffer(buf.read(), np.uint32)


def submits(seq: vn.Sequence, n: int = 1) -> int:
    a = seq.replay(n)
    a.wait()
    b = seq.replay(n)
    b.wait()
    return int(b.index - a.index)


@pytest.mark.parametrize(("steps", "n"), [(1, 256), (1, 32), (2, 128), (32, 8), (255, 1), (256, 1), (257, 1)])
def test_split_replays_at_the_step_bound_run_every_step_once(
    device: vn.Device, split_everywhere: None, steps: int, n: int
) -> None:
    inc = device.compile(INCREMENT, preserve=["acc"])
    acc = device.alloc(4 * N)
    seq = device.sequence()
    for _ in range(steps):
        seq.add(inc, [], [acc], workgroups=(1, 1, 1))
    seq.replay(n).wait()  # whole
    assert submits(seq, n) > 1
    assert (u32(acc) == 3 * steps * n).all()


def test_a_replay_past_the_bound_is_refused_before_anything_is_submitted(device: vn.Device, split_everywhere: None) -> None:
    inc = device.compile(INCREMENT, preserve=["acc"])
    acc = device.alloc(4 * N)
    seq = device.sequence()
    for _ in range(2):
        seq.add(inc, [], [acc], workgroups=(1, 1, 1))
    seq.replay(128).wait()
    seq.replay(128).wait()  # split
    ptr = seq._live()
    out = vn._lib.ffi.new("vn_submission **")
    assert lib.vn_sequence_replay(ptr, 129, 0, out) == lib.VN_ERROR_INVALID_ARGUMENT
    device.wait_idle()
    assert (u32(acc) == 512).all()


def test_per_step_immediates_survive_part_boundaries(device: vn.Device, split_everywhere: None) -> None:
    if "immediates" not in device.features:
        pytest.skip("no immediates")
    add_k = device.compile(ADD_IMMEDIATE, preserve=["acc"])
    acc = device.alloc(4 * N)
    seq = device.sequence()
    ks = [(7 * i + 3) % 101 for i in range(300)]
    for k in ks:
        seq.add(add_k, [], [acc], immediates=np.uint32(k).tobytes())
    seq.replay().wait()
    assert submits(seq) > 1
    assert (u32(acc) == 3 * sum(ks)).all()


def test_steps_on_views_clears_and_copies_split_like_whole(device: vn.Device, split_everywhere: None) -> None:
    inc = device.compile(INCREMENT, preserve=["acc"])
    big = device.upload(np.arange(4 * N, dtype=np.uint32))
    side = device.alloc(4 * N)
    views = [big.view(4 * N * i, 4 * N) for i in range(4)]
    model = np.arange(4 * N, dtype=np.uint32).reshape(4, N)
    side_m = np.zeros(N, np.uint32)
    seq = device.sequence()
    ops = []
    for i in range(60):
        v = i % 4
        if i % 13 == 5:
            seq.clear(views[v])
            ops.append(("clear", v))
        elif i % 11 == 3:
            seq.copy(views[v], side)
            ops.append(("copy", v))
        else:
            seq.add(inc, [], [views[v]])
            ops.append(("inc", v))
    for _ in range(3):
        seq.replay().wait()
        for op, v in ops:
            if op == "clear":
                model[v] = 0
            elif op == "copy":
                side_m[:] = model[v]
            else:
                model[v] += 1
    np.testing.assert_array_equal(u32(big).reshape(4, N), model)
    np.testing.assert_array_equal(u32(side), side_m)


def test_indirect_counts_written_by_an_earlier_step_are_read_in_a_later_part(
    device: vn.Device, split_everywhere: None
) -> None:
    count = device.compile(COUNT)
    inc = device.compile(INCREMENT, preserve=["acc"])
    usage = vn.BufferUsage.STORAGE | vn.BufferUsage.INDIRECT | vn.BufferUsage.COPY_SRC | vn.BufferUsage.COPY_DST
    args = device.alloc(12, usage=usage)
    n = device.upload(np.array([2], np.uint32))
    acc = device.alloc(4 * 64 * 4)
    seq = device.sequence()
    seq.add(count, [n], [args])
    for _ in range(40):
        seq.add(inc, [], [acc], indirect=(args, 0))
    seq.replay().wait()
    n.write(np.array([3], np.uint32))
    seq.replay().wait()  # split: the counts are 3 groups now
    v = u32(acc)
    np.testing.assert_array_equal(v[:128], np.full(128, 80, np.uint32))
    np.testing.assert_array_equal(v[128:192], np.full(64, 40, np.uint32))
    np.testing.assert_array_equal(v[192:], np.zeros(64, np.uint32))


@pytest.mark.parametrize("clears", [True, False])
def test_ping_pong_with_and_without_clears(device: vn.Device, split_everywhere: None, clears: bool) -> None:
    double = device.compile(DOUBLE)
    a = device.upload(np.ones(N, np.float32))
    b = device.alloc(4 * N)
    seq = device.sequence()
    for i in range(40):
        src, dst = (a, b) if i % 2 == 0 else (b, a)
        seq.add(double, [src], [dst], clear_outputs=clears)
    seq.replay().wait()  # a = 2**40
    a.write(np.ones(N, np.float32))
    seq.replay().wait()  # split
    np.testing.assert_array_equal(np.frombuffer(a.read(), np.float32), np.full(N, 2.0**40, np.float32))
    np.testing.assert_array_equal(np.frombuffer(b.read(), np.float32), np.full(N, 2.0**39, np.float32))


def test_timed_replays_after_split_ones_are_whole_and_timed(device: vn.Device, split_everywhere: None) -> None:
    if not device.timestamps:
        pytest.skip("no timestamps")
    inc = device.compile(INCREMENT, preserve=["acc"])
    acc = device.alloc(4 * N)
    seq = device.sequence()
    for _ in range(40):
        seq.add(inc, [], [acc], workgroups=(1, 1, 1))
    seq.replay().wait()
    assert submits(seq) > 1
    t = seq.replay(timing=True)
    t.wait()
    assert t.gpu_time_ns is not None and t.gpu_time_ns > 0
    d = seq.replay(timing="dispatch")
    d.wait()
    times = d.dispatch_times_ns
    assert times is not None
    assert len(times) == 40 and all(x >= 0 for x in times)
    assert submits(seq) > 1  # still split afterwards
    assert (u32(acc) == 40 * 7).all()


def test_live_objects_stay_flat_over_many_split_replays(device: vn.Device, split_everywhere: None) -> None:
    inc = device.compile(INCREMENT, preserve=["acc"])
    acc = device.alloc(4 * N)
    seq = device.sequence()
    for _ in range(33):
        seq.add(inc, [], [acc], workgroups=(1, 1, 1))
    seq.replay().wait()
    device.wait_idle()
    before = vn.debug.live_objects()
    for _ in range(30):
        seq.replay()  # dropped unobserved
    seq.replay(2).wait()
    device.wait_idle()
    after = vn.debug.live_objects()
    assert after["submissions"] <= before["submissions"]
    assert after["bind_groups"] == before["bind_groups"]
    assert (u32(acc) == 33 * 33).all()
