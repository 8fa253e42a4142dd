"""The process exits while daemon threads are inside calls that start the GPU driver
(creating devices, listing adapters): exit waits for those calls before the driver's
own exit handlers tear it down, so the exit is clean. On the H200 every such exit crashed
before (free(): invalid pointer, SIGSEGV or a hang, 6 of 6); lavapipe survived it."""

from __future__ import annotations

import pytest
from support.child import run

EXIT_WHILE_CREATING = """
import sys, threading, time
import vyre_native as vn

def make_devices():
    while True:
        try:
            vn.Device().close()
            vn.enumerate_adapters()
        except vn.VyreError:
            pass

for _ in range(4):
    threading.Thread(target=make_devices, daemon=True).start()
time.sleep(float(sys.argv[1]))
print("main exits", flush=True)
"""


@pytest.mark.parametrize("after_s", [0.3, 0.6, 0.9])
def test_exit_while_threads_create_devices_is_clean(after_s: float) -> None:
    res = run(["-c", EXIT_WHILE_CREATING, str(after_s)], timeout=120)  # the tests' child: its path and folder
    assert res.returncode == 0, f"exit status {res.returncode}; stderr: {res.stderr[-2000:]}"
    assert "main exits" in res.stdout


EXIT_WHILE_COMPUTING = """
import sys, threading, time
import numpy as np
import vyre_native as vn

WGSL = '''
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) { dst[g.x] = src[g.x] + 1u; }
'''

def compute():
    dev = vn.Device()
    prog = dev.compile(WGSL)
    a = dev.upload(np.arange(64, dtype=np.uint32))
    while True:
        o = dev.alloc(256)
        rec = prog.record([a], [o], workgroups=(1, 1, 1))
        rec.replay()
        assert (o.read(np.uint32) == np.arange(1, 65)).all()
        rec.release(); o.release()

for _ in range(3):
    threading.Thread(target=compute, daemon=True).start()
time.sleep(float(sys.argv[1]))
print("main exits", flush=True)
"""


@pytest.mark.parametrize("after_s", [0.5, 1.0])
def test_exit_while_threads_compute_is_clean(after_s: float) -> None:
    """Daemon threads inside replays, reads and releases at exit: every entry point, not
    only device creation, is one the exit waits for."""
    res = run(["-c", EXIT_WHILE_COMPUTING, str(after_s)], timeout=120)
    assert res.returncode == 0, f"exit status {res.returncode}; stderr: {res.stderr[-2000:]}"
    assert "main exits" in res.stdout


ONCE_EXITING = """
import os, threading, time
import vyre_native as vn
from vyre_native._lib import lib

vn.Device().close()           # the driver is loaded
lib.vn_process_exiting()      # what Python's atexit calls
state = []
t = threading.Thread(target=lambda: state.append(vn.Device()), daemon=True)
t.start()
t.join(1.0)
print("other thread returned" if state or not t.is_alive() else "other thread held", flush=True)
dev = vn.Device()             # the exiting thread's own calls go on (finalizers run there)
dev.close()
print("exiting thread went on", flush=True)
os._exit(0)
"""


def test_once_exiting_only_the_exiting_thread_reaches_the_driver() -> None:
    res = run(["-c", ONCE_EXITING], timeout=60)
    assert res.returncode == 0, f"exit status {res.returncode}; stderr: {res.stderr[-2000:]}"
    assert res.stdout.split() == "other thread held exiting thread went on".split(), res.stdout
