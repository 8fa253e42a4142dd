"""Zero-copy arrays alive while their device ends (tests/test_zero_copy.py); argv: the
scenario. A crash here fails one test, not the suite."""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
from support.childlib import outcome, outcomes_across, report

import vyre_native as vn


def after_close() -> None:
    d = vn.Device()
    host = np.arange(1 << 20, dtype=np.float32)
    arr = d.upload(host).read(np.float32, copy=False)
    d.close()
    del d
    gc.collect()
    out: dict[str, Any] = {"equal": bool(np.array_equal(arr, host))}
    del arr
    gc.collect()
    out["live"] = vn.debug.live_objects()
    report(out)


def after_destroy() -> None:
    d = vn.Device()
    host = np.arange(1 << 24, dtype=np.float32)
    buf = d.upload(host)
    arr = buf.read(np.float32, copy=False)
    view = buf.read(copy=False)
    pending = buf.read_async()
    d.destroy()
    out: dict[str, Any] = {"pending": outcome(pending.result)}
    out.update(
        {
            "read": outcome(buf.read),
            "sum": float(arr.astype(np.float64).sum()),
            "equal": bool(np.array_equal(arr, host)),
            "bytes": bytes(view[:8]) == host[:2].tobytes(),
        }
    )
    del arr, view, pending
    gc.collect()
    out["live"] = vn.debug.live_objects()
    out["after"] = outcome(buf.read)
    d.close()
    del buf, d
    gc.collect()
    out["end"] = vn.debug.live_objects()
    report(out)


def destroy_under_readers() -> None:
    rounds = []
    for delay in (0.01, 0.03, 0.06, 0.1):  # how long the readers run before the destroy
        rounds.append(_destroy_under_readers(delay))
    report(rounds)


def _destroy_under_readers(delay: float) -> dict[str, Any]:
    d = vn.Device()
    host = np.arange(1 << 18, dtype=np.float32)
    want = float(host.sum(dtype=np.float64))
    b = d.upload(host)
    held: list[Any] = []
    bad: list[int] = []

    def loop() -> None:
        while True:
            arr = b.read(np.float32, copy=False)
            if float(arr.sum(dtype=np.float64)) != want:
                bad.append(1)
            held.append(arr)
            del held[:-4]

    threads = outcomes_across(d.destroy, {f"reader {i}": loop for i in range(3)}, delay)
    ok = all(float(a.sum(dtype=np.float64)) == want for a in held)
    return {"threads": list(threads.values()), "bad": len(bad), "held": ok}


def wgpu_py_destroy() -> None:
    import wgpu

    gpu_device = wgpu.gpu.request_adapter_sync().request_device_sync()
    d = vn.Device.from_wgpu(gpu_device)
    host = np.arange(1 << 24, dtype=np.float32)
    buf = d.upload(host)
    arr = buf.read(np.float32, copy=False)
    pending = buf.read_async()
    gpu_device.destroy()
    out: dict[str, Any] = {
        "pending": outcome(pending.result),
        "equal": bool(np.array_equal(arr, host)),
        "pinned": arr.base is not None and isinstance(arr.base.base, vn.MappedStaging),
    }
    del arr, pending
    gc.collect()
    out["mappings"] = vn.debug.live_objects()["mappings"]
    report(out)


if __name__ == "__main__":
    scenarios: dict[str, Callable[[], None]] = {
        f.__name__: f for f in (after_close, after_destroy, destroy_under_readers, wgpu_py_destroy)
    }
    scenarios[sys.argv[1]]()
