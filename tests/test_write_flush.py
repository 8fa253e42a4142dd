"""buffer.write queues bytes for the next submit (wgpu's pending writes). wait_idle
sends them first, so it waits for them too; and writes with no submit between them
are flushed every VN_WRITE_FLUSH_BYTES, so their staging copies do not pile up."""

from __future__ import annotations

import numpy as np
import pytest
from support.childlib import long_recording

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


# The C layer's own bound (csrc/work/buffer_write.c): after any write, the bytes queued and not yet
# sent by a submit are under twice the 64 MiB flush bound. What the process's RSS does
# with them is the allocator's and the machine's, so it is a benchmark's figure, not this.
QUEUED_BOUND = 128 * MiB


def _write_many(device: vn.Device, buf: vn.Buffer, count: int) -> list[int]:
    """``count`` writes of 16 MiB with no submit or wait between them; the bytes queued
    after each."""
    chunk = np.full(4 * MiB, 7, dtype=np.uint32)
    queued = []
    for i in range(count):
        chunk[0] = i
        buf.write(chunk)
        queued.append(vn.debug.queued_write_bytes(device))
    return queued


def _check_landed(device: vn.Device, buf: vn.Buffer, last: int) -> None:
    device.wait_idle()
    assert vn.debug.queued_write_bytes(device) == 0
    out = buf.read(np.uint32)
    assert out[0] == last and np.all(out[1:] == 7)


def test_many_writes_without_a_submit_keep_what_is_queued_bounded(device: vn.Device) -> None:
    # 48 writes of 16 MiB (768 MiB) with no submit or wait between them: without the
    # flush, wgpu would keep a staging copy of each until the next submit.
    buf = device.alloc(16 * MiB)
    device.wait_idle()
    queued = _write_many(device, buf, 48)
    assert max(queued) < QUEUED_BOUND, f"queued write bytes reached {max(queued) / MiB:.0f} MiB"
    assert min(queued) < 64 * MiB  # the flush ran: the count went down
    _check_landed(device, buf, 47)
    buf.release()


def test_writes_while_the_queue_is_busy_keep_what_is_queued_bounded(device: vn.Device) -> None:
    # A CPU adapter's flush waits for an idle queue; with a kernel running, writes past
    # twice the flush bound wait for it rather than queue without end (a GPU flushes at once).
    rec, _ = long_recording(device, 1.0)
    buf = device.alloc(16 * MiB)
    device.wait_idle()
    sub = rec.replay()
    queued = _write_many(device, buf, 24)
    assert max(queued) < QUEUED_BOUND, f"queued write bytes reached {max(queued) / MiB:.0f} MiB"
    sub.wait()
    _check_landed(device, buf, 23)
    buf.release()


def test_queued_write_bytes_takes_only_a_device() -> None:
    with pytest.raises(vn.WrongTypeError, match="Fix:"):
        vn.debug.queued_write_bytes(object())  # type: ignore[arg-type]


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
