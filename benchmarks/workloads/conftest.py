"""Fixtures of the workload suite: the sizes, a wgpu-py device with timestamps, and
the built and checked ways of the workload under test.

Sizes come from ``VN_WORKLOAD_SIZE``: ``small`` (the default: minutes on a CPU
adapter) or ``full`` (the issue's sizes, for a real GPU). ``--vn-quick`` (or
VN_BENCH_QUICK=1, from benchmarks/conftest.py) shortens every benchmark.
"""

from __future__ import annotations

import time
from types import ModuleType
from typing import Any

import harness
import pytest
from workload import SIZE, Program, VnWay, WgpuSimpleWay, WgpuWellWay


@pytest.fixture(scope="session")
def wl_wgpu() -> Any:
    """A wgpu-py device (the adapter's limits; timestamp queries where the adapter has them)."""
    import wgpu

    adapter = wgpu.gpu.request_adapter_sync()
    features = ["timestamp-query"] if "timestamp-query" in adapter.features else []
    device = adapter.request_device_sync(required_features=features, required_limits=dict(adapter.limits))
    info = adapter.info
    harness.SESSION.setdefault(
        "wgpu_py",
        {
            "wgpu_py_version": wgpu.__version__,
            "adapter": info.get("device", ""),
            "backend": info.get("backend_type", ""),
            "driver": info.get("description", ""),
        },
    )
    yield wgpu, device


class Budget:
    """How long each benchmark runs: rounds fitted to a time budget from one timed iteration."""

    def __init__(self, quick: bool, disabled: bool) -> None:
        self.quick = quick
        self.seconds = 0.4 if quick else (3.0 if SIZE == "full" else 1.5)
        self.lo, self.hi = (3, 20) if quick else (10, 400)
        # --benchmark-disable: a correctness run, one timed iteration is enough
        self.gpu_repeats = 1 if disabled else 3 if quick else 7
        # iterations run before anything is timed, for at least this long: building a
        # way (uploads, numpy's answer) leaves the GPU idle for seconds, and a GPU that
        # has idled may run its first iterations slower (H200, transformer w768: the
        # iteration timed right after building took 41 ms, the rounds after it 13 ms)
        self.warmup_s = 0.0 if disabled else 0.05 if quick else (1.0 if SIZE == "full" else 0.3)
        self.round_trips = 30 if quick else 400

    def rounds(self, seconds_per_iteration: float) -> int:
        return max(self.lo, min(self.hi, int(self.seconds / max(seconds_per_iteration, 1e-6))))


@pytest.fixture(scope="session")
def budget(rounds: harness.Rounds, pytestconfig: pytest.Config) -> Budget:
    return Budget(rounds is harness.QUICK, bool(pytestconfig.getoption("benchmark_disable", False)))


#: warm-up iterations kept in extra_info (``warmup_us``): the first show a cold GPU
WARMUP_KEPT = 20


class Built:
    """One way of one workload at one size: built, checked against numpy, warmed up.

    ``warmup_us`` holds the first warm-up iterations' times to completion (µs);
    ``seconds`` is one warm iteration's, which sizes the rounds.
    """

    def __init__(self, program: Program, way: Any, budget: Budget) -> None:
        self.program, self.way = program, way
        way.run()
        program.check(way.read(program.output))  # a wrong result fails every test of this way
        times: list[float] = []
        began = time.perf_counter()
        while len(times) < 2 or (time.perf_counter() - began < budget.warmup_s and len(times) < 1000):
            start = time.perf_counter()
            way.run()
            times.append(time.perf_counter() - start)
        self.warmup_us = [round(t * 1e6) for t in times[:WARMUP_KEPT]]
        self.seconds = times[-1]


class Workloads:
    """Builds each way of a workload at a size on first use; keeps one workload-size at a
    time (the full transformer's weights are about 340 MB a way)."""

    def __init__(self, vn_dev: Any, wgpu_dev: tuple[Any, Any], budget: Budget) -> None:
        self.vn_dev, (self.wgpu, self.wgpu_dev) = vn_dev, wgpu_dev
        self.budget = budget
        self.key: tuple[str, str] | None = None
        self.program: Program | None = None
        self.ways: dict[str, Built | BaseException] = {}

    def get(self, module: ModuleType, size: str, way: str) -> Built:
        key = (module.__name__, size)
        if key != self.key:
            self.close()
            self.key, self.program = key, module.build(size, module.SIZES[SIZE][size])
        assert self.program is not None
        if way not in self.ways:
            try:
                if way == VnWay.name:
                    runner: Any = VnWay(self.vn_dev, self.program)
                elif way == WgpuWellWay.name:
                    runner = WgpuWellWay(self.wgpu, self.wgpu_dev, self.program)
                else:
                    runner = WgpuSimpleWay(self.wgpu, self.wgpu_dev, self.program)
                self.ways[way] = Built(self.program, runner, self.budget)
            except BaseException as err:  # remembered: the other metric of this way fails too
                self.ways[way] = err
                raise
        built = self.ways[way]
        if isinstance(built, BaseException):
            raise built
        return built

    def close(self) -> None:
        for built in self.ways.values():
            if isinstance(built, Built):
                built.way.close()
        self.ways, self.key, self.program = {}, None, None


@pytest.fixture(scope="session")
def workloads(vnx: Any, wl_wgpu: tuple[Any, Any], budget: Budget) -> Any:
    w = Workloads(vnx.dev, wl_wgpu, budget)
    yield w
    w.close()


def pytest_benchmark_update_machine_info(config: pytest.Config, machine_info: dict[str, Any]) -> None:
    machine_info["workloads"] = {"size": SIZE}
