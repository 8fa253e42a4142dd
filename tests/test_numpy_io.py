"""Typed reads: read_output / Buffer.read / PendingRead.result with dtype and shape."""

from __future__ import annotations

import numpy as np
import pytest
from support.kernels import DOUBLE

import vyre_native as vn

DATA = np.arange(32, dtype=np.float32)


@pytest.fixture(scope="module")
def buf(device: vn.Device) -> vn.Buffer:
    return device.upload(DATA)


def test_buffer_read_with_a_dtype_is_a_writable_1d_array(buf: vn.Buffer) -> None:
    arr = buf.read(np.float32)
    assert isinstance(arr, np.ndarray) and arr.dtype == np.float32 and arr.shape == (32,)
    assert np.array_equal(arr, DATA)
    assert arr.flags.writeable and arr.flags.c_contiguous
    arr[0] = 99.0  # the caller owns it


def test_buffer_read_with_a_shape_gives_that_shape(buf: vn.Buffer) -> None:
    arr = buf.read("f4", shape=(4, 8))
    assert arr.shape == (4, 8)
    assert np.array_equal(arr, DATA.reshape(4, 8))


def test_another_dtype_reinterprets_the_bytes(buf: vn.Buffer) -> None:
    assert np.array_equal(buf.read(np.uint32), DATA.view(np.uint32))
    assert buf.read(np.uint8, shape=128).tobytes() == DATA.tobytes()


def test_without_a_dtype_reads_are_bytes(buf: vn.Buffer) -> None:
    assert buf.read() == DATA.tobytes()


def test_a_shape_that_does_not_cover_the_bytes_is_a_value_error(buf: vn.Buffer) -> None:
    with pytest.raises(
        vn.InvalidArgumentError, match=r"shape \(4, 4\) of float32 is 64 bytes, but the data is 128"
    ):
        buf.read(np.float32, shape=(4, 4))


def test_a_dtype_that_does_not_divide_the_bytes_is_a_value_error(device: vn.Device) -> None:
    odd = device.upload(b"123456")
    with pytest.raises(vn.InvalidArgumentError, match=r"6 bytes are not a whole number of float32 items"):
        odd.read(np.float32)


def test_a_dtype_of_objects_is_refused(buf: vn.Buffer) -> None:
    with pytest.raises(vn.WrongTypeError, match="Python objects"):
        buf.read(object)


def test_something_that_is_not_a_dtype_is_a_type_error(buf: vn.Buffer) -> None:
    with pytest.raises(vn.WrongTypeError, match="is not a numpy dtype"):
        buf.read("not-a-dtype")


def test_a_shape_without_a_dtype_is_a_type_error(buf: vn.Buffer) -> None:
    with pytest.raises(vn.WrongTypeError, match="without a dtype"):
        buf.read(shape=(32,))  # type: ignore[call-overload]


def test_a_negative_or_huge_dimension_is_a_value_error(buf: vn.Buffer) -> None:
    with pytest.raises(vn.InvalidArgumentError):
        buf.read(np.float32, shape=(-1, 32))
    with pytest.raises(vn.InvalidArgumentError):
        buf.read(np.float32, shape=(2**70,))


def test_prerecorded_read_output_with_a_dtype(device: vn.Device, buf: vn.Buffer) -> None:
    rec = device.compile(DOUBLE).prerecord_persistent_dispatch([buf], [device.alloc(DATA.nbytes)])
    rec.replay()
    assert np.array_equal(rec.read_output(0, np.float32, (2, 16)), 2 * DATA.reshape(2, 16))


def test_recording_read_output_with_a_dtype(device: vn.Device, buf: vn.Buffer) -> None:
    rec = device.compile(DOUBLE).record([buf], [device.alloc(DATA.nbytes)])
    rec.replay()
    assert np.array_equal(rec.read_output(0, dtype=np.float32), 2 * DATA)


def test_pending_read_result_with_a_dtype(buf: vn.Buffer) -> None:
    pending = buf.read_async()
    arr = pending.result(np.float32, shape=(32,))
    assert np.array_equal(arr, DATA)
    assert pending.done
