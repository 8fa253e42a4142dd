"""Indirect dispatch from any buffer: ``indirect=(buffer, offset)`` on
``prerecord_persistent_dispatch``, ``record`` and ``Sequence.add``.

The counts may sit in a buffer the pipeline does not bind (a radix sort's "check order"
pass, wgpu_sort's ``sort_indirect``), written by an earlier step of the same sequence.
Checked like the compile-time form: INDIRECT usage, offset a multiple of 4 with the three
u32 counts inside the buffer, the pipeline's device. Results are compared against numpy.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.kernels import FILL_U32

import vyre_native as vn

# Every invocation marks its cell with 1: the output counts the workgroups of 64 launched.
MARK = FILL_U32

# One invocation computes the workgroup count for `n` items: ceil(n / 64), 1, 1.
WRITE_COUNTS = """
@group(0) @binding(0) var<storage, read> n: array<u32, 1>;
@group(0) @binding(1) var<storage, read_write> args: array<u32, 3>;

@compute @workgroup_size(1)
fn main() { args[0] = (n[0] + 63u) / 64u; args[1] = 1u; args[2] = 1u; }
"""

# Like the test suite's compile-time indirect kernel: the counts are a binding.
INDIRECT_BOUND = """
@group(0) @binding(0) var<storage, read> args: array<u32, 3>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < arrayLength(&out)) { out[gid.x] = args[1]; }
}
"""

CELLS = 1024


def marked(groups: int) -> np.ndarray:
    expect = np.zeros(CELLS, np.uint32)
    expect[: 64 * groups] = 1
    return expect


def counts(*values: int) -> np.ndarray:
    return np.array(values, np.uint32)


@pytest.fixture(scope="module")
def mark(device: vn.Device) -> vn.Pipeline:
    return device.compile(MARK)


# ---------------------------------------------------------------- correctness vs numpy


def test_prerecord_dispatches_with_counts_from_a_buffer_it_does_not_bind(
    device: vn.Device, mark: vn.Pipeline
) -> None:
    args = device.upload(counts(3, 1, 1))
    rec = mark.prerecord_persistent_dispatch([], [device.alloc(4 * CELLS)], indirect=(args, 0))
    rec.replay()
    np.testing.assert_array_equal(rec.read_output(0, np.uint32), marked(3))


def test_the_counts_are_read_at_the_byte_offset(device: vn.Device, mark: vn.Pipeline) -> None:
    args = device.upload(counts(9, 9, 9, 5, 1, 1))
    rec = mark.record(outputs=[device.alloc(4 * CELLS)], indirect=(args, 12))
    rec.replay().wait()
    np.testing.assert_array_equal(rec.read_output(0, np.uint32), marked(5))


def test_workgroups_are_ignored_by_an_indirect_dispatch(device: vn.Device, mark: vn.Pipeline) -> None:
    args = device.upload(counts(2, 1, 1))
    rec = mark.record([], [device.alloc(4 * CELLS)], workgroups=(16, 1, 1), indirect=(args, 0))
    rec.replay().wait()
    np.testing.assert_array_equal(rec.read_output(0, np.uint32), marked(2))


def test_a_recording_rereads_the_counts_at_every_replay(device: vn.Device, mark: vn.Pipeline) -> None:
    args = device.upload(counts(1, 1, 1))
    rec = mark.record([], [device.alloc(4 * CELLS)], indirect=(args, 0))
    rec.replay().wait()
    np.testing.assert_array_equal(rec.read_output(0, np.uint32), marked(1))
    args.write(counts(4, 1, 1))
    rec.replay().wait()
    np.testing.assert_array_equal(rec.read_output(0, np.uint32), marked(4))


def test_counts_written_by_a_previous_sequence_step_drive_a_later_dispatch(
    device: vn.Device, mark: vn.Pipeline
) -> None:
    writer = device.compile(WRITE_COUNTS)
    n = device.upload(np.array([300], np.uint32))  # ceil(300 / 64) = 5 workgroups
    args = device.alloc(12)
    out = device.alloc(4 * CELLS)
    seq = device.sequence()
    seq.add(writer, [n], [args])
    seq.add(mark, [], [out], indirect=(args, 0))
    seq.replay().wait()
    np.testing.assert_array_equal(np.frombuffer(args.read(), np.uint32), [5, 1, 1])
    np.testing.assert_array_equal(out.read(np.uint32), marked(5))
    n.write(np.array([64], np.uint32))
    seq.replay().wait()
    np.testing.assert_array_equal(out.read(np.uint32), marked(1))


def test_counts_in_a_view_of_an_arena_are_read_at_the_view_offset_plus_the_offset(
    device: vn.Device, mark: vn.Pipeline
) -> None:
    arena = device.upload(np.array([7, 7, 7, 7, 7, 7, 7, 7, 7, 6, 1, 1], np.uint32))
    rec = mark.record([], [device.alloc(4 * CELLS)], indirect=(arena.view(24, 24), 12))
    rec.replay().wait()
    np.testing.assert_array_equal(rec.read_output(0, np.uint32), marked(6))


def test_named_bindings_and_indirect_from_any_buffer_combine(device: vn.Device, mark: vn.Pipeline) -> None:
    args = device.upload(counts(2, 1, 1))
    rec = mark.prerecord_persistent_dispatch(bind={"out": device.alloc(4 * CELLS)}, indirect=(args, 0))
    rec.replay()
    np.testing.assert_array_equal(rec.read_output(0, np.uint32), marked(2))


def test_the_indirect_buffer_may_also_be_bound_read_only(device: vn.Device) -> None:
    prog = device.compile(INDIRECT_BOUND)
    args = device.upload(counts(2, 7, 1))
    rec = prog.record([args], [device.alloc(4 * CELLS)], indirect=(args, 0))
    rec.replay().wait()
    expect = np.zeros(CELLS, np.uint32)
    expect[:128] = 7
    np.testing.assert_array_equal(rec.read_output(0, np.uint32), expect)


# ---------------------------------------------------------------- errors


def test_an_indirect_buffer_without_indirect_usage_raises_binding_error(device: vn.Device, mark: vn.Pipeline) -> None:
    usage = vn.BufferUsage.STORAGE | vn.BufferUsage.COPY_DST
    args = device.upload(counts(1, 1, 1), usage=usage)
    with pytest.raises(vn.BindingError, match=r"INDIRECT.*Fix:"):
        mark.record([], [device.alloc(4 * CELLS)], indirect=(args, 0))


def test_an_indirect_offset_that_is_not_a_multiple_of_four_raises_invalid_argument_error(
    device: vn.Device, mark: vn.Pipeline
) -> None:
    with pytest.raises(vn.InvalidArgumentError, match=r"offset 2\b.*multiple of 4.*Fix:"):
        mark.record([], [device.alloc(4 * CELLS)], indirect=(device.alloc(64), 2))


def test_counts_past_the_end_of_the_buffer_raise_binding_error(device: vn.Device, mark: vn.Pipeline) -> None:
    with pytest.raises(vn.BindingError, match=r"16 bytes.*offset 8.*needs 20.*Fix:"):
        mark.prerecord_persistent_dispatch([], [device.alloc(4 * CELLS)], indirect=(device.alloc(16), 8))


def test_counts_past_the_end_of_a_view_raise_binding_error(device: vn.Device, mark: vn.Pipeline) -> None:
    view = device.alloc(1024).view(0, 12)
    with pytest.raises(vn.BindingError, match=r"12 bytes.*offset 4.*Fix:"):
        mark.record([], [device.alloc(4 * CELLS)], indirect=(view, 4))


def test_an_indirect_buffer_of_another_device_raises_binding_error(device: vn.Device, mark: vn.Pipeline) -> None:
    with vn.Device() as other:
        foreign = other.upload(counts(1, 1, 1))
        with pytest.raises(vn.BindingError, match=r"another device.*Fix:"):
            mark.record([], [device.alloc(4 * CELLS)], indirect=(foreign, 0))


def test_indirect_at_compile_time_and_at_the_dispatch_raises_binding_error(device: vn.Device) -> None:
    prog = device.compile(INDIRECT_BOUND, indirect=("args", 0))
    args = device.upload(counts(1, 1, 1))
    with pytest.raises(vn.BindingError, match=r"compiled with indirect=\('args', 0\).*Fix:"):
        prog.record([args], [device.alloc(4 * CELLS)], indirect=(args, 0))


def test_counts_in_a_buffer_the_dispatch_writes_raise_binding_error(device: vn.Device, mark: vn.Pipeline) -> None:
    out = device.alloc(4 * CELLS)
    with pytest.raises(vn.BindingError, match=r"indirect.*`out`.*Fix:"):
        mark.record([], [out], indirect=(out, 0))


def test_a_binding_name_at_the_dispatch_raises_wrong_type_error(device: vn.Device, mark: vn.Pipeline) -> None:
    with pytest.raises(vn.WrongTypeError, match=r"compile\(.*Fix:|Fix:.*compile\("):
        mark.record([], [device.alloc(4 * CELLS)], indirect=("out", 0))  # type: ignore[arg-type]


def test_indirect_that_is_not_a_pair_raises_wrong_type_error(device: vn.Device, mark: vn.Pipeline) -> None:
    args = device.upload(counts(1, 1, 1))
    with pytest.raises(vn.WrongTypeError, match="Fix:"):
        mark.record([], [device.alloc(4 * CELLS)], indirect=args)  # type: ignore[arg-type]


def test_a_released_indirect_buffer_raises_released_error(device: vn.Device, mark: vn.Pipeline) -> None:
    args = device.upload(counts(1, 1, 1))
    args.release()
    with pytest.raises(vn.ReleasedError, match="Fix:"):
        mark.record([], [device.alloc(4 * CELLS)], indirect=(args, 0))
