"""tinygrad on vyre_native (DEV=VN) against tinygrad's own devices, in one run.

Rows (each skipped with its reason where tinygrad, or that device, is missing):
- ``tinygrad_mlp_step``, ``tinygrad_linear_step``, ``tinygrad_conv_step``: a TinyJit
  training step (benchmarks/tinygrad_steps.py: the project's 784-128-10 MLP, the same
  with ``nn.Linear`` layers and ``opt.schedule_step()``, and beautiful_mnist's conv model
  on synthetic data), from the call to the device being idle: the VN device
  replays the JIT's kernels as one vn.Sequence; tinygrad's CPU device runs them as
  compiled C; CUDA (where present) replays a CUDA graph; WEBGPU (tinygrad's Dawn device,
  where Dawn's library is found: ``pip install dawn-python``, or WEBGPU_PATH) encodes and
  submits every kernel; VN-nograph is VN under tinygrad's JIT=2 (no graph runner: each
  kernel its own Recording.replay), what the graph runner is measured against.
- ``tinygrad_jit_1000_kernels``: one JIT call of 1000 dependent elementwise kernels, to
  the device being idle: tinygrad's own Python per call plus the device's launch cost.

VN runs last in each group: its row's extra_info carries ``vn_over`` (VN's median over
each other device's median of the same run) and ``breakdown`` (where one VN call's time
goes: tinygrad's Python, the VN graph's Python, ``Sequence.replay`` (C: encode and
submit), the wait, and the GPU time of the JIT's sequences by timestamp queries), and the
session ends with a table of both.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pathlib
import platform
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from harness import record_python


def _dawn_library() -> str | None:
    """Dawn's shared library inside the ``dawn-python`` package (``pydawn``), the one
    tinygrad's WEBGPU device loads (tinygrad finds it there itself only on Windows)."""
    spec = importlib.util.find_spec("pydawn")
    if spec is None or not spec.submodule_search_locations:
        return None
    suffix = {"linux": ".so", "darwin": ".dylib"}.get(sys.platform)
    if suffix is None:
        return None
    machine = {"amd64": "x86_64"}.get(platform.machine().lower(), platform.machine().lower())
    path = (
        pathlib.Path(next(iter(spec.submodule_search_locations)))
        / "lib"
        / f"libwebgpu_dawn_{machine}{suffix}"
    )
    return str(path) if path.is_file() else None


if "WEBGPU_PATH" not in os.environ and (_dawn := _dawn_library()) is not None:
    os.environ["WEBGPU_PATH"] = _dawn  # read when tinygrad first opens WEBGPU

tinygrad = pytest.importorskip(
    "tinygrad", reason='tinygrad is not installed: pip install ".[tinygrad]" from a checkout'
)

from tinygrad import Device, Tensor, TinyJit
from tinygrad.helpers import Context

import vyre_native as vn
from vyre_native.tinygrad import VNGraph  # the import registers DEV=VN without the .pth hook

from tinygrad_steps import STEPS  # imports tinygrad: after the skip above

# VN last: its row compares itself with the others of the same run. VN_TINYGRAD_ROWS
# (comma-separated) runs some of them, in this order: e.g. CUDA,VN where the CPU's rows
# would take the run's time.
ROWS = [r for r in ["CPU", "CUDA", "WEBGPU", "VN-nograph", "VN"]
        if r in os.environ.get("VN_TINYGRAD_ROWS", "CPU,CUDA,WEBGPU,VN-nograph,VN").split(",")]  # fmt: skip
GROUPS = [*(f"tinygrad_{name}" for name in STEPS), "tinygrad_jit_1000_kernels"]
_MEDIANS: dict[tuple[str, str], float] = {}
_BREAKDOWNS: dict[str, dict[str, float | None]] = {}
_KERNELS: dict[str, list[tuple[str, float]]] = {}


def _open(name: str) -> Any:
    try:
        dev = Device[name]
        (Tensor([1.0], device=name) + 1).realize()
    except Exception as err:  # noqa: BLE001 - any reason a device cannot run is a skip
        hint = (
            " (tinygrad's WEBGPU needs Dawn: pip install dawn-python, or set WEBGPU_PATH)"
            if name == "WEBGPU"
            else ""
        )
        pytest.skip(f"tinygrad device {name} is unavailable here{hint}: {type(err).__name__}: {err}"[:400])
    return dev


