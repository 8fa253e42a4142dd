"""Whole Device lifecycles, one after another (tests/test_device_lifecycle.py).

argv: ``cycles PATTERN N`` (3 warm-up cycles, then N, and the process's state before
and after), ``reserve N`` (the same once the driver refuses new instances), or
``refused`` (a driver refusing instances before any Device)."""

from __future__ import annotations

import gc
import os
import sys
from typing import Any

import numpy as np
from support.childlib import report, rss_bytes
from support.kernels import DOUBLE
from vyre_native._native import lib

import vyre_native as vn

HOST = np.arange(256, dtype=np.float32)


def cycle(pattern: str) -> None:
    dev = vn.Device()
    a, o = dev.upload(HOST), dev.alloc(HOST.nbytes)
    prog = dev.compile(DOUBLE)
    rec = prog.record([a], [o], workgroups=(4, 1, 1))
    sub = rec.replay()
    if pattern == "plain":
        assert np.array_equal(np.frombuffer(rec.read_output(0), np.float32), HOST * 2)
        dev.close()
    elif pattern == "close_live":  # closed while every handle and a pending read live
        pending = o.read_async()
        dev.close()
        del pending
    elif pattern == "destroy":
        pending = o.read_async()
        dev.destroy()
        for h in (a, o, rec, pending):
            h.release()
        dev.close()
    elif pattern == "reads_unconsumed":
        reads = [o.read_async(), a.read_async(), rec.read_output_async(0)]
        dev.close()
        del reads
    elif pattern == "zero_copy_alive":  # a pinned staging buffer outlives close()
        view = o.read_async().result(np.float32, copy=False)
        assert np.array_equal(view, HOST * 2)
        dev.close()
        del dev, a, o, prog, rec, sub
        gc.collect()
        del view
    elif pattern == "dropped":  # never closed: ffi.gc releases everything
        _pending = o.read_async()
    elif pattern == "unwaited":
        _subs = [rec.replay(2) for _ in range(3)]
        dev.close()
    elif pattern == "prerecorded_never_replayed":  # a finished command buffer never submitted
        _dispatch = prog.prerecord_persistent_dispatch([a], [o], workgroups=(4, 1, 1))
        dev.close()
    else:
        raise AssertionError(pattern)


def state() -> dict[str, Any]:
    gc.collect()
    # First: it waits for devices parked because their work still ran (releases never
    # wait for the GPU), so the counts below see them freed (RSS included: read before
    # it, the H200's last parked devices read as 65 MiB grown over 12 cycles).
    live = vn.debug.live_objects()
    return {
        "fds": len(os.listdir("/proc/self/fd")),
        "threads": len(os.listdir("/proc/self/task")),
        "rss": rss_bytes(),
        "live": live,
    }


def cycles(pattern: str, n: int) -> dict[str, Any]:
    for _ in range(3):
        cycle(pattern)
    before = state()
    for _ in range(n):
        cycle(pattern)
    return {"before": before, "after": state()}


def refuse_new_instances() -> None:
    lib.vn_test_control(lib.VN_TEST_REFUSE_NEW_INSTANCES, 1)  # every instance made from now on offers no adapter


def main(argv: list[str]) -> None:
    if argv[0] == "cycles":
        report(cycles(argv[1], int(argv[2])))
    elif argv[0] == "reserve":
        reserve_made_by = vn.Device()  # before the refusal: its instance found the adapter
        reserve_made_by.close()
        refuse_new_instances()
        listed = len(vn.enumerate_adapters())
        counts = {p: cycles(p, int(argv[1])) for p in ("plain", "close_live", "destroy", "unwaited")}
        report({"listed": listed, "counts": counts})
    elif argv[0] == "refused":
        refuse_new_instances()
        try:
            vn.Device()
            error = None
        except vn.VyreError as e:
            error = {"cls": type(e).__name__, "msg": str(e)}
        report({"error": error, "listed": len(vn.enumerate_adapters())})
    else:
        raise AssertionError(argv)


if __name__ == "__main__":
    main(sys.argv[1:])
