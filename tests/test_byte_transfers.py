"""Byte-exact transfers: ``write``, ``read``, ``read_into`` and ``Device.copy`` at any byte
offset and size, against a numpy model of the buffer's bytes (random neighbours, so a
touched neighbour shows), ordered on the queue with the dispatches around them.

Sizes: offsets 0..7 and sizes 0..9 (every position within a word, transfers inside one
word, across one boundary and across two), in buffers of a whole number of words and not,
and ranges that end the buffer (where the last word's other bytes are padding).
"""

from __future__ import annotations

import numpy as np
import pytest
from support.kernels import FILL_U32

import vyre_native as vn

OFFSETS = range(8)
SIZES = range(10)
LENGTHS = (16, 19)  # a whole number of words, and not


def rand(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)


def contents(buf: vn.Buffer) -> np.ndarray:
    return np.frombuffer(buf.read(), np.uint8)


def ranges(length: int) -> list[tuple[int, int]]:
    """Every (offset, size) of OFFSETS x SIZES inside `length` bytes, and every size
    ending the buffer."""
    inside = [(o, n) for o in OFFSETS for n in SIZES if o + n <= length]
    at_end = [(length - n, n) for n in SIZES]
    return inside + at_end


def nonempty_ranges(length: int) -> list[tuple[int, int]]:
    """ranges(length) less the empty ones (a view of 0 bytes has nothing to read)."""
    return [(o, n) for o, n in ranges(length) if n]


def copy_ranges(length: int, src_offset: int) -> list[tuple[int, int]]:
    """Every (dst_offset, size) of ranges(length) whose source, `size` bytes from
    `src_offset`, fits in `length` bytes too."""
    return [(o, n) for o, n in ranges(length) if src_offset + n <= length]


# ---------------------------------------------------------------- writes


@pytest.mark.parametrize("length", LENGTHS)
def test_a_write_at_any_byte_offset_and_size_sets_exactly_its_bytes(device: vn.Device, length: int) -> None:
    model = rand(length, 1)
    buf = device.upload(model)
    for i, (offset, n) in enumerate(ranges(length)):
        data = rand(n, 100 + i)
        buf.write(data, offset=offset)
        model[offset : offset + n] = data
        assert np.array_equal(contents(buf), model), (offset, n)


@pytest.mark.parametrize("storage", [True, False], ids=["storage", "copy_only"])
def test_a_partial_word_write_sets_exactly_its_bytes_whether_or_not_the_buffer_binds_as_storage(
    device: vn.Device, storage: bool
) -> None:
    """With STORAGE usage a write's partial head and tail words are set in place by one
    tiny dispatch; without, merged through the temporary buffer: the same bytes."""
    length = (1 << 20) + 7
    model = rand(length, 2)
    buf = device.upload(model, usage=None if storage else vn.BufferUsage.COPY_SRC | vn.BufferUsage.COPY_DST)
    for offset, n in [(1, length - 3), (257, 2), (length - 5, 3), (6, 1), (3, length - 3), (1022, 4097)]:
        data = rand(n, offset)
        buf.write(data, offset=offset)
        model[offset : offset + n] = data
        assert np.array_equal(contents(buf), model), (offset, n)


@pytest.mark.parametrize("length", LENGTHS)
def test_a_write_into_a_view_at_any_byte_offset_sets_exactly_its_bytes(
    device: vn.Device, length: int
) -> None:
    model = rand(length, 2)
    buf = device.upload(model)
    view = buf.view(3, length - 5)
    for i, (offset, n) in enumerate(ranges(view.nbytes)):
        data = rand(n, 200 + i)
        view.write(data, offset=offset)
        model[3 + offset : 3 + offset + n] = data
        assert np.array_equal(contents(buf), model), (offset, n)


