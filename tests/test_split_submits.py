"""Long sequence replays in several submits (csrc/work/sequence.c, replay_in_submits).

On a GPU an untimed replay of VN_SPLIT_MIN_STEPS steps or more, of steps already
replayed whole once, goes in several submits (8 steps, then twice as many each time),
so the GPU starts while the rest is encoded. CPU adapters (lavapipe, CI's) never split,
since each of their submits waits for the one before; these tests switch splitting on
there with vn_test_control(VN_TEST_SPLIT_SUBMITS_EVERYWHERE), so the split path runs in CI too.

The edges: the 256-step bound, a one-step sequence launched 256 times, per-step
immediates across part boundaries, views, indirect counts an earlier step wrote,
non-cleared ping-pong, timed replays of a sequence already split, and live objects after
many split replays, each checked against a model.

Submission indices count queue submits, so the difference between two replays' indices,
with nothing submitted in between, is the number of submits the later one used.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.kernels import ADD_IMMEDIATE, COUNTER, DOUBLE
from support.timestamps import require_timestamps

import vyre_native as vn
from vyre_native._lib import ffi, lib

# args = (n[0] groups, 1, 1): the next step's indirect counts, written on the GPU.
COUNT = """
@group(0) @binding(0) var<storage, read> n: array<u32, 1>;
@group(0) @binding(1) var<storage, read_write> args: array<u32, 3>;
@compute @workgroup_size(1)
fn main() { args[0] = n[0]; args[1] = 1u; args[2] = 1u; }
"""

N = 64  # elements per buffer


def test_the_test_switch_answers_its_previous_value_and_refuses_an_unknown_one() -> None:
    which = lib.VN_TEST_SPLIT_SUBMITS_EVERYWHERE
    assert lib.vn_test_control(which, 1) == 0
    assert lib.vn_test_control(which, 0) == 1
    assert lib.vn_test_control(99, 1) == -1
    assert b"no switch 99. Fix:" in ffi.string(lib.vn_last_error())


@pytest.fixture
def split_everywhere() -> Iterator[None]:
    lib.vn_test_control(lib.VN_TEST_SPLIT_SUBMITS_EVERYWHERE, 1)
    try:
        yield
    finally:
        lib.vn_test_control(lib.VN_TEST_SPLIT_SUBMITS_EVERYWHERE, 0)


@pytest.fixture(scope="module")
def kit(device: vn.Device) -> tuple[vn.Pipeline, vn.Pipeline]:
    return device.compile(COUNTER, preserve=["acc"]), device.compile(DOUBLE)


def submits_of(seq: vn.Sequence, n: int = 1) -> int:
    """How many queue submits one replay of seq used (it runs and is waited for)."""
    before = seq.replay(n)
    before.wait()
    after = seq.replay(n)
    after.wait()
    return int(after.index - before.index)


def u32(buf: vn.Buffer) -> np.ndarray:
    return np.frombuffer(buf.read(), np.uint32)


def counting_sequence(device: vn.Device, kit: tuple[vn.Pipeline, vn.Pipeline], steps: int) -> tuple[vn.Sequence, vn.Buffer]:
    acc = device.alloc(4 * N)
    seq = device.sequence()
    for _ in range(steps):
        seq.add(kit[0], [], [acc], workgroups=(1, 1, 1))
    return seq, acc


def expected_submits(steps: int) -> int:
    """VN_SPLIT_FIRST_STEPS, then twice as many each time; the last takes what is left
    once less than twice its size remains."""
    if steps < lib.VN_SPLIT_MIN_STEPS:
        return 1
    first, size, count = 0, lib.VN_SPLIT_FIRST_STEPS, 0
    while first < steps:
        first = steps if steps - first < 2 * size else first + size
        size, count = size * 2, count + 1
    return count


@pytest.mark.parametrize("steps", [31, 32, 40, 100, 256])
def test_a_long_replay_goes_in_the_documented_submits_and_runs_every_step(
    device: vn.Device, kit: tuple[vn.Pipeline, vn.Pipeline], split_everywhere: None, steps: int
) -> None:
    seq, acc = counting_sequence(device, kit, steps)
    assert submits_of(seq) == expected_submits(steps)
    # two replays of every step
    np.testing.assert_array_equal(np.frombuffer(acc.read(), np.uint32), np.full(N, 2 * steps, np.uint32))


def test_launches_of_a_sequence_replayed_n_times_split_across_launches(
    device: vn.Device, kit: tuple[vn.Pipeline, vn.Pipeline], split_everywhere: None
) -> None:
    seq, acc = counting_sequence(device, kit, 20)
    assert submits_of(seq, 5) == expected_submits(100)
    np.testing.assert_array_equal(np.frombuffer(acc.read(), np.uint32), np.full(N, 2 * 100, np.uint32))


def test_the_first_replay_after_an_add_is_one_submit(
    device: vn.Device, kit: tuple[vn.Pipeline, vn.Pipeline], split_everywhere: None
) -> None:
    # New steps are checked in one command buffer first: no part of a replay that
    # fails to encode has run.
    seq, acc = counting_sequence(device, kit, 40)
    before = seq.replay()
    before.wait()
    seq.add(kit[0], [], [acc])
    whole = seq.replay()
    whole.wait()
    split = seq.replay()
    split.wait()
    assert whole.index - before.index == 1
    assert split.index - whole.index == expected_submits(41)
    np.testing.assert_array_equal(np.frombuffer(acc.read(), np.uint32), np.full(N, 40 + 2 * 41, np.uint32))


@pytest.mark.timestamps
def test_timed_replays_are_one_submit(device: vn.Device, kit: tuple[vn.Pipeline, vn.Pipeline], split_everywhere: None) -> None:
    require_timestamps(device)
    seq, _ = counting_sequence(device, kit, 64)
    seq.replay().wait()
    a = seq.replay(timing=True)
    a.wait()
    b = seq.replay(timing=True)
    b.wait()
    assert b.index - a.index == 1
    assert b.gpu_time_ns is not None and b.gpu_time_ns > 0


def test_by_default_only_adapters_whose_submits_do_not_wait_split(
    device: vn.Device, kit: tuple[vn.Pipeline, vn.Pipeline]
) -> None:
    seq, _ = counting_sequence(device, kit, 64)
    cpu = device.info["adapter_type"] == "CPU"
    assert submits_of(seq) == (1 if cpu else expected_submits(64))


def test_split_replays_keep_a_released_buffer_alive_and_a_released_sequence_is_refused(
    device: vn.Device, kit: tuple[vn.Pipeline, vn.Pipeline], split_everywhere: None
) -> None:
    seq, acc = counting_sequence(device, kit, 40)
    seq.replay().wait()
    acc.release()  # the sequence holds its own reference: it still replays
    assert submits_of(seq) == expected_submits(40)
    seq.release()
    with pytest.raises(vn.ReleasedError):
        seq.replay()


# Random sequences of counting, doubling (its output cleared first or not), copy and
# clear steps, replayed whole and then split; every buffer must match a numpy model.
_STEP = st.one_of(
    st.tuples(st.just("inc"), st.integers(0, 2)),
    st.tuples(st.just("double"), st.integers(0, 2), st.integers(0, 2), st.booleans()),
    st.tuples(st.just("copy"), st.integers(0, 2), st.integers(0, 2)),
    st.tuples(st.just("clear"), st.integers(0, 2)),
)


@settings(max_examples=25, deadline=None)
@given(steps=st.lists(_STEP, min_size=1, max_size=24), n=st.integers(1, 6))
def test_split_replays_compute_what_whole_ones_do(
    device: vn.Device, kit: tuple[vn.Pipeline, vn.Pipeline], steps: list[tuple], n: int
) -> None:
    lib.vn_test_control(lib.VN_TEST_SPLIT_SUBMITS_EVERYWHERE, 1)
    try:
        u32 = [device.upload(np.arange(N, dtype=np.uint32) + 7 * i) for i in range(3)]
        f32 = [device.upload(np.linspace(-1, 1, N, dtype=np.float32) + i) for i in range(3)]
        model_u = [np.arange(N, dtype=np.uint32) + 7 * i for i in range(3)]
        model_f = [np.linspace(-1, 1, N, dtype=np.float32) + i for i in range(3)]
        seq = device.sequence()
        ops = []
        for step in steps:
            kind = step[0]
            if kind == "inc":
                seq.add(kit[0], [], [u32[step[1]]])
            elif kind == "double":
                src, dst, clears = step[1], step[2], step[3]
                if src == dst:
                    continue  # a buffer bound as input and output at once is invalid
                seq.add(kit[1], [f32[src]], [f32[dst]], clear_outputs=clears)
            elif kind == "copy":
                if step[1] == step[2]:
                    continue
                seq.copy(u32[step[1]], u32[step[2]])
            else:
                seq.clear(u32[step[1]])
            ops.append(step)
        if not ops:
            return

        def model_once() -> None:
            for step in ops:
                if step[0] == "inc":
                    model_u[step[1]] += 1
                elif step[0] == "double":
                    model_f[step[2]] = model_f[step[1]] * 2
                elif step[0] == "copy":
                    model_u[step[2]] = model_u[step[1]].copy()
                else:
                    model_u[step[1]][:] = 0

        for _ in range(2):  # whole, then (when long enough) split
            seq.replay(n).wait()
            for _ in range(n):
                model_once()
        for i in range(3):
            np.testing.assert_array_equal(np.frombuffer(u32[i].read(), np.uint32), model_u[i])
            np.testing.assert_array_equal(np.frombuffer(f32[i].read(), np.float32), model_f[i])
    finally:
        lib.vn_test_control(lib.VN_TEST_SPLIT_SUBMITS_EVERYWHERE, 0)


def test_a_split_replay_runs_as_one_unit_beside_other_threads_replays_and_writes(
    device: vn.Device, kit: tuple[vn.Pipeline, vn.Pipeline], split_everywhere: None
) -> None:
    # Two threads replay sequences that share a scratch buffer (clear it, count into it
    # 40 times, copy it out), and a third writes into it: split into parts, a replay must
    # still run as one command buffer would, with nothing of another thread's between
    # its parts (found by attacking the first version, which held nothing across parts:
    # 5 of 80 results read 24, 56, 57 or 73 instead of 40).
    import threading

    tmp = device.alloc(4 * N)
    seqs, outs = [], []
    for _ in range(2):
        out = device.alloc(4 * N)
        seq = device.sequence()
        seq.clear(tmp)
        for _ in range(40):
            seq.add(kit[0], [], [tmp])
        seq.copy(tmp, out)
        seq.replay().wait()  # whole once: later replays split
        seqs.append(seq)
        outs.append(out)
    wrong: list[int] = []
    stop = threading.Event()

    def replays(k: int) -> None:
        for _ in range(40):
            seqs[k].replay().wait()
            value = int(np.frombuffer(outs[k].read(), np.uint32)[0])
            if value != 40:
                wrong.append(value)

    def writes() -> None:
        junk = np.full(N, 1000, np.uint32)
        while not stop.is_set():
            tmp.write(junk)

    threads = [threading.Thread(target=replays, args=(k,)) for k in range(2)]
    writer = threading.Thread(target=writes)
    for t in (*threads, writer):
        t.start()
    for t in threads:
        t.join()
    stop.set()
    writer.join()
    assert wrong == [], f"split replays interleaved with other work: {sorted(set(wrong))}"


# ---- edges ---------------------------------------------------------------------------


@pytest.mark.parametrize(("steps", "n"), [(1, 256), (1, 32), (2, 128), (32, 8), (255, 1), (256, 1), (257, 1)])
def test_split_replays_at_the_step_bound_run_every_step_once(
    device: vn.Device, kit: tuple[vn.Pipeline, vn.Pipeline], split_everywhere: None, steps: int, n: int
) -> None:
    seq, acc = counting_sequence(device, kit, steps)
    seq.replay(n).wait()  # whole
    assert submits_of(seq, n) > 1
    assert (u32(acc) == 3 * steps * n).all()


def test_a_replay_past_the_bound_is_refused_before_anything_is_submitted(
    device: vn.Device, kit: tuple[vn.Pipeline, vn.Pipeline], split_everywhere: None
) -> None:
    seq, acc = counting_sequence(device, kit, 2)
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
    assert submits_of(seq) > 1
    assert (u32(acc) == 3 * sum(ks)).all()


def test_steps_on_views_clears_and_copies_split_like_whole(device: vn.Device, split_everywhere: None) -> None:
    inc = device.compile(COUNTER, preserve=["acc"])
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
    inc = device.compile(COUNTER, preserve=["acc"])
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


@pytest.mark.timestamps
def test_timed_replays_after_split_ones_are_whole_and_timed(
    device: vn.Device, kit: tuple[vn.Pipeline, vn.Pipeline], split_everywhere: None
) -> None:
    require_timestamps(device)
    seq, acc = counting_sequence(device, kit, 40)
    seq.replay().wait()
    assert submits_of(seq) > 1
    t = seq.replay(timing=True)
    t.wait()
    assert t.gpu_time_ns is not None and t.gpu_time_ns > 0
    d = seq.replay(timing="dispatch")
    d.wait()
    times = d.dispatch_times_ns
    assert times is not None
    assert len(times) == 40 and all(x >= 0 for x in times)
    assert submits_of(seq) > 1  # still split afterwards
    assert (u32(acc) == 40 * 7).all()


def test_live_objects_stay_flat_over_many_split_replays(
    device: vn.Device, kit: tuple[vn.Pipeline, vn.Pipeline], split_everywhere: None
) -> None:
    seq, acc = counting_sequence(device, kit, 33)
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
