"""What each replay encodes, untimed and with timing=True (tests/test_timing.py): every
piece of work replayed both ways with wgpu-native logging at trace level, a marker
record before each replay. Clears are on, so the dispatches' outputs are zeroed by fill
dispatches inside the pass; `copy` adds a copy step. Reports the wgpu-native records."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from support.child import wgpu_log
from support.childlib import keep_log, report

WGSL = """
@group(0) @binding(0) var<storage, read> a: array<u32>;
@group(0) @binding(1) var<storage, read_write> o: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < arrayLength(&a)) { o[g.x] = o[g.x] + a[g.x]; }
}
"""


def main() -> None:
    records = keep_log()
    # Before vyre_native loads: wgpu-native's log route is set up once, at the load.
    logging.getLogger("vyre_native").setLevel(logging.DEBUG)
    import vyre_native as vn
    from vyre_native._lib import lib

    dev = vn.Device()
    p = dev.compile(WGSL)
    a = dev.upload(np.arange(256, dtype=np.uint32))
    o1, o2, o3 = dev.alloc(1024), dev.alloc(1024), dev.alloc(1024)
    seq = dev.sequence()
    seq.add(p, [a], [o1], workgroups=(4, 1, 1))
    seq.add(p, [a], [o2], workgroups=(4, 1, 1))
    seq.add(p, [a], [o1], workgroups=(4, 1, 1), clear_outputs=False)
    seq.clear(o3)
    copied = dev.sequence()
    copied.add(p, [a], [o1], workgroups=(4, 1, 1))
    copied.copy(o1, o2)
    copied.add(p, [a], [o3], workgroups=(4, 1, 1))
    rec = p.record([a], [o1], workgroups=(4, 1, 1))
    work: dict[str, Callable[[bool], Any]] = {
        "sequence": lambda t: seq.replay(2, timing=t),
        "copy": lambda t: copied.replay(timing=t),
        "recording": lambda t: rec.replay(3, timing=t),
    }
    for run in work.values():
        run(False).wait()

    def settle() -> None:  # until the forwarding thread has had nothing new for half a second
        seen, quiet = -1, time.monotonic()
        while time.monotonic() - quiet < 0.5:
            if len(records) != seen:
                seen, quiet = len(records), time.monotonic()
            time.sleep(0.02)

    lib.vn_log_set_level(5)
    for name, run in work.items():
        for timed in (False, True):
            for _ in range(5):  # a section whose records the log ring dropped is made again
                settle()
                start = len(records)
                records.append(["MARK", f"wgpu-native: === {name} {timed}"])
                sub = run(timed)
                assert (sub.gpu_time_ns is not None) == timed  # waits, and reads the timestamps back
                # An untimed replay's work may still run (lavapipe on a loaded machine: longer
                # than settle's quiet spell); what it logs as it ends belongs to its section.
                dev.wait_idle()
                settle()
                if not any("log messages dropped" in r[1] for r in records[start:]):
                    break
    settle()
    lib.vn_log_set_level(2)
    report(wgpu_log(records))


if __name__ == "__main__":
    main()
