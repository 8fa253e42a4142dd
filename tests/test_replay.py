"""Replayable recordings, sequences, batched submits, submissions and async readback.

Runs on any Vulkan adapter; on CI that is Mesa lavapipe (a CPU Vulkan driver).
Every kernel result is compared against numpy. Note: lavapipe does not zero
``var<workgroup>`` memory, so every kernel here writes it before reading it.
"""

from __future__ import annotations

import gc
import threading
import time

import numpy as np
import pytest
from support.child import run_child
from support.kernels import COUNTER, DOUBLE, DOUBLE_IN_PLACE, SCALE, elementwise

import vyre_native as vn

# ---------------------------------------------------------------- shaders used here

# out[i] += inp[i] * 2 on a non-preserved output: the result shows whether out was
# cleared before the launch (in*2) or kept what an earlier launch left (k*in*2).
ADD_DOUBLE = elementwise("out[i] = out[i] + inp[i] * 2.0;", "read inp", "read_write out")

# Two outputs: lo = inp * 2, hi = inp + 1.
TWO_OUTPUTS = elementwise(
    "lo[i] = inp[i] * 2.0; hi[i] = inp[i] + 1.0;", "read inp", "read_write lo", "read_write hi"
)

# acc[i] += params.step (preserve=["acc"]): shows in which order params writes land.
ADD_PARAM = """
struct Params { step: u32, pad0: u32, pad1: u32, pad2: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> acc: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < arrayLength(&acc)) { acc[i] = acc[i] + params.step; }
}
"""

# Every invocation that runs writes args[1] (== 1) to its cell: the output shows
# how many workgroups of 64 the indirect dispatch launched.
INDIRECT_MARK = """
@group(0) @binding(0) var<storage, read> args: array<u32, 3>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < arrayLength(&out)) { out[i] = args[1]; }
}
"""

# Stage 1 of a reduction: one partial sum per workgroup of 256 (shared-memory tree).
REDUCE_PARTIALS = """
@group(0) @binding(0) var<storage, read> data: array<u32>;
@group(0) @binding(1) var<storage, read_write> partials: array<u32>;
var<workgroup> scratch: array<u32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(local_invocation_index) lid: u32,
        @builtin(workgroup_id) wid: vec3<u32>) {
    var v = 0u;
    if (gid.x < arrayLength(&data)) { v = data[gid.x]; }
    scratch[lid] = v;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s = s >> 1u) {
        if (lid < s) { scratch[lid] = scratch[lid] + scratch[lid + s]; }
        workgroupBarrier();
    }
    if (lid == 0u && wid.x < arrayLength(&partials)) { partials[wid.x] = scratch[0]; }
}
"""

# Stage 2: one workgroup sums every partial into total[0].
REDUCE_TOTAL = """
@group(0) @binding(0) var<storage, read> partials: array<u32>;
@group(0) @binding(1) var<storage, read_write> total: array<u32>;
var<workgroup> scratch: array<u32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32) {
    var v = 0u;
    for (var i = lid; i < arrayLength(&partials); i = i + 256u) { v = v + partials[i]; }
    scratch[lid] = v;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s = s >> 1u) {
        if (lid < s) { scratch[lid] = scratch[lid] + scratch[lid + s]; }
        workgroupBarrier();
    }
    if (lid == 0u) { total[0] = scratch[0]; }
}
"""

# One Hillis-Steele step: dst[i] = src[i] + src[i - d] (i >= d).
SCAN_STEP = elementwise(
    "var v = src[i]; if (i >= p.d) { v = v + src[i - p.d]; } dst[i] = v;",
    *("read src", "uniform p: Params", "read_write dst"),
    ty="u32",
    head="struct Params { d: u32, pad0: u32, pad1: u32, pad2: u32 }",
)

# Writes 7 to the first half of out, 9 to the second half.
FIRST_HALF = elementwise("out[i] = 7u;", "read_write out", ty="u32", guard="i < arrayLength(&out) / 2u")

SECOND_HALF = elementwise(
    "out[i] = 9u;", "read_write out", ty="u32", guard="i >= arrayLength(&out) / 2u && i < arrayLength(&out)"
)

# One invocation writes the indirect args (5, 1, 1) for a later step to consume.
WRITE_ARGS = """
@group(0) @binding(0) var<storage, read_write> args: array<u32, 3>;

@compute @workgroup_size(1)
fn main() { args[0] = 5u; args[1] = 1u; args[2] = 1u; }
"""

LIVE_KEYS = ("recordings", "submissions", "bind_groups", "buffers")


def f32(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype=np.float32)


def u32(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype=np.uint32)


