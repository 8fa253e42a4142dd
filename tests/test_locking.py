"""Lock order: operations over several objects take their locks in one canonical order,
so no interleaving of threads can deadlock (csrc/object/layer_object.h "lock order", docs/LOCKING.md).

Each case runs tests/scenarios/locking.py in a child interpreter whose threads are joined with a time limit: a
deadlock is reported as a hang and fails the test instead of hanging the suite.
"""

from __future__ import annotations

from typing import Any

from support.child import run, run_scenario


def _run(jobs: str, seconds: float = 3.0) -> Any:
    """Run the job set `jobs` of tests/scenarios/locking.py on one thread each."""
    res = run_scenario("locking", jobs, str(seconds), timeout=180)
    assert res["hung"] == [], f"deadlock: {res['hung']} never finished (finished: {res['done']})"
    return res


def test_submits_of_two_sequences_in_opposite_orders_on_two_threads_never_deadlock() -> None:
    # "ab": dev.submit([a, b]) against "ba": dev.submit([b, a])
    res = _run("two_opposite")
    assert all(n > 0 for n in res["done"].values()), res


def test_submits_of_three_sequences_in_every_rotation_never_deadlock() -> None:
    _run("three_rotations")  # [a, b, c, rec], [b, c, a], [rec, c, a, b]


def test_a_sequence_listed_twice_in_one_submit_is_locked_once() -> None:
    _run("listed_twice")  # [a, b, a, a] against [b, a, b]


def test_submits_racing_replays_and_adds_of_the_same_sequences_never_deadlock() -> None:
    # [a, b] and [b, a] submitted while b replays, a's length is read and a grows
    _run("racing_replays_and_adds")


# A lock taken against the order: VN_TEST_BREAK_LOCK_ORDER makes Sequence's len() take the
# sequence's lock (rank 1) under its device's pipelines lock (rank 4).
BREAK_ORDER = """
import vyre_native as vn
from vyre_native._lib import ffi, lib
seq = vn.Device().sequence()
if lib.vn_test_control(lib.VN_TEST_BREAK_LOCK_ORDER, 1) == -1:
    print("refused:", ffi.string(lib.vn_last_error()).decode())
else:
    len(seq)
    print("not aborted")
"""


def test_a_lock_taken_against_the_order_aborts_naming_both_locks_where_the_check_is_built() -> None:
    """Built with the lock-order check (VN_LOCK_RANK_CHECK: scripts/asan.sh's build), the
    out-of-order lock aborts the child, naming both locks; built without, the switch that
    would break the order is refused, saying the check is missing."""
    proc = run(["-c", BREAK_ORDER])
    if "refused:" in proc.stdout:
        assert proc.returncode == 0, proc.stderr
        assert "lacks" in proc.stdout and "VN_LOCK_RANK_CHECK" in proc.stdout, proc.stdout
        return
    assert proc.returncode != 0 and "not aborted" not in proc.stdout, (proc.stdout, proc.stderr)
    assert "taking vn_sequence.lock (rank 1" in proc.stderr, proc.stderr
    assert "while holding vn_device.pipelines_lock (rank 4" in proc.stderr, proc.stderr
