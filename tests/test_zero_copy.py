"""Zero-copy reads (``copy=False``): a read-only numpy array over the mapped staging memory
itself, pinned until the array and every view of it are gone, whatever else happens.

Tests that end a device under a live array run in a child interpreter
(tests/scenarios/zero_copy.py), so a crash fails one test, not the suite.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest
from support.child import run_scenario
from support.errors import raised
from support.kernels import DOUBLE

import vyre_native as vn

N = 1 << 14  # floats per buffer: 64 KiB



def live(kind: str) -> int:
    gc.collect()
    return vn.debug.live_objects()[kind]


def test_buffer_read_without_copy_returns_the_contents(dev: vn.Device) -> None:
    host = np.arange(N, dtype=np.float32)
    arr = dev.upload(host).read(np.float32, copy=False)
    assert isinstance(arr, np.ndarray) and arr.dtype == np.float32
    np.testing.assert_array_equal(arr, host)


def test_a_shape_gives_that_shape_over_the_same_memory(dev: vn.Device) -> None:
    host = np.arange(N, dtype=np.uint32).reshape(128, -1)
    arr = dev.upload(host).read(np.uint32, shape=host.shape, copy=False)
    assert arr.shape == host.shape and arr.flags.c_contiguous
    np.testing.assert_array_equal(arr, host)


def test_a_buffer_view_reads_only_its_range_without_copy(dev: vn.Device) -> None:
    host = np.arange(N, dtype=np.float32)
    view = dev.upload(host).view(4 * 64, 4 * 128)
    arr = view.read(np.float32, copy=False)
    assert not arr.flags.writeable and arr.base.base.nbytes == 4 * 128
    np.testing.assert_array_equal(arr, host[64:192])


def test_the_array_is_backed_by_mapped_staging_memory(dev: vn.Device) -> None:
    arr = dev.upload(np.ones(N, np.float32)).read(np.float32, copy=False)
    assert arr.base is not None and not arr.flags.owndata
    assert isinstance(arr.base.base, vn.MappedStaging)
    assert live("mappings") == 1


def test_read_output_without_copy_returns_a_prerecorded_dispatchs_output(dev: vn.Device) -> None:
    host = np.arange(N, dtype=np.float32)
    rec = dev.compile(DOUBLE).prerecord_persistent_dispatch(
        [dev.upload(host)], [dev.alloc(host.nbytes)], workgroups=(N // 64, 1, 1)
    )
    rec.replay()
    np.testing.assert_array_equal(rec.read_output(0, np.float32, copy=False), 2 * host)


def test_read_output_without_copy_returns_a_recordings_output(dev: vn.Device) -> None:
    host = np.arange(N, dtype=np.float32)
    rec = dev.compile(DOUBLE).record([dev.upload(host)], [dev.alloc(host.nbytes)], workgroups=(N // 64, 1, 1))
    rec.replay()
    np.testing.assert_array_equal(rec.read_output(0, dtype=np.float32, copy=False), 2 * host)


def test_pending_read_result_without_copy_returns_the_contents(dev: vn.Device) -> None:
    host = np.arange(N, dtype=np.int32)
    pending = dev.upload(host).read_async()
    np.testing.assert_array_equal(pending.result(np.int32, copy=False), host)
    np.testing.assert_array_equal(pending.result(np.int32, copy=False), host)  # every waiter gets it


def test_without_a_dtype_it_is_a_read_only_memoryview_of_the_bytes(dev: vn.Device) -> None:
    host = np.arange(N, dtype=np.float32)
    view = dev.upload(host).read(copy=False)
    assert isinstance(view, memoryview) and view.readonly and view.format == "B"
    assert view.nbytes == host.nbytes and view.tobytes() == host.tobytes()


def test_the_array_is_read_only(dev: vn.Device) -> None:
    arr = dev.upload(np.zeros(N, np.float32)).read(np.float32, copy=False)
    assert not arr.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        arr[0] = 1.0
    with pytest.raises(ValueError):
        arr.flags.writeable = True  # the base is read-only memory: numpy refuses


def test_copy_true_still_gives_a_new_writable_array(dev: vn.Device) -> None:
    arr = dev.upload(np.arange(N, dtype=np.float32)).read(np.float32, copy=True)
    assert arr.flags.writeable and arr.flags.owndata
    assert live("mappings") == 0


def test_copy_must_be_a_bool(dev: vn.Device) -> None:
    buf = dev.upload(np.zeros(16, np.float32))
    with pytest.raises(vn.WrongTypeError, match="copy"):
        buf.read(np.float32, copy="no")  # type: ignore[call-overload]


def test_a_shape_that_does_not_fit_is_refused_before_any_read_starts(dev: vn.Device) -> None:
    buf = dev.upload(np.zeros(16, np.float32))
    before = vn.debug.live_objects()
    with pytest.raises(vn.InvalidArgumentError, match="64 bytes"):
        buf.read(np.float32, shape=(5, 5), copy=False)
    gc.collect()
    assert vn.debug.live_objects() == before


def test_the_staging_buffer_is_not_reused_while_an_array_lives(dev: vn.Device) -> None:
    first_host = np.arange(N, dtype=np.float32)
    first = dev.upload(first_host).read(np.float32, copy=False)
    other = dev.upload(np.full(N, -1.0, np.float32))
    for _ in range(3):  # reads of another buffer of the same size, both kinds
        other.read(np.float32, copy=False)
        other.read()
    np.testing.assert_array_equal(first, first_host)


def test_a_view_keeps_the_memory_alive_after_the_array_is_gone(dev: vn.Device) -> None:
    host = np.arange(N, dtype=np.float32)
    arr = dev.upload(host).read(np.float32, copy=False)
    part = arr[100:200:3]
    del arr
    for _ in range(3):  # other reads that would reuse a released staging buffer
        dev.upload(np.zeros(N, np.float32)).read(np.float32, copy=False)
    assert live("mappings") == 1
    np.testing.assert_array_equal(part, host[100:200:3])


def test_a_memoryview_keeps_the_memory_alive(dev: vn.Device) -> None:
    host = np.arange(N, dtype=np.uint8)
    view = dev.upload(host).read(copy=False)[10:20]
    gc.collect()
    assert live("mappings") == 1
    assert bytes(view) == host[10:20].tobytes()


def test_releasing_the_last_view_unpins_and_the_staging_buffer_is_reused(dev: vn.Device) -> None:
    buf = dev.upload(np.arange(N, dtype=np.float32))
    arr = buf.read(np.float32, copy=False)
    view = arr[5:]
    staging = live("staging_buffers")
    del arr
    assert live("mappings") == 1  # the view still holds the pin
    del view
    assert live("mappings") == 0
    again = buf.read(np.float32, copy=False)  # served from the ring: nothing new is made
    assert live("staging_buffers") == staging
    np.testing.assert_array_equal(again, np.arange(N, dtype=np.float32))


def test_many_arrays_alive_at_once_each_pin_a_staging_buffer_of_their_own(dev: vn.Device) -> None:
    count = 24
    base = live("staging_buffers")
    bufs = [dev.upload(np.full(N, i, np.float32)) for i in range(count)]
    arrays = [b.read(np.float32, copy=False) for b in bufs]
    assert live("mappings") == count
    assert live("staging_buffers") >= base + count
    for i, arr in enumerate(arrays):
        assert arr[0] == i and arr[-1] == i
    del arrays, arr
    # Released: the ring keeps at most 4 free staging buffers and frees the rest.
    assert live("mappings") == 0
    assert live("staging_buffers") <= base + 4


def test_a_small_read_never_pins_a_large_staging_buffer(dev: vn.Device) -> None:
    big = dev.alloc(4 << 20)
    big.read()  # leaves a 4 MiB staging buffer in the ring
    staging = live("staging_buffers")
    small = dev.upload(np.arange(1 << 16, dtype=np.float32)).read(np.float32, copy=False)  # 256 KiB
    assert live("staging_buffers") == staging + 1  # one of its own size, the 4 MiB one stays free
    assert small[-1] == (1 << 16) - 1


def test_an_array_stays_readable_after_the_device_is_closed() -> None:
    res = run_scenario("zero_copy", "after_close")
    assert res["equal"]
    assert (
        res["live"]["mappings"] == 0 and res["live"]["devices"] == 0 and res["live"]["staging_buffers"] == 0
    )


def test_an_array_stays_readable_after_the_device_is_destroyed() -> None:
    # Destroying the GPU device frees every buffer's memory, mapped staging memory
    # included, at the device's next poll: with an array alive, destroy() only marks the
    # device lost and the last unpin destroys it. Finishing a read that was in flight
    # polls the device; 64 MiB, so the staging memory is a dedicated allocation that a
    # real destroy would unmap (reading it would then crash the child).
    res = run_scenario("zero_copy", "after_destroy")
    raised(res["pending"], vn.DeviceLostError)
    raised(res["read"], vn.DeviceLostError)
    assert res["equal"] and res["bytes"]
    assert res["sum"] == float(np.arange(1 << 24, dtype=np.float64).sum())
    assert res["live"]["mappings"] == 0
    raised(res["after"], vn.DeviceLostError)
    assert res["end"]["devices"] == 0 and res["end"]["staging_buffers"] == 0


def test_destroy_while_threads_hold_and_read_arrays_never_crashes() -> None:
    # Reader threads take zero-copy arrays and sum them while the main thread destroys
    # the device: each read either gives the right sum or raises DeviceLostError.
    res = run_scenario("zero_copy", "destroy_under_readers", timeout=300)
    for i, r in enumerate(res):
        assert r["bad"] == 0 and r["held"], f"round {i}: a zero-copy array read wrong data"
        for outcome in r["threads"]:
            raised(outcome, vn.DeviceLostError)


def test_wgpu_pys_destroy_of_a_shared_device_waits_for_the_array_too() -> None:
    # wgpu-py's GPUDevice.destroy() of a device shared through Device.from_wgpu goes
    # through the C layer, which defers it under a live array as it defers destroy().
    res = run_scenario("zero_copy", "wgpu_py_destroy")
    raised(res["pending"], vn.DeviceLostError)
    assert res["equal"] and res["pinned"] and res["mappings"] == 0


def test_the_c_pin_given_another_kind_of_handle_raises_wrong_type_error(dev: vn.Device) -> None:
    from vyre_native._lib import check, ffi, lib

    buf = dev.upload(np.zeros(16, np.float32))
    with pytest.raises(vn.WrongTypeError, match="vn.PendingRead"):
        check(
            lib.vn_pending_read_pin(
                ffi.cast("vn_pending_read *", buf._ptr), ffi.new("vn_mapping **"), ffi.new("void **")
            )
        )
    assert buf.read() == bytes(64)


def test_the_c_unpin_given_another_kind_of_handle_leaves_both_alone(dev: vn.Device) -> None:
    from vyre_native._lib import ffi, lib

    host = np.arange(N, dtype=np.float32)
    buf = dev.upload(host)
    arr = buf.read(np.float32, copy=False)
    live_before = vn.debug.live_objects()
    lib.vn_mapping_release(ffi.cast("vn_mapping *", buf._ptr))
    assert vn.debug.live_objects() == live_before
    np.testing.assert_array_equal(arr, host)
    np.testing.assert_array_equal(buf.read(np.float32), host)
