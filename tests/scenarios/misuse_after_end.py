"""Every call after the device ends (tests/test_misuse.py); argv: how it ends, "destroy"
or "close". Made before the end: a pipeline, buffers, a dispatch recorded and never
replayed, one replayed, a recording, a sequence, a submission."""

from __future__ import annotations

import gc
import sys
from typing import Any

from support.childlib import outcome, report

import vyre_native as vn
from scenarios import calls_after_the_end, made_before_the_end


def calls_after_end(d: vn.Device, mode: str) -> dict[str, Any]:
    """What each call did after the end; what it made goes when it returns."""
    p, a, o, fresh, done, rc, seq = made_before_the_end(d)
    sub = rc.replay()
    getattr(d, mode)()
    ops = {
        **calls_after_the_end(d, p, a, o, fresh, done, rc, seq),
        "submit": lambda: d.submit([rc]),
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
