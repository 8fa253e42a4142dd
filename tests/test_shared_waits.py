"""One read, many waiters: every waiter of a ``PendingRead`` gets its data, from any mix
of threads and asyncio tasks and of ``result`` / ``result_into`` / ``copy=False``, in any
order, and nothing leaks.

The races run in a child interpreter (tests/support/child.py): before the read's outcome was
taken under a lock, they took the staging buffer twice and crashed the process.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
from support.child import run_child

import vyre_native as vn

N = 1 << 16  # u32 words a read: 256 KiB



def live() -> dict[str, int]:
    gc.collect()
    return vn.debug.live_objects()


def on_threads(jobs: list[Callable[[], Any]]) -> list[Any]:
    """Run every job at once (a barrier starts them together); their results in order."""
    start = threading.Barrier(len(jobs))
    results: list[Any] = [None] * len(jobs)

    def run(i: int) -> None:
        start.wait()
        try:
            results[i] = jobs[i]()
        except BaseException as err:  # noqa: BLE001 - the test inspects it
            results[i] = err

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


# In the child: 60 rounds of one read raced by its waiters (the body: their results in
# `got`), each round's results compared with the data, then the live counts against those before the rounds.
_RACE = """
import asyncio
dev = vn.Device()
host = np.arange(1 << 16, dtype=np.uint32)
buf = dev.upload(host)
dev.wait_idle()
gc.collect()
before = vn.debug.live_objects()
bad = []

def on_threads(jobs):
    start = threading.Barrier(len(jobs))
    out = [None] * len(jobs)
    def run(i):
        start.wait()
        try:
            out[i] = jobs[i]()
        except BaseException as e:
            out[i] = repr(e)
    ts = [threading.Thread(target=run, args=(i,)) for i in range(len(jobs))]
    for t in ts: t.start()
    for t in ts: t.join()
    return out

def same(got):
    if isinstance(got, str):
        return False
    return np.array_equal(np.frombuffer(bytes(got), np.uint32), host)

async def awaited_by(k):  # `pending` awaited by k asyncio tasks at once: what each got
    async def waiter():
        return await pending
    return await asyncio.gather(*[waiter() for _ in range(k)], return_exceptions=True)

for round in range(60):
    pending = buf.read_async()
{body}
    bad += [repr(g)[:200] for g in got if not same(g)]
    del pending, got
gc.collect()
dev.wait_idle()
after = vn.debug.live_objects()
report({{"bad": bad[:5], "nbad": len(bad), "before": before, "after": after}})
"""


def _race(body: str) -> dict[str, Any]:
    res = run_child(_RACE.format(body=body), timeout=240)
    assert res["nbad"] == 0, f"{res['nbad']} waiters got no data or the wrong data, e.g. {res['bad']}"
    for kind in ("pending_reads", "mappings", "buffers", "submissions"):
        assert res["after"][kind] == res["before"][kind], f"{kind}: {res['before'][kind]} -> {res['after'][kind]}"
    assert res["after"]["staging_buffers"] <= res["before"]["staging_buffers"] + 4
    return res


def test_four_threads_calling_result_on_one_read_each_get_its_data() -> None:
    _race("""
    got = on_threads([pending.result] * 4)
""")


def test_six_asyncio_tasks_awaiting_one_read_each_get_its_data() -> None:
    _race("""
    got = asyncio.run(awaited_by(6))
""")


def test_result_result_into_and_zero_copy_from_three_threads_each_get_the_data() -> None:
    _race("""
    def into():
        out = bytearray(host.nbytes)
        assert pending.result_into(out) == host.nbytes
        return out
    def zero_copy():
        view = pending.result(copy=False)
        return bytes(view)
    got = on_threads([pending.result, into, zero_copy])
""")


def test_threads_and_tasks_mixed_on_one_read_each_get_its_data() -> None:
    _race("""
    tasks = lambda: asyncio.run(awaited_by(3))
    got = on_threads([pending.result, tasks, lambda: pending.result(np.uint32, copy=False)])
    got = [got[0], *(got[1] if isinstance(got[1], list) else [got[1]]), got[2]]
""")


def test_a_read_gives_its_data_again_to_a_later_result(dev: vn.Device) -> None:
    host = np.arange(N, dtype=np.uint32)
    pending = dev.upload(host).read_async()
    assert pending.result() == host.tobytes()
    assert pending.result() == host.tobytes()
    out = np.empty_like(host)
    assert pending.result_into(out) == host.nbytes
    np.testing.assert_array_equal(out, host)
    np.testing.assert_array_equal(pending.result(np.uint32, copy=False), host)
    np.testing.assert_array_equal(pending.result(np.uint32), host)


def test_copying_waiters_each_get_an_array_of_their_own(dev: vn.Device) -> None:
    host = np.arange(N, dtype=np.uint32)
    pending = dev.upload(host).read_async()
    a, b = on_threads([lambda: pending.result(np.uint32), lambda: pending.result(np.uint32)])
    assert a.flags.writeable and b.flags.writeable and not np.shares_memory(a, b)
    a[:] = 0
    np.testing.assert_array_equal(b, host)


def test_zero_copy_waiters_share_the_one_read_only_staging_memory(dev: vn.Device) -> None:
    host = np.arange(N, dtype=np.uint32)
    pending = dev.upload(host).read_async()
    a, b = on_threads([lambda: pending.result(np.uint32, copy=False)] * 2)
    assert np.shares_memory(a, b) and not a.flags.writeable
    assert live()["mappings"] == 1
    np.testing.assert_array_equal(a, host)


def test_a_released_read_gives_its_staging_buffer_back_once_no_view_holds_it(dev: vn.Device) -> None:
    pending = dev.upload(np.arange(N, dtype=np.uint32)).read_async()
    view = pending.result(np.uint32, copy=False)
    pending.result()
    assert live()["mappings"] == 1
    pending.release()
    assert live()["mappings"] == 1  # the view still reads it
    del view
    assert live()["mappings"] == 0 and live()["pending_reads"] == 0


def test_a_read_completed_before_destroy_still_gives_its_data_after_it() -> None:
    res = run_child("""
    dev = vn.Device()
    host = np.arange(1 << 16, dtype=np.uint32)
    pending = dev.upload(host).read_async()
    first = pending.result()
    dev.destroy()
    report([first == host.tobytes(), pending.result() == host.tobytes(),
            bool(np.array_equal(pending.result(np.uint32, copy=False), host))])
    """)
    assert res == [True, True, True]
