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
