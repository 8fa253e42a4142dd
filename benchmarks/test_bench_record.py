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
from harness import Drainer, bench_floor_launch, bench_floor_one_call, record_python, wgpu_wait


def _next_of(outs):
    """A Drainer ``make``: the next of ``outs`` each round, round robin."""
    state = {"i": 0}

    def make():
        state["i"] = (state["i"] + 1) % len(outs)
        return outs[state["i"]]

    return make


def _vn_prerecord(benchmark, vnx, rounds, outs):
    """Record one dispatch a round, into ``outs`` in turn; returns the bind-group cache
    stats' change over the run as (hits, misses) and the cache's capacity."""
    prog, a, dev = vnx.prog, vnx.a, vnx.dev
    pending = []

    def drain():
        for rec in pending:
            rec.replay()
        pending.clear()
        dev.wait_idle()

    def target(out):
        pending.append(prog.prerecord_persistent_dispatch([a], [out], workgroups=(1, 1, 1)))

    before = prog.bind_group_cache_stats()
    benchmark.pedantic(
        target, setup=Drainer(drain, _next_of(outs)), rounds=rounds.launch, warmup_rounds=rounds.launch_warmup
    )
    drain()
    after = prog.bind_group_cache_stats()
    return after["hits"] - before["hits"], after["misses"] - before["misses"], after["capacity"]


def _wgpu_prerecord(benchmark, wgx, rounds, outs, target, pending):
    """``target`` a round, given ``outs`` in turn, appending its command buffer to
    ``pending``; submitted (untimed) every DRAIN_EVERY rounds and at the end."""
    queue = wgx.queue

    def drain():
        queue.submit(pending)
        pending.clear()
        wgpu_wait(wgx)

    benchmark.pedantic(
        target,
        setup=Drainer(drain, _next_of(outs)),
        rounds=rounds.launch,
        warmup_rounds=rounds.launch_warmup,
    )
    drain()


# ---- 1. cache hit ---------------------------------------------------------------------


@pytest.mark.benchmark(group="prerecord_hit")
def test_prerecord_hit_vyre_native(benchmark, vnx, rounds):
    hits, misses, _ = _vn_prerecord(benchmark, vnx, rounds, [vnx.o])
    record_python(benchmark, "vyre_native", "prerecord_hit", cache_hits=hits, cache_misses=misses)


@pytest.mark.benchmark(group="prerecord_hit")
def test_prerecord_hit_wgpu_py(benchmark, wgx, rounds):
    encode, group, fill = wgx.encode, wgx.group, wgx.fill
    pending = []

    def target(_out):  # the same output every round: group and fill are wgx.o's
        pending.append(encode(group, fill))

    _wgpu_prerecord(benchmark, wgx, rounds, [wgx.o], target, pending)
    record_python(benchmark, "wgpu-py", "prerecord_hit")


@pytest.mark.benchmark(group="prerecord_hit")
def test_prerecord_hit_raw_c(benchmark, cfloor, rounds):
    bench_floor_launch(benchmark, cfloor, rounds, "prerecord_hit")


@pytest.mark.benchmark(group="prerecord_hit")
def test_prerecord_hit_raw_c_one_call(benchmark, cfloor, rounds):
    """The same encode, one cffi call a round (the floor of a pre-record made from Python)."""
    bench_floor_one_call(benchmark, cfloor, rounds, "prerecord_hit", "prerecord")


# ---- 2. cache miss --------------------------------------------------------------------


@pytest.mark.benchmark(group="prerecord_miss")
def test_prerecord_miss_vyre_native(benchmark, vnx, rounds):
    """Cycles through MISS_SETS (300) outputs: more than the cache's 256 entries, so
    every lookup misses and evicts (the LRU's worst case)."""
    hits, misses, capacity = _vn_prerecord(benchmark, vnx, rounds, vnx.miss_outs)
    if misses < 0.99 * (misses + hits):
        warnings.warn(
            f"prerecord_miss: only {misses} of {misses + hits} lookups missed the bind-group cache "
            f"(capacity {capacity}); the benchmark is not measuring misses",
            stacklevel=1,
        )
    record_python(
        benchmark,
        "vyre_native",
        "prerecord_miss",
        cache_hits=hits,
        cache_misses=misses,
        cache_capacity=capacity,
    )


@pytest.mark.benchmark(group="prerecord_miss")
def test_prerecord_miss_wgpu_py(benchmark, wgx, rounds):
    bind, bind_fill, encode, a = wgx.bind, wgx.bind_fill, wgx.encode, wgx.a
    pending = []

    def target(out):
        # both of vyre_native's caches miss: the kernel's bind group and the fill's
        pending.append(encode(bind(a, out), bind_fill(out)))

    _wgpu_prerecord(benchmark, wgx, rounds, wgx.miss_outs, target, pending)
    record_python(benchmark, "wgpu-py", "prerecord_miss")


@pytest.mark.benchmark(group="prerecord_miss")
def test_prerecord_miss_raw_c(benchmark, cfloor, rounds):
    bench_floor_launch(benchmark, cfloor, rounds, "prerecord_miss")