def test_three_uint8_at_offset_5_are_written_read_and_copied_as_they_are(device: vn.Device) -> None:
    arena = device.upload(np.arange(16, dtype=np.uint8))
    tensor = arena.view(5, 3)
    tensor.write(np.array([200, 201, 202], np.uint8))
    assert tensor.read() == bytes([200, 201, 202])
    other = device.upload(np.full(16, 9, np.uint8))
    device.copy(tensor, other.view(10, 3))
    assert list(contents(arena)) == [0, 1, 2, 3, 4, 200, 201, 202, *range(8, 16)]
    assert list(contents(other)) == [9] * 10 + [200, 201, 202] + [9] * 3


def test_a_partial_word_write_without_copy_src_raises_naming_the_usage(device: vn.Device) -> None:
    buf = device.alloc(15, usage=vn.BufferUsage.STORAGE | vn.BufferUsage.COPY_DST)
    with pytest.raises(vn.InvalidArgumentError, match=r"2 bytes at byte 5 .*COPY_SRC.*Fix:"):
        buf.write(b"ab", offset=5)
    buf.write(b"xyz", offset=12)  # the rest of the last word is padding: written whole


# ---------------------------------------------------------------- reads


@pytest.fixture(params=LENGTHS, ids=str)
def uploaded(request: pytest.FixtureRequest, device: vn.Device) -> tuple[np.ndarray, vn.Buffer]:
    """A buffer of each length in LENGTHS holding random bytes, and its numpy model."""
    model = rand(request.param, 3)
    return model, device.upload(model)


def test_a_read_of_a_view_at_any_byte_offset_and_size_returns_exactly_its_bytes(
    uploaded: tuple[np.ndarray, vn.Buffer],
) -> None:
    model, buf = uploaded
    for offset, n in nonempty_ranges(model.size):
        view = buf.view(offset, n)
        want = model[offset : offset + n]
        assert view.read() == want.tobytes(), (offset, n)
        assert np.array_equal(view.read(np.uint8, copy=False), want), (offset, n)
        assert view.read_async().result() == want.tobytes(), (offset, n)


def test_read_into_of_a_view_at_any_byte_offset_fills_exactly_its_bytes(
    uploaded: tuple[np.ndarray, vn.Buffer],
) -> None:
    model, buf = uploaded
    for offset, n in nonempty_ranges(model.size):
        out = np.full(n + 2, 0xEE, np.uint8)
        assert buf.view(offset, n).read_into(out) == n
        assert np.array_equal(out[:n], model[offset : offset + n]) and (out[n:] == 0xEE).all(), (offset, n)


# ---------------------------------------------------------------- copies


@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("src_offset", OFFSETS)
def test_a_copy_between_buffers_at_any_byte_range_sets_exactly_its_bytes(
    device: vn.Device, length: int, src_offset: int
) -> None:
    src_model = rand(length, 5)
    src = device.upload(src_model)
    dst_model = rand(length, 6)
    dst = device.upload(dst_model)
    for dst_offset, n in copy_ranges(length, src_offset):
        device.copy(src, dst, n, src_offset, dst_offset)
        dst_model[dst_offset : dst_offset + n] = src_model[src_offset : src_offset + n]
        assert np.array_equal(contents(dst), dst_model), (src_offset, dst_offset, n)
    assert np.array_equal(contents(src), src_model)


@pytest.mark.parametrize("src_offset", OFFSETS)
def test_a_copy_within_one_buffer_at_any_byte_range_copies_as_memmove(
    device: vn.Device, src_offset: int
) -> None:
    length = 19
    model = rand(length, 7)
    buf = device.upload(model)
    for dst_offset, n in copy_ranges(length, src_offset):
        device.copy(buf, buf, n, src_offset, dst_offset)
        model[dst_offset : dst_offset + n] = model[src_offset : src_offset + n].copy()
        assert np.array_equal(contents(buf), model), (src_offset, dst_offset, n)


def test_a_copy_between_views_counts_offsets_from_each_views_start(device: vn.Device) -> None:
    src_model, dst_model = rand(32, 8), rand(32, 9)
    src, dst = device.upload(src_model), device.upload(dst_model)
    device.copy(src.view(3, 20), dst.view(6, 20), nbytes=7, src_offset=2, dst_offset=1)
    dst_model[7:14] = src_model[5:12]
    assert np.array_equal(contents(dst), dst_model)