def groups(n: int, size: int = 64) -> tuple[int, int, int]:
    return (-(-n // size), 1, 1)


def uniform_f32(x: float) -> np.ndarray:
    return np.array([x, 0, 0, 0], np.float32)


def uniform_u32(x: int) -> np.ndarray:
    return np.array([x, 0, 0, 0], np.uint32)


def wait_done(sub: vn.Submission, limit_s: float = 30.0) -> None:
    """Poll ``sub.done`` (which never blocks) until it is True."""
    deadline = time.monotonic() + limit_s
    while not sub.done:
        assert time.monotonic() < deadline, "submission never reported done"
        time.sleep(0.001)


def settle(device: vn.Device) -> None:
    """Let everything in flight on ``device`` finish and every dropped handle go."""
    gc.collect()
    device.wait_idle()
    wait_done(device.sequence().clear(device.alloc(4)).replay())
    gc.collect()


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def acc_prog(device: vn.Device) -> vn.Pipeline:
    return device.compile(COUNTER, preserve=["acc"])


@pytest.fixture(scope="module")
def dbl_inplace_prog(device: vn.Device) -> vn.Pipeline:
    return device.compile(DOUBLE_IN_PLACE, preserve=["acc"])


@pytest.fixture(scope="module")
def two_out_prog(device: vn.Device) -> vn.Pipeline:
    return device.compile(TWO_OUTPUTS)


@pytest.fixture(scope="module")
def other_device() -> vn.Device:
    dev = vn.Device()
    yield dev
    dev.close()


@pytest.fixture
def two_out_rec(device: vn.Device, two_out_prog: vn.Pipeline):
    host = np.linspace(-4, 4, 200, dtype=np.float32)
    lo, hi = device.alloc(host.nbytes), device.alloc(host.nbytes)
    rec = two_out_prog.record([device.upload(host)], [lo, hi], workgroups=groups(host.size))
    rec.replay().wait()
    return rec, host, lo, hi


# ================================================================ Recording


def test_pipeline_record_returns_a_recording(device: vn.Device, acc_prog: vn.Pipeline) -> None:
    rec = acc_prog.record([], [device.alloc(256)], workgroups=(1, 1, 1))
    assert isinstance(rec, vn.Recording)


def test_replay_returns_a_submission_with_int_index_that_is_done_after_wait(
    device: vn.Device, acc_prog: vn.Pipeline
) -> None:
    rec = acc_prog.record([], [device.alloc(256)], workgroups=(1, 1, 1))
    sub = rec.replay()
    assert isinstance(sub, vn.Submission)
    assert isinstance(sub.index, int)
    assert isinstance(sub.done, bool)
    assert sub.wait() is None
    assert sub.done is True
    assert sub.wait(timeout=0.0) is None  # done work never times out


def test_later_replays_have_larger_submission_indices(device: vn.Device, acc_prog: vn.Pipeline) -> None:
    rec = acc_prog.record([], [device.alloc(256)], workgroups=(1, 1, 1))
    first, second = rec.replay(), rec.replay()
    assert second.index > first.index
    second.wait()
    assert first.done and second.done


@pytest.fixture()
def counting(device: vn.Device, acc_prog: vn.Pipeline) -> tuple[np.ndarray, vn.Recording]:
    """(start, rec): rec adds 1 to each of 1000 u32 (a preserved accumulator) holding `start`."""
    start = np.arange(1000, dtype=np.uint32)
    return start, acc_prog.record([], [device.upload(start)], workgroups=groups(start.size))


def test_replay_n_gives_n_increments_of_a_preserved_accumulator(
    counting: tuple[np.ndarray, vn.Recording],
) -> None:
    start, rec = counting
    rec.replay(7).wait()
    np.testing.assert_array_equal(u32(rec.read_output(0)), start + 7)


def test_n_calls_of_replay_give_n_increments_of_a_preserved_accumulator(
    counting: tuple[np.ndarray, vn.Recording],
) -> None:
    start, rec = counting
    for _ in range(7):
        rec.replay()
    np.testing.assert_array_equal(u32(rec.read_output(0)), start + 7)


def test_replay_n_of_a_non_accumulating_kernel_gives_the_single_result(
    device: vn.Device, double: vn.Pipeline
) -> None:
    host = np.linspace(-1, 1, 300, dtype=np.float32)
    rec = double.record([device.upload(host)], [device.alloc(host.nbytes)], workgroups=groups(host.size))
    rec.replay(5).wait()
    np.testing.assert_array_equal(f32(rec.read_output(0)), host * 2)


def test_non_preserved_output_is_cleared_before_each_launch_of_replay_n(device: vn.Device) -> None:
    prog = device.compile(ADD_DOUBLE)  # out += in*2: only a clear before every launch gives in*2
    host = np.linspace(-1, 1, 300, dtype=np.float32)
    out = device.upload(np.full(host.size, 100.0, np.float32))  # stale data in the output
    rec = prog.record([device.upload(host)], [out], workgroups=groups(host.size))
    rec.replay(5).wait()
    np.testing.assert_array_equal(f32(rec.read_output(0)), host * 2)


def test_non_preserved_output_is_cleared_before_each_separate_replay(device: vn.Device) -> None:
    prog = device.compile(ADD_DOUBLE)
    host = np.linspace(-1, 1, 300, dtype=np.float32)
    rec = prog.record([device.upload(host)], [device.alloc(host.nbytes)], workgroups=groups(host.size))
    for _ in range(4):
        rec.replay()
    np.testing.assert_array_equal(f32(rec.read_output(0)), host * 2)


def test_recording_outputs_are_the_output_buffers_in_order(device: vn.Device, two_out_rec) -> None:
    rec, _, lo, hi = two_out_rec
    outs = rec.outputs
    assert [type(b) for b in outs] == [vn.Buffer, vn.Buffer]
    assert [b.allocation_identity for b in outs] == [lo.allocation_identity, hi.allocation_identity]
    outs.clear()  # a copy: the recording's own list is untouched
    assert len(rec.outputs) == 2


def test_read_output_returns_each_output(two_out_rec) -> None:
    rec, host, _, _ = two_out_rec
    np.testing.assert_array_equal(f32(rec.read_output(0)), host * 2)
    np.testing.assert_array_equal(f32(rec.read_output(1)), host + 1)


def test_read_output_into_fills_a_numpy_array(two_out_rec) -> None:
    rec, host, _, _ = two_out_rec
    out = np.empty(host.size, np.float32)
    assert rec.read_output_into(1, out) == host.nbytes
    np.testing.assert_array_equal(out, host + 1)


def test_read_output_async_result_returns_the_output(two_out_rec) -> None:
    rec, host, _, _ = two_out_rec
    pending = rec.read_output_async(0)
    assert isinstance(pending, vn.PendingRead)
    np.testing.assert_array_equal(f32(pending.result()), host * 2)


def test_read_output_async_result_into_fills_a_numpy_array(two_out_rec) -> None:
    rec, host, _, _ = two_out_rec
    out = np.empty(host.size, np.float32)
    assert rec.read_output_async(1).result_into(out) == host.nbytes
    np.testing.assert_array_equal(out, host + 1)


def test_a_recording_counts_and_sizes_its_outputs_as_bound(device: vn.Device) -> None:
    prog = device.compile(ADD_DOUBLE)
    host = np.arange(16, dtype=np.float32)
    arena = device.alloc(4096)
    rec = prog.record([device.upload(host)], [arena.view(256, host.nbytes)], workgroups=groups(host.size))
    assert rec.output_count == 1
    assert rec.output_byte_len(0) == host.nbytes  # the view's own size, not its buffer's
    rec.replay().wait()
    np.testing.assert_array_equal(rec.read_output(0, np.float32), host * 2)
    with pytest.raises(vn.OutputIndexError, match=r"output index 1 is out of range for a recording with 1 output"):
        rec.output_byte_len(1)


@pytest.mark.parametrize("index", [2, 100, -1])
def test_read_output_index_out_of_range_raises_output_index_error(two_out_rec, index: int) -> None:
    rec = two_out_rec[0]
    with pytest.raises(vn.OutputIndexError):
        rec.read_output(index)
    with pytest.raises(IndexError):
        rec.read_output(index)
    with pytest.raises(vn.OutputIndexError):
        rec.read_output_into(index, bytearray(4096))
    with pytest.raises(vn.OutputIndexError):
        rec.read_output_async(index)


@pytest.mark.parametrize("n", [0, -1])
def test_recording_replay_of_non_positive_count_raises_value_error(
    device: vn.Device, acc_prog: vn.Pipeline, n: int
) -> None:
    acc = device.alloc(256)
    rec = acc_prog.record([], [acc], workgroups=(1, 1, 1))
    with pytest.raises(vn.InvalidArgumentError):
        rec.replay(n)
    with pytest.raises(ValueError):
        rec.replay(n)
    np.testing.assert_array_equal(u32(acc.read()), 0)  # nothing ran


@pytest.mark.parametrize("n", ["x", 2.0, None])
def test_recording_replay_of_a_non_int_count_raises_type_error(
    device: vn.Device, acc_prog: vn.Pipeline, n: object
) -> None:
    rec = acc_prog.record([], [device.alloc(256)], workgroups=(1, 1, 1))
    with pytest.raises(TypeError):
        rec.replay(n)


def test_replay_count_above_u32_max_raises_value_error(device: vn.Device, acc_prog: vn.Pipeline) -> None:
    rec = acc_prog.record([], [device.alloc(256)])
    with pytest.raises(ValueError):
        rec.replay(2**32)


def test_recording_replays_after_its_pipeline_was_released(device: vn.Device) -> None:
    prog = device.compile(COUNTER, preserve=["acc"])
    acc = device.alloc(4 * 64)
    rec = prog.record([], [acc])
    prog.release()
    gc.collect()
    rec.replay(3).wait()
    np.testing.assert_array_equal(u32(acc.read()), 3)


def test_recording_output_stays_readable_after_the_user_released_the_buffer(
    device: vn.Device, acc_prog: vn.Pipeline
) -> None:
    acc = device.alloc(4 * 64)
    rec = acc_prog.record([], [acc])
    acc.release()
    gc.collect()
    rec.replay(2)
    np.testing.assert_array_equal(u32(rec.read_output(0)), 2)


# ================================================================ host writes between replays


def test_params_write_between_replays_changes_the_result(device: vn.Device) -> None:
    prog = device.compile(SCALE)
    host = np.linspace(-3, 3, 500, dtype=np.float32)
    params = device.upload(uniform_f32(2.0))
    rec = prog.record(
        [device.upload(host)], [device.alloc(host.nbytes)], params=params, workgroups=groups(host.size)
    )
    rec.replay()
    np.testing.assert_array_equal(f32(rec.read_output(0)), host * np.float32(2.0))
    params.write(uniform_f32(-5.5))
    rec.replay()
    np.testing.assert_array_equal(f32(rec.read_output(0)), host * np.float32(-5.5))


def test_params_writes_between_unwaited_replays_land_in_queue_order(device: vn.Device) -> None:
    prog = device.compile(ADD_PARAM, preserve=["acc"])
    params = device.upload(uniform_u32(2))
    acc = device.alloc(4 * 256)
    rec = prog.record([], [acc], params=params, workgroups=(4, 1, 1))
    rec.replay()  # +2
    params.write(uniform_u32(30))
    rec.replay(2)  # +30 +30
    params.write(uniform_u32(400))
    rec.replay()  # +400
    np.testing.assert_array_equal(u32(rec.read_output(0)), 2 + 30 + 30 + 400)


def test_indirect_args_write_between_replays_changes_the_workgroup_count(device: vn.Device) -> None:
    prog = device.compile(INDIRECT_MARK, indirect=("args", 0))
    n = 64 * 16
    args = device.upload(np.array([3, 1, 1], np.uint32))
    rec = prog.record([args], [device.alloc(4 * n)], workgroups=(0, 0, 0))
    for k in (3, 9, 2, 16):
        args.write(np.array([k, 1, 1], np.uint32))
        rec.replay()
        expect = np.zeros(n, np.uint32)
        expect[: 64 * k] = 1
        np.testing.assert_array_equal(u32(rec.read_output(0)), expect, err_msg=f"{k} workgroups")


# ================================================================ Submission.wait


def test_wait_with_zero_timeout_on_unfinished_work_raises_timeout_error(
    device: vn.Device, acc_prog: vn.Pipeline
) -> None:
    n = 1 << 20
    acc = device.alloc(4 * n)
    rec = acc_prog.record([], [acc], workgroups=groups(n))
    sub = rec.replay(40)  # ~0.5 s of work on lavapipe
    with pytest.raises(vn.WaitTimeoutError) as info:
        sub.wait(timeout=0.0)
    assert isinstance(info.value, TimeoutError)
    sub.wait()  # the work kept running and completes
    assert sub.done
    got = u32(acc.read())
    assert got[0] == 40 and got[-1] == 40 and np.all(got == 40)


@pytest.mark.parametrize("timeout", [-1, -0.5])
def test_wait_with_negative_timeout_raises_value_error(
    device: vn.Device, acc_prog: vn.Pipeline, timeout: float
) -> None:
    sub = acc_prog.record([], [device.alloc(256)], workgroups=(1, 1, 1)).replay()
    with pytest.raises(ValueError):
        sub.wait(timeout=timeout)
    with pytest.raises(vn.InvalidArgumentError):
        sub.wait(timeout=timeout)
    sub.wait()


# ================================================================ Sequences


def test_sequence_two_stage_reduction_chains_partials_into_a_total(device: vn.Device) -> None:
    stage1, stage2 = device.compile(REDUCE_PARTIALS), device.compile(REDUCE_TOTAL)
    rng = np.random.default_rng(7)
    data = rng.integers(0, 1000, 100_000, dtype=np.uint32)
    nparts = -(-data.size // 256)
    partials, total = device.alloc(4 * nparts), device.alloc(4)
    seq = device.sequence()
    seq.add(stage1, [device.upload(data)], [partials], workgroups=(nparts, 1, 1))
    seq.add(stage2, [partials], [total], workgroups=(1, 1, 1))
    seq.replay().wait()
    padded = np.zeros(nparts * 256, np.uint64)
    padded[: data.size] = data
    np.testing.assert_array_equal(u32(partials.read()), padded.reshape(nparts, 256).sum(axis=1))
    assert int(u32(total.read())[0]) == int(data.sum(dtype=np.uint64))


def test_sequence_hillis_steele_prefix_sum_with_ping_pong_copies(device: vn.Device) -> None:
    step = device.compile(SCAN_STEP)
    rng = np.random.default_rng(11)
    data = rng.integers(0, 100, 1000, dtype=np.uint32)
    a, b = device.upload(data), device.alloc(data.nbytes)
    seq = device.sequence()
    d = 1
    while d < data.size:
        seq.add(
            step,
            [a],
            [b],
            params=device.upload(uniform_u32(d)),
            workgroups=groups(data.size),
            clear_outputs=False,
        )
        seq.copy(b, a)
        d *= 2
    assert len(seq) == 20
    seq.replay().wait()
    np.testing.assert_array_equal(u32(a.read()), np.cumsum(data, dtype=np.uint32))


def test_sequence_copy_copies_exactly_the_given_range(device: vn.Device) -> None:
    src_host = np.arange(64, dtype=np.uint32) + 1000
    dst_host = np.full(64, 0xDEADBEEF, np.uint32)
    src, dst = device.upload(src_host), device.upload(dst_host)
    seq = device.sequence().copy(src, dst, nbytes=40, src_offset=8, dst_offset=100)
    seq.replay().wait()
    expect = dst_host.copy()
    expect[25:35] = src_host[2:12]
    np.testing.assert_array_equal(u32(dst.read()), expect)
    np.testing.assert_array_equal(u32(src.read()), src_host)


def test_sequence_copy_without_nbytes_copies_as_much_as_fits(device: vn.Device) -> None:
    src_host = np.arange(16, dtype=np.uint32) + 1
    src, dst = device.upload(src_host), device.alloc(4 * 8)
    device.sequence().copy(src, dst, src_offset=16).replay().wait()
    np.testing.assert_array_equal(u32(dst.read()), src_host[4:12])


def test_sequence_clear_zeroes_the_buffer(device: vn.Device) -> None:
    buf = device.upload(np.arange(1, 301, dtype=np.uint32))
    device.sequence().clear(buf).replay().wait()
    np.testing.assert_array_equal(u32(buf.read()), 0)


def test_sequence_replay_n_repeats_every_step_n_times(device: vn.Device, acc_prog: vn.Pipeline) -> None:
    start = np.arange(500, dtype=np.uint32)
    acc = device.upload(start)
    seq = device.sequence().add(acc_prog, [], [acc], workgroups=groups(start.size))
    assert len(seq) == 1
    seq.replay(3).wait()
    np.testing.assert_array_equal(u32(acc.read()), start + 3)


def test_sequence_replay_n_repeats_dispatches_and_copies_in_order(
    device: vn.Device, acc_prog: vn.Pipeline, dbl_inplace_prog: vn.Pipeline
) -> None:
    acc, snap = device.upload(np.ones(64, np.uint32)), device.alloc(4 * 64)
    seq = device.sequence()
    seq.add(acc_prog, [], [acc])  # +1
    seq.copy(acc, snap)
    seq.add(dbl_inplace_prog, [], [acc])  # *2
    seq.replay(3).wait()
    # 1 -> 2 (snap 2) -> 4 -> 5 (snap 5) -> 10 -> 11 (snap 11) -> 22
    np.testing.assert_array_equal(u32(acc.read()), 22)
    np.testing.assert_array_equal(u32(snap.read()), 11)


def test_len_of_a_sequence_counts_dispatches_copies_and_clears(
    device: vn.Device, acc_prog: vn.Pipeline
) -> None:
    seq = device.sequence()
    assert len(seq) == 0
    a, b = device.alloc(256), device.alloc(256)
    assert seq.add(acc_prog, [], [a]) is seq
    assert len(seq) == 1
    assert seq.copy(a, b) is seq
    assert seq.clear(b) is seq
    assert len(seq) == 3


@pytest.mark.parametrize(("clear_outputs", "left"), [(True, 0), (False, 7)], ids=["zeroes", "keeps"])
def test_sequence_step_clear_outputs_decides_whether_an_earlier_steps_output_stays(
    device: vn.Device, clear_outputs: bool, left: int
) -> None:
    # FIRST_HALF writes 7 into the lower half, SECOND_HALF 9 into the upper: the lower half
    # is what the second step's clear decides.
    first, second = device.compile(FIRST_HALF), device.compile(SECOND_HALF)
    n = 256
    out = device.alloc(4 * n)
    seq = device.sequence()
    seq.add(first, [], [out], workgroups=groups(n))
    seq.add(second, [], [out], workgroups=groups(n), clear_outputs=clear_outputs)
    seq.replay().wait()
    expect = np.full(n, left, np.uint32)
    expect[n // 2 :] = 9
    np.testing.assert_array_equal(u32(out.read()), expect)


def test_sequence_clear_outputs_false_keeps_output_contents_across_replays(device: vn.Device) -> None:
    prog = device.compile(ADD_DOUBLE)  # out += in*2, out not preserved
    host = np.arange(128, dtype=np.float32)
    inp, out = device.upload(host), device.upload(np.full(128, 1.0, np.float32))
    seq_keep = device.sequence().add(prog, [inp], [out], workgroups=groups(128), clear_outputs=False)
    seq_keep.replay(3).wait()
    np.testing.assert_array_equal(f32(out.read()), 1.0 + 3 * host * 2)
    seq_clear = device.sequence().add(prog, [inp], [out], workgroups=groups(128))
    seq_clear.replay(3).wait()
    np.testing.assert_array_equal(f32(out.read()), host * 2)


def test_empty_sequence_replay_raises_value_error(device: vn.Device) -> None:
    seq = device.sequence()
    with pytest.raises(vn.InvalidArgumentError):
        seq.replay()
    with pytest.raises(ValueError):
        seq.replay()


@pytest.mark.parametrize("n", [0, -1])
def test_sequence_replay_of_non_positive_count_raises_value_error(device: vn.Device, n: int) -> None:
    seq = device.sequence().clear(device.alloc(16))
    with pytest.raises(ValueError):
        seq.replay(n)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"nbytes": 6},
        {"nbytes": 8, "src_offset": 2},
        {"nbytes": 8, "dst_offset": 3},
        {"src_offset": 1},
    ],
    ids=["nbytes", "src_offset", "dst_offset", "src_offset_whole"],
)
def test_sequence_copy_with_unaligned_offset_or_length_raises_value_error(device: vn.Device, kwargs) -> None:
    seq = device.sequence()
    src, dst = device.alloc(64), device.alloc(64)
    with pytest.raises(vn.InvalidArgumentError):
        seq.copy(src, dst, **kwargs)
    with pytest.raises(ValueError):
        seq.copy(src, dst, **kwargs)
    assert len(seq) == 0


def test_sequence_replays_correctly_after_the_user_released_its_buffers(
    device: vn.Device, double: vn.Pipeline
) -> None:
    host = np.linspace(0, 10, 256, dtype=np.float32)
    inp, out, result = device.upload(host), device.alloc(host.nbytes), device.alloc(host.nbytes)
    seq = device.sequence()
    seq.add(double, [inp], [out], workgroups=groups(host.size))
    seq.copy(out, result)
    inp.release()
    out.release()
    assert inp.released and out.released
    gc.collect()
    seq.replay(2).wait()
    np.testing.assert_array_equal(f32(result.read()), host * 2)


def test_sequence_copy_onto_the_same_buffer_raises_value_error(device: vn.Device) -> None:
    buf = device.alloc(64)
    seq = device.sequence()
    with pytest.raises(ValueError):
        seq.copy(buf, buf, nbytes=16, src_offset=0, dst_offset=32)
    assert len(seq) == 0


def test_sequence_indirect_args_written_by_an_earlier_step_drive_a_later_dispatch(device: vn.Device) -> None:
    writer, marker = device.compile(WRITE_ARGS), device.compile(INDIRECT_MARK, indirect=("args", 0))
    args, out = device.alloc(12), device.alloc(4 * 1024)
    seq = device.sequence().add(writer, [], [args]).add(marker, [args], [out])
    seq.replay().wait()
    expect = np.zeros(1024, np.uint32)
    expect[: 5 * 64] = 1
    np.testing.assert_array_equal(u32(args.read()), [5, 1, 1])
    np.testing.assert_array_equal(u32(out.read()), expect)


def test_replay_of_a_released_sequence_raises_released_error(device: vn.Device) -> None:
    seq = device.sequence().clear(device.alloc(16))
    seq.release()
    with pytest.raises(vn.ReleasedError):
        seq.replay()
    with pytest.raises(vn.ReleasedError):
        len(seq)


def test_sequence_add_of_a_pipeline_from_another_device_raises_binding_error(
    device: vn.Device, other_device: vn.Device
) -> None:
    foreign = other_device.compile(COUNTER, preserve=["acc"])
    seq = device.sequence()
    with pytest.raises(vn.BindingError):
        seq.add(foreign, [], [device.alloc(256)])
    with pytest.raises(vn.BindingError):
        seq.add(foreign, [], [other_device.alloc(256)])
    assert len(seq) == 0


def test_sequence_copy_of_a_buffer_from_another_device_raises_binding_error(
    device: vn.Device, other_device: vn.Device
) -> None:
    seq = device.sequence()
    with pytest.raises(vn.BindingError):
        seq.copy(other_device.alloc(64), device.alloc(64))
    assert len(seq) == 0


# ================================================================ Device.submit


@pytest.fixture()
def order_work(device: vn.Device, acc_prog: vn.Pipeline, dbl_inplace_prog: vn.Pipeline) -> tuple:
    """(start, acc, snap, inc, seq, dbl): three pieces of work on one u32 buffer `acc`
    (holding `start`) whose order shows: inc adds 1, seq copies acc into `snap`, dbl
    doubles it."""
    start = np.arange(256, dtype=np.uint32)
    acc, snap = device.upload(start), device.alloc(start.nbytes)
    inc = acc_prog.record([], [acc], workgroups=groups(start.size))
    seq = device.sequence().copy(acc, snap)
    dbl = dbl_inplace_prog.record([], [acc], workgroups=groups(start.size))
    return start, acc, snap, inc, seq, dbl


def test_submit_returns_one_submission_and_applies_work_in_list_order(
    device: vn.Device, order_work: tuple
) -> None:
    start, acc, snap, inc, seq, dbl = order_work
    sub = device.submit([inc, seq, dbl])
    assert isinstance(sub, vn.Submission)
    sub.wait()
    assert sub.done
    np.testing.assert_array_equal(u32(snap.read()), start + 1)
    np.testing.assert_array_equal(u32(acc.read()), (start + 1) * 2)


def test_submit_in_the_other_order_gives_the_other_result(device: vn.Device, order_work: tuple) -> None:
    start, acc, snap, inc, seq, dbl = order_work
    device.submit([dbl, seq, inc]).wait()
    np.testing.assert_array_equal(u32(snap.read()), start * 2)
    np.testing.assert_array_equal(u32(acc.read()), start * 2 + 1)


def test_submit_of_the_same_recording_twice_runs_it_twice(device: vn.Device, acc_prog: vn.Pipeline) -> None:
    acc = device.alloc(4 * 64)
    inc = acc_prog.record([], [acc])
    seq = device.sequence().add(acc_prog, [], [acc])
    device.submit([inc, seq, inc, seq]).wait()
    np.testing.assert_array_equal(u32(acc.read()), 4)


def test_submit_of_an_empty_list_raises_value_error(device: vn.Device) -> None:
    with pytest.raises(vn.InvalidArgumentError):
        device.submit([])
    with pytest.raises(ValueError):
        device.submit([])


def test_submit_of_an_empty_sequence_beside_work_runs_the_work(device: vn.Device, acc_prog) -> None:
    # The pass walk took the step index modulo the sequence's length: with an empty
    # sequence in a batch that divided by zero (UBSan saw it, in test_stateful).
    acc = device.alloc(256)
    rec = acc_prog.record([], [acc])
    device.submit([device.sequence(), rec, device.sequence()]).wait()
    np.testing.assert_array_equal(u32(acc.read()), 1)


@pytest.mark.parametrize("item", [object(), None, 3])
def test_submit_of_a_non_recording_item_raises_type_error(device: vn.Device, acc_prog, item: object) -> None:
    rec = acc_prog.record([], [device.alloc(256)])
    with pytest.raises(TypeError):
        device.submit([item])
    with pytest.raises(TypeError):
        device.submit([rec, item])


def test_submit_of_a_bare_recording_not_in_a_list_raises_type_error(device: vn.Device, acc_prog) -> None:
    rec = acc_prog.record([], [device.alloc(256)])
    with pytest.raises(TypeError):
        device.submit(rec)


def test_submit_of_work_from_another_device_raises_binding_error(
    device: vn.Device, other_device: vn.Device
) -> None:
    foreign = other_device.compile(COUNTER, preserve=["acc"]).record([], [other_device.alloc(256)])
    with pytest.raises(vn.BindingError):
        device.submit([foreign])


# ================================================================ async readback


def test_many_read_async_in_flight_each_return_their_buffer(device: vn.Device) -> None:
    words = (1 << 20) // 4
    hosts = [np.arange(words, dtype=np.uint32) * np.uint32(k + 1) + np.uint32(k) for k in range(16)]
    bufs = [device.upload(h) for h in hosts]
    pending = [b.read_async() for b in bufs]  # all 16 in flight before any completes
    assert all(p.byte_len == 1 << 20 for p in pending)
    for k in reversed(range(16)):
        np.testing.assert_array_equal(u32(pending[k].result()), hosts[k], err_msg=f"buffer {k}")


def test_read_async_result_into_fills_a_numpy_array(device: vn.Device) -> None:
    host = np.linspace(-1, 1, 1000, dtype=np.float32)
    out = np.empty_like(host)
    assert device.upload(host).read_async().result_into(out) == host.nbytes
    np.testing.assert_array_equal(out, host)


def test_read_async_sees_work_submitted_before_it(device: vn.Device, acc_prog: vn.Pipeline) -> None:
    acc = device.alloc(4 * 1024)
    rec = acc_prog.record([], [acc], workgroups=groups(1024))
    rec.replay(3)
    pending = acc.read_async()
    rec.replay(10)  # submitted after the read: not in its result
    np.testing.assert_array_equal(u32(pending.result()), 3)


def test_pending_read_result_twice_gives_the_data_twice(device: vn.Device) -> None:
    pending = device.upload(np.arange(64, dtype=np.uint32)).read_async()
    np.testing.assert_array_equal(u32(pending.result()), np.arange(64))
    np.testing.assert_array_equal(u32(pending.result()), np.arange(64))
    out = bytearray(256)
    assert pending.result_into(out) == 256
    np.testing.assert_array_equal(u32(bytes(out)), np.arange(64))


def test_pending_reads_dropped_without_result_leave_no_leak(device: vn.Device) -> None:
    buf = device.upload(np.arange(64 * 1024, dtype=np.uint32))
    settle(device)
    before = vn.debug.live_objects()
    for _ in range(20):
        buf.read_async()  # dropped at once
    batch = [buf.read_async() for _ in range(12)]  # dropped while all in flight
    del batch
    gc.collect()
    # On a GPU the dropped reads are still in flight here (26 staging buffers on the
    # H200): each keeps its staging buffer until its copy is done and a wait reaps it.
    device.wait_idle()
    after = vn.debug.live_objects()
    assert after["pending_reads"] == before["pending_reads"]
    assert after["staging_buffers"] <= before["staging_buffers"] + 4
    np.testing.assert_array_equal(u32(buf.read()), np.arange(64 * 1024))


# ================================================================ lost and closed devices


def _record_on_fresh_device(n: int = 1 << 16):
    dev = vn.Device()
    prog = dev.compile(COUNTER, preserve=["acc"])
    acc = dev.alloc(4 * n)
    rec = prog.record([], [acc], workgroups=groups(n))
    return dev, rec, acc


def test_replay_after_device_destroy_raises_device_lost_error() -> None:
    dev, rec, _ = _record_on_fresh_device()
    rec.replay().wait()
    dev.destroy()
    try:
        with pytest.raises(vn.DeviceLostError):
            rec.replay()
        with pytest.raises(vn.DeviceLostError):
            dev.submit([rec])
    finally:
        dev.close()


def _wait_in_thread(sub: vn.Submission, timeout: float | None) -> dict:
    outcome: dict = {}

    def waiter() -> None:
        try:
            sub.wait(timeout=timeout)
            outcome["ok"] = True
        except BaseException as err:  # noqa: BLE001 - the test inspects it
            outcome["err"] = err

    t = threading.Thread(target=waiter, daemon=True)
    t.start()
    t.join(20)
    outcome["hung"] = t.is_alive()
    return outcome


@pytest.mark.parametrize("timeout", [None, 5.0])
def test_wait_on_a_submission_made_before_destroy_never_hangs(timeout: float | None) -> None:
    dev, rec, _ = _record_on_fresh_device(1 << 18)
    sub = rec.replay(20)  # likely still running when the device goes
    dev.destroy()
    try:
        outcome = _wait_in_thread(sub, timeout)
        assert not outcome["hung"], "Submission.wait hung on a destroyed device"
        if "err" in outcome:
            assert isinstance(outcome["err"], vn.VyreError), repr(outcome["err"])
        else:
            assert outcome.get("ok")
    finally:
        dev.close()


# In a child interpreter (support.child): an abort inside wgpu-native fails the test only.


def test_pending_read_finished_after_device_destroy_raises_device_lost_error() -> None:
    res = run_child(
        """
        dev = vn.Device()
        pending = dev.upload(np.arange(1024, dtype=np.uint32)).read_async()
        dev.destroy()
        try:
            pending.result()
            report("returned")
        except vn.DeviceLostError:
            report("DeviceLostError")
        dev.close()
        """,
        timeout=90,
    )
    assert res == "DeviceLostError"


def test_pending_read_dropped_after_device_destroy_is_released_cleanly() -> None:
    res = run_child(
        """
        dev = vn.Device()
        buf = dev.upload(np.arange(1 << 18, dtype=np.uint32))
        pending = [buf.read_async() for _ in range(4)]
        dev.destroy()
        del pending
        gc.collect()
        report(vn.debug.live_objects()["pending_reads"])
        """,
        timeout=90,
    )
    assert res == 0


def test_pending_read_finished_after_device_close_raises_released_error() -> None:
    dev = vn.Device()
    pending = dev.upload(np.arange(64, dtype=np.uint32)).read_async()
    dev.close()
    with pytest.raises(vn.ReleasedError):
        pending.result()


def test_everything_on_a_closed_device_raises_released_error() -> None:
    dev, rec, acc = _record_on_fresh_device()
    seq = dev.sequence().clear(acc)
    sub = rec.replay()
    sub.wait()
    dev.close()
    calls = {
        "rec.replay": lambda: rec.replay(),
        "rec.read_output": lambda: rec.read_output(0),
        "seq.replay": lambda: seq.replay(),
        "seq.clear": lambda: seq.clear(acc),
        "dev.submit": lambda: dev.submit([rec]),
        "dev.sequence": lambda: dev.sequence(),
        "dev.upload": lambda: dev.upload(b"abcd"),
        "dev.wait_idle": lambda: dev.wait_idle(),
        "acc.read": lambda: acc.read(),
        "acc.read_async": lambda: acc.read_async(),
    }
    for name, call in calls.items():
        with pytest.raises(vn.ReleasedError):
            call()
        assert name


def test_destroyed_then_closed_device_raises_released_error() -> None:
    dev, rec, acc = _record_on_fresh_device()
    dev.destroy()
    dev.close()
    with pytest.raises(vn.ReleasedError):
        rec.replay()
    with pytest.raises(vn.ReleasedError):
        acc.read_async()
    with pytest.raises(vn.ReleasedError):
        dev.sequence()


# ================================================================ leaks


def test_500_replays_and_release_return_live_counts_to_their_earlier_values(
    device: vn.Device, acc_prog: vn.Pipeline
) -> None:
    settle(device)
    before = vn.debug.live_objects()
    acc = device.alloc(4 * 256)
    rec = acc_prog.record([], [acc], workgroups=(4, 1, 1))
    last = None
    for _ in range(500):
        last = rec.replay()
    np.testing.assert_array_equal(u32(rec.read_output(0)), 500)
    during = vn.debug.live_objects()
    assert during["recordings"] == before["recordings"] + 1
    rec.release()
    del rec, acc
    device.wait_idle()
    wait_done(last)
    del last
    gc.collect()
    after = vn.debug.live_objects()
    assert {k: after[k] for k in LIVE_KEYS} == {k: before[k] for k in LIVE_KEYS}


def test_sequences_and_submits_release_return_live_counts_to_their_earlier_values(
    device: vn.Device, acc_prog: vn.Pipeline
) -> None:
    settle(device)
    before = vn.debug.live_objects()
    acc, snap = device.alloc(4 * 256), device.alloc(4 * 256)
    rec = acc_prog.record([], [acc], workgroups=(4, 1, 1))
    seq = device.sequence().add(acc_prog, [], [acc], workgroups=(4, 1, 1)).copy(acc, snap).clear(acc)
    for _ in range(100):
        seq.replay(2)
        device.submit([rec, seq])
    last = device.submit([seq, rec])
    np.testing.assert_array_equal(u32(acc.read()), 1)
    del rec, seq, acc, snap
    device.wait_idle()
    wait_done(last)
    del last
    gc.collect()
    after = vn.debug.live_objects()
    keys = LIVE_KEYS + ("sequences",)
    assert {k: after[k] for k in keys} == {k: before[k] for k in keys}


def test_wait_with_a_timeout_that_is_not_a_number_raises_type_error(device: vn.Device) -> None:
    sub = device.compile(COUNTER, preserve=["acc"]).record([], [device.alloc(256)], workgroups=(1, 1, 1)).replay()
    for bad in ("1", [1.0], True):
        with pytest.raises(vn.WrongTypeError, match="Fix:"):
            sub.wait(timeout=bad)  # type: ignore[arg-type]
    with pytest.raises(vn.InvalidArgumentError, match="Fix:"):
        sub.wait(timeout=float("nan"))
    sub.wait()


def test_a_released_recording_lets_go_of_its_outputs(device: vn.Device, double: vn.Pipeline) -> None:
    before = vn.debug.live_objects(wait=5.0)["buffers"]
    a = device.upload(np.ones(64, np.float32))
    rec = double.record([a], [device.alloc(256)])  # the output only the recording holds
    assert vn.debug.live_objects(wait=5.0)["buffers"] == before + 2
    rec.release()
    assert vn.debug.live_objects(wait=5.0)["buffers"] == before + 1  # the input the test holds
    with pytest.raises(vn.ReleasedError, match="Fix:"):
        rec.outputs
