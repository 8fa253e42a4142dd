"""Long sequence replays in several submits (csrc/replay.c, replay_in_submits).

On a GPU an untimed replay of VN_SPLIT_MIN_STEPS steps or more, of steps already
replayed whole once, goes in several submits (8 steps, then twice as many each time),
so the GPU starts while the rest is encoded. CPU adapters (lavapipe, CI's) never split,
since each of their submits waits for the one before; these tests switch splitting on
there with vn_debug_split_submits_everywhere, so the split path runs in CI too.

Submission indices count queue submits, so the difference between two replays' indices,
with nothing submitted in between, is the number of submits the later one used.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import vyre_native as vn
from hypothesis import given, settings
from hypothesis import strategies as st
from vyre_native._lib import lib
from wgsl_kernels import DOUBLE

# acc[i] += 1 (an in/out state: never cleared)
INCREMENT = """
@group(0) @binding(0) var<storage, read_write> acc: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < arrayLength(&acc)) { acc[g.x] = acc[g.x] + 1u; }
}
"""

N = 64  # elements per buffer


@pytest.fixture
def split_everywhere() -> Iterator[None]:
    lib.vn_debug_split_submits_everywhere(1)
    try:
        yield
    finally:
        lib.vn_debug_split_submits_everywhere(0)


@pytest.fixture(scope="module")
def kit(device: vn.Device) -> tuple[vn.Pipeline, vn.Pipeline]:
    return device.compile(INCREMENT, preserve=["acc"]), device.compile(DOUBLE)


def submits_of(seq: vn.Sequence, n: int = 1) -> int:
    """How many queue submits one replay of seq used (it runs and is waited for)."""
    before = seq.replay(n)
    before.wait()
    after = seq.replay(n)
    after.wait()
    return int(after.index - before.index)


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


def test_timed_replays_are_one_submit(device: vn.Device, kit: tuple[vn.Pipeline, vn.Pipeline], split_everywhere: None) -> None:
    if not device.timestamps:
        pytest.skip("the adapter has no timestamp queries")
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
    lib.vn_debug_split_submits_everywhere(1)
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
        lib.vn_debug_split_submits_everywhere(0)


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
