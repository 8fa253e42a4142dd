"""Clears inside the compute pass, beside the sequence_1000_clear rows
(test_bench_replay.py: 1000 steps that each clear their output, one pass):

- the same 1000 steps written naively in raw C (clear_buffer + a pass + the dispatch per
  step, one command buffer): what a clearing sequence encoded before;
- the GPU time of clearing a 64 MiB buffer between two dispatches (timestamps): what
  vyre_native encodes for it against clear_buffer in raw C, with raw C's own fill of it
  and the two dispatches alone in extra_info.
"""

from __future__ import annotations

import statistics

import pytest
from harness import BIG_READ, SEQUENCE_LEN, _per_operation, bench_floor_sequence, run_floor

# ---- the naive encoding of 1000 clearing steps ----------------------------------------


@pytest.mark.benchmark(group="sequence_1000_clear_naive")
def test_sequence_1000_clear_naive_raw_c(benchmark, cfloor, rounds):
    """The reference the issue measured: clear_buffer + pass + dispatch per step."""
    call = cfloor.call("encode_n_submit", SEQUENCE_LEN)
    bench_floor_sequence(benchmark, cfloor, rounds, "sequence_1000_clear_naive", False, call)


# ---- GPU time of clearing 64 MiB: fill vs clear_buffer -------------------------------------


def _record_gpu(benchmark, way: str, times_ns: list[int]) -> None:
    """extra_info for a GPU-time row: per-op figures are GPU ns from timestamps, and so
    are the row's samples (pytest-benchmark's own table and JSON), as the raw-C row's
    are: the timed target (replay + wait_idle, 120-250 µs on the H200) is not what the
    row compares, and its wall time beside raw C's GPU time read as a 4-6x clear."""
    if times_ns and getattr(benchmark, "stats", None) is not None:  # None under --benchmark-disable
        _per_operation(benchmark, [t / 1e9 for t in times_ns])
    info = benchmark.extra_info
    info.update(way=way, operation="clear_64MiB_gpu", ops_per_round=1, statistic_of="gpu_time")
    if times_ns:
        info["per_op_ns"] = statistics.fmean(times_ns)
        info["per_op_ns_median"] = float(statistics.median(times_ns))
        info["per_op_ns_min"] = float(min(times_ns))
        if len(times_ns) > 1:
            q1, _, q3 = statistics.quantiles(times_ns, n=4)
            info["per_op_ns_q1"], info["per_op_ns_q3"] = float(q1), float(q3)
        info["bytes"] = BIG_READ
        info["gb_per_s"] = BIG_READ / info["per_op_ns"]


@pytest.mark.benchmark(group="clear_64MiB_gpu")
def test_clear_64MiB_gpu_vyre_native(benchmark, vnx, rounds):
    """Sequence [dispatch, clear(64 MiB), dispatch] replayed with timing=True: the GPU
    time from the first pass's start to the last pass's end (floor_clear_gpu's shape)."""
    if not vnx.dev.timestamps:
        pytest.skip("the adapter has no timestamp queries")
    big = vnx.big  # the floor's usage, made at session start as the floor's is
    seq = vnx.dev.sequence()
    seq.add(vnx.prog, [vnx.a], [vnx.o], workgroups=(1, 1, 1), clear_outputs=False)
    seq.clear(big)
    seq.add(vnx.prog, [vnx.a], [vnx.o], workgroups=(1, 1, 1), clear_outputs=False)
    times: list[int] = []

    def target():
        sub = seq.replay(timing=True)
        # a blocking wait, as the floor's: gpu_time_ns alone would wait by polling, and
        # on a CPU adapter a polling thread takes cores from the "GPU" being timed
        vnx.dev.wait_idle()
        times.append(sub.gpu_time_ns)

    benchmark.pedantic(target, rounds=rounds.big_read, warmup_rounds=3)
    _record_gpu(benchmark, "vyre_native", times[3:])


@pytest.mark.benchmark(group="clear_64MiB_gpu")
def test_clear_64MiB_gpu_raw_c(benchmark, cfloor, rounds):
    """clear_buffer between the two dispatches' passes; extra_info also holds raw C's
    fill (the same kernel, in the one pass) and the two dispatches alone."""
    lib, ctx, ffi = cfloor.lib, cfloor.ctx, cfloor.ffi
    if not lib.floor_timestamps(ctx):
        pytest.skip("the adapter has no timestamp queries")
    n = rounds.big_read
    run_floor(benchmark, cfloor, "clear_64MiB_gpu", cfloor.call("clear_gpu", 0), n, 1, nbytes=BIG_READ)
    samples = ffi.new("int64_t[]", n)
    for how, key in ((1, "fill_ns_median"), (2, "no_clear_ns_median")):
        cfloor.check(lib.floor_clear_gpu(ctx, how, n, samples))
        benchmark.extra_info[key] = float(statistics.median(samples))
