"""Sizes are values: no integer a caller can pass means "to the end" or "everything".

C's views carried "to the end of the buffer" as the size UINT64_MAX, and copies "as much
as fits" as nbytes UINT64_MAX, so ``buf.view(1, 2**64 - 1)`` was a 63-byte view and
``dev.copy(a, b, nbytes=2**64 - 1)`` or ``Sequence.copy`` copied everything, while
``2**64 - 2`` was refused. "To the end" is now a view's ``to_end`` flag (a whole buffer
is ``{buffer, 0, 0, 1}``) and "as much as fits" a NULL count (Python's ``None``, converted
once in ``_marshal``: ``to_view``, ``to_count``), so every size and offset is checked as
given. Each call that takes one is tried at 2**32, 2**63 and 2**64 - 1 (and, where a
property says it better, at any u64 by hypothesis).
"""

from __future__ import annotations

import mmap

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from support.errors import typed
from support.kernels import DOUBLE

import vyre_native as vn
from vyre_native._lib import ffi, lib

HUGE = [2**32, 2**63, 2**64 - 1]
LEN = 64  # bytes of the buffers the calls below are given

#: any uint64_t, weighted towards the edges of the buffer and of the type
U64 = st.one_of(
    st.integers(0, LEN + 8),
    st.sampled_from([*HUGE, 2**64 - 2, 2**63 - 1, 2**32 - 1]),
    st.integers(0, 2**64 - 1),
)


def pad4(n: int) -> int:
    return 4 if n == 0 else (n + 3) // 4 * 4


@pytest.fixture()
def src(device: vn.Device) -> vn.Buffer:
    return device.upload(bytes(range(1, LEN + 1)))


@pytest.fixture()
def dst(device: vn.Device) -> vn.Buffer:
    return device.alloc(LEN)


# ---------------------------------------------------------------- views


@pytest.mark.parametrize("n", HUGE)
def test_a_view_of_a_huge_size_is_refused_as_that_size(src: vn.Buffer, n: int) -> None:
    typed(lambda: src.view(1, n), vn.InvalidArgumentError, n, "nbytes of at most 63")


@pytest.mark.parametrize("n", HUGE)
def test_a_view_at_a_huge_offset_is_refused_as_that_offset(src: vn.Buffer, n: int) -> None:
    typed(lambda: src.view(n, 1), vn.InvalidArgumentError, n, "below 64")


@settings(max_examples=200, deadline=None)
@given(offset=U64, nbytes=U64)
@example(offset=1, nbytes=2**64 - 1)
@example(offset=0, nbytes=2**64 - 1)
def test_a_view_is_exactly_its_offset_and_size_or_refused(device: vn.Device, offset: int, nbytes: int) -> None:
    buf = device.alloc(LEN)
    if nbytes >= 1 and offset + nbytes <= LEN:
        view = buf.view(offset, nbytes)
        assert (view.offset, view.nbytes) == (offset, nbytes)
    else:
        typed(lambda: buf.view(offset, nbytes), vn.InvalidArgumentError)


def test_a_c_view_of_size_uint64_max_is_that_size_not_the_rest(src: vn.Buffer) -> None:
    resolved = ffi.new("vn_view *")
    ptr = src._ptr
    assert lib.vn_view_check(ffi.new("vn_view *", (ptr, 1, 2**64 - 1, 0)), resolved) == lib.VN_ERROR_INVALID_ARGUMENT
    assert lib.vn_view_check(ffi.new("vn_view *", (ptr, 1, 0, 1)), resolved) == lib.VN_OK
    assert (resolved.offset, resolved.size, resolved.to_end) == (1, LEN - 1, 0)
    # to_end with a size as well says two things: refused, not one of them picked
    assert lib.vn_view_check(ffi.new("vn_view *", (ptr, 1, 5, 1)), resolved) == lib.VN_ERROR_INVALID_ARGUMENT


# ---------------------------------------------------------------- writes and reads


@pytest.mark.parametrize("n", HUGE)
def test_a_write_at_a_huge_offset_is_refused_and_changes_nothing(src: vn.Buffer, n: int) -> None:
    before = src.read()
    typed(lambda: src.write(b"\xff", offset=n), vn.InvalidArgumentError, n, "at most 64")
    typed(lambda: src.view(8, 8).write(b"\xff", offset=n), vn.InvalidArgumentError, n, "at most 8")
    assert src.read() == before


