"""A handle's native object lives as long as Python can reach the handle.

The cycle collector runs every finalizer of an unreachable cycle before it checks whether
one of them resurrected the cycle (PEP 442), and a ``__del__`` that puts a handle back on
a free list (what tensor libraries' caching allocators do) makes that handle reachable
again. Such a handle keeps working, with its own data, and its object is released when it
is finally unreachable (``vyre_native/_handles.py``, ``csrc/python/owner.c``).
"""

from __future__ import annotations

import gc
from typing import Any

import numpy as np
import pytest
from support.kernels import COUNTER

import vyre_native as vn

HANDLE_KINDS = ("buffers", "pipelines", "recordings", "sequences", "submissions", "pending_reads", "mappings")


def handle_counts() -> dict[str, int]:
    live = vn.debug.live_objects(wait=10.0)
    return {k: live[k] for k in HANDLE_KINDS}


class FreeList:
    """A caching allocator's shape: an owner object in a reference cycle, whose ``__del__``
    returns the handle it wraps to a free list."""

    def __init__(self) -> None:
        self.items: list[Any] = []

    def adopt(self, handle: Any) -> None:
        free = self.items

        class Owner:
            def __init__(self) -> None:
                self.handle = handle
                self.me = self  # a cycle: only the cycle collector frees it

            def __del__(self) -> None:
                free.append(self.handle)

        Owner()


def test_buffers_resurrected_by_a_finalizer_keep_their_own_data(device: vn.Device) -> None:
    free = FreeList()
    for i in range(20):
        free.adopt(device.upload(np.full(16, i, np.uint32)))
    gc.collect()
    assert len(free.items) == 20
    # new buffers that would take over freed memory, had the collection freed any
    others = [device.upload(np.full(16, 1000 + i, np.uint32)) for i in range(20)]
    for i, buf in enumerate(free.items):
        assert not buf.released
        np.testing.assert_array_equal(buf.read(np.uint32), np.full(16, i, np.uint32))
    for i, buf in enumerate(others):
        np.testing.assert_array_equal(buf.read(np.uint32), np.full(16, 1000 + i, np.uint32))


def test_a_resurrected_recording_still_replays_and_reads(device: vn.Device) -> None:
    pipeline = device.compile(COUNTER, preserve=["acc"])
    acc = device.alloc(4)
    free = FreeList()
    free.adopt(pipeline.record([], [acc]))
    del pipeline
    gc.collect()
    (recording,) = free.items
    recording.replay(3).wait()
    assert int(acc.read(np.uint32)[0]) == 3


def test_a_resurrected_zero_copy_array_keeps_its_memory_mapped(device: vn.Device) -> None:
    buf = device.upload(np.arange(64, dtype=np.float32))
    free = FreeList()
    free.adopt(buf.read(np.float32, copy=False))
    gc.collect()
    (array,) = free.items
    # reads after it reuse the staging ring: an unpinned staging buffer would be overwritten
    other = device.upload(np.full(64, -1.0, np.float32))
    for _ in range(4):
        other.read(np.float32)
    np.testing.assert_array_equal(array, np.arange(64, dtype=np.float32))


def test_a_resurrected_handle_is_released_once_it_is_unreachable(device: vn.Device) -> None:
    gc.collect()
    before = handle_counts()
    free = FreeList()
    for _ in range(8):
        free.adopt(device.alloc(64))
    gc.collect()
    assert handle_counts()["buffers"] == before["buffers"] + 8
    free.items.clear()
    gc.collect()
    assert handle_counts() == before


def test_mapped_staging_cannot_be_made_from_python() -> None:
    with pytest.raises(vn.WrongTypeError, match=r"MappedStaging is not made by calling the class.*Fix:"):
        vn.MappedStaging(None, 16, 64)  # type: ignore[call-arg]
