"""Every call after Device.destroy() with a kernel still running ("after_destroy"), and a
kernel running past a wait's timeout ("long_kernel"); see tests/test_device_loss.py."""

from __future__ import annotations

import gc
import sys
import time
from typing import Any

import numpy as np
from support.childlib import long_recording, outcome, report
from support.kernels import ADD_IMMEDIATE as ADD_K
from support.kernels import DOUBLE

import vyre_native as vn


def after_destroy() -> None:
    out = _calls_after_destroy()
    gc.collect()
    # Parked (its last reference gone, waiting for its work): the kernel was still running
    # after every call had returned, the waits on it included.
    out["parked_devices"] = vn.debug.live_objects(wait=0.0)["devices"]
    out["live_after"] = vn.debug.live_objects(wait=30.0)
    report(out)


def _calls_after_destroy() -> dict[str, Any]:
    """What each call did after destroy(); everything made here goes when it returns."""
    dev = vn.Device()
    p = dev.compile(DOUBLE)
    a = dev.upload(np.arange(64, dtype=np.float32))
    o = dev.alloc(256)
    fresh = p.prerecord_persistent_dispatch([a], [o])  # recorded, never replayed
    done = p.prerecord_persistent_dispatch([a], [o])  # replayed before the loss
    done.replay()
    rc = p.record([a], [o])
    rc.replay().wait()
    seq = dev.sequence().add(p, [a], [o])
    view = a.view(0, 64)
    seq.add(p, [view], [o]).clear(o.view(0, 64))  # a clear as a fill dispatch in the pass
    imm = dev.compile(ADD_K, preserve=["acc"]) if "immediates" in dev.features else None
    pin_pending = o.read_async()
    long_rec, long_out = long_recording(dev, 5.0)  # outlasts every call below
    timed = rc.replay(timing=True) if dev.timestamps else None
    pending = o.read_async()
    # Last: on lavapipe a submit waits for the one before it.
    running = long_rec.replay()  # still running at the loss
    time.sleep(0.2)
    dev.destroy()
    ops = {
        "upload": lambda: dev.upload(b"1234"),
        "alloc": lambda: dev.alloc(16),
        "compile": lambda: dev.compile(DOUBLE),
        "prerecord": lambda: p.prerecord_persistent_dispatch([a], [o]),
        "record": lambda: p.record([a], [o]),
        "replay": lambda: fresh.replay(),
        "recording_replay": lambda: rc.replay(),
        "recording_replay_many": lambda: rc.replay(1000),
        "sequence": lambda: dev.sequence(),
        "sequence_add": lambda: seq.add(p, [a], [o]),
        "sequence_copy": lambda: seq.copy(a, o),
        "sequence_clear": lambda: seq.clear(o),
        "sequence_replay": lambda: seq.replay(),
        "submit": lambda: dev.submit([rc, seq]),
        "read_output": lambda: done.read_output(0),
        "read_output_into": lambda: done.read_output_into(0, np.empty(64, np.float32)),
        "recording_read_output": lambda: rc.read_output(0),
        "buffer_read": lambda: a.read(),
        "buffer_read_into": lambda: a.read_into(bytearray()),
        "buffer_write": lambda: a.write(b"1234"),
        "read_async": lambda: a.read_async(),
        "pending_result": lambda: pending.result(),
        "wait_idle": lambda: dev.wait_idle(),
        "wait_on_running_work": lambda: running.wait(),
        "wait_on_running_work_with_timeout": lambda: running.wait(30),
        "done_on_running_work": lambda: running.done,
        "read_output_of_running_work": lambda: long_out.read(),
        "gpu_time": (lambda: timed.gpu_time_ns) if timed is not None else (lambda: dev.destroy()),
        "destroy_again": lambda: dev.destroy(),
        # entry points main added after waits branched
        "view_read": lambda: view.read(),
        "view_read_into": lambda: view.read_into(bytearray()),
        "view_read_async": lambda: view.read_async(),
        "view_read_zero_copy": lambda: view.read(np.float32, copy=False),
        "view_write": lambda: view.write(b"1234"),
        "record_view": lambda: p.record([view], [o]),
        "sequence_clear_view": lambda: seq.clear(view),
        "read_typed": lambda: a.read(np.float32),
        "read_zero_copy": lambda: a.read(copy=False),
        "read_output_zero_copy": lambda: done.read_output(0, copy=False),
        "pending_pin": lambda: pin_pending.result(copy=False),
        "immediates": (lambda: imm.record([], [o], immediates=np.uint32(3).tobytes()))
        if imm
        else (lambda: dev.destroy()),
    }
    out: dict[str, Any] = {}
    for name, fn in ops.items():
        out[name] = outcome(fn)
    dev.close()
    return out


def long_kernel() -> None:
    out = _wait_past_timeout()
    # Everything was dropped with the kernel still running (when _wait_past_timeout
    # returned): no release may wait for it, so the device is parked, waiting for it.
    gc.collect()
    out["parked_devices"] = vn.debug.live_objects(wait=0.0)["devices"]
    report(out)


def _wait_past_timeout() -> dict[str, Any]:
    """Start an 8 s kernel and wait 1 s for it; what the calls did."""
    dev = vn.Device()
    rec, _ = long_recording(dev, 8.0)
    sub = rec.replay()
    return {
        "timed_out": outcome(lambda: sub.wait(1.0)),
        "lost": outcome(lambda: dev.info),
        "running": not sub.done,
    }


if __name__ == "__main__":
    {"after_destroy": after_destroy, "long_kernel": long_kernel}[sys.argv[1]]()
