"""Ctrl-C latency: how long after SIGINT a blocking wait raises KeyboardInterrupt.

Every blocking call waits in slices of about 20 ms and returns to Python between them,
so the interrupt lands within a slice instead of when the GPU finishes. The tests
(tests/test_signals.py) check that by order: the KeyboardInterrupt comes out of the
wait while the work still runs. How many milliseconds it takes is this row: a helper
thread sends SIGINT once the main thread is inside the sliced wait of
``Submission.wait()`` on a kernel that runs about a second; the figure is the time from
the signal to the ``except KeyboardInterrupt``. The timer of pytest-benchmark covers
the whole round (the kernel included); ``extra_info["per_op_ns"]`` is the latency.
"""

from __future__ import annotations

import os
import pathlib
import signal
import statistics
import sys
import threading
import time

import pytest

# The tests' own long kernel and sliced-wait probe (tests/support/childlib.py).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
from support.childlib import in_sliced_wait, long_recording, stack_of  # noqa: E402


@pytest.mark.benchmark(group="interrupt_wait")
def test_interrupt_wait_vyre_native(benchmark, vnx, rounds):
    rec, _ = long_recording(vnx.dev, 1.0)
    main = threading.current_thread()
    latencies: list[float] = []

    def target() -> None:
        sub = rec.replay()
        lock, state = threading.Lock(), {"returned": False, "sent": 0.0}

        def interrupter() -> None:
            while True:
                with lock:
                    if state["returned"]:
                        return
                    if in_sliced_wait(stack_of(main)):
                        state["sent"] = time.perf_counter()
                        os.kill(os.getpid(), signal.SIGINT)
                        return
                time.sleep(0.0005)

        helper = threading.Thread(target=interrupter)
        helper.start()
        try:
            sub.wait()
            with lock:
                state["returned"] = True
        except KeyboardInterrupt:
            latencies.append(time.perf_counter() - state["sent"])
        helper.join()
        sub.wait()

    benchmark.pedantic(target, rounds=rounds.big_read, warmup_rounds=1)
    info = benchmark.extra_info
    info.update(way="vyre_native", operation="interrupt_wait", ops_per_round=1, statistic_of="interrupt_latency")
    samples = latencies[1:]  # the warm-up round's
    if samples:
        info["per_op_ns"] = statistics.fmean(samples) * 1e9
        info["per_op_ns_median"] = statistics.median(samples) * 1e9
        info["per_op_ns_min"] = min(samples) * 1e9
        info["interrupted_rounds"] = len(samples)
