"""Clears encoded as fill dispatches inside the compute pass (csrc/resources/fill.c).

Every output that is not preserved reads all zeros when its step starts, however the
clear is encoded (a fill in the pass; clear_buffer where the fill is not used): in
sequences, Recording.replay(n), pre-recorded dispatches and per-dispatch timing, at
odd sizes, and nothing else is cleared (preserved outputs, indirect arguments).

The checking kernel counts, into a preserved counter, every element of its output
that is not zero when the step reads it, then writes a marker into the first `count`
elements (a partial write, so a missing clear leaves the rest of an earlier step's
marker behind). Each invocation reads and writes only its own elements.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.timestamps import require_timestamps

import vyre_native as vn

CHECK = """
struct Params { count: u32, marker: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<storage, read_write> dirty: array<atomic<u32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let n = arrayLength(&out);
    for (var i = id.x; i < n; i += groups.x * 64u) {
        if (out[i] != 0u) { atomicAdd(&dirty[0], 1u); }
        if (i < params.count) { out[i] = params.marker; }
    }
}
"""

KiB, MiB = 1 << 10, 1 << 20


@pytest.fixture(scope="module")
def check(device: vn.Device) -> vn.Pipeline:
    return device.compile(CHECK, preserve=["dirty"])


def _params(device: vn.Device, count: int, marker: int) -> vn.Buffer:
    return device.upload(np.array([count, marker], np.uint32))


def _dirty(device: vn.Device) -> vn.Buffer:
    return device.upload(np.zeros(1, np.uint32))


def _count(buf: vn.Buffer) -> int:
    return int(buf.read(np.uint32)[0])


def _groups(nbytes: int) -> tuple[int, int, int]:
    return (max(1, min(1024, -(-nbytes // 4 // 64))), 1, 1)


def _expect(buf: vn.Buffer, count: int, marker: int) -> None:
    words = buf.read(np.uint32)
    assert np.all(words[:count] == marker)
    assert not np.any(words[count:])


# ---- sequences ----------------------------------------------------------------------------


def test_every_step_of_a_long_sequence_sees_its_output_cleared(device: vn.Device, check: vn.Pipeline) -> None:
    out, dirty = device.alloc(4 * 1000), _dirty(device)
    out.write(np.full(1000, 9, np.uint32))
    params = [_params(device, count, step + 1) for step, count in enumerate([1000, 3, 700, 1, 999, 64] * 50)]
    seq = device.sequence()
    for p in params:
        seq.add(check, [], [out, dirty], params=p, workgroups=(4, 1, 1))
    seq.replay(2).wait()
    assert _count(dirty) == 0
    _expect(out, 64, len(params))


def test_without_clear_outputs_the_checking_kernel_sees_what_earlier_steps_left(
    device: vn.Device, check: vn.Pipeline
) -> None:
    out, dirty = device.alloc(4 * 256), _dirty(device)
    seq = device.sequence()
    seq.add(check, [], [out, dirty], params=_params(device, 256, 1), workgroups=(4, 1, 1))
    seq.add(check, [], [out, dirty], params=_params(device, 10, 2), workgroups=(4, 1, 1), clear_outputs=False)
    seq.replay().wait()
    assert _count(dirty) == 256  # the second step found the first one's markers
    words = out.read(np.uint32)
    assert list(words[:10]) == [2] * 10 and np.all(words[10:] == 1)


def test_steps_over_several_outputs_interleaved_with_copies_and_clears(
    device: vn.Device, check: vn.Pipeline
) -> None:
    a, b, snap, dirty = device.alloc(4096), device.alloc(4100), device.alloc(4096), _dirty(device)
    seq = device.sequence()
    seq.add(check, [], [a, dirty], params=_params(device, 1024, 5), workgroups=(16, 1, 1))
    seq.add(check, [], [b, dirty], params=_params(device, 1025, 6), workgroups=(16, 1, 1))
    seq.copy(a, snap)
    seq.add(check, [], [a, dirty], params=_params(device, 7, 7), workgroups=(16, 1, 1))
    seq.clear(b)
    seq.add(check, [], [b, dirty], params=_params(device, 3, 8), workgroups=(16, 1, 1), clear_outputs=False)
    seq.replay(3).wait()
    assert _count(dirty) == 0
    _expect(a, 7, 7)
    _expect(b, 3, 8)
    _expect(snap, 1024, 5)


def test_sequence_clear_zeroes_a_buffer_without_storage_usage(device: vn.Device, check: vn.Pipeline) -> None:
    plain = device.upload(
        np.arange(1, 65, dtype=np.uint32), usage=vn.BufferUsage.COPY_DST | vn.BufferUsage.COPY_SRC
    )
    out, dirty = device.alloc(256), _dirty(device)
    seq = device.sequence()
    seq.add(check, [], [out, dirty], params=_params(device, 64, 1), workgroups=(1, 1, 1))
    seq.clear(plain)  # no STORAGE: a clear_buffer between the passes
    seq.add(check, [], [out, dirty], params=_params(device, 2, 2), workgroups=(1, 1, 1))
    seq.replay().wait()
    assert not np.any(plain.read(np.uint32))
    assert _count(dirty) == 0
    _expect(out, 2, 2)


@pytest.mark.parametrize("nbytes", [20, 48, 1024])
def test_sequence_clear_of_an_aligned_view_zeroes_only_its_range(device: vn.Device, nbytes: int) -> None:
    """An offset a storage binding can start at: filled inside the pass."""
    align = device.limits["min_storage_buffer_offset_alignment"]
    buf = device.upload(np.full((2 * align + nbytes) // 4, 9, np.uint32))
    seq = device.sequence()
    seq.clear(buf.view(align, nbytes))
    seq.replay().wait()
    words = buf.read(np.uint32)
    first, last = align // 4, (align + nbytes) // 4
    assert not np.any(words[first:last])
    assert np.all(words[:first] == 9) and np.all(words[last:] == 9)


# ---- recordings and pre-recorded dispatches ----------------------------------------------------


def test_recording_replay_n_clears_before_every_launch(device: vn.Device, check: vn.Pipeline) -> None:
    out, dirty = device.alloc(4 * 500), _dirty(device)
    out.write(np.full(500, 3, np.uint32))
    rec = check.record([], [out, dirty], params=_params(device, 499, 4), workgroups=(8, 1, 1))
    rec.replay(50).wait()
    rec.replay(1).wait()
    assert _count(dirty) == 0
    _expect(out, 499, 4)


def test_replay_beyond_one_submit_clears_before_every_launch_of_every_submit(
    device: vn.Device, check: vn.Pipeline
) -> None:
    # replay(n) past 256 launches goes in submits of 256 (tests/test_bounds.py), each
    # encoded as one replay is: its launches share one pass, each its fill and dispatch.
    out, dirty = device.alloc(4 * 500), _dirty(device)
    out.write(np.full(500, 3, np.uint32))
    rec = check.record([], [out, dirty], params=_params(device, 499, 4), workgroups=(8, 1, 1))
    rec.replay(2 * 256 + 7).wait()
    assert _count(dirty) == 0
    _expect(out, 499, 4)
    seq = device.sequence()
    seq.add(check, [], [out, dirty], params=_params(device, 7, 5), workgroups=(8, 1, 1))
    seq.clear(out).add(check, [], [out, dirty], params=_params(device, 3, 6), workgroups=(8, 1, 1))
    seq.replay(300).wait()  # 900 steps: submits of 85 repetitions
    assert _count(dirty) == 0
    _expect(out, 3, 6)


def test_prerecorded_dispatch_clears_its_output(device: vn.Device, check: vn.Pipeline) -> None:
    out, dirty = device.alloc(4 * 300), _dirty(device)
    out.write(np.full(300, 3, np.uint32))
    pre = check.prerecord_persistent_dispatch(
        [], [out, dirty], params=_params(device, 5, 6), workgroups=(4, 1, 1)
    )
    pre.replay()
    assert _count(dirty) == 0
    _expect(out, 5, 6)


@pytest.mark.timestamps
@pytest.mark.parametrize("kind", ["sequence", "recording"])
def test_per_dispatch_timing_still_clears_before_each_dispatch(
    device: vn.Device, check: vn.Pipeline, kind: str
) -> None:
    require_timestamps(device)
    out, dirty = device.alloc(4 * 128), _dirty(device)
    out.write(np.full(128, 1, np.uint32))
    params = _params(device, 100, 2)
    if kind == "sequence":
        work: vn.Sequence | vn.Recording = device.sequence()
        for _ in range(4):
            work.add(check, [], [out, dirty], params=params, workgroups=(2, 1, 1))
    else:
        work = check.record([], [out, dirty], params=params, workgroups=(2, 1, 1))
    sub = work.replay(3, timing="dispatch")
    assert sub.dispatch_times_ns is not None and len(sub.dispatch_times_ns) == (
        12 if kind == "sequence" else 3
    )
    assert _count(dirty) == 0
    _expect(out, 100, 2)


@pytest.mark.timestamps
def test_timed_replay_of_clearing_steps_reports_gpu_time(device: vn.Device, check: vn.Pipeline) -> None:
    require_timestamps(device)
    out, dirty = device.alloc(4 * 128), _dirty(device)
    seq = device.sequence()
    for count in (128, 1):
        seq.add(check, [], [out, dirty], params=_params(device, count, 9), workgroups=(2, 1, 1))
    sub = seq.replay(2, timing=True)
    assert sub.gpu_time_ns is not None and sub.gpu_time_ns > 0
    assert _count(dirty) == 0
    _expect(out, 1, 9)


# ---- sizes ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("nbytes", [4, 8, 12, 16, 20, 4 * KiB + 4, 16 * KiB, 16 * KiB + 16, 1 * MiB + 12])
def test_outputs_of_odd_sizes_read_zero_before_the_step(
    device: vn.Device, check: vn.Pipeline, nbytes: int
) -> None:
    words = -(-nbytes // 4)
    out, dirty = device.alloc(nbytes), _dirty(device)
    out.write(np.full(nbytes, 0xAB, np.uint8))
    seq = device.sequence()
    seq.add(check, [], [out, dirty], params=_params(device, words // 2, 7), workgroups=_groups(nbytes))
    seq.add(check, [], [out, dirty], params=_params(device, words // 3, 8), workgroups=_groups(nbytes))
    seq.replay().wait()
    assert _count(dirty) == 0
    _expect(out, words // 3, 8)


def test_an_output_of_64_mib_and_one_word_reads_zero_before_the_step(
    device: vn.Device, check: vn.Pipeline
) -> None:
    nbytes = 64 * MiB + 4
    out, dirty = device.alloc(nbytes), _dirty(device)
    out.write(np.full(nbytes // 4, 0xFFFFFFFF, np.uint32))
    rec = check.record([], [out, dirty], params=_params(device, 3, 1), workgroups=(1024, 1, 1))
    rec.replay(1).wait()
    assert _count(dirty) == 0
    _expect(out, 3, 1)
    out.release()


@pytest.mark.parametrize("nbytes", [4, 8, 20, 48, 64 * MiB + 4, 64 * MiB])
def test_the_fill_kernel_zeroes_every_word_at_the_workgroup_counts_it_is_dispatched_with(
    device: vn.Device, nbytes: int
) -> None:
    """The kernel itself, dispatched as fill.c does (vn.debug.fill_wgsl), whichever way
    this adapter clears buffers of the size; 64 MiB + 4 needs more than 65535 workgroups
    of 256 words, so its invocations loop."""
    quads = nbytes % 16 == 0
    fill = device.compile(
        vn.debug.fill_wgsl(),
        entry_point="fill_quads" if quads else "fill_words",
        preserve=["quads" if quads else "words"],
    )
    buf = device.upload(np.full(nbytes // 4, 0x5A5A5A5A, np.uint32))
    elements = nbytes // (16 if quads else 4)
    groups = min(-(-elements // 256), 65535, device.limits["max_compute_workgroups_per_dimension"])
    rec = fill.record([], [buf], workgroups=(groups, 1, 1))
    rec.replay().wait()
    assert not np.any(buf.read(np.uint32))
    buf.release()


def test_steps_with_immediates_read_cleared_outputs_and_their_own_immediates(device: vn.Device) -> None:
    """A fill dispatch (another pipeline, no immediates) between steps that each set
    their own immediates: each step still sees its immediate and a cleared output."""
    if "immediates" not in device.features:
        pytest.skip(f"adapter {device.info['name']} has no immediates")
    prog = device.compile(
        """