def test_a_copy_without_nbytes_copies_as_much_as_fits(device: vn.Device) -> None:
    src_model, dst_model = rand(20, 10), rand(12, 11)
    src, dst = device.upload(src_model), device.upload(dst_model)
    device.copy(src, dst, src_offset=3, dst_offset=5)
    dst_model[5:] = src_model[3:10]
    assert np.array_equal(contents(dst), dst_model)


@pytest.mark.parametrize(("src_offset", "dst_offset"), [(1, 6), (4096 + 3, 1), (8, 8)])
def test_a_copy_of_megabytes_shifted_within_words_matches_numpy(
    device: vn.Device, src_offset: int, dst_offset: int
) -> None:
    length = (9 << 20) + 7  # more than two of the copy's 4 MiB chunks
    src_model, dst_model = rand(length, 12), rand(length, 13)
    src, dst = device.upload(src_model), device.upload(dst_model)
    n = length - max(src_offset, dst_offset) - 2
    device.copy(src, dst, n, src_offset, dst_offset)
    dst_model[dst_offset : dst_offset + n] = src_model[src_offset : src_offset + n]
    assert np.array_equal(contents(dst), dst_model)


@pytest.mark.parametrize("storage", ["both", "source_only", "neither"])
def test_a_shifted_copy_sets_exactly_its_bytes_whichever_buffers_can_be_bound(device: vn.Device, storage: str) -> None:
    """Between two buffers with STORAGE usage the whole words go through the shift kernel
    (both bound as storage), otherwise every word through the temporary buffer: the same
    bytes either way, the partial head and tail included."""
    copy_only = vn.BufferUsage.COPY_SRC | vn.BufferUsage.COPY_DST
    length = (1 << 20) + 13
    src_model, dst_model = rand(length, 15), rand(length + 3, 16)
    src = device.upload(src_model, usage=None if storage != "neither" else copy_only)
    dst = device.upload(dst_model, usage=None if storage == "both" else copy_only)
    for src_offset, dst_offset, n in [(3, 258, length - 300), (513, 2, 4097), (1, 0, length - 1)]:
        device.copy(src, dst, n, src_offset, dst_offset)
        dst_model[dst_offset : dst_offset + n] = src_model[src_offset : src_offset + n]
        assert np.array_equal(contents(dst), dst_model)


@pytest.mark.parametrize(("src_offset", "dst_offset"), [(1, 4096 + 2), (4096 + 2, 1)])
def test_an_overlapping_copy_of_megabytes_within_one_buffer_copies_as_memmove(
    device: vn.Device, src_offset: int, dst_offset: int
) -> None:
    length = (9 << 20) + 5
    model = rand(length, 14)
    buf = device.upload(model)
    n = length - max(src_offset, dst_offset)
    device.copy(buf, buf, n, src_offset, dst_offset)
    model[dst_offset : dst_offset + n] = model[src_offset : src_offset + n].copy()
    assert np.array_equal(contents(buf), model)


def test_a_copy_past_the_source_raises_naming_the_sizes(device: vn.Device) -> None:
    at_most = r"copying 10 bytes.*source \(11 bytes from offset 3\).*Fix: copy at most 8 bytes"
    with pytest.raises(vn.InvalidArgumentError, match=at_most):
        device.copy(device.alloc(11), device.alloc(16), 10, src_offset=3)


def test_a_partial_word_copy_into_a_buffer_without_copy_src_raises_naming_the_usage(
    device: vn.Device,
) -> None:
    dst = device.alloc(16, usage=vn.BufferUsage.STORAGE | vn.BufferUsage.COPY_DST)
    with pytest.raises(vn.InvalidArgumentError, match=r"COPY_SRC.*Fix:"):
        device.copy(device.alloc(16), dst, 3, dst_offset=5)
    device.copy(device.alloc(16), dst, 8, dst_offset=4)  # whole words need none


