"""``device.submit(work)`` of any size (csrc/work/batch.c, submit_in_parts).

Past ``VN_MAX_LAUNCHES_PER_SUBMIT`` (256) steps in all (a recording is one step, a
sequence its length), a batch goes in submits of 256 steps, in order, as ``replay(n)``
splits, at most two in flight, and as one unit: the device's life lock is held for
writing across its parts, so no other thread's submit lands between two of them. A part
may begin or end inside a sequence. Results are checked against a numpy model whose
steps do not commute (``+1`` and ``*2`` on one counter), so any step run out of order,
twice or not at all shows.

Submission indices count queue submits, so the difference between two submits' indices,
with nothing submitted in between, is the number of submits the later one used.
"""

from __future__ import annotations

import gc
import random
from collections.abc import Iterator

import numpy as np
import pytest
from support.child import run_child
from support.kernels import COUNTER, DOUBLE_IN_PLACE
from support.markers import not_under_asan

import vyre_native as vn

N = 64  # counters per buffer
PER_SUBMIT = 256

INC = COUNTER  # acc[i] += 1
DBL = DOUBLE_IN_PLACE  # acc[i] *= 2


class Kit:
    """One counter buffer, its +1 and *2 recordings, and a numpy model of it."""

    def __init__(self, dev: vn.Device) -> None:
        self.dev = dev
        self.acc = dev.upload(np.ones(N, np.uint32))
        self.inc = dev.compile(INC, preserve=["acc"])
        self.dbl = dev.compile(DBL, preserve=["acc"])
        self.rec = {"inc": self.inc.record([], [self.acc]), "dbl": self.dbl.record([], [self.acc])}
        self.model = np.ones(N, np.uint32)

    def sequence(self, ops: list[str]) -> vn.Sequence:
        seq = self.dev.sequence()
        for op in ops:
            seq.add(self.inc if op == "inc" else self.dbl, [], [self.acc])
        return seq

    def apply(self, ops: list[str]) -> None:
        for op in ops:
            self.model = self.model + np.uint32(1) if op == "inc" else self.model * np.uint32(2)

    def check(self) -> None:
        np.testing.assert_array_equal(np.frombuffer(self.acc.read(), np.uint32), self.model)


@pytest.fixture()
def kit() -> Iterator[Kit]:
    dev = vn.Device()
    yield Kit(dev)
    dev.close()


def batch(kit: Kit, rng: random.Random, lengths: list[int]) -> tuple[list[vn.Recording | vn.Sequence], list[str]]:
    """Items of these step counts (0: a recording, else a sequence of that many steps),
    with random +1 / *2 steps; and the steps in the order they must run."""
    items: list[vn.Recording | vn.Sequence] = []
    order: list[str] = []
    for length in lengths:
        ops = [rng.choice(["inc", "dbl"]) for _ in range(max(length, 1))]
        items.append(kit.rec[ops[0]] if length == 0 else kit.sequence(ops))
        order += ops
    return items, order


@pytest.mark.parametrize(
    "lengths",
    [
        [0] * 300,  # 300 recordings: a boundary between two of them
        [150, 150],  # the boundary inside the second sequence
        [100, 0, 200, 0, 0, 90],  # sequences and recordings mixed, boundaries inside sequences
        [257, 0],  # one sequence longer than a part, then a recording
        [0, 255, 0, 0, 300, 40, 0],  # three parts, boundaries on an item's last and first step
    ],
)
def test_a_submit_past_the_bound_runs_every_step_once_in_order(kit: Kit, lengths: list[int]) -> None:
    items, order = batch(kit, random.Random(len(lengths)), lengths)
    kit.dev.submit(items).wait()
    kit.apply(order)
    kit.check()