var<immediate> k: u32;
@group(0) @binding(0) var<storage, read_write> scratch: array<u32>;
@group(0) @binding(1) var<storage, read_write> acc: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < arrayLength(&acc)) { scratch[i] = scratch[i] + k; acc[i] = acc[i] + scratch[i]; }
}
""",
        preserve=["acc"],
    )
    scratch, acc = device.alloc(4 * 64), device.alloc(4 * 64)
    seq = device.sequence()
    for k in range(1, 11):
        seq.add(prog, [], [scratch, acc], immediates=np.uint32(k).tobytes())
    seq.replay().wait()
    assert np.all(acc.read(np.uint32) == 55)  # scratch cleared each step: acc gains exactly k
    assert np.all(scratch.read(np.uint32) == 10)


# ---- what is not cleared ------------------------------------------------------------------------


def test_a_preserved_output_keeps_its_contents_across_clearing_steps(
    device: vn.Device, check: vn.Pipeline
) -> None:
    out, dirty = device.alloc(64), _dirty(device)
    seq = device.sequence()
    for _ in range(5):
        seq.add(check, [], [out, dirty], params=_params(device, 16, 1), workgroups=(1, 1, 1))
    seq.replay().wait()
    assert _count(dirty) == 0  # `out` was cleared every step, `dirty` (preserved) never


def test_preserved_state_accumulates_through_steps_that_clear_other_outputs(device: vn.Device) -> None:
    prog = device.compile(
        """
