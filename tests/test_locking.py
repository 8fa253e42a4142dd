"""Lock order: operations over several objects take their locks in one canonical order,
so no interleaving of threads can deadlock (csrc/internal.h "Lock order", docs/LOCKING.md).

Each case runs in a child interpreter whose threads are joined with a time limit: a
deadlock is reported as a hang and fails the test instead of hanging the suite.
"""

from __future__ import annotations

from typing import Any

from test_misuse import run_child
from wgsl_kernels import DOUBLE

# Threads loop over their `jobs` for `seconds`; the child reports each thread's count
# of finished jobs, or that one of them was still running well after the deadline.
_THREADS = """
import time
dev = vn.Device()
prog = dev.compile({wgsl!r})

def sequence():
    seq = dev.sequence()
    seq.add(prog, [dev.upload(np.arange(64, dtype=np.float32))], [dev.alloc(256)])
    return seq

a, b, c = sequence(), sequence(), sequence()
rec = prog.record([dev.upload(np.arange(64, dtype=np.float32))], [dev.alloc(256)])
deadline = time.monotonic() + {seconds}
done = {{}}

def loop(name, job):
    n = 0
    while time.monotonic() < deadline:
        job()
        n += 1
    done[name] = n

jobs = {jobs}
threads = [threading.Thread(target=loop, args=(name, job), daemon=True) for name, job in jobs.items()]
for t in threads:
    t.start()
for t in threads:
    t.join({seconds} + 30)
hung = [name for name in jobs if name not in done]
if not hung:
    dev.wait_idle()
report({{"done": done, "hung": hung}})
os._exit(0)  # a deadlocked thread must not keep the child from exiting
"""


def _run(jobs: str, seconds: float = 3.0) -> Any:
    res = run_child(_THREADS.format(wgsl=DOUBLE, seconds=seconds, jobs=jobs), timeout=180)
    assert res["hung"] == [], f"deadlock: {res['hung']} never finished (finished: {res['done']})"
    return res


def test_submits_of_two_sequences_in_opposite_orders_on_two_threads_never_deadlock() -> None:
    res = _run('{"ab": lambda: dev.submit([a, b]), "ba": lambda: dev.submit([b, a])}')
    assert all(n > 0 for n in res["done"].values()), res


def test_submits_of_three_sequences_in_every_rotation_never_deadlock() -> None:
    _run(
        '{"abc": lambda: dev.submit([a, b, c, rec]), "bca": lambda: dev.submit([b, c, a]),'
        ' "cab": lambda: dev.submit([rec, c, a, b])}'
    )


def test_a_sequence_listed_twice_in_one_submit_is_locked_once() -> None:
    _run('{"aba": lambda: dev.submit([a, b, a, a]), "ba": lambda: dev.submit([b, a, b])}')


def test_submits_racing_replays_and_adds_of_the_same_sequences_never_deadlock() -> None:
    _run(
        '{"ab": lambda: dev.submit([a, b]), "ba": lambda: dev.submit([b, a]),'
        ' "replay": lambda: b.replay(), "len": lambda: len(a),'
        ' "copy": lambda: len(a) < 50 and a.copy(rec.outputs[0], dev.alloc(256))}'
    )
