"""Three multi-kernel programs, each run three ways, timed per iteration.

For every workload and size, every way is checked against numpy once (outside the
timing; a wrong result fails the test), then timed two ways:
- ``host``: the host-side cost of one iteration (vyre_native: ``seq.replay()``;
  wgpu-py: encoding and submitting); the queue is drained between rounds, untimed;
- ``done``: one iteration submitted and waited for (time to completion).
``extra_info`` carries ``gpu_ns`` (one iteration timed with GPU timestamps, the
median of several, measured right after the rounds, so with the GPU in the state
they ran in), the way, workload, size and the program's shape. The
``round_trip`` group is one tiny dispatch submitted and waited for: the submit
round trip the GPU-bound target adds to the GPU time.
"""

from __future__ import annotations

import numpy as np
import pytest
import radix_sort
import scan
import transformer
from harness import record_python
from workload import SIZE, WAYS, Program, VnWay, WgpuWellWay, params

MODULES = (scan, radix_sort, transformer)

CASES = [
    pytest.param(module, size, metric, way, id=f"{module.__name__}-{size}-{metric}-{way}")
    for module in MODULES
    for size in module.SIZES[SIZE]
    for metric in ("host", "done")
    for way in WAYS
]


@pytest.mark.parametrize("module,size,metric,way", CASES)
def test_workload(benchmark, workloads, budget, module, size, metric, way):
    built = workloads.get(module, size, way)
    runner, program = built.way, built.program
    benchmark.group = f"{program.workload}-{size}-{metric}"
    if metric == "host":
        benchmark.pedantic(
            runner.submit, setup=runner.wait, rounds=budget.rounds(built.seconds), warmup_rounds=1
        )
        runner.wait()
    else:
        benchmark.pedantic(runner.run, rounds=budget.rounds(built.seconds), warmup_rounds=1)
    gpu = runner.gpu_ns(budget.gpu_repeats)
    record_python(
        benchmark,
        way,
        f"{program.workload}_{size}_{metric}",
        workload=program.workload,
        size=size,
        size_mode=SIZE,
        metric=metric,
        dispatches=len(program.steps),
        kernels=len(program.kernels),
        clears="off",
        checked=True,
        warmup_us=built.warmup_us,
        **gpu,
        **program.facts,
    )


NOOP = """
struct Params { n: u32, p1: u32, p2: u32, p3: u32 }
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@group(0) @binding(1) var<uniform> params: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < params.n) { out[gid.x] = gid.x; }
}
"""


@pytest.mark.parametrize("way", WAYS[:2])
def test_round_trip(benchmark, vnx, wl_wgpu, budget, way):
    """One one-workgroup dispatch submitted and waited for, as each workload's way runs it."""
    program = Program("round_trip", "1 dispatch", "out", np.uint32, lambda: np.arange(64, dtype=np.uint32))
    program.kernel("noop", NOOP)
    program.buffer("out", 256)
    program.buffer("params", params(64))
    program.add("noop", (1, 1, 1), out="out", params="params")
    runner = VnWay(vnx.dev, program) if way == VnWay.name else WgpuWellWay(*wl_wgpu, program)
    try:
        runner.run()
        program.check(runner.read("out"))
        benchmark.group = "round_trip"
        benchmark.pedantic(runner.run, rounds=budget.round_trips, warmup_rounds=5)
    finally:
        runner.close()
    record_python(benchmark, way, "round_trip", workload="round_trip", metric="done", dispatches=1)