@group(0) @binding(0) var<storage, read_write> acc: array<u32>;
@group(0) @binding(1) var<storage, read_write> scratch: array<u32>;
@compute @workgroup_size(1)
fn main() { scratch[0] = scratch[0] + 1u; acc[0] = acc[0] + scratch[0]; }
""",
        preserve=["acc"],
    )
    acc, scratch = device.alloc(4), device.alloc(4)
    seq = device.sequence()
    for _ in range(10):
        seq.add(prog, [], [acc, scratch])
    seq.replay(3).wait()
    assert acc.read(np.uint32)[0] == 30  # scratch is cleared every step, so each adds 1
    assert scratch.read(np.uint32)[0] == 1


INDIRECT = """
@group(0) @binding(0) var<storage, read> args: array<u32>;
@group(0) @binding(1) var<storage, read_write> hits: array<atomic<u32>>;
@group(0) @binding(2) var<storage, read_write> scratch: array<u32>;
@compute @workgroup_size(1)
fn main(@builtin(workgroup_id) wg: vec3<u32>) {
    atomicAdd(&hits[0], 1u);
    scratch[wg.x] = args[0];
}
"""


def test_an_indirect_args_buffer_is_not_cleared(device: vn.Device) -> None:
    prog = device.compile(INDIRECT, indirect=("args", 0), preserve=["hits"])
    args = device.upload(np.array([3, 1, 1], np.uint32))
    hits, scratch = device.upload(np.zeros(1, np.uint32)), device.alloc(64)
    seq = device.sequence()
    for _ in range(4):
        seq.add(prog, [args], [hits, scratch])
    seq.replay().wait()
    assert hits.read(np.uint32)[0] == 12  # 4 steps of 3 workgroups: the counts survived every clear
    assert list(args.read(np.uint32)) == [3, 1, 1]
    assert list(scratch.read(np.uint32)[:4]) == [3, 3, 3, 0]


@pytest.mark.parametrize("preserve", [False, True])
def test_indirect_args_written_by_an_earlier_step_of_the_pass_are_dispatched_from(
    device: vn.Device, preserve: bool
) -> None:
    """A producer step writes the counts (its output cleared first, unless preserved);
    the next step, in the same pass, dispatches from them and clears only its own."""
    producer = device.compile(
        """