def test_a_copy_between_two_devices_goes_through_the_host_at_any_byte_range(device: vn.Device) -> None:
    with vn.Device() as other:
        src_model, dst_model = rand(64, 15), rand(64, 16)
        src, dst = device.upload(src_model), other.upload(dst_model)
        device.copy(src.view(1, 40), dst, nbytes=37, src_offset=2, dst_offset=9)
        dst_model[9:46] = src_model[3:40]
        assert np.array_equal(contents(dst), dst_model)
        other.copy(dst, src, 5, 10, 1)  # either device's copy; from the other side
        src_model[1:6] = dst_model[10:15]
        assert np.array_equal(contents(src), src_model)


def test_a_copy_called_on_a_device_that_holds_neither_buffer_raises_binding_error(device: vn.Device) -> None:
    with vn.Device() as other:
        a, b = other.alloc(8), other.alloc(8)
        with pytest.raises(vn.BindingError, match=r"neither.*Fix:"):
            device.copy(a, b)


# ---------------------------------------------------------------- queue order

INCREMENT = """
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < arrayLength(&out)) { out[gid.x] = out[gid.x] + 0x01010101u; }
}
"""


def test_an_unaligned_write_lands_after_a_queued_kernel_and_before_the_read(device: vn.Device) -> None:
    buf = device.upload(rand(1 << 16, 17))
    prog = device.compile(FILL_U32, constants={"value": 0xA0B0C0D0})
    fill = prog.record([], [buf], workgroups=(256, 1, 1), clear_outputs=False)
    fill.replay(64)  # not waited for
    buf.write(b"\x01\x02\x03", offset=5)
    want = np.frombuffer(np.full(1 << 14, 0xA0B0C0D0, np.uint32).tobytes(), np.uint8).copy()
    want[5:8] = [1, 2, 3]
    assert np.array_equal(contents(buf), want)


def test_a_kernel_replayed_after_an_unaligned_write_and_copy_sees_both(device: vn.Device) -> None:
    model = rand(4096, 18)
    buf = device.upload(model)
    src = device.upload(rand(64, 19))
    inc = device.compile(INCREMENT).record([], [buf], workgroups=(16, 1, 1), clear_outputs=False)
    inc.replay()
    buf.write(b"\xfe\xfe", offset=1)
    device.copy(src, buf, 9, src_offset=3, dst_offset=10)
    inc.replay().wait()
    want = model.copy()
    want.view(np.uint32)[:] += 0x01010101
    want[1:3] = 0xFE
    want[10:19] = src.read(np.uint8)[3:12]
    want.view(np.uint32)[:] += 0x01010101  # the second replay, after the write and the copy
    assert np.array_equal(contents(buf), want)


# ---------------------------------------------------------------- bindings and steps


DOUBLE_U32 = """
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(1)
fn main() { out[0] = 2u * out[0]; }
"""


def test_a_storage_binding_of_a_view_ending_mid_word_inside_its_buffer_raises_binding_error(
    device: vn.Device,
) -> None:
    prog = device.compile(DOUBLE_U32)
    buf = device.alloc(1024)
    with pytest.raises(
        vn.BindingError, match=r"6 bytes and ends mid-word.*multiple of 4.*padding it to 8.*Fix:"
    ):
        prog.record([], [buf.view(256, 6)])


def test_a_sequence_copy_step_off_word_boundaries_raises_pointing_at_device_copy(device: vn.Device) -> None:
    seq = device.sequence()
    with pytest.raises(vn.InvalidArgumentError, match=r"bytes 5 and 0.*Device.copy"):
        seq.copy(device.alloc(64).view(1, 32), device.alloc(64), nbytes=8, src_offset=4)
    assert len(seq) == 0


def test_a_sequence_clear_of_a_view_covering_part_of_a_word_raises(device: vn.Device) -> None:
    seq = device.sequence()
    with pytest.raises(vn.InvalidArgumentError, match=r"3 bytes at byte 5 .*part of a 4-byte word.*Fix:"):
        seq.clear(device.alloc(64).view(5, 3))
    assert len(seq) == 0