@pytest.mark.parametrize("steps", [257, 512, 513, 1000])
def test_a_submit_past_the_bound_goes_in_submits_of_256_steps(kit: Kit, steps: int) -> None:
    items = [kit.rec["inc"]] * steps
    before = kit.dev.submit(items[:2])
    before.wait()
    after = kit.dev.submit(items)
    after.wait()
    assert after.index - before.index == -(-steps // PER_SUBMIT)
    kit.apply(["inc"] * (steps + 2))
    kit.check()


def test_submits_of_any_size_compute_what_submits_within_the_bound_do(kit: Kit) -> None:
    rng = random.Random(7)
    for _ in range(6):
        lengths = [rng.choice([0, 0, 3, 40, 130]) for _ in range(rng.randint(2, 12))]
        items, order = batch(kit, rng, lengths)
        sub = kit.dev.submit(items)
        kit.apply(order)
        sub.wait()
        kit.check()


def test_a_timed_submit_past_the_bound_raises_invalid_argument_error_naming_timing(kit: Kit) -> None:
    with pytest.raises(vn.InvalidArgumentError, match=r"timed device.submit\(\) of 257 items.*Fix: submit without timing"):
        kit.dev.submit([kit.rec["inc"]] * (PER_SUBMIT + 1), timing=True)
    kit.check()  # nothing ran


def test_live_objects_stay_flat_over_many_submits_in_parts(kit: Kit) -> None:
    items, order = batch(kit, random.Random(3), [0, 200, 0, 100])
    kit.dev.submit(items).wait()
    gc.collect()
    before = vn.debug.live_objects()
    for _ in range(20):
        kit.dev.submit(items)
    kit.dev.wait_idle()
    gc.collect()
    assert vn.debug.live_objects() == before
    kit.apply(order * 21)
    kit.check()


def test_a_submit_past_the_bound_from_racing_threads_is_never_split_by_another_threads_work() -> None:
    # Threads each submit 300 +1 steps (two parts: 256, then 44) onto one counter, while
    # another snapshots the counter with a copy of its own submits: a snapshot taken
    # between two parts of a batch would read a count that is not a multiple of 300.
    res = run_child(
        f"""
        INC = {INC!r}
        dev = vn.Device()
        acc = dev.alloc(256)
        inc = dev.compile(INC, preserve=["acc"])
        rec = inc.record([], [acc])
        seq = dev.sequence()
        for _ in range(150):
            seq.add(inc, [], [acc])
        work = [seq, *[rec] * 150]
        snap = dev.alloc(4 * 64 * 400)
        copies = [dev.sequence().copy(acc, snap.view(256 * k, 256)) for k in range(400)]
        deadline = time.monotonic() + 4
        done = {{}}
        def submitter(name):
            n = 0
            while time.monotonic() < deadline:
                dev.submit(work)
                n += 1
            done[name] = n
        def snapshots():
            k = 0
            while time.monotonic() < deadline and k < 400:
                copies[k].replay()
                k += 1
            done["snapshots"] = k
        threads = [threading.Thread(target=submitter, args=(f"submit{{i}}",), daemon=True) for i in range(2)]
        threads.append(threading.Thread(target=snapshots, daemon=True))
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        hung = [t.name for t in threads if t.is_alive()]
        if hung:
            report({{"hung": hung}})
            os._exit(0)
        dev.wait_idle()
        counts = np.frombuffer(snap.read(), np.uint32).reshape(400, 64)[: done["snapshots"], 0].tolist()
        total = int(np.frombuffer(acc.read(), np.uint32)[0])
        report({{"hung": [], "done": done, "counts": counts, "total": total}})
        """,
        timeout=300,
    )
    assert res["hung"] == [], f"threads never finished: {res['hung']}"
    submits = sum(v for k, v in res["done"].items() if k.startswith("submit"))
    assert submits > 0 and res["done"]["snapshots"] > 0, res["done"]
    assert res["total"] == 300 * submits
    torn = [c for c in res["counts"] if c % 300]
    assert torn == [], f"{len(torn)} snapshots landed inside a batch, e.g. {torn[:5]}"
    assert any(0 < c < res["total"] for c in res["counts"]), "no snapshot raced a batch: the test saw no overlap"


@not_under_asan
def test_a_submit_of_20000_recordings_keeps_memory_bounded() -> None:
    # At most two parts of 256 steps in flight, as replay(n) keeps: one command buffer of
    # them all would hold wgpu's encoder memory for every step until the GPU ran it.
    res = run_child(
        f"""
        dev = vn.Device()
        acc = dev.alloc(256)
        rec = dev.compile({INC!r}, preserve=["acc"]).record([], [acc])
        dev.submit([rec] * 600).wait()  # warm: the driver's pools
        before = rss_mib()
        sub = dev.submit([rec] * 20000)
        peak = rss_mib()
        sub.wait()
        report({{"grew_mib": max(peak, rss_mib()) - before, "count": int(np.frombuffer(acc.read(), np.uint32)[0])}})
        """,
        timeout=600,
    )
    assert res["count"] == 20600
    assert res["grew_mib"] < 100, f"RSS grew {res['grew_mib']:.0f} MiB over a submit of 20000 recordings"
