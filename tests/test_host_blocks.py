"""Host blocks: a copying typed read of 1 MiB or more fills memory an earlier array gave
back (csrc/base/host_blocks.c), never memory any array or view still uses, and what is
kept stays within its bound."""

from __future__ import annotations

import gc
import os
import pickle
import sys
import threading
from typing import Any

import numpy as np
import pytest

import vyre_native as vn
from vyre_native import readback
from vyre_native._lib import ffi, lib

MIN = int(lib.VN_HOST_BLOCK_MIN_BYTES)
KEPT_MOST = int(lib.VN_HOST_BLOCKS_KEPT_BYTES)
N = (4 << 20) // 4  # float32 elements of a 4 MiB buffer


@pytest.fixture(autouse=True)
def _none_kept() -> None:
    gc.collect()  # arrays of earlier tests given back, then freed: each test counts from 0
    vn.debug.free_kept_host_memory()
    assert vn.debug.kept_host_bytes() == 0


@pytest.fixture(scope="module")
def big(device: vn.Device) -> vn.Buffer:
    return device.upload(np.arange(N, dtype=np.float32))


def take(nbytes: int) -> object:
    slot = ffi.new("void **")
    assert lib.vn_host_block_take(nbytes, slot) == 0
    return slot[0]


def test_a_large_typed_read_is_a_writable_array_of_the_data(big: vn.Buffer) -> None:
    arr = big.read(np.float32, shape=(N // 1024, 1024))
    assert arr.shape == (N // 1024, 1024) and arr.dtype == np.float32
    assert arr.flags.writeable and arr.flags.c_contiguous and arr.flags.aligned
    assert np.array_equal(arr.ravel(), np.arange(N, dtype=np.float32))
    assert np.array_equal(pickle.loads(pickle.dumps(arr)), arr)


def test_reads_while_an_array_lives_never_share_its_memory(big: vn.Buffer) -> None:
    first = big.read(np.float32)
    first[:] = -1.0  # the caller's to change
    second = big.read(np.float32)
    assert np.shares_memory(first, second) is False
    assert np.array_equal(second, np.arange(N, dtype=np.float32))
    assert (first == -1.0).all()


def test_a_view_keeps_its_memory_after_its_array_is_gone(big: vn.Buffer) -> None:
    arr = big.read(np.float32)
    tail = arr[N // 2 :]
    del arr
    gc.collect()
    again = [big.read(np.float32) for _ in range(3)]  # would reuse a block given back
    assert np.array_equal(tail, np.arange(N // 2, N, dtype=np.float32))
    assert not any(np.shares_memory(tail, a) for a in again)


def test_memory_an_array_gave_back_serves_the_next_read(big: vn.Buffer, device: vn.Device) -> None:
    arr = big.read(np.float32)
    assert vn.debug.kept_host_bytes() == 0
    del arr
    gc.collect()
    assert vn.debug.kept_host_bytes() == N * 4
    out = device.alloc(N * 4).read(np.uint8)  # same size: the kept block, refilled
    assert vn.debug.kept_host_bytes() == 0
    assert not out.any()


@pytest.mark.parametrize("how", ["Buffer.read", "read_output", "PendingRead.result"])
def test_every_copying_typed_read_fills_a_host_block(how: str, device: vn.Device, double: vn.Pipeline) -> None:
    data = np.arange(N, dtype=np.float32)
    src = device.upload(data)
    if how == "Buffer.read":
        arr = src.read(np.float32)
        want = data
    elif how == "read_output":
        rec = double.record([src], [device.alloc(N * 4)], workgroups=(N // 64, 1, 1))
        rec.replay().wait()
        arr = rec.read_output(0, np.float32)
        want = data * 2
    else:
        arr = src.read_async().result(np.float32)
        want = data
    assert np.array_equal(arr, want)
    del arr
    gc.collect()
    assert vn.debug.kept_host_bytes() == N * 4


def test_a_small_read_is_an_ordinary_array(device: vn.Device) -> None:
    arr = device.upload(np.arange(MIN // 4 - 1, dtype=np.float32)).read(np.float32)
    assert arr.base is None  # numpy's own memory
    del arr
    gc.collect()
    assert vn.debug.kept_host_bytes() == 0


def test_at_most_sixteen_blocks_are_kept_the_oldest_freed_first() -> None:
    blocks = [take(MIN + i) for i in range(40)]
    for block in blocks:
        lib.vn_host_block_give(block)
    assert vn.debug.kept_host_bytes() == sum(MIN + i for i in range(24, 40))


def test_at_most_the_byte_bound_is_kept() -> None:
    size = KEPT_MOST // 3 + 1
    blocks = [take(size) for _ in range(3)]
    for block in blocks:
        lib.vn_host_block_give(block)
    assert vn.debug.kept_host_bytes() == 2 * size  # the third pushed the first out
    lib.vn_host_block_give(take(KEPT_MOST + 1))  # more than may be kept at all: freed
    assert vn.debug.kept_host_bytes() == 2 * size


def test_a_kept_block_serves_a_size_it_is_at_most_twice() -> None:
    lib.vn_host_block_give(take(8 * MIN))
    small = take(MIN)  # 8 MiB is more than twice 1 MiB: a new block
    assert vn.debug.kept_host_bytes() == 8 * MIN
    half = take(4 * MIN)  # 8 MiB serves 4 MiB
    assert vn.debug.kept_host_bytes() == 0
    lib.vn_host_block_give(small)
    lib.vn_host_block_give(half)
    assert vn.debug.kept_host_bytes() == 9 * MIN  # a block keeps its own size


def test_a_null_out_and_a_null_block_are_handled() -> None:
    assert lib.vn_host_block_take(MIN, ffi.NULL) == lib.VN_ERROR_INVALID_ARGUMENT
    lib.vn_host_block_give(ffi.NULL)  # nothing


def test_more_than_the_host_has_is_out_of_memory() -> None:
    slot = ffi.new("void **")
    assert lib.vn_host_block_take(2**64 - 1, slot) == lib.VN_ERROR_OUT_OF_MEMORY
    assert slot[0] == ffi.NULL
    assert "Fix: free host memory" in ffi.string(lib.vn_last_error()).decode()


def test_threads_reading_at_once_each_get_their_own_data(device: vn.Device) -> None:
    sources = [device.upload(np.full(N, i, dtype=np.float32)) for i in range(4)]
    wrong: list[int] = []

    def reader(i: int) -> None:
        for _ in range(10):
            arr = sources[i].read(np.float32)
            if not (arr == i).all():
                wrong.append(i)

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")  # the point
def test_a_fork_while_threads_take_and_give_leaves_the_child_a_free_pool() -> None:
    stop = threading.Event()

    def churn() -> None:
        while not stop.is_set():
            lib.vn_host_block_give(take(MIN))

    threads = [threading.Thread(target=churn) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        children = []
        for _ in range(6):
            pid = os.fork()
            if pid == 0:  # the child: take and give must not wait on a lock a parent's thread held
                try:
                    lib.vn_host_block_give(take(MIN))
                    os._exit(0)
                finally:
                    os._exit(1)
            children.append(pid)
        for pid in children:
            assert os.waitpid(pid, 0)[1] == 0
    finally:
        stop.set()
        for t in threads:
            t.join()


def test_an_exception_at_any_instruction_of_making_the_array_loses_no_block(big: vn.Buffer) -> None:
    """A signal handler's exception (a KeyboardInterrupt) may land between any two
    instructions (here: at every line and instruction a trace function sees). A block is
    owned by its cffi cdata from the moment C hands it over (one C step,
    ffi.new_allocator), so a read broken off anywhere gives it back: with nothing kept and
    no array alive, no block is left."""
    code = readback.array_of.__code__
    point = 1
    while True:
        seen = [0]

        def tracer(frame: Any, event: str, arg: Any) -> Any:
            if frame.f_code is not code:
                return None
            frame.f_trace_opcodes = True

            def local(frame: Any, event: str, arg: Any) -> Any:
                if event in ("line", "opcode"):  # 3.12 may give lines alone here
                    seen[0] += 1
                    if seen[0] == point:
                        raise KeyboardInterrupt
                return local

            return local

        arr = None
        sys.settrace(tracer)
        try:
            arr = big.read(np.float32)
        except KeyboardInterrupt:
            pass
        finally:
            sys.settrace(None)
        if arr is not None:
            assert np.array_equal(arr, np.arange(N, dtype=np.float32))
        del arr
        gc.collect()
        vn.debug.free_kept_host_memory()
        assert vn.debug.live_objects()["host_blocks"] == 0, f"a block lost at instruction {point}"
        if seen[0] < point:  # the read ran to its end before this point: every one was tried
            break
        point += 1
    assert point > 10