#: seconds of timed calls one row takes at most: a device that needs a second a call (Dawn
#: on lavapipe for the 1000 kernels) gets fewer rounds, never fewer than 10
_ROW_BUDGET_S = 30.0


def _rounds(rounds: Any, target: Callable[[], None]) -> int:
    start = time.perf_counter()
    target()
    once = time.perf_counter() - start
    return max(10, min(int(rounds.burst) * 5, int(_ROW_BUDGET_S / max(once, 1e-9))))


@pytest.fixture(scope="module", autouse=True)
def _summary(request: pytest.FixtureRequest) -> Iterator[None]:
    """At the module's end, the medians side by side, VN's ratios and its breakdown."""
    yield
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or not _MEDIANS:
        return
    with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
        _write_summary(reporter)


def _write_summary(reporter: Any) -> None:
    reporter.write_line("")
    reporter.write_line("tinygrad, median ms per call (call to idle), this run:")
    for group in GROUPS:
        cells = {d: _MEDIANS[(group, d)] for d in ROWS if (group, d) in _MEDIANS}
        if not cells:
            continue
        vn_s = cells.get("VN")
        parts = [
            f"{d} {s * 1e3:.3f}" + (f" (VN/{d} {vn_s / s:.3f})" if vn_s and d != "VN" else "")
            for d, s in cells.items()
        ]
        reporter.write_line(f"  {group}: " + ", ".join(parts))
        if group in _BREAKDOWNS:
            reporter.write_line(
                "    VN breakdown (medians, ms): "
                + ", ".join(
                    f"{k} {'-' if v is None else f'{v * 1e3:.3f}'}" for k, v in _BREAKDOWNS[group].items()
                )
            )
        if group in _KERNELS:
            reporter.write_line(
                "    VN kernels by GPU time (each dispatch timed alone, ms): "
                + ", ".join(f"{name} {s * 1e3:.3f}" for name, s in _KERNELS[group])
            )


