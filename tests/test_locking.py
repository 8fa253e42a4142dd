"""Lock order: operations over several objects take their locks in one canonical order,
so no interleaving of threads can deadlock (csrc/layer_object.h "Lock order", docs/LOCKING.md).

Each case runs tests/scenarios/locking.py in a child interpreter whose threads are joined with a time limit: a
deadlock is reported as a hang and fails the test instead of hanging the suite.
"""

from __future__ import annotations

from typing import Any

from support.child import run_scenario


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