@pytest.mark.parametrize("n", HUGE)
def test_a_read_of_a_huge_shape_is_refused(src: vn.Buffer, n: int) -> None:
    for copy in (True, False):
        with pytest.raises(vn.InvalidArgumentError):
            src.read("u1", shape=(n,), copy=copy)


@pytest.mark.parametrize("n", HUGE)
def test_a_huge_output_index_is_refused(device: vn.Device, double: vn.Pipeline, n: int) -> None:
    rec = double.record([device.alloc(256)], [device.alloc(256)])
    for read in (lambda: rec.read_output(n), lambda: rec.read_output_into(n, bytearray(256))):
        with pytest.raises(vn.VyreError):
            read()


# ---------------------------------------------------------------- copies


@pytest.mark.parametrize("n", HUGE)
@pytest.mark.parametrize("arg", ["nbytes", "src_offset", "dst_offset"])
def test_a_copy_of_a_huge_size_or_offset_is_refused_and_copies_nothing(
    device: vn.Device, src: vn.Buffer, dst: vn.Buffer, arg: str, n: int
) -> None:
    typed(lambda: device.copy(src, dst, **{arg: n}), vn.InvalidArgumentError, n)
    assert dst.read() == bytes(LEN)


@pytest.mark.parametrize("n", HUGE)
def test_a_copy_between_devices_of_a_huge_size_is_refused(dev: vn.Device, src: vn.Buffer, n: int) -> None:
    other = dev.alloc(LEN)
    typed(lambda: dev.copy(src, other, nbytes=n), vn.InvalidArgumentError, n, "at most 64 bytes")
    assert other.read() == bytes(LEN)


@settings(max_examples=40, deadline=None)
@given(nbytes=U64, src_offset=st.integers(0, 8), dst_offset=st.integers(0, 8))
@example(nbytes=2**64 - 1, src_offset=0, dst_offset=0)
def test_a_copy_moves_exactly_nbytes_or_is_refused(
    device: vn.Device, nbytes: int, src_offset: int, dst_offset: int
) -> None:
    data = bytes(range(1, LEN + 1))
    a, b = device.upload(data), device.alloc(LEN)
    room = LEN - max(src_offset, dst_offset)
    if nbytes <= room:
        device.copy(a, b, nbytes=nbytes, src_offset=src_offset, dst_offset=dst_offset)
        want = bytearray(LEN)
        want[dst_offset : dst_offset + nbytes] = data[src_offset : src_offset + nbytes]
        assert b.read() == bytes(want)
    else:
        typed(
            lambda: device.copy(a, b, nbytes=nbytes, src_offset=src_offset, dst_offset=dst_offset),
            vn.InvalidArgumentError,
            nbytes,
            f"at most {room} bytes",
        )
        assert b.read() == bytes(LEN)


def test_a_copy_of_none_bytes_still_copies_as_much_as_fits(device: vn.Device, src: vn.Buffer) -> None:
    out = device.alloc(8)
    device.copy(src, out, src_offset=4)
    assert out.read() == bytes(range(5, 13))
    seq = device.sequence().copy(src, out, src_offset=8)
    seq.replay().wait()
    assert out.read() == bytes(range(9, 17))


@pytest.mark.parametrize("n", HUGE)
@pytest.mark.parametrize("arg", ["nbytes", "src_offset", "dst_offset"])
def test_a_sequence_copy_of_a_huge_size_or_offset_is_refused_and_adds_no_step(
    device: vn.Device, src: vn.Buffer, dst: vn.Buffer, arg: str, n: int
) -> None:
    seq = device.sequence()
    typed(lambda: seq.copy(src, dst, **{arg: n}), vn.InvalidArgumentError, n)
    assert len(seq) == 0


@pytest.mark.parametrize("nbytes", [2**64 - 1, 2**64 - 4, LEN + 1, LEN + 4])
def test_a_sequence_copy_past_the_buffers_is_refused_with_a_count_that_passes(
    device: vn.Device, src: vn.Buffer, dst: vn.Buffer, nbytes: int
) -> None:
    # 2**64 - 1 was refused for its alignment ("Fix: align them to 4 bytes"), and the aligned 2**64 - 4 then for size
    seq = device.sequence()
    text = typed(lambda: seq.copy(src, dst, nbytes=nbytes), vn.InvalidArgumentError, nbytes, f"at most {LEN} bytes")
    assert "multiples of 4" not in text
    seq.copy(src, dst, nbytes=LEN)
    assert len(seq) == 1