def _breakdown(
    group: str, call: Callable[[], Any], dev: Any, calls: int, monkeypatch: pytest.MonkeyPatch
) -> dict[str, float | None]:
    """Where one VN JIT call's time goes (medians over ``calls`` calls, seconds):
    ``tinygrad_python`` (the call less the VN graphs), ``vn_graph_python`` (the graphs
    less their Sequence.replay), ``sequence_replay`` (C: encode and submit; on a CPU
    adapter also waiting for the queue's earlier work), ``wait`` (synchronize), and
    ``gpu`` (the JIT's sequences by timestamp queries, in calls of their own; None without
    them); ``_KERNELS[group]`` gets the kernels taking most GPU time."""
    graph_call, seq_replay = VNGraph.__call__, vn.Sequence.replay
    spent = {"graph": 0.0, "replay": 0.0}
    used: dict[int, VNGraph] = {}

    def timed_graph(self: VNGraph, *args: Any, **kwargs: Any) -> Any:
        used[id(self)] = self
        start = time.perf_counter()
        try:
            return graph_call(self, *args, **kwargs)
        finally:
            spent["graph"] += time.perf_counter() - start

    def timed_replay(self: vn.Sequence, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return seq_replay(self, *args, **kwargs)
        finally:
            spent["replay"] += time.perf_counter() - start

    rows: dict[str, list[float]] = {
        k: [] for k in ("total", "tinygrad_python", "vn_graph_python", "sequence_replay", "wait")
    }
    with monkeypatch.context() as patch:
        patch.setattr(VNGraph, "__call__", timed_graph)
        patch.setattr(vn.Sequence, "replay", timed_replay)
        for _ in range(calls):
            spent.update(graph=0.0, replay=0.0)
            start = time.perf_counter()
            call()
            host = time.perf_counter()
            dev.synchronize()
            end = time.perf_counter()
            rows["total"].append(end - start)
            rows["tinygrad_python"].append(host - start - spent["graph"])
            rows["vn_graph_python"].append(spent["graph"] - spent["replay"])
            rows["sequence_replay"].append(spent["replay"])
            rows["wait"].append(end - host)
    out: dict[str, float | None] = {k: statistics.median(v) for k, v in rows.items()}
    out["gpu"] = None
    if dev.vn.timestamps:
        gpu: list[float] = []
        per_call = {"s": 0.0}

        def waited_graph(self: VNGraph, input_uops: Any, var_vals: Any, wait: bool = False) -> Any:
            per_call["s"] += graph_call(self, input_uops, var_vals, wait=True) or 0.0
            return None

        with monkeypatch.context() as patch:
            patch.setattr(VNGraph, "__call__", waited_graph)
            for _ in range(max(3, calls // 4)):
                per_call["s"] = 0.0
                call()
                dev.synchronize()
                gpu.append(per_call["s"])
        out["gpu"] = statistics.median(gpu)
        _KERNELS[group] = _gpu_kernels(list(used.values()))
    return out


def _gpu_kernels(graphs: list[VNGraph]) -> list[tuple[str, float]]:
    """The five kernels of the last JIT call that take most GPU time (seconds, summed over
    the kernel's launches): each graph's last sequence replayed once more with each
    dispatch timed in a pass of its own (which adds the passes' own cost)."""
    per_kernel: dict[str, float] = {}
    for graph in graphs:
        seq = next(reversed(graph.sequences.values()))
        times = seq.replay(timing="dispatch").dispatch_times_ns or []
        for (prog, *_), ns in zip(graph.steps, times):
            per_kernel[prog.name] = per_kernel.get(prog.name, 0.0) + ns * 1e-9
    return sorted(per_kernel.items(), key=lambda kv: -kv[1])[:5]


def _finish(
    benchmark: Any, group: str, row: str, call: Callable[[], Any], dev: Any, monkeypatch: Any
) -> None:
    stats = getattr(benchmark, "stats", None)
    if stats is None:  # --benchmark-disable
        return
    _MEDIANS[(group, row)] = stats.stats.median
    if row != "VN":
        return
    info = benchmark.extra_info
    info["vn_over"] = {
        d: stats.stats.median / _MEDIANS[(group, d)] for d in ROWS if d != "VN" and (group, d) in _MEDIANS
    }
    _BREAKDOWNS[group] = info["breakdown"] = _breakdown(group, call, dev, 40, monkeypatch)
    if group in _KERNELS:
        info["gpu_kernels"] = _KERNELS[group]


def _device_of(row: str) -> tuple[str, int]:
    """(tinygrad device, JIT level) of a row: ``VN-nograph`` is VN under JIT=2, tinygrad's
    JIT without graph runners (every kernel its own Recording.replay), the reference the
    graph runner must not be slower than."""
    return (row.removesuffix("-nograph"), 2) if row.endswith("-nograph") else (row, 1)


@pytest.mark.parametrize(
    "name, row",
    [  # every row of one step, VN last, then the next step
        pytest.param(name, row, marks=pytest.mark.benchmark(group=f"tinygrad_{name}"), id=f"{name}-{row}")
        for name in STEPS
        for row in ROWS
    ],
)
def test_tinygrad_training_step(benchmark, rounds, name, row, monkeypatch):  # type: ignore[no-untyped-def]
    group = f"tinygrad_{name}"
    device, jit_level = _device_of(row)
    dev = _open(device)
    args, train = STEPS[name](device)
    step = TinyJit(train)

    with Context(JIT=jit_level):
        for _ in range(4):  # run, capture, then replays
            step(*args)
        dev.synchronize()

        def target() -> None:
            step(*args)
            dev.synchronize()

        benchmark.pedantic(target, rounds=_rounds(rounds, target), warmup_rounds=2)
        record_python(benchmark, f"tinygrad {row}", group)
        _finish(benchmark, group, row, lambda: step(*args), dev, monkeypatch)


@pytest.mark.benchmark(group="tinygrad_jit_1000_kernels")
@pytest.mark.parametrize("row", ROWS)
def test_tinygrad_jit_1000_kernels(benchmark, rounds, row, monkeypatch):  # type: ignore[no-untyped-def]
    device, jit_level = _device_of(row)
    dev = _open(device)
    x = Tensor(np.zeros(256, np.float32), device=device).realize()

    @TinyJit
    def chain(x: Tensor) -> Tensor:
        for _ in range(1000):
            x = (x + 1).contiguous()
        return x.realize()

    with Context(JIT=jit_level):
        for _ in range(3):
            out = chain(x)
        assert out.numpy()[0] == 1000
        dev.synchronize()

        def target() -> None:
            chain(x)
            dev.synchronize()

        benchmark.pedantic(target, rounds=_rounds(rounds, target), warmup_rounds=1)
        record_python(benchmark, f"tinygrad {row}", "tinygrad_jit_1000_kernels")
        _finish(benchmark, "tinygrad_jit_1000_kernels", row, lambda: chain(x), dev, monkeypatch)
