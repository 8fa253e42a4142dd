"""Session fixtures of the benchmark suite: a vyre_native device, a wgpu-py device
and the raw-C floor (compiled here, at session start), each with the kernel's
pipeline and buffers; and the facts about the machine that go into the JSON.

Run explicitly: ``pytest benchmarks`` (the project's normal test run collects only
tests/). ``--vn-quick`` (or VN_BENCH_QUICK=1) shortens every benchmark.
``--vn-reverse`` runs the benchmarks in the opposite order: a row whose ratio holds only
when it runs before (or after) its floor is the machine's state, not the code (issue 26
counts a row as met only in both orders).
"""

from __future__ import annotations

import datetime
import os
import pathlib
import platform
from types import SimpleNamespace
from typing import Any

import pytest

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent


os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
# Mesa's llvmpipe/lavapipe (the CPU "GPU"): one shader thread, so that on a small
# host its threads compete less with the thread being timed. The kernels here are
# one workgroup, so nothing loses parallelism; other drivers ignore the variable.
# Set it yourself to override; the value used is recorded in the JSON.
os.environ.setdefault("LP_NUM_THREADS", "1")

try:
    import vyre_native as vn
except ImportError as err:  # pragma: no cover - environment problem
    raise pytest.UsageError(
        f"vyre_native could not be imported ({err}). Fix: pip install --no-build-isolation . "
        "from the repository root, then run `pytest benchmarks`."
    ) from None

