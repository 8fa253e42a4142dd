"""buffer.write queues bytes for the next submit (wgpu's pending writes). wait_idle
sends them first, so it waits for them too; and writes with no submit between them
are flushed every VN_WRITE_FLUSH_BYTES, so their staging copies do not pile up."""

from __future__ import annotations

import gc

import numpy as np
from support.childlib import rss_bytes
from support.markers import not_under_asan

import vyre_native as vn

MiB = 1 << 20


def test_wait_idle_sends_queued_writes_and_the_bytes_land(device: vn.Device) -> None:
    buf = device.alloc(4 * MiB)
    data = np.arange(MiB, dtype=np.uint32)
    buf.write(data)
    device.wait_idle()
    assert np.array_equal(buf.read(np.uint32), data)
    buf.write(data[::-1].copy(), offset=0)
    device.wait_idle()
    assert np.array_equal(buf.read(np.uint32), data[::-1])
    buf.release()


@not_under_asan
def test_many_writes_without_a_submit_keep_host_memory_bounded(device: vn.Device) -> None:
    # 48 writes of 16 MiB (768 MiB) with no submit or wait between them: without the
    # flush, wgpu keeps a staging copy of each until the next submit (RSS +768 MiB).
    buf = device.alloc(16 * MiB)
    chunk = np.full(4 * MiB, 7, dtype=np.uint32)
    device.wait_idle()
    gc.collect()
    before = rss_bytes()
    peak = before
    for i in range(48):
        chunk[0] = i
        buf.write(chunk)
        peak = max(peak, rss_bytes())
    device.wait_idle()
    grown = peak - before
    assert grown < 320 * MiB, f"RSS grew by {grown / MiB:.0f} MiB over 768 MiB of writes"
    out = buf.read(np.uint32)
    assert out[0] == 47 and np.all(out[1:] == 7)
    buf.release()


def test_wait_idle_after_destroy_is_device_lost_not_an_abort() -> None:
    dev = vn.Device()
    buf = dev.alloc(1024)
    buf.write(np.ones(256, dtype=np.float32))
    dev.destroy()
    try:
        dev.wait_idle()
    except vn.DeviceLostError as e:
        assert "Fix:" in str(e)
    else:
        raise AssertionError("wait_idle on a destroyed device returned")
    dev.close()
