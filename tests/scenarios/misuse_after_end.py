"""Every call after the device ends (tests/test_misuse.py); argv: how it ends, "destroy"
or "close". Made before the end: a pipeline, buffers, a dispatch recorded and never
replayed, one replayed, a recording, a sequence, a submission."""

from __future__ import annotations

import gc
import sys
from typing import Any

import numpy as np
from support.childlib import outcome, report
from support.kernels import DOUBLE

import vyre_native as vn


def calls_after_end(d: vn.Device, mode: str) -> dict[str, Any]:
    """What each call did after the end; what it made goes when it returns."""
    p = d.compile(DOUBLE)
    a = d.upload(np.arange(64, dtype=np.float32))
    o = d.alloc(256)
    fresh = p.prerecord_persistent_dispatch([a], [o])  # recorded, never replayed
    done = p.prerecord_persistent_dispatch([a], [o])  # replayed before the end
    done.replay()
    rc = p.record([a], [o])
    rc.replay().wait()
    seq = d.sequence().add(p, [a], [o])
    sub = rc.replay()
    getattr(d, mode)()
    ops = {
        "upload": lambda: d.upload(b"1234"),
        "alloc": lambda: d.alloc(16),
        "compile": lambda: d.compile(DOUBLE),
        "prerecord": lambda: p.prerecord_persistent_dispatch([a], [o]),
        "record": lambda: p.record([a], [o]),
        "replay": lambda: fresh.replay(),
        "recording_replay": lambda: rc.replay(),
        "sequence_replay": lambda: seq.replay(),
        "sequence_add": lambda: seq.add(p, [a], [o]),
        "sequence": lambda: d.sequence(),
        "submit": lambda: d.submit([rc]),
        "read_output": lambda: done.read_output(0),
        "read_output_into": lambda: done.read_output_into(0, np.empty(64, np.float32)),
        "recording_read_output": lambda: rc.read_output(0),
        "buffer_read": lambda: a.read(),
        "buffer_write": lambda: a.write(b"1234"),
        "read_async": lambda: a.read_async(),
        "wait_idle": lambda: d.wait_idle(),
        "submission_wait": lambda: sub.wait(),
    }
    return {name: outcome(fn, timeout=20.0) for name, fn in ops.items()}


def main(mode: str) -> None:
    d = vn.Device()
    out = calls_after_end(d, mode)
    gc.collect()
    out["live_after"] = vn.debug.live_objects()
    report(out)


if __name__ == "__main__":
    main(sys.argv[1])
