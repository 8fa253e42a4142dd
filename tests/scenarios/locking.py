"""Threads looping over jobs that take several objects' locks (tests/test_locking.py).

argv: the job set (a key of JOBS) and the seconds to loop. Reports each thread's count
of finished jobs, or which were still running well after the deadline (a deadlock: the
threads are joined with a time limit, and the child exits whatever they do)."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable

import numpy as np
from support.childlib import report
from support.kernels import DOUBLE

import vyre_native as vn

Jobs = dict[str, Callable[[], object]]


def jobs(name: str, dev: vn.Device) -> Jobs:
    prog = dev.compile(DOUBLE)

    def sequence() -> vn.Sequence:
        seq = dev.sequence()
        seq.add(prog, [dev.upload(np.arange(64, dtype=np.float32))], [dev.alloc(256)])
        return seq

    a, b, c = sequence(), sequence(), sequence()
    rec = prog.record([dev.upload(np.arange(64, dtype=np.float32))], [dev.alloc(256)])
    sets: dict[str, Jobs] = {
        "two_opposite": {"ab": lambda: dev.submit([a, b]), "ba": lambda: dev.submit([b, a])},
        "three_rotations": {
            "abc": lambda: dev.submit([a, b, c, rec]),
            "bca": lambda: dev.submit([b, c, a]),
            "cab": lambda: dev.submit([rec, c, a, b]),
        },
        "listed_twice": {"aba": lambda: dev.submit([a, b, a, a]), "ba": lambda: dev.submit([b, a, b])},
        "racing_replays_and_adds": {
            "ab": lambda: dev.submit([a, b]),
            "ba": lambda: dev.submit([b, a]),
            "replay": lambda: b.replay(),
            "len": lambda: len(a),
            "copy": lambda: len(a) < 50 and a.copy(rec.outputs[0], dev.alloc(256)),
        },
    }
    return sets[name]


def main(name: str, seconds: float) -> None:
    dev = vn.Device()
    work = jobs(name, dev)
    deadline = time.monotonic() + seconds
    done: dict[str, int] = {}

    def loop(job_name: str, job: Callable[[], object]) -> None:
        n = 0
        while time.monotonic() < deadline:
            job()
            n += 1
        done[job_name] = n

    threads = [threading.Thread(target=loop, args=item, daemon=True) for item in work.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 30)  # a hang guard: a deadlocked thread never finishes
    hung = [job_name for job_name in work if job_name not in done]
    if not hung:
        dev.wait_idle()
    report({"done": done, "hung": hung})
    os._exit(0)  # a deadlocked thread must not keep the child from exiting


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
