"""Operation 18: throughput of N worker processes against one process, for a fixed amount
of kernel work (issue 20: vyre_native inside a distributed engine).

UNITS launches of a compute-bound kernel (a dependent FMA chain per invocation, on an
input array that goes in and an output array that comes back as numpy) are run:

- ``scaling_one_process``: all by one ``vn.worker.Worker`` in this process (no IPC);
- ``scaling_processes_N``: UNITS / N by each of N plain spawned processes, each running
  ``vn.worker.serve`` (one Device each), arrays over multiprocessing pipes;
- ``scaling_ray_N``: the same by N Ray actors of ``vn.worker.Worker`` on a local cluster
  (skipped, saying why, without Ray).

Each row is time per unit of work, so one_process / row is the throughput gained. All N
workers share the machine's adapter (one GPU, or lavapipe's CPU threads): on one GPU
the gain is what overlapping N processes' submits and transfers buys, not N GPUs. Worker
start-up (spawn, device, compile, the first recording) is outside the timing.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from harness import elementwise, record_python

import vyre_native as vn

UNITS = 16
WORKERS = (1, 2, 4)
# Each invocation runs a dependent FMA chain on its input element: compute-bound.
KERNEL = elementwise(
    "var x = inp[i]; for (var k = 0u; k < params[0]; k = k + 1u) { x = fma(x, 0.999999, 1e-7); } out[i] = x;",
    *("read params: array<u32>", "read inp", "read_write out"),
    size=256,
)
KERNELS = {"fma": KERNEL}


def _size() -> tuple[int, int]:
    """(FMA iterations, workgroups) of one unit: about 30 ms on lavapipe with one thread,
    about 5 ms on an H200."""
    cpu = vn.enumerate_adapters()[0]["adapter_type"] == "CPU"
    return (300, 32) if cpu else (20_000, 4096)


def _task(share: int, seed: int) -> tuple[str, tuple[Any, ...]]:
    iters, groups = _size()
    x = np.full(groups * 256, 1e-3 * seed, np.float32)
    return "run", ("fma", [np.array([iters], np.uint32), x], [("f4", x.shape)], (groups, 1, 1), share)


@pytest.fixture(scope="module")
def local(vnx: Any) -> vn.worker.Worker:
    # vnx (conftest): the session's device, whose facts go into the JSON's machine info
    w = vn.worker.Worker(KERNELS)
    method, args = _task(1, 0)
    getattr(w, method)(*args)  # warm up: the recording made
    return w


def _measure(benchmark: Any, operation: str, workers: int, round_of_work: Any, **extra: Any) -> None:
    """Time ``round_of_work`` (UNITS units in all) per unit, as ``operation``."""
    benchmark.group = "scaling"
    benchmark.pedantic(round_of_work, rounds=3, iterations=1, warmup_rounds=1)
    record_python(
        benchmark,
        "vyre_native",
        operation,
        ops_per_round=UNITS,
        workers=workers,
        lp_num_threads=os.environ.get("LP_NUM_THREADS"),
        **extra,
    )


def test_scaling_one_process_vyre_native(benchmark: Any, local: vn.worker.Worker) -> None:
    method, args = _task(UNITS, 1)
    _measure(
        benchmark,
        "scaling_one_process",
        1,
        lambda: getattr(local, method)(*args),
        adapter=local.info()["name"],
    )


class Processes:
    """N spawned processes, each a ``vn.worker.serve`` over a pipe."""

    def __init__(self, n: int) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.pipes, self.procs = [], []
        for _ in range(n):
            mine, theirs = ctx.Pipe()
            proc = ctx.Process(target=vn.worker.serve, args=(theirs, KERNELS), daemon=True)
            proc.start()
            self.pipes.append(mine)
            self.procs.append(proc)
        for pipe in self.pipes:
            status, value = pipe.recv()
            assert status == "ok", value

    def run_all(self, share: int) -> None:
        for k, pipe in enumerate(self.pipes):
            pipe.send(_task(share, k))
        for pipe in self.pipes:
            status, value = pipe.recv()
            assert status == "ok", value

    def close(self) -> None:
        for pipe, proc in zip(self.pipes, self.procs, strict=True):
            pipe.send(None)
            proc.join(60)


@pytest.fixture(scope="module", params=WORKERS, ids=[f"{n}" for n in WORKERS])
def processes(request: pytest.FixtureRequest) -> Iterator[Processes]:
    group = Processes(request.param)
    group.run_all(1)  # warm up: each worker's recording made
    yield group
    group.close()


def test_scaling_processes_vyre_native(benchmark: Any, processes: Processes) -> None:
    n = len(processes.pipes)
    _measure(benchmark, f"scaling_processes_{n}", n, lambda: processes.run_all(UNITS // n))


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[Any]:
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'vyre_native[ray]')")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    ray.init(num_cpus=max(WORKERS), include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield ray
    ray.shutdown()


@pytest.mark.parametrize("n", WORKERS)
def test_scaling_ray_vyre_native(benchmark: Any, ray_cluster: Any, n: int) -> None:
    ray = ray_cluster
    actor = ray.remote(num_cpus=1)(vn.worker.Worker)
    actors = [actor.remote(KERNELS) for _ in range(n)]

    def run_all(share: int) -> None:
        refs = [
            getattr(a, method).remote(*args)
            for k, a in enumerate(actors)
            for method, args in [_task(share, k)]
        ]
        ray.get(refs)

    run_all(1)  # warm up: each actor's device, compile and recording
    _measure(benchmark, f"scaling_ray_{n}", n, lambda: run_all(UNITS // n))
    for a in actors:
        ray.kill(a)
