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

import vyre_native as vn
from scenarios import calls_after_the_end, made_before_the_end


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
    p, a, o, fresh, done, rc, seq = made_before_the_end(dev)
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
        **calls_after_the_end(dev, p, a, o, fresh, done, rc, seq),
        "recording_replay_many": lambda: rc.replay(1000),
        "sequence_copy": lambda: seq.copy(a, o),
        "sequence_clear": lambda: seq.clear(o),
        "submit": lambda: dev.submit([rc, seq]),
        "buffer_read_into": lambda: a.read_into(bytearray()),
        "pending_result": lambda: pending.result(),
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
