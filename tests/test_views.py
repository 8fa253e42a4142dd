"""Buffer views: ``buffer.view(offset, nbytes)`` binds, copies, clears and reads wherever a
buffer does, touching only its range (what an arena allocator in a tensor library binds).

Every kernel result is compared against numpy. Offsets that must bind are multiples of 256,
the largest value WebGPU allows for the device's offset alignments, so they bind on any
adapter; offsets meant to break the rule are 4, below any device's alignment.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest
from support.kernels import DOUBLE, SCALE

import vyre_native as vn

SLOT = 256  # an offset every device accepts for storage and uniform bindings

# Needs at least 64 floats (256 bytes) in `inp`.
FIXED = """
@group(0) @binding(0) var<storage, read> inp: array<f32, 64>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(1)
fn main() { out[0] = inp[63]; }
"""


def f32(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype=np.float32)


def arena_with(device: vn.Device, host: np.ndarray, slot: int, slots: int = 4) -> vn.Buffer:
    """An arena of `slots` slots of SLOT bytes, with `host` in slot `slot` and a sentinel
    (-1.0) everywhere else."""
    data = np.full(slots * SLOT // 4, -1.0, np.float32)
    data[slot * SLOT // 4 : slot * SLOT // 4 + host.size] = host
    return device.upload(data)


# ---------------------------------------------------------------- correctness vs numpy


def test_a_kernel_over_views_at_aligned_offsets_of_arenas_matches_numpy(
    device: vn.Device, double: vn.Pipeline
) -> None:
    x = np.arange(64, dtype=np.float32) - 20.5
    src = arena_with(device, x, slot=2)
    dst = arena_with(device, np.zeros(0, np.float32), slot=0)
    rec = double.prerecord_persistent_dispatch([src.view(2 * SLOT, SLOT)], [dst.view(SLOT, SLOT)])
    rec.replay()
    np.testing.assert_array_equal(f32(rec.read_output(0)), 2 * x)
    whole = f32(dst.read()).reshape(4, 64)
    np.testing.assert_array_equal(whole[1], 2 * x)


def test_clearing_an_output_view_leaves_the_rest_of_its_buffer_untouched(
    device: vn.Device, double: vn.Pipeline
) -> None:
    dst = arena_with(device, np.zeros(0, np.float32), slot=0)
    rec = double.record([device.upload(np.ones(64, np.float32))], [dst.view(2 * SLOT, SLOT)])
    rec.replay(3).wait()
    whole = f32(dst.read()).reshape(4, 64)
    np.testing.assert_array_equal(whole[2], np.full(64, 2.0, np.float32))
    np.testing.assert_array_equal(whole[[0, 1, 3]], np.full((3, 64), -1.0, np.float32))


def test_two_views_of_one_buffer_are_input_and_output_of_different_steps(
    device: vn.Device, double: vn.Pipeline
) -> None:
    x = np.linspace(-3, 3, 64, dtype=np.float32)
    arena = arena_with(device, x, slot=0)
    tmp = device.alloc(SLOT)
    seq = device.sequence()
    seq.add(double, [arena.view(0, SLOT)], [tmp])
    seq.add(double, [tmp], [arena.view(3 * SLOT, SLOT)])
    seq.replay().wait()
    whole = f32(arena.read()).reshape(4, 64)
    np.testing.assert_array_equal(whole[0], x)
    np.testing.assert_array_equal(whole[3], 4 * x)
    np.testing.assert_array_equal(whole[1:3], np.full((2, 64), -1.0, np.float32))


def test_named_views_bind_like_positional_ones(device: vn.Device, double: vn.Pipeline) -> None:
    x = np.arange(64, dtype=np.float32)
    arena = arena_with(device, x, slot=1)
    out = device.alloc(4 * SLOT)
    rec = double.record(bind={"out": out.view(3 * SLOT, SLOT), "inp": arena.view(SLOT, SLOT)})
    rec.replay().wait()
    np.testing.assert_array_equal(rec.read_output(0, np.float32), 2 * x)


def test_a_uniform_view_at_an_aligned_offset_binds_as_params(device: vn.Device) -> None:
    prog = device.compile(SCALE)
    params = device.upload(np.zeros(2 * SLOT // 4, np.float32))
    params.write(np.array([3.0, 0, 0, 0], np.float32), offset=SLOT)
    x = np.arange(64, dtype=np.float32)
    rec = prog.prerecord_persistent_dispatch([device.upload(x)], [device.alloc(SLOT)], params=params.view(SLOT, 16))
    rec.replay()
    np.testing.assert_array_equal(f32(rec.read_output(0)), 3 * x)


# ---------------------------------------------------------------- reads and writes of a view


def test_reading_a_view_returns_only_its_range(device: vn.Device) -> None:
    host = np.arange(256, dtype=np.uint32)
    view = device.upload(host).view(64, 128)
    assert view.read() == host[16:48].tobytes()
    np.testing.assert_array_equal(view.read(np.uint32, (4, 8)), host[16:48].reshape(4, 8))
    out = bytearray(7)
    assert view.read_into(out) == 128
    assert bytes(out) == host[16:48].tobytes()
    assert view.read_async().result() == host[16:48].tobytes()


def test_a_view_that_ends_its_buffer_may_have_an_odd_size(device: vn.Device) -> None:
    data = bytes(range(11))
    view = device.upload(data).view(4, 7)
    assert view.read() == data[4:]


def test_writing_a_view_writes_at_its_offset_and_nowhere_else(device: vn.Device) -> None:
    buf = device.upload(np.zeros(64, np.uint32))
    buf.view(32, 64).write(np.array([7, 8], np.uint32), offset=8)
    expect = np.zeros(64, np.uint32)
    expect[10:12] = [7, 8]
    np.testing.assert_array_equal(np.frombuffer(buf.read(), np.uint32), expect)


def test_a_write_past_the_end_of_the_view_raises_invalid_argument_error(device: vn.Device) -> None:
    view = device.alloc(256).view(0, 16)
    with pytest.raises(vn.InvalidArgumentError, match=r"16 bytes.*Fix:"):
        view.write(np.zeros(8, np.uint32))


def test_recording_outputs_are_the_views_that_were_bound(device: vn.Device, double: vn.Pipeline) -> None:
    dst = device.alloc(4 * SLOT)
    rec = double.record([device.upload(np.ones(64, np.float32))], [dst.view(SLOT, SLOT)])
    (out,) = rec.outputs
    assert isinstance(out, vn.BufferView)
    assert (out.offset, out.nbytes, out.buffer.allocation_identity) == (SLOT, SLOT, dst.allocation_identity)
    whole = double.record([device.upload(np.ones(64, np.float32))], [dst])
    assert isinstance(whole.outputs[0], vn.Buffer)


def test_output_byte_len_of_a_view_output_is_the_views_size(device: vn.Device, double: vn.Pipeline) -> None:
    rec = double.prerecord_persistent_dispatch([device.alloc(SLOT)], [device.alloc(4 * SLOT).view(SLOT, 128)])
    assert rec.output_byte_len(0) == 128


# ---------------------------------------------------------------- sequences


def test_sequence_copy_between_views_copies_inside_them(device: vn.Device) -> None:
    src = device.upload(np.arange(64, dtype=np.uint32))
    dst = device.upload(np.zeros(64, np.uint32))
    device.sequence().copy(src.view(16, 32), dst.view(128, 64), src_offset=8, dst_offset=4).replay().wait()
    expect = np.zeros(64, np.uint32)
    expect[33:39] = np.arange(6, 12)
    np.testing.assert_array_equal(np.frombuffer(dst.read(), np.uint32), expect)


def test_sequence_clear_of_a_view_clears_only_its_range(device: vn.Device) -> None:
    buf = device.upload(np.ones(64, np.uint32))
    device.sequence().clear(buf.view(64, 32)).replay().wait()
    expect = np.ones(64, np.uint32)
    expect[16:24] = 0
    np.testing.assert_array_equal(np.frombuffer(buf.read(), np.uint32), expect)


def test_a_copy_that_runs_past_the_view_raises_invalid_argument_error(device: vn.Device) -> None:
    src, dst = device.alloc(256), device.alloc(256)
    with pytest.raises(vn.InvalidArgumentError, match=r"Fix:"):
        device.sequence().copy(src.view(0, 16), dst, nbytes=32)


# ---------------------------------------------------------------- the bind-group cache


def test_the_same_view_bound_twice_hits_the_bind_group_cache(device: vn.Device) -> None:
    prog = device.compile(DOUBLE)
    arena, out = device.alloc(4 * SLOT), device.alloc(SLOT)
    prog.record([arena.view(SLOT, SLOT)], [out])
    prog.record([arena.view(SLOT, SLOT)], [out])
    stats = prog.bind_group_cache_stats()
    assert (stats["hits"], stats["misses"]) == (1, 1)


def test_a_view_at_another_offset_misses_the_bind_group_cache(device: vn.Device) -> None:
    prog = device.compile(DOUBLE)
    arena, out = device.alloc(4 * SLOT), device.alloc(SLOT)
    prog.record([arena.view(SLOT, SLOT)], [out])
    prog.record([arena.view(2 * SLOT, SLOT)], [out])
    stats = prog.bind_group_cache_stats()
    assert (stats["hits"], stats["misses"], stats["entries"]) == (0, 2, 2)


def test_a_view_of_another_size_misses_the_bind_group_cache(device: vn.Device) -> None:
    prog = device.compile(DOUBLE)
    arena, out = device.alloc(4 * SLOT), device.alloc(SLOT)
    prog.record([arena.view(0, SLOT)], [out])
    prog.record([arena.view(0, 2 * SLOT)], [out])
    assert prog.bind_group_cache_stats()["misses"] == 2


def test_a_view_of_the_whole_buffer_shares_the_buffers_cache_entry(device: vn.Device) -> None:
    prog = device.compile(DOUBLE)
    src, out = device.alloc(SLOT), device.alloc(SLOT)
    prog.record([src], [out])
    prog.record([src.view(0, SLOT)], [out])
    assert prog.bind_group_cache_stats()["hits"] == 1


# ---------------------------------------------------------------- lifetime


def test_a_view_keeps_its_buffer_alive(device: vn.Device) -> None:
    view = device.upload(np.arange(16, dtype=np.uint32)).view(16, 16)
    gc.collect()
    np.testing.assert_array_equal(np.frombuffer(view.read(), np.uint32), [4, 5, 6, 7])


def test_a_view_of_a_released_buffer_raises_released_error(device: vn.Device, double: vn.Pipeline) -> None:
    buf = device.alloc(4 * SLOT)
    view = buf.view(SLOT, SLOT)
    buf.release()
    with pytest.raises(vn.ReleasedError, match="Fix:"):
        view.read()
    with pytest.raises(vn.ReleasedError, match="Fix:"):
        double.record([view], [device.alloc(SLOT)])
    with pytest.raises(vn.ReleasedError):
        buf.view(0, 4)


def test_a_recording_keeps_a_bound_views_buffer_alive(device: vn.Device, double: vn.Pipeline) -> None:
    x = np.arange(64, dtype=np.float32)
    rec = double.record([arena_with(device, x, slot=1).view(SLOT, SLOT)], [device.alloc(SLOT)])
    gc.collect()
    rec.replay().wait()
    np.testing.assert_array_equal(rec.read_output(0, np.float32), 2 * x)


# ---------------------------------------------------------------- errors


def test_a_view_past_the_buffers_end_raises_invalid_argument_error(device: vn.Device) -> None:
    buf = device.alloc(1024)
    with pytest.raises(vn.InvalidArgumentError, match=r"1000.*1024.*Fix:") as info:
        buf.view(1000, 32)
    assert isinstance(info.value, ValueError)
    with pytest.raises(vn.InvalidArgumentError, match=r"2048.*Fix:"):
        buf.view(2048, 4)


def test_a_view_of_zero_bytes_raises_invalid_argument_error(device: vn.Device) -> None:
    with pytest.raises(vn.InvalidArgumentError, match=r"0 bytes.*Fix:"):
        device.alloc(64).view(16, 0)


def test_a_storage_view_off_the_devices_alignment_raises_binding_error_naming_the_limit(
    device: vn.Device, double: vn.Pipeline
) -> None:
    align = device.limits["min_storage_buffer_offset_alignment"]
    with pytest.raises(vn.BindingError, match=rf"offset 4\b.*min_storage_buffer_offset_alignment is {align}.*Fix:"):
        double.record([device.alloc(4 * SLOT).view(4, SLOT)], [device.alloc(SLOT)])


def test_a_uniform_view_off_the_devices_alignment_raises_binding_error_naming_the_limit(device: vn.Device) -> None:
    align = device.limits["min_uniform_buffer_offset_alignment"]
    prog = device.compile(SCALE)
    with pytest.raises(vn.BindingError, match=rf"min_uniform_buffer_offset_alignment is {align}.*Fix:"):
        prog.record([device.alloc(SLOT)], [device.alloc(SLOT)], params=device.alloc(SLOT).view(4, 16))


def test_a_view_smaller_than_its_binding_declares_raises_binding_error(device: vn.Device) -> None:
    prog = device.compile(FIXED)
    with pytest.raises(vn.BindingError, match=r"128 bytes.*256.*Fix:"):
        prog.record([device.alloc(4 * SLOT).view(SLOT, 128)], [device.alloc(4)])


def test_a_read_view_and_a_disjoint_writable_view_of_one_buffer_in_one_dispatch_raise_binding_error(
    device: vn.Device, double: vn.Pipeline
) -> None:
    # WebGPU's usage scope: read-only and writable uses of one buffer never mix in a
    # dispatch, disjoint or not (two writable views may: tests/test_aliasing.py).
    arena = device.alloc(4 * SLOT)
    with pytest.raises(vn.BindingError, match=r"`inp`.*bytes \[0, 256\).*`out`.*bytes \[512, 768\).*Fix:"):
        double.record([arena.view(0, SLOT)], [arena.view(2 * SLOT, SLOT)])


def test_a_copy_between_two_views_of_one_buffer_raises_invalid_argument_error(device: vn.Device) -> None:
    buf = device.alloc(1024)
    with pytest.raises(vn.InvalidArgumentError, match=r"itself.*Fix:"):
        device.sequence().copy(buf.view(0, 256), buf.view(512, 256))


def test_buffer_view_is_not_made_by_calling_the_class(device: vn.Device) -> None:
    with pytest.raises(vn.WrongTypeError, match=r"buffer\.view"):
        vn.BufferView(device.alloc(16), 0, 16)


def test_a_buffer_view_is_immutable(device: vn.Device) -> None:
    view = device.alloc(64).view(0, 16)
    with pytest.raises(AttributeError):
        view.offset = 4  # type: ignore[misc]


def test_view_arguments_that_are_not_ints_raise_wrong_type_error(device: vn.Device) -> None:
    with pytest.raises(vn.WrongTypeError):
        device.alloc(64).view(0.5, 16)  # type: ignore[arg-type]
    with pytest.raises(vn.InvalidArgumentError):
        device.alloc(64).view(-4, 16)
