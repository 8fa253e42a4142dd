"""Ctrl-C during a wait, and releases that never wait.

Every blocking call waits in slices of about 20 ms and returns to Python between them,
so a SIGINT raises KeyboardInterrupt promptly instead of when the GPU finishes; the
work keeps running and the device stays usable. A release (``del``, ``ffi.gc``) never
waits for the GPU. Each scenario (tests/scenarios/signals.py) runs in a child
interpreter on a kernel that keeps the adapter busy for about three seconds; a helper
thread sends SIGINT once the call is inside its sliced wait. "Promptly" is checked by
order, not by a clock: the KeyboardInterrupt came out of the wait while the work still
ran (how many ms it takes is a benchmark's figure: benchmarks/test_bench_interrupt.py).
"""

from __future__ import annotations

import functools
from typing import Any

import pytest
from support.child import run_scenario


@functools.cache
def _interrupted() -> dict[str, Any]:
    """Every scenario, from one child (about 30 s on lavapipe)."""
    return run_scenario("signals", "interrupt", timeout=300)  # type: ignore[no-any-return]


def _check_interrupted(mode: str) -> None:
    res = _interrupted()[mode]
    assert res["interrupted"], f"{mode} returned without KeyboardInterrupt (SIGINT sent: {res['sent']})"
    assert res["in_wait"], f"{mode}: KeyboardInterrupt was raised outside the sliced wait"
    assert res["running"], f"{mode}: KeyboardInterrupt came only after the work had finished"
    assert res["read_after"] == 256, f"{mode}: reading the output afterwards gave {res['read_after']} bytes"


@pytest.mark.parametrize(
    "mode",
    [
        "wait",
        "wait_timeout",
        "read",
        "read_into",
        "read_async_result",
        "read_zero_copy",
        "read_async_result_zero_copy",
        "view_read",
        "wait_idle",
    ],
)
def test_ctrl_c_during_a_blocking_call_raises_keyboard_interrupt_promptly(mode: str) -> None:
    _check_interrupted(mode)


def test_ctrl_c_during_a_replay_that_waits_for_a_busy_cpu_queue_raises_keyboard_interrupt_promptly() -> None:
    if not _interrupted()["cpu"]:
        pytest.skip(
            "only a CPU adapter (lavapipe) runs one submission at a time; on a GPU a replay never waits"
        )
    _check_interrupted("replay_while_busy")


def test_interrupted_work_completes_and_leaves_nothing_alive() -> None:
    live = _interrupted()["live_after"]
    assert all(v == 0 for v in live.values()), f"left alive after the interrupted calls: {live}"


# ---- releases never wait for the GPU


@functools.cache
def _releases() -> dict[str, Any]:
    return run_scenario("signals", "releases", timeout=180)  # type: ignore[no-any-return]


def test_releasing_a_pending_read_in_flight_does_not_wait() -> None:
    # Right after the release the read's copy is still running: the release did not
    # wait for it.
    assert _releases()["busy_after_release"], "the read had finished when its release returned"


def test_releasing_a_device_with_work_running_does_not_wait() -> None:
    res = _releases()
    assert res["parked_devices"] == 1, f"the device should wait, parked, for its kernel: {res}"


def test_a_device_released_while_busy_is_freed_once_its_work_finishes() -> None:
    res = _releases()
    assert all(v == 0 for v in res["live"].values()), res


def test_writes_past_the_flush_bound_do_not_wait_for_a_busy_cpu_queue() -> None:
    # buffer.write flushes queued writes with a submit every 64 MiB; on a CPU adapter a
    # submit blocks in the driver while a kernel runs, so there the flush waits for a
    # write that finds the queue idle, and writes stay quick (and interruptible): the
    # kernel is still running when 80 MiB of writes have returned.
    res = run_scenario("signals", "writes", timeout=180)
    assert res["read"], res
    if not res["cpu"]:
        pytest.skip("only a CPU adapter's submit blocks behind running work")
    assert res["running"], "the writes returned only after the kernel had finished: they waited for it"
