"""Operations 1 and 2: pre-recording one dispatch, with a bind-group cache hit and
with a miss.

Recordings made in the timed part are replayed (untimed) every DRAIN_EVERY rounds
rather than dropped: wgpu-native does not reclaim a command buffer dropped
unsubmitted, so dropping them would leak and, on some drivers, make every later
encode allocate a fresh command buffer.
"""

from __future__ import annotations

import warnings

import pytest
from harness import Drainer, record_python, run_floor, wgpu_wait

# ---- 1. cache hit ---------------------------------------------------------------------


@pytest.mark.benchmark(group="prerecord_hit")
def test_prerecord_hit_vyre_native(benchmark, vnx, rounds):
    prog, a, o, dev = vnx.prog, vnx.a, vnx.o, vnx.dev
    pending = []

    def drain():
        for rec in pending:
            rec.replay()
        pending.clear()
        dev.wait_idle()

    def target():
        pending.append(prog.prerecord_persistent_dispatch([a], [o], workgroups=(1, 1, 1)))

    before = prog.bind_group_cache_stats()
    benchmark.pedantic(target, setup=Drainer(drain), rounds=rounds.launch, warmup_rounds=rounds.launch_warmup)
    drain()
    after = prog.bind_group_cache_stats()
    record_python(
        benchmark,
        "vyre_native",
        "prerecord_hit",
        cache_hits=after["hits"] - before["hits"],
        cache_misses=after["misses"] - before["misses"],
    )


@pytest.mark.benchmark(group="prerecord_hit")
def test_prerecord_hit_wgpu_py(benchmark, wgx, rounds):
    encode, group, fill, queue = wgx.encode, wgx.group, wgx.fill, wgx.queue
    pending = []

    def drain():
        queue.submit(pending)
        pending.clear()
        wgpu_wait(wgx)

    def target():
        pending.append(encode(group, fill))

    benchmark.pedantic(target, setup=Drainer(drain), rounds=rounds.launch, warmup_rounds=rounds.launch_warmup)
    drain()
    record_python(benchmark, "wgpu-py", "prerecord_hit")


@pytest.mark.benchmark(group="prerecord_hit")
def test_prerecord_hit_raw_c(benchmark, cfloor, rounds):
    lib, ctx = cfloor.lib, cfloor.ctx
    run_floor(
        benchmark,
        cfloor,
        "prerecord_hit",
        lambda n, s: lib.floor_prerecord_hit(ctx, n, s),
        rounds.c_launch_ops,
        rounds.c_launch_rounds,
    )


# ---- 2. cache miss --------------------------------------------------------------------


@pytest.mark.benchmark(group="prerecord_miss")
def test_prerecord_miss_vyre_native(benchmark, vnx, rounds):
    """Cycles through MISS_SETS (300) outputs: more than the cache's 256 entries, so
    every lookup misses and evicts (the LRU's worst case)."""
    prog, a, outs, dev = vnx.prog, vnx.a, vnx.miss_outs, vnx.dev
    pending = []
    state = {"i": 0}

    def drain():
        for rec in pending:
            rec.replay()
        pending.clear()
        dev.wait_idle()

    def make():
        state["i"] = (state["i"] + 1) % len(outs)
        return outs[state["i"]]

    def target(out):
        pending.append(prog.prerecord_persistent_dispatch([a], [out], workgroups=(1, 1, 1)))

    before = prog.bind_group_cache_stats()
    benchmark.pedantic(
        target, setup=Drainer(drain, make), rounds=rounds.launch, warmup_rounds=rounds.launch_warmup
    )
    drain()
    after = prog.bind_group_cache_stats()
    misses, hits = after["misses"] - before["misses"], after["hits"] - before["hits"]
    if misses < 0.99 * (misses + hits):
        warnings.warn(
            f"prerecord_miss: only {misses} of {misses + hits} lookups missed the bind-group cache "
            f"(capacity {after['capacity']}); the benchmark is not measuring misses",
            stacklevel=1,
        )
    record_python(
        benchmark,
        "vyre_native",
        "prerecord_miss",
        cache_hits=hits,
        cache_misses=misses,
        cache_capacity=after["capacity"],
    )


@pytest.mark.benchmark(group="prerecord_miss")
def test_prerecord_miss_wgpu_py(benchmark, wgx, rounds):
    bind, bind_fill, encode = wgx.bind, wgx.bind_fill, wgx.encode
    a, outs, queue = wgx.a, wgx.miss_outs, wgx.queue
    pending = []
    state = {"i": 0}

    def drain():
        queue.submit(pending)
        pending.clear()
        wgpu_wait(wgx)

    def make():
        state["i"] = (state["i"] + 1) % len(outs)
        return outs[state["i"]]

    def target(out):
        # both of vyre_native's caches miss: the kernel's bind group and the fill's
        pending.append(encode(bind(a, out), bind_fill(out)))

    benchmark.pedantic(
        target, setup=Drainer(drain, make), rounds=rounds.launch, warmup_rounds=rounds.launch_warmup
    )
    drain()
    record_python(benchmark, "wgpu-py", "prerecord_miss")


@pytest.mark.benchmark(group="prerecord_miss")
def test_prerecord_miss_raw_c(benchmark, cfloor, rounds):
    lib, ctx = cfloor.lib, cfloor.ctx
    run_floor(
        benchmark,
        cfloor,
        "prerecord_miss",
        lambda n, s: lib.floor_prerecord_miss(ctx, n, s),
        rounds.c_launch_ops,
        rounds.c_launch_rounds,
    )