@group(0) @binding(0) var<storage, read_write> args: array<u32>;
@compute @workgroup_size(1)
fn main() { args[0] = args[0] + 2u; args[1] = 1u; args[2] = 1u; }
""",
        preserve=["args"] if preserve else [],
    )
    consumer = device.compile(INDIRECT, indirect=("args", 0), preserve=["hits"])
    args = device.upload(np.array([0, 0, 0], np.uint32))
    hits, scratch = device.upload(np.zeros(1, np.uint32)), device.alloc(64)
    seq = device.sequence()
    for _ in range(3):
        seq.add(producer, [], [args])
        seq.add(consumer, [args], [hits, scratch])
    seq.replay().wait()
    # cleared each time: 2 workgroups per step; preserved: 2, 4, 6
    assert hits.read(np.uint32)[0] == (12 if preserve else 6)
    assert args.read(np.uint32)[0] == (6 if preserve else 2)


# ---- lifetime --------------------------------------------------------------------------------


def test_a_released_output_leaves_no_fill_bind_group_behind(device: vn.Device, check: vn.Pipeline) -> None:
    before = vn.debug.live_objects()["bind_groups"]
    out, dirty, params = device.alloc(256), _dirty(device), _params(device, 1, 1)
    rec = check.record([], [out, dirty], params=params, workgroups=(1, 1, 1))
    rec.replay(3).wait()
    seq = device.sequence()
    seq.clear(out)
    seq.replay().wait()
    assert vn.debug.live_objects()["bind_groups"] > before
    del rec, seq
    for b in (out, dirty, params):
        b.release()
    assert vn.debug.live_objects()["bind_groups"] == before


def test_fill_wgsl_names_both_entry_points() -> None:
    src = vn.debug.fill_wgsl()
    assert "fn fill_words" in src and "fn fill_quads" in src
