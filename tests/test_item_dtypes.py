"""Dtypes are converted once (``_marshal.to_dtype``) into plain items: a subarray dtype is
its items and their shape (``'(2,)>u4'`` is ``'>u4'`` with an extra axis of 2), as numpy
itself makes an array of one, so every path handles an array of plain items.

``Worker.run`` swapped a big-endian output with ``astype`` of the dtype as given, which
for a subarray dtype broadcasts: ``('(2,)>u4', (8,))`` came back shaped (8, 2, 2) with
every value repeated. Structured dtypes are handled exactly, field by field (byte order
included); byte order is as before: the Worker's arrays are values (swapped to WGSL's
little-endian), a buffer's read reinterprets its bytes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from support.errors import typed
from support.kernels import INC_U32

import vyre_native as vn

WORDS = 16
X = np.arange(WORDS, dtype="<u4") * 0x01010101  # every byte of a word differs from its neighbours'
GPU_BYTES = (X + 1).astype("<u4").tobytes()  # what the kernel leaves in the output


@pytest.fixture(scope="module")
def worker() -> vn.worker.Worker:
    return vn.worker.Worker(kernels={"inc": INC_U32})


def expected(dtype: Any, shape: tuple[int, ...]) -> np.ndarray:
    """The values of the GPU's little-endian bytes as an array of ``dtype`` and ``shape``,
    made by numpy alone (``numpy.empty(shape, dtype)`` gives a subarray dtype's axes)."""
    like = np.empty(shape, np.dtype(dtype))
    little = like.dtype.newbyteorder("<")
    return np.frombuffer(GPU_BYTES, little).reshape(like.shape).astype(like.dtype)


SUBARRAYS = ["(2,)>u4", "(2,)<u4", "(2,)u4", "(2,2)>u4", (">u2", (2,)), ("(2,)>u2", (2,)), "(4,)>i1"]


@pytest.mark.parametrize("item", SUBARRAYS, ids=str)
def test_a_worker_output_of_a_subarray_dtype_is_its_items_once(worker: vn.worker.Worker, item: Any) -> None:
    dt = np.dtype(item)
    shape = (WORDS * 4 // dt.itemsize,)
    (out,) = worker.run("inc", [X], [(item, shape)], (1, 1, 1))
    want = expected(item, shape)
    like = np.empty(shape, dt)  # numpy's own array of it: (8, 2) and >u4 for ('(2,)>u4', (8,))
    assert out.shape == want.shape == like.shape and len(out.shape) == 1 + len(dt.shape) + len(dt.base.shape)
    assert out.dtype == want.dtype == like.dtype and out.dtype.shape == ()
    np.testing.assert_array_equal(out, want)


BIG_RECORD = np.dtype(
    {"names": ["a", "b"], "formats": [">u4", (">u2", (3,))], "offsets": [0, 4], "itemsize": 16}
)


@pytest.mark.parametrize("item", [BIG_RECORD, np.dtype([("x", ">u2"), ("y", "<u2")]), np.dtype([("t", ">M8[s]")])])
def test_a_worker_output_of_a_structured_dtype_is_its_values_field_by_field(
    worker: vn.worker.Worker, item: np.dtype
) -> None:
    shape = (WORDS * 4 // item.itemsize,)
    (out,) = worker.run("inc", [X], [(item, shape)], (1, 1, 1))
    want = expected(item, shape)
    assert out.dtype == item and out.shape == shape
    for name in item.names:
        np.testing.assert_array_equal(out[name], want[name])


def test_a_structured_big_endian_input_goes_to_the_gpu_as_its_values(worker: vn.worker.Worker) -> None:
    pairs = np.zeros(WORDS // 2, dtype=[("a", ">u4"), ("b", ">u4")])
    pairs["a"], pairs["b"] = np.arange(8), np.arange(8) * 1000
    (out,) = worker.run("inc", [pairs], [("<u4", (WORDS,))], (1, 1, 1))
    np.testing.assert_array_equal(out.reshape(-1, 2), np.stack([pairs["a"], pairs["b"]], axis=1) + 1)


@pytest.mark.parametrize("copy", [True, False])
@pytest.mark.parametrize("item", ["(2,)>u4", "(2,)<u4", (">u2", (2, 2)), ("(2,)>u2", (2,))], ids=str)
def test_a_read_of_a_subarray_dtype_is_its_items_in_the_bytes_byte_order(
    device: vn.Device, item: Any, copy: bool
) -> None:
    buf = device.upload(GPU_BYTES)
    dt = np.dtype(item)
    out = buf.read(item, copy=copy)
    count = len(GPU_BYTES) // dt.itemsize
    like = np.empty(count, dt)
    want = np.frombuffer(GPU_BYTES, like.dtype).reshape(like.shape)  # the bytes as they are: no swap
    assert out.dtype == like.dtype and out.shape == like.shape
    np.testing.assert_array_equal(out, want)
    shaped = buf.read(item, shape=(2, count // 2), copy=copy)
    assert shaped.shape == np.empty((2, count // 2), dt).shape
    np.testing.assert_array_equal(shaped.reshape(want.shape), want)


@pytest.mark.parametrize("item", [object, [("x", "<f4"), ("o", "O")], "V0", ("u4", (0,))], ids=str)
def test_a_dtype_of_no_plain_data_is_refused_by_reads_and_the_worker(
    device: vn.Device, worker: vn.worker.Worker, item: Any
) -> None:
    buf = device.alloc(64)
    typed(lambda: buf.read(item), vn.WrongTypeError, "not data")
    typed(lambda: worker.run("inc", [X], [(item, (4,))], (1, 1, 1)), vn.WrongTypeError, "not data")


def test_a_worker_output_whose_bytes_numpy_cannot_hold_is_a_typed_error(worker: vn.worker.Worker) -> None:
    # 2**62 items of 8 bytes: 2**65 bytes, past numpy's intp and a uint64_t alike
    typed(
        lambda: worker.run("inc", [X], [("(2,)u4", (2**62,))], (1, 1, 1)),
        vn.InvalidArgumentError,
        "Worker.run outputs[0]",
        2**65,
    )


@pytest.mark.parametrize(
    "item",
    ["(2**40,)u1", "(-1,)u4", "(2,", [("a", "u4"), ("a", "u4")], "deep"],
    ids=["expression", "negative", "unclosed", "duplicate_field", "nested_100000_deep"],
)
def test_a_malformed_dtype_is_a_typed_error_for_reads_and_the_worker(
    device: vn.Device, worker: vn.worker.Worker, item: Any
) -> None:
    # numpy's parse raised ValueError, SyntaxError ('(2,') or RecursionError: only its TypeError was caught
    if item == "deep":
        item = []
        for _ in range(100_000):
            item = [item]
    buf = device.alloc(64)
    for copy in (True, False):
        typed(lambda: buf.read(item, copy=copy), vn.WrongTypeError, "is not a numpy dtype")
    typed(lambda: worker.run("inc", [X], [(item, (4,))], (1, 1, 1)), vn.WrongTypeError, "is not a numpy dtype")


@pytest.mark.parametrize("item", ["<U1", ">U2", [("n", "<u4"), ("s", "<U1")], ("<U1", (2,))], ids=str)
def test_a_unicode_dtype_is_refused_for_reads_and_outputs_and_sent_as_an_input(
    device: vn.Device, worker: vn.worker.Worker, item: Any
) -> None:
    # GPU words that are not code points made an array whose elements raised SystemError when read
    buf = device.upload(np.array([0x41, 0x110000, 0xFFFFFFFF, 0x42] * 4, "<u4"))
    for copy in (True, False):
        typed(lambda: buf.read(item, copy=copy), vn.WrongTypeError, "'U'", "uint32")
    typed(lambda: worker.run("inc", [X], [(item, (4,))], (1, 1, 1)), vn.WrongTypeError, "'U'", "uint32")
    (out,) = worker.run("inc", [np.array(["A"] * WORDS, "<U1")], [("<u4", (WORDS,))], (1, 1, 1))
    assert out.tolist() == [0x42] * WORDS  # an input is its words, which are code points


OVERLAPPING = {"names": ["a", "b"], "formats": [">u4", ">u2"], "offsets": [0, 0], "itemsize": 4}
NESTED = [("s", [("x", ">u2"), ("y", ">u2")], (3,)), ("z", ">u4")]  # separate fields, a subarray of a structure


@pytest.mark.parametrize(
    "item",
    [OVERLAPPING, {"names": ["a", "b"], "formats": [">u4", "u1"], "offsets": [0, 3], "itemsize": 4},
     [("t", OVERLAPPING, (2,))]],
    ids=["same_offset", "a_byte_inside", "inside_a_subarray"],
)
def test_a_non_little_endian_dtype_whose_fields_overlap_is_refused_by_the_worker(
    worker: vn.worker.Worker, item: Any
) -> None:
    # converted field by field, one field's swap overwrote the other's bytes: wrong values both ways
    dt = np.dtype(item)
    typed(lambda: worker.run("inc", [X], [(dt, (4,))], (1, 1, 1)), vn.WrongTypeError, "share bytes")
    typed(lambda: worker.run("inc", [np.zeros(4, dt)], [("<u4", (4,))], (1, 1, 1)), vn.WrongTypeError,
          "share bytes")
    little = dt.newbyteorder("<")  # nothing converted: its bytes are the GPU's
    (out,) = worker.run("inc", [X], [(little, (WORDS * 4 // little.itemsize,))], (1, 1, 1))
    assert out.tobytes() == GPU_BYTES[: out.nbytes]


def test_a_big_endian_structure_of_separate_fields_is_its_values(worker: vn.worker.Worker) -> None:
    dt = np.dtype(NESTED)
    n = WORDS * 4 // dt.itemsize
    (out,) = worker.run("inc", [X], [(dt, (n,))], (1, 1, 1))
    np.testing.assert_array_equal(out, expected(dt, (n,)))
