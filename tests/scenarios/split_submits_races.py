"""Split sequence replays racing other threads (tests/test_split_submits_races.py), with
submits split everywhere (vn_test_control(VN_TEST_SPLIT_SUBMITS_EVERYWHERE)). argv: the scenario and,
for the two attacks, the action. Each reports what the replays raised, counted by
class ("ok": nothing; "... after a part": an error once some steps were submitted)."""

from __future__ import annotations

import gc
import os
import random
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from support.childlib import report
from support.kernels import COUNTER as INC

import vyre_native as vn
from vyre_native._lib import lib

outcomes: dict[str, int] = {}


def note(e: BaseException | None = None) -> None:
    """Count an outcome: a VyreError with a Fix (one after a first part says so), or ok."""
    if e is None:
        key = "ok"
    else:
        assert isinstance(e, vn.VyreError), repr(e)
        assert "Fix:" in str(e), str(e)
        msg = str(e)
        key = type(e).__name__ + (" after a part" if "steps were submitted (they run)" in msg else "")
        if "steps were submitted" in msg:
            assert msg.startswith("after "), msg
    outcomes[key] = outcomes.get(key, 0) + 1


def wgpu_py_attack(action: str) -> None:
    import wgpu

    random.seed(1)
    for _trial in range(25):
        gd = wgpu.gpu.request_adapter_sync().request_device_sync()
        dev = vn.Device.from_wgpu(gd)
        p = dev.compile(INC, preserve=["acc"])
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
        theirs = gd.create_buffer(size=256, usage=usage)
        ours = vn.Buffer.from_wgpu(theirs)
        mr = gd.create_buffer(size=256, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
        mro = vn.Buffer.from_wgpu(mr)
        seq = dev.sequence()
        for i in range(200):
            seq.add(p, [], [ours], workgroups=(1, 1, 1))
            if i % 50 == 49:
                seq.copy(ours, mro)
        t0 = time.perf_counter()
        seq.replay().wait()
        T = time.perf_counter() - t0

        def attack(T: float = T, theirs: Any = theirs, mr: Any = mr, gd: Any = gd) -> None:
            time.sleep(random.random() * T)  # lands anywhere in the replay
            if action == "destroy":
                theirs.destroy()
            elif action == "destroy_map_read":
                type(mr).destroy(mr)
            elif action == "map":
                mr.map_sync(wgpu.MapMode.READ)
                time.sleep(0.005)
                mr.unmap()
            else:
                gd.destroy()

        th = threading.Thread(target=attack)
        th.start()
        try:
            seq.replay().wait()
            note()
            ok = True
        except vn.VyreError as e:
            note(e)
            ok = False
        th.join()
        if ok and action == "map":
            assert (np.frombuffer(ours.read(), np.uint32) == 400).all()
    report(outcomes)


def sequence_attack(action: str) -> None:
    random.seed(2)
    wrong: list[tuple[int, int]] = []
    for _trial in range(12):
        wrong.extend(_one_sequence_attack(action))
    gc.collect()
    live = {k: v for k, v in vn.debug.live_objects().items() if v}
    report({"outcomes": outcomes, "wrong": wrong, "live": live})


def _one_sequence_attack(action: str) -> list[tuple[int, int]]:
    """One trial; (got, want) if the counter ended wrong. Its objects go when it returns."""
    dev = vn.Device()
    p = dev.compile(INC, preserve=["acc"])
    acc, other = dev.alloc(256), dev.alloc(256)
    seq = dev.sequence()
    for _ in range(100):
        seq.add(p, [], [acc], workgroups=(1, 1, 1))
    seq.replay().wait()
    t0 = time.perf_counter()
    seq.replay().wait()
    T = time.perf_counter() - t0

    def attack() -> None:
        time.sleep(random.random() * 2 * T)  # lands anywhere in the replay, or after it
        try:
            if action == "add":
                for _ in range(5):
                    seq.add(p, [], [other], workgroups=(1, 1, 1))
            elif action == "release":
                seq.release()
            elif action == "release_buffer":
                acc.release()
            elif action == "close":
                dev.close()
            elif action == "destroy":
                dev.destroy()
            elif action == "replay":
                seq.replay().wait()
            else:
                dev.submit([seq, p.record([], [other], workgroups=(1, 1, 1))]).wait()
        except vn.VyreError as e:
            note(e)

    th = threading.Thread(target=attack)
    th.start()
    try:
        seq.replay(2).wait()
        note()
    except vn.VyreError as e:
        note(e)
    th.join()
    if action in ("add", "replay", "submit"):
        dev.wait_idle()
        got = int(np.frombuffer(acc.read(), np.uint32)[0])
        want = 400 + (100 if action in ("replay", "submit") else 0)
        if got != want:
            return [(got, want)]
    return []


def many_threads() -> None:
    dev = vn.Device()
    p = dev.compile(INC, preserve=["acc"])
    bufs = [dev.alloc(256) for _ in range(3)]
    expect = np.zeros(3, np.int64)
    lock = threading.Lock()

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        seq = dev.sequence()
        counts = np.zeros(3, np.int64)
        for _ in range(rng.randint(8, 60)):
            b = rng.randrange(3)
            seq.add(p, [], [bufs[b]], workgroups=(1, 1, 1))
            counts[b] += 1
        local = np.zeros(3, np.int64)
        for _ in range(20):
            op = rng.random()
            if op < 0.6:
                n = rng.choice([1, 2, 3]) if len(seq) * 3 <= 256 else 1
                s = seq.replay(n)
                local += counts * n
                if rng.random() < 0.3:
                    s.wait()
            elif op < 0.8:
                dev.submit([seq, p.record([], [bufs[0]], workgroups=(1, 1, 1))])
                local += counts
                local[0] += 1
            else:
                b = rng.randrange(3)
                seq.add(p, [], [bufs[b]], workgroups=(1, 1, 1))
                counts[b] += 1
        with lock:
            expect[:] += local

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    dev.wait_idle()
    got = [int(np.frombuffer(b.read(), np.uint32)[0]) for b in bufs]
    report({"got": got, "expect": expect.tolist()})


SLOW = """
@group(0) @binding(0) var<storage, read_write> acc: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    var x = 0u;
    for (var i = 0u; i < 2000u; i = i + 1u) { x = x * 1664525u + 1013904223u; }
    if (g.x < arrayLength(&acc) && x != 7u) { acc[g.x] = acc[g.x] + 1u; }
}
"""


def ctrl_c() -> None:
    dev = vn.Device()
    p = dev.compile(SLOW, preserve=["acc"])
    acc = dev.alloc(256)
    seq = dev.sequence()
    for _ in range(200):
        seq.add(p, [], [acc], workgroups=(8, 1, 1))
    t0 = time.time()
    seq.replay().wait()
    T = time.time() - t0
    got = []
    for frac in (0.1, 0.5, 0.9):
        threading.Timer(T * frac, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        try:
            seq.replay().wait()
            time.sleep(T)
            got.append("ok")
        except KeyboardInterrupt:
            got.append("KeyboardInterrupt")
    dev.wait_idle()
    report({"got": got, "acc": int(np.frombuffer(acc.read(), np.uint32)[0])})


if __name__ == "__main__":
    lib.vn_test_control(lib.VN_TEST_SPLIT_SUBMITS_EVERYWHERE, 1)
    scenario, *args = sys.argv[1:]
    scenarios: dict[str, Callable[..., None]] = {
        "wgpu_py_attack": wgpu_py_attack,
        "sequence_attack": sequence_attack,
        "many_threads": many_threads,
        "ctrl_c": ctrl_c,
    }
    scenarios[scenario](*args)
