"""The child interpreter's side of ``support.child``: ``report`` hands the test a JSON
value, ``outcome`` describes what a call did, ``long_recording`` keeps the adapter busy.

No vyre_native import here: a child may need to set things up (a logger's level, the
environment) before the package loads.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from traceback import FrameSummary
from types import FrameType
from typing import Any

import numpy as np

from support.kernels import LONG

RESULT = "RESULT "

# A process started with SIGINT ignored (a shell's background job, `nohup`, some CI
# runners) keeps it ignored, and CPython then installs no KeyboardInterrupt handler: a
# scenario that sends itself SIGINT would see nothing and blame vyre_native's waits. The
# child is the test's own process, so it takes Python's usual handler, as an interactive
# interpreter has.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def report(value: Any) -> None:
    """The value the test gets back (the last one reported wins)."""
    print(RESULT + json.dumps(value), flush=True)


def keep_log() -> list[list[str]]:
    """From now on, the vyre_native logger's records as [level, message] pairs (call it
    before vyre_native loads to see what the load logs)."""
    import logging

    records: list[list[str]] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append([record.levelname, record.getMessage()])

    logging.getLogger("vyre_native").addHandler(Keep())
    return records


def failure(e: BaseException) -> dict[str, Any]:
    """An exception as an outcome: its class, the class's bases, its message."""
    mro = [c.__name__ for c in type(e).__mro__]
    return {"ok": False, "cls": mro[0], "mro": mro, "msg": str(e)}


def _describe(fn: Callable[[], object]) -> dict[str, Any]:
    try:
        fn()
        return {"ok": True}
    except BaseException as e:  # noqa: BLE001 -- what it raised is the result
        return failure(e)


def outcome(fn: Callable[[], object], timeout: float | None = None) -> dict[str, Any]:
    """What fn() did, as data: {"ok": True}, or what it raised (class, its bases, the
    message). It runs here, on this thread (a reentry test calls it from a signal
    handler); with a timeout it runs on a thread of its own instead, so that a hang is
    reported ({"hang": True}) instead of waited for."""
    if timeout is None:
        return _describe(fn)
    box: dict[str, dict[str, Any]] = {}

    def target() -> None:
        box["r"] = _describe(fn)

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(timeout)
    return box.get("r", {"hang": True})


def outcomes_across(destroy: Callable[[], object], loops: dict[str, Callable[[], None]], delay: float) -> dict[str, Any]:
    """Each of ``loops`` (endless) run on a thread of its own, as ``outcome`` with a 60 s
    timeout, and ``destroy()`` called ``delay`` seconds after they start: what each
    loop did, by name ({"hang": True} for one still running 90 s later)."""
    box: dict[str, dict[str, Any]] = {}

    def run(name: str, loop: Callable[[], None]) -> None:
        box[name] = outcome(loop, timeout=60.0)

    threads = [threading.Thread(target=run, args=item) for item in loops.items()]
    for t in threads:
        t.start()
    time.sleep(delay)
    destroy()
    for t in threads:
        t.join(90)
    return {name: box.get(name, {"hang": True}) for name in loops}


def rss_bytes() -> int:
    """This process's resident set: /proc on Linux, ps(1) where there is no /proc (macOS)."""
    if os.path.exists("/proc/self/statm"):
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    out = subprocess.run(["ps", "-o", "rss=", "-p", str(os.getpid())], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0]) * 1024


def rss_mib() -> float:
    """``rss_bytes()`` in MiB."""
    return rss_bytes() / 2**20


def long_recording(dev: Any, seconds: float = 3.0) -> tuple[Any, Any]:
    """(recording, output buffer): one launch runs about `seconds` on this adapter.

    lavapipe bounds every shader loop at 65535 iterations, so there the length comes
    from the workgroup count; on a GPU from the loop count."""
    pipeline = dev.compile(LONG)
    out = dev.alloc(256)
    cpu = dev.info["adapter_type"] == "CPU"

    def make(groups: int, outer: int) -> Any:
        params = dev.upload(np.array([60000, outer, 0, 0], np.uint32))
        return pipeline.record([], [out], params=params, workgroups=(groups, 1, 1))

    def timed(rec: Any) -> float:
        t0 = time.perf_counter()
        rec.replay().wait()
        return time.perf_counter() - t0

    groups, outer = 4, 1
    timed(make(groups, outer))  # the driver compiles the shader on first use
    for fraction in (0.05, 1.0):  # scale twice: the first estimate is noisy
        scale = seconds * fraction / max(timed(make(groups, outer)), 1e-4)
        if cpu:
            groups = min(65535, max(1, int(groups * scale)))
        else:
            outer = min(2**31, max(1, int(outer * scale)))
    return make(groups, outer), out


# The package's two sliced-wait loops (vyre_native/_lib.py): every blocking call waits
# in one of them, returning to Python between slices.
SLICED_WAITS = ("check_wait", "read_sliced")


def in_sliced_wait(frames: Iterable[FrameType | FrameSummary]) -> bool:
    """Whether a stack (frames, or a traceback's summaries) passes through a sliced wait."""
    for f in frames:
        name, path = (
            (f.f_code.co_name, f.f_code.co_filename) if isinstance(f, FrameType) else (f.name, f.filename)
        )
        if name in SLICED_WAITS and path.replace("\\", "/").endswith("vyre_native/_lib.py"):
            return True
    return False


def stack_of(thread: threading.Thread) -> list[FrameType]:
    """`thread`'s frames now, innermost first."""
    frame = sys._current_frames().get(thread.ident or -1)
    frames = []
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    return frames