import harness


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--vn-quick",
        action="store_true",
        default=False,
        help="vyre_native benchmarks: few rounds each (a smoke run, not numbers to report)",
    )
    parser.addoption(
        "--vn-reverse",
        action="store_true",
        default=False,
        help="vyre_native benchmarks: run them in the reverse of their collected order",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--vn-reverse"):
        items.reverse()


@pytest.fixture(scope="session")
def rounds(pytestconfig: pytest.Config) -> harness.Rounds:
    quick = pytestconfig.getoption("--vn-quick") or os.environ.get("VN_BENCH_QUICK", "") not in ("", "0")
    harness.SESSION["quick"] = bool(quick)
    return harness.QUICK if quick else harness.FULL


# ---- vyre_native ------------------------------------------------------------------------


@pytest.fixture(scope="session")
def vnx() -> Any:
    """vyre_native's device, pipeline and buffers for the kernel."""
    import numpy as np

    dev = vn.Device()
    prog = dev.compile(harness.WGSL, entry_point="main")
    host = np.arange(harness.IO_FLOATS, dtype=np.float32)
    a = dev.upload(host)
    o = dev.alloc(harness.IO_BYTES)
    miss_outs = [dev.alloc(harness.IO_BYTES) for _ in range(harness.MISS_SETS)]
    # the 64 MiB clear row's buffer: made at session start with the floor's usage, as the
    # floor's own is (on a CPU adapter a fresh 64 MiB allocation clears slower for a while)
    usage = vn.BufferUsage.STORAGE | vn.BufferUsage.COPY_SRC | vn.BufferUsage.COPY_DST
    big = dev.upload(np.ones(harness.BIG_READ // 4, np.uint32), usage=usage)
    info = dev.info
    harness.SESSION["vyre_native"] = {
        "adapter": info["name"],
        "backend": info["backend"],
        "adapter_type": info["adapter_type"],
        "driver": info["driver"],
        "vendor": info["vendor"],
        "wgpu_native_version": vn.library_version()[0],
        "wgpu_native_compiled_against": vn.library_version()[1],
        "vyre_native_version": vn.__version__,
        "vyre_native_path": str(pathlib.Path(vn.__file__).parent),
    }

    def prerecord(out: Any = o) -> Any:
        """The launch benchmarks' recording: the kernel once, a -> out, one workgroup."""
        return prog.prerecord_persistent_dispatch([a], [out], workgroups=(1, 1, 1))

    ns = SimpleNamespace(
        vn=vn, dev=dev, prog=prog, host=host, a=a, o=o, miss_outs=miss_outs, big=big, prerecord=prerecord
    )
    yield ns
    dev.wait_idle()


# ---- wgpu-py --------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def wgx() -> Any:
    """wgpu-py's device (the adapter's limits), pipeline, bind group and helpers."""
    import numpy as np
    import wgpu

    adapter = wgpu.gpu.request_adapter_sync()
    device = adapter.request_device_sync(required_limits=dict(adapter.limits))
    module = device.create_shader_module(code=harness.WGSL)
    pipeline = device.create_compute_pipeline(
        layout="auto", compute={"module": module, "entry_point": "main"}
    )
    layout = pipeline.get_bind_group_layout(0)
    usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
    host = np.arange(harness.IO_FLOATS, dtype=np.float32)
    a = device.create_buffer_with_data(data=host, usage=usage)
    o = device.create_buffer(size=harness.IO_BYTES, usage=usage)
    miss_outs = [device.create_buffer(size=harness.IO_BYTES, usage=usage) for _ in range(harness.MISS_SETS)]

    def bind(src: Any, dst: Any) -> Any:
        return device.create_bind_group(
            layout=layout,
            entries=[
                {"binding": 0, "resource": {"buffer": src, "offset": 0, "size": src.size}},
                {"binding": 1, "resource": {"buffer": dst, "offset": 0, "size": dst.size}},
            ],
        )

    # vyre_native clears an output with its zero-fill kernel inside the pass; the same
    # kernel here (harness.fill_dispatch says which entry point and how many workgroups).
    fill_module = device.create_shader_module(code=vn.debug.fill_wgsl())
    fill_pipelines = [
        device.create_compute_pipeline(layout="auto", compute={"module": fill_module, "entry_point": entry})
        for entry in ("fill_words", "fill_quads")
    ]
    max_groups = adapter.limits["max-compute-workgroups-per-dimension"]

    def bind_fill(dst: Any) -> tuple[Any, Any, int]:
        """dst's fill as vyre_native dispatches it: (pipeline, bind group, workgroups)."""
        variant, groups = harness.fill_dispatch(dst.size, max_groups)
        fill_group = device.create_bind_group(
            layout=fill_pipelines[variant].get_bind_group_layout(0),
            entries=[{"binding": variant, "resource": {"buffer": dst, "offset": 0, "size": dst.size}}],
        )
        return fill_pipelines[variant], fill_group, groups

    def fill_in_pass(cpass: Any, fill: tuple[Any, Any, int]) -> None:
        cpass.set_pipeline(fill[0])
        cpass.set_bind_group(0, fill[1])
        cpass.dispatch_workgroups(fill[2], 1, 1)

    def encode(group: Any, fill: tuple[Any, Any, int]) -> Any:
        """What vyre_native records: one pass with the output's fill (its clear) and
        one 1x1x1 dispatch."""
        enc = device.create_command_encoder()
        cpass = enc.begin_compute_pass()
        fill_in_pass(cpass, fill)
        cpass.set_pipeline(pipeline)
        cpass.set_bind_group(0, group)
        cpass.dispatch_workgroups(1, 1, 1)
        cpass.end()
        return enc.finish()

    info = adapter.info
    harness.SESSION["wgpu_py"] = {
        "wgpu_py_version": wgpu.__version__,
        "adapter": info.get("device", ""),
        "backend": info.get("backend_type", ""),
        "driver": info.get("description", ""),
    }
    ns = SimpleNamespace(
        wgpu=wgpu,
        device=device,
        queue=device.queue,
        pipeline=pipeline,
        layout=layout,
        usage=usage,
        host=host,
        a=a,
        o=o,
        miss_outs=miss_outs,
        bind=bind,
        bind_fill=bind_fill,
        fill_in_pass=fill_in_pass,
        encode=encode,
        group=bind(a, o),
        fill=bind_fill(o),
    )
    yield ns
    harness.wgpu_wait(ns)


# ---- raw C ------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def floor(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """floor.c compiled now with the system C compiler, or a FloorUnavailable."""
    built = harness.build_floor(tmp_path_factory.mktemp("floor"))
    facts = built.describe()
    if isinstance(built, harness.Floor):
        n = 4
        ns = built.check(built.lib.floor_memcpy(built.ctx, 1))  # fault the source in
        ns = built.check(built.lib.floor_memcpy(built.ctx, n))
        facts["host_memcpy_64MiB_gb_per_s"] = harness.BIG_READ * n / ns
    harness.SESSION["raw_c"] = facts
    yield built
    built.close()


@pytest.fixture
def cfloor(floor: Any) -> harness.Floor:
    """The floor, or skip with the reason it could not be built."""
    if isinstance(floor, harness.FloorUnavailable):
        pytest.skip(f"raw-C floor unavailable: {floor.reason}")
    return floor


# ---- machine facts in the JSON --------------------------------------------------------------


def pytest_benchmark_update_machine_info(config: pytest.Config, machine_info: dict[str, Any]) -> None:
    vinfo = harness.SESSION.get("vyre_native", {})
    machine_info["vyre_native"] = {
        "adapter": vinfo.get("adapter"),
        "backend": vinfo.get("backend"),
        "adapter_type": vinfo.get("adapter_type"),
        "driver": vinfo.get("driver"),
        "wgpu_native_version": vinfo.get("wgpu_native_version"),
        **{k: v for k, v in vinfo.items() if k not in ("adapter", "backend", "adapter_type", "driver")},
        "python_version": platform.python_version(),
        "host_cpu": harness.host_cpu(),
        "date": datetime.date.today().isoformat(),
        "datetime_utc": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "quick": harness.SESSION.get("quick", False),
        "wgpu_py": harness.SESSION.get("wgpu_py"),
        "raw_c": harness.SESSION.get("raw_c"),
        "drain_every": harness.DRAIN_EVERY,
        "env": {
            k: os.environ.get(k)
            for k in ("LP_NUM_THREADS", "WGPU_LIB_PATH", "VK_ICD_FILENAMES")
            if k in os.environ
        },
    }


@pytest.fixture(autouse=True)
def _collect_garbage_first() -> Any:
    """Start every benchmark with no garbage pending.

    wgpu-py's poll thread polls the device (taking the GIL between polls) for as long
    as any map token it handed out is alive, and a token caught in a reference cycle
    lives until the collector runs: seen on the H200 as submits of *every* way in this
    process, vyre_native's too, slowing several-fold in some runs and not others.
    """
    import gc

    gc.collect()
    yield