@settings(max_examples=60, deadline=None)
@given(nbytes=U64)
@example(nbytes=2**64 - 1)
def test_a_sequence_copy_step_is_exactly_nbytes_or_refused(device: vn.Device, nbytes: int) -> None:
    a, b = device.upload(bytes(range(1, LEN + 1))), device.alloc(LEN)
    seq = device.sequence()
    if nbytes <= LEN and nbytes % 4 == 0:
        seq.copy(a, b, nbytes=nbytes)
        assert len(seq) == 1
    else:
        with pytest.raises(vn.InvalidArgumentError):
            seq.copy(a, b, nbytes=nbytes)
        assert len(seq) == 0


# ---------------------------------------------------------------- dispatch arguments


@pytest.mark.parametrize("n", HUGE)
def test_a_huge_indirect_offset_is_refused(device: vn.Device, double: vn.Pipeline, n: int) -> None:
    args = device.upload(np.array([1, 1, 1], np.uint32))
    with pytest.raises(vn.VyreError):
        double.record([device.alloc(256)], [device.alloc(256)], indirect=(args, n))


# ---------------------------------------------------------------- sizes of new buffers


def _refused_alloc(device: vn.Device, n: int) -> str:
    """alloc(n) past maxBufferSize: OutOfMemoryError naming n, the padded size that was
    checked, the limit, and a Fix whose size would pass."""
    limit = device.limits["max_buffer_size"]
    fit = limit // 4 * 4  # the largest byte_len whose padded size is within the limit
    assert pad4(fit) <= limit < pad4(fit + 1)
    named = [n, limit, f"at most {fit} bytes"]
    if n <= 2**64 - 4 and pad4(n) != n:
        named.append(pad4(n))
    return typed(lambda: device.alloc(n), vn.OutOfMemoryError, *named)


@pytest.mark.parametrize("n", HUGE)
def test_alloc_of_a_huge_size_names_it_and_a_size_that_fits(device: vn.Device, n: int) -> None:
    if n <= device.limits["max_buffer_size"]:
        pytest.skip(f"this device holds a buffer of {n} bytes")
    _refused_alloc(device, n)


def test_alloc_of_a_size_whose_padding_passes_the_limit_names_the_padded_size(device: vn.Device) -> None:
    limit = device.limits["max_buffer_size"]
    if limit % 4 == 0:
        pytest.skip("maxBufferSize is whole words here: no size within it pads past it")
    msg = _refused_alloc(device, limit)  # lavapipe: 2**31 - 1, which pads to 2**31
    assert f"Fix: split the data into buffers of at most {limit} bytes" not in msg


def test_alloc_past_a_uint64_is_a_typed_error(device: vn.Device) -> None:
    typed(lambda: device.alloc(2**64), vn.InvalidArgumentError, 2**64, "uint64_t")


def test_an_upload_past_the_limit_is_refused_naming_its_size(device: vn.Device) -> None:
    limit = device.limits["max_buffer_size"]
    if limit >= 2**33:
        pytest.skip(f"maxBufferSize is {limit}: no upload past it is cheap to make here")
    region = mmap.mmap(-1, limit + 1)  # untouched pages: the size is refused before any copy
    typed(lambda: device.upload(region), vn.OutOfMemoryError, limit + 1, limit)


@pytest.mark.parametrize("n", HUGE)
def test_a_borrowed_dispatch_output_of_a_huge_size_is_refused(double: vn.Pipeline, n: int) -> None:
    with pytest.raises((vn.OutOfMemoryError, vn.InvalidArgumentError)) as info:
        double.prerecord_borrowed_dispatch([np.zeros(64, np.float32)], output_sizes=[n])
    assert str(n) in str(info.value) and "Fix:" in str(info.value)


@pytest.fixture(scope="module")
def worker() -> vn.worker.Worker:
    return vn.worker.Worker(kernels={"double": DOUBLE})


@pytest.mark.parametrize("shape", [(n,) for n in HUGE] + [(2**32, 2**32), (2**62, 2, 2)], ids=str)
def test_a_worker_output_of_a_huge_shape_is_refused(worker: vn.worker.Worker, shape: tuple[int, ...]) -> None:
    limit = worker.device.limits["max_buffer_size"]
    if len(shape) == 1 and shape[0] <= limit:
        pytest.skip(f"this device holds a buffer of {shape[0]} bytes")
    with pytest.raises((vn.OutOfMemoryError, vn.InvalidArgumentError)) as info:
        worker.run("double", [np.zeros(64, np.float32)], [("u1", shape)], (1, 1, 1))
    assert "Fix:" in str(info.value)
