"""Ctrl-C during each blocking call (argv: "interrupt"), releases with work in flight
("releases"), and writes past the flush bound with a kernel running ("writes"); see
tests/test_signals.py. No figure here is a time: each says what had happened when."""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np
from support.childlib import in_sliced_wait, long_recording, report, stack_of

import vyre_native as vn
from vyre_native._lib import PENDING, lib


def interrupt() -> None:
    dev = vn.Device()
    results = _interrupt_each(dev)
    results["cpu"] = dev.info["adapter_type"] == "CPU"
    # Everything the interrupted calls left (reads in flight, submissions) is freed.
    gc.collect()
    dev.close()
    del dev
    gc.collect()
    results["live_after"] = vn.debug.live_objects(wait=30.0)
    report(results)


def _interrupt_each(dev: vn.Device) -> dict[str, Any]:
    """Interrupt each blocking call once; what it did. Its objects go when it returns."""
    rec, out = long_recording(dev, 3.0)
    modes: dict[str, Callable[[Any], object]] = {
        "wait": lambda sub: sub.wait(),
        "wait_timeout": lambda sub: sub.wait(60),
        "read": lambda sub: out.read(),
        "read_into": lambda sub: out.read_into(bytearray()),
        "read_async_result": lambda sub: out.read_async().result(),
        # zero-copy reads (copy=False) pin their staging buffer after the same sliced wait
        "read_zero_copy": lambda sub: out.read(np.uint32, copy=False),
        "read_async_result_zero_copy": lambda sub: out.read_async().result(copy=False),
        "view_read": lambda sub: out.view(0, 64).read(),
        "wait_idle": lambda sub: dev.wait_idle(),
        # a CPU adapter's queue runs one submission at a time: a replay waits for the last
        "replay_while_busy": lambda sub: rec.replay(),
    }
    main = threading.current_thread()
    results: dict[str, Any] = {}
    for name, action in modes.items():
        sub = rec.replay()
        lock, state = threading.Lock(), {"returned": False, "sent": False}

        def interrupter(lock: threading.Lock = lock, state: dict[str, bool] = state) -> None:
            # SIGINT once the main thread is inside a sliced wait (never if the call
            # returned first): an event, where a delay could land before or after it.
            while True:
                with lock:
                    if state["returned"]:
                        return
                    if in_sliced_wait(stack_of(main)):
                        state["sent"] = True
                        os.kill(os.getpid(), signal.SIGINT)
                        return

        helper = threading.Thread(target=interrupter)
        helper.start()
        try:
            action(sub)
            with lock:
                state["returned"] = True
            results[name] = {"interrupted": False, "sent": state["sent"]}
        except KeyboardInterrupt:
            running = not sub.done
            frames = traceback.extract_tb(sys.exc_info()[2])
            results[name] = {"interrupted": True, "running": running, "in_wait": in_sliced_wait(frames)}
        helper.join()
        sub.wait()  # the interrupted work completes, and the device still works
        dev.wait_idle()
        results[name]["read_after"] = len(out.read())
    return results


def releases() -> None:
    dev = vn.Device()
    rec, out = long_recording(dev, 3.0)
    sub = rec.replay()
    if dev.info["adapter_type"] == "CPU":
        # lavapipe runs one submission at a time (a read waits for earlier work before it
        # starts), so the read in flight is a long copy of its own: 512 MiB, many times
        # one 20 ms wait slice. Still busy after the release: one slice of wait_idle
        # ends with its work pending.
        sub.wait()
        pending = dev.alloc(512 << 20).read_async()
        del pending  # the map callback has not fired: the device takes the read over
        busy = lib.vn_device_wait_idle(dev._ptr) == PENDING
    else:
        pending = out.read_async()  # its copy waits behind the kernel
        del pending
        busy = not sub.done
    sub = rec.replay()
    del rec, out, sub
    dev.close()
    del dev
    gc.collect()  # the device's last reference, with its kernel still running
    left = vn.debug.live_objects(wait=0.0)
    live = vn.debug.live_objects(wait=30.0)
    report({"busy_after_release": busy, "parked_devices": left["devices"], "live": live})


def writes() -> None:
    dev = vn.Device()
    rec, _ = long_recording(dev, 3.0)
    big = dev.alloc(1 << 20)
    chunk = np.ones(1 << 18, np.float32)  # 1 MiB
    sub = rec.replay()
    for _ in range(80):  # 80 MiB queued: past the 64 MiB flush
        big.write(chunk)
    running = not sub.done
    dev.wait_idle()
    report({"running": running, "cpu": dev.info["adapter_type"] == "CPU",
            "read": bool((big.read(np.float32) == 1.0).all())})  # fmt: skip


if __name__ == "__main__":
    {"interrupt": interrupt, "releases": releases, "writes": writes}[sys.argv[1]]()
