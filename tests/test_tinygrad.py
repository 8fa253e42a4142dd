"""tinygrad's VN device (vyre_native/tinygrad): registration, ops against numpy per dtype,
transfers of any byte range, the memory planner on, the JIT as one sequence replay, and a
784-128-10 MLP training step as on tinygrad's CPU device.

Needs the `tinygrad` extra (and clang, which tinygrad's CPU device compiles with: device-less
tensors such as `arange` are made there); scripts/setup.sh installs both."""

from __future__ import annotations

import gc
import os
import pathlib
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

pytest.importorskip("tinygrad", reason='tinygrad is not installed: pip install ".[tinygrad]" from a checkout')
if shutil.which(os.environ.get("CC", "clang")) is None:
    pytest.skip("tinygrad's CPU device needs clang (scripts/setup.sh installs it)", allow_module_level=True)

from tinygrad import Device, Tensor, TinyJit, Variable, dtypes
from tinygrad.engine.realize import graph_cache
from tinygrad.helpers import DEV, NO_MEMORY_PLANNER
from tinygrad.nn.optim import SGD
from tinygrad.schedule import rangeify

import vyre_native as vn
from vyre_native.tinygrad import VNDevice, VNGraph

# The MLP's training step, as the tinygrad benchmark times it (benchmarks/tinygrad_steps.py).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "benchmarks"))
from tinygrad_steps import mlp_step  # noqa: E402

VN = "VN"
# tinygrad picks a default device (for tensors made with none) by reading an environment
# variable per device name, PYTHON among them, which scripts/asan.sh sets to a path: name
# the default here, as DEV=VN would, so no such lookup runs.
if not DEV.device:
    DEV.value = VN


@pytest.fixture(scope="module", autouse=True)
def tg() -> Iterator[VNDevice]:
    """tinygrad's VN device (a process-wide singleton of tinygrad's). At the end, what the
    module's tensors left for the cycle collector goes now, so no later file's before/after
    count of vn's live objects sees it released mid-test."""
    dev = Device[VN]
    assert isinstance(dev, VNDevice)
    yield dev
    gc.collect()


@pytest.fixture
def replays(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """Counts of Sequence.replay and Recording.replay calls (what the device submits)."""
    counts = {"sequence": 0, "recording": 0}

    def counting(kind: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def replay(self: Any, *args: Any, **kwargs: Any) -> Any:
            counts[kind] += 1
            return original(self, *args, **kwargs)

        return replay

    monkeypatch.setattr(vn.Sequence, "replay", counting("sequence", vn.Sequence.replay))
    monkeypatch.setattr(vn.Recording, "replay", counting("recording", vn.Recording.replay))
    yield counts


# ---------------------------------------------------------------- registration


def _start_up_hook_runs() -> bool:
    """Whether this interpreter ran vyre_native_tinygrad.pth (scripts/asan.sh's venv adds
    its paths without running their .pth files)."""
    return any(type(f).__name__ == "SimpleNamespace" and hasattr(f, "find_spec") for f in sys.meta_path)


@pytest.mark.skipif(not _start_up_hook_runs(), reason="this interpreter ran no .pth file of vyre_native's")
def test_dev_vn_opens_the_vn_device_with_no_import_of_vyre_native() -> None:
    code = (
        "import sys\n"
        "from tinygrad import Tensor, Device\n"
        "assert 'vyre_native' not in sys.modules\n"
        "t = Tensor([1.0, 2.0]) * 3\n"
        "print(t.device, type(Device[t.device]).__module__, t.tolist())\n"
    )
    assert _run_with_dev_vn(code) == ["VN", "vyre_native.tinygrad.ops_vn", "[3.0,", "6.0]"]


@pytest.mark.skipif(not _start_up_hook_runs(), reason="this interpreter ran no .pth file of vyre_native's")
def test_dev_vn_runs_the_device_module_once_so_vn_1_renderers_pickle() -> None:
    # the .pth's import of its finder registers the module; importlib then loaded it again,
    # and VN:1 (opened through tinygrad.runtime.ops_vn) got the other copy's VNDevice, whose
    # renderer tinygrad's compile workers could not pickle
    code = (
        "import pickle, sys\n"
        "from tinygrad import Device\n"
        "Device['VN']\n"
        "ops, ours = sys.modules['tinygrad.runtime.ops_vn'], sys.modules['vyre_native.tinygrad.ops_vn']\n"
        "second = Device['VN:1']\n"
        "pickle.dumps(second.renderer)\n"
        "print(ops is ours, type(second) is ours.VNDevice, ours.__spec__.name)\n"
    )
    assert _run_with_dev_vn(code) == ["True", "True", "vyre_native.tinygrad.ops_vn"]


@pytest.mark.skipif(not _start_up_hook_runs(), reason="this interpreter ran no .pth file of vyre_native's")
@pytest.mark.parametrize(("env", "checks"), [({}, "True False"), ({"VN_BOUNDS_CHECKS": "0"}, "False False")])
def test_kernels_compile_with_bounds_checks_unless_vn_bounds_checks_is_0(
    env: dict[str, str], checks: str
) -> None:
    # loop bounding off (tinygrad's loops are counted), bounds checks on unless asked off
    code = (
        "import gc\n"
        "from tinygrad import Tensor\n"
        "(Tensor([1.0, 2.0]) * 3).realize()\n"
        "from vyre_native.tinygrad.ops_vn import VNProgram\n"
        "p = next(o for o in gc.get_objects() if type(o) is VNProgram).pipeline.runtime_checks\n"
        "print(p['bounds_checks'], p['loop_bounding'])\n"
    )
    assert _run_with_dev_vn(code, env) == checks.split()


def _run_with_dev_vn(code: str, extra: dict[str, str] | None = None) -> list[str]:
    """The words a fresh interpreter prints running ``code`` under ``DEV=VN`` (and ``extra``)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHON", "VN_BOUNDS_CHECKS")}
    env.update(DEV="VN", **(extra or {}))
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_tinygrad_runtime_ops_vn_is_the_packages_module() -> None:
    import tinygrad.runtime.ops_vn as ops

    import vyre_native.tinygrad.ops_vn as ours

    assert ops is ours


# ---------------------------------------------------------------- ops against numpy

DTYPES = {
    "float32": (dtypes.float32, np.float32),
    "int32": (dtypes.int32, np.int32),
    "uint8": (dtypes.uint8, np.uint8),
    "bool": (dtypes.bool, np.bool_),
    "float16": (dtypes.float16, np.float16),
}


def _needs(dtype_name: str, tg: VNDevice) -> None:
    if dtype_name == "float16" and "shader-f16" not in tg.vn.features:
        pytest.skip(f"adapter {tg.vn.info['name']!r} has no shader-f16")


def _data(np_dtype: Any, n: int = 37, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if np_dtype is np.bool_:
        return rng.integers(0, 2, n).astype(np.bool_)
    if np.issubdtype(np_dtype, np.integer):
        return rng.integers(0, 100, n).astype(np_dtype)
    return rng.uniform(-4, 4, n).astype(np_dtype)


@pytest.mark.parametrize("name", list(DTYPES))
def test_elementwise_ops_match_numpy(name: str, tg: VNDevice) -> None:
    _needs(name, tg)
    tg, npd = DTYPES[name]
    a, b = _data(npd, seed=1), _data(npd, seed=2)
    ta, tb = Tensor(a, device=VN), Tensor(b, device=VN)
    assert ta.dtype == tg
    if npd is np.bool_:
        np.testing.assert_array_equal((ta & tb).numpy(), a & b)
        np.testing.assert_array_equal((ta | tb).numpy(), a | b)
        np.testing.assert_array_equal(ta.logical_not().numpy(), ~a)
        return
    tol = {"rtol": 1e-2, "atol": 1e-2} if npd is np.float16 else {"rtol": 1e-6, "atol": 1e-6}
    np.testing.assert_allclose((ta + tb).numpy(), a + b, **tol)
    np.testing.assert_allclose((ta * tb).numpy(), a * b, **tol)
    np.testing.assert_allclose(ta.maximum(tb).numpy(), np.maximum(a, b), **tol)
    np.testing.assert_array_equal((ta < tb).numpy(), a < b)
    np.testing.assert_array_equal(Tensor.where(ta < tb, ta, tb).numpy(), np.where(a < b, a, b))


@pytest.mark.parametrize("name", ["float32", "int32", "uint8", "float16"])
def test_reductions_match_numpy(name: str, tg: VNDevice) -> None:
    _needs(name, tg)
    _, npd = DTYPES[name]
    a = _data(npd, n=6 * 50).reshape(6, 50)
    t = Tensor(a, device=VN)
    if npd is np.float16:
        np.testing.assert_allclose(t.max(1).numpy(), a.max(1))
        np.testing.assert_allclose(t.float().sum(0).numpy(), a.astype(np.float32).sum(0), rtol=1e-5)
        return
    np.testing.assert_allclose(t.max(1).numpy(), a.max(1))
    np.testing.assert_allclose(
        t.sum(0).numpy(),
        a.sum(0, dtype=np.int64 if npd is not np.float32 else npd).astype(t.sum(0).numpy().dtype),
        rtol=1e-5,
    )


def test_matmul_and_softmax_match_numpy() -> None:
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((33, 70), np.float32), rng.standard_normal((70, 21), np.float32)
    out = (Tensor(a, device=VN) @ Tensor(b, device=VN)).softmax(1).numpy()
    ref = a @ b
    ref = np.exp(ref - ref.max(1, keepdims=True))
    np.testing.assert_allclose(out, ref / ref.sum(1, keepdims=True), rtol=1e-4, atol=1e-6)


def test_casts_between_dtypes_match_numpy(tg: VNDevice) -> None:
    a = np.array([-3.7, -0.5, 0.0, 0.5, 2.5, 200.9], np.float32)
    t = Tensor(a, device=VN)
    np.testing.assert_array_equal(t.cast(dtypes.int32).numpy(), a.astype(np.int32))
    np.testing.assert_array_equal(t.abs().cast(dtypes.uint8).numpy(), np.abs(a).astype(np.uint8))
    np.testing.assert_array_equal(t.cast(dtypes.bool).numpy(), a.astype(np.bool_))
    np.testing.assert_array_equal(
        Tensor(np.arange(300, dtype=np.int32), device=VN).cast(dtypes.uint8).numpy(),
        np.arange(300).astype(np.uint8),
    )


def test_f16_bitcasts_keep_the_bits_of_every_non_nan_half(tg: VNDevice) -> None:
    _needs("float16", tg)
    # every finite and infinite half, both signs, subnormals included (NaNs excepted:
    # pack2x16float's f32 round trip may change a NaN's payload)
    bits = np.arange(0, 1 << 16, dtype=np.uint16)
    bits = bits[~np.isnan(bits.view(np.float16))]
    halves = Tensor(bits, device=VN).bitcast(dtypes.half)
    np.testing.assert_array_equal(halves.numpy().view(np.uint16), bits)
    np.testing.assert_array_equal((halves + 0).bitcast(dtypes.ushort).numpy(), bits)
    np.testing.assert_array_equal(halves.bitcast(dtypes.short).numpy(), bits.view(np.int16))


def test_renderer_takes_the_adapters_limits(tg: VNDevice) -> None:
    limits, ren = tg.vn.limits, tg.renderer
    assert ren.global_max == (limits["max_compute_workgroups_per_dimension"],) * 3
    assert ren.local_max == tuple(
        min(limits[f"max_compute_workgroup_size_{d}"], limits["max_compute_invocations_per_workgroup"])
        for d in "xyz"
    )
    assert ren.shared_max == limits["max_compute_workgroup_storage_size"]
    # every buffer of a kernel is a storage binding of its one bind group: both limits hold
    # (the H200 offers 524,288 storage buffers per stage, but 1,000 bindings per group)
    assert rangeify.DEVICE_MAX_BUFS[VN] == min(
        limits["max_storage_buffers_per_shader_stage"], limits["max_bindings_per_bind_group"] - 1
    )


def test_a_kernel_reading_more_buffers_than_webgpus_default_of_8_runs() -> None:
    xs = [np.full(16, i, np.float32) for i in range(12)]
    out = sum((Tensor(x, device=VN) for x in xs[1:]), Tensor(xs[0], device=VN))
    np.testing.assert_array_equal(out.numpy(), sum(xs))


# ---------------------------------------------------------------- transfers


def test_transfers_at_any_byte_offset_leave_the_neighbouring_bytes(tg: VNDevice) -> None:
    alloc = tg.allocator
    base = alloc.alloc(16)
    alloc._copyin(base, memoryview(bytearray(range(100, 116))))
    view = alloc._offset(base, 3, 5)  # three uint8 at offset 5: partial words at both ends
    alloc._copyin(view, memoryview(bytearray(b"\x01\x02\x03")))
    out = bytearray(3)
    alloc._copyout(memoryview(out), view)
    whole = bytearray(16)
    alloc._copyout(memoryview(whole), base)
    assert bytes(out) == b"\x01\x02\x03"
    assert bytes(whole) == bytes(range(100, 105)) + b"\x01\x02\x03" + bytes(range(108, 116))


def test_a_write_ending_a_view_mid_word_keeps_the_next_bytes(tg: VNDevice) -> None:
    alloc = tg.allocator
    base = alloc.alloc(8)
    alloc._copyin(base, memoryview(bytearray(range(1, 9))))
    alloc._copyin(alloc._offset(base, 7, 0), memoryview(bytearray(7)))  # byte 7 is the base's
    whole = bytearray(8)
    alloc._copyout(memoryview(whole), base)
    assert bytes(whole) == bytes(7) + b"\x08"


def test_odd_sized_uint8_tensor_round_trips() -> None:
    a = np.arange(7, dtype=np.uint8)
    np.testing.assert_array_equal(Tensor(a, device=VN).numpy(), a)
    np.testing.assert_array_equal((Tensor(a, device=VN) + 1)[2:5].numpy(), a[2:5] + 1)


@pytest.mark.parametrize(("name", "start"), [("float32", 3), ("uint8", 3), ("int32", 1)])
def test_a_slice_at_an_offset_webgpu_cannot_bind_computes_right(name: str, start: int) -> None:
    _, npd = DTYPES[name]
    a = np.arange(100).astype(npd)
    part = Tensor(a, device=VN).realize()[start : start + 40].contiguous().realize()
    np.testing.assert_array_equal((part + 1).numpy(), a[start : start + 40] + 1)


def test_a_slice_at_an_aligned_offset_stays_a_view_of_its_buffer(tg: VNDevice) -> None:
    step = tg.vn.limits["min_storage_buffer_offset_alignment"] // 4
    part = (
        Tensor(np.arange(4 * step, dtype=np.float32), device=VN)
        .realize()[step : 2 * step]
        .contiguous()
        .realize()
    )
    buf = part.uop.buffer
    assert buf._base is not None and buf.offset == 4 * step
    np.testing.assert_array_equal((part + 1).numpy(), np.arange(step, 2 * step, dtype=np.float32) + 1)


@pytest.mark.parametrize(
    "n, dst, src",
    [(16, (4, 8), (0, 4)), (128, (64, 128), (0, 64)), (128, (0, 64), (32, 96))],
    ids=["overlapping-views", "disjoint-aligned-slices", "source-overlaps-destination"],
)
def test_a_slice_assigned_from_a_slice_of_the_same_buffer_computes_right(
    n: int, dst: tuple[int, int], src: tuple[int, int]
) -> None:
    # the kernel binds the destination as its whole buffer and the source as a view of
    # it, both read_write as tinygrad declares them: the source is bound as a snapshot
    a = np.arange(n, dtype=np.int32)
    buf = Tensor(a, device=VN).contiguous().realize()
    buf[dst[0] : dst[1]].assign(buf[src[0] : src[1]].contiguous()).realize()
    expected = a.copy()
    expected[dst[0] : dst[1]] = a[src[0] : src[1]]
    np.testing.assert_array_equal(buf.numpy(), expected)


def test_a_jit_assigning_a_slice_from_the_same_buffer_computes_right_every_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    copies = []
    original = vn.Sequence.copy
    monkeypatch.setattr(vn.Sequence, "copy", lambda self, *a, **k: copies.append(a) or original(self, *a, **k))

    @TinyJit
    def shift(x: Tensor) -> Tensor:
        buf = (x + 0).contiguous().realize()
        buf[64:128].assign(buf[0:64].contiguous() + 1)
        return buf.realize()

    for k in range(4):  # run, capture, then replays of the graph
        a = np.arange(128, dtype=np.int32) * (k + 1)
        out = shift(Tensor(a, device=VN).contiguous().realize()).numpy()
        expected = a.copy()
        expected[64:] = a[:64] + 1
        np.testing.assert_array_equal(out, expected)
    assert copies, "no kernel bound a snapshot: the test no longer binds one buffer twice"
    assert _graphs(), "the JIT did not replay a VN graph"


def test_vn_is_in_tinygrads_lists_of_devices() -> None:
    assert "VN" in Device._devices
    assert "VN" in list(Device.get_available_devices())


def test_vn_1_is_a_device_of_its_own_on_an_adapter_of_vns_type(tg: VNDevice) -> None:
    second = Device[f"{VN}:1"]
    assert isinstance(second, VNDevice) and second.vn is not tg.vn
    assert second.vn.info["adapter_type"] == tg.vn.info["adapter_type"]
    same_type = [a for a in vn.enumerate_adapters() if a["adapter_type"] == tg.vn.info["adapter_type"]]
    if len(same_type) == 1:  # one adapter of the type: the second device is on it too
        assert second.vn.info["name"] == tg.vn.info["name"]
    a = np.arange(8, dtype=np.float32)
    np.testing.assert_array_equal((Tensor(a, device=f"{VN}:1").to(VN) * 2).numpy(), a * 2)


def test_a_tensor_sharded_over_vn_and_vn_1_computes_right() -> None:
    reason = _cpu_device_fails()  # reading a sharded tensor back starts tinygrad's CPU device
    if reason is not None:
        pytest.skip(reason)
    a = np.arange(64, dtype=np.float32).reshape(8, 8)
    s = Tensor(a).shard((VN, f"{VN}:1"), axis=0)
    np.testing.assert_allclose(((s @ s.T) + 1).numpy(), a @ a.T + 1)


# ---------------------------------------------------------------- JIT and memory planner


def _graphs() -> list[VNGraph]:
    return [g for g in graph_cache.values() if isinstance(g, VNGraph)]


def _chain(x: Tensor, y: Tensor) -> Tensor:
    # several kernels with intermediates the memory planner places in one arena
    h = (x @ y).relu().contiguous()
    h = (h * 2 + x.sum(1, keepdim=True)).contiguous()
    return (h.exp2().sum(0) - h.max()).contiguous()


def test_a_jit_on_vn_1_replays_its_graph_on_vn_1() -> None:
    @TinyJit
    def f(x: Tensor) -> Tensor:
        return ((x + 1).contiguous() * 2).contiguous().realize()  # two kernels: one graph

    a = np.arange(8, dtype=np.float32)
    for i in range(4):  # the third call on replays the graph
        np.testing.assert_array_equal(f(Tensor(a + i, device=f"{VN}:1").realize()).numpy(), (a + i + 1) * 2)
    assert any(g.dev is Device[f"{VN}:1"] for g in _graphs())


def test_memory_planner_is_on_and_binds_views_of_one_arena() -> None:
    assert not NO_MEMORY_PLANNER
    graph_cache.clear()
    rng = np.random.default_rng(4)
    jit = TinyJit(_chain)
    for _ in range(3):
        x, y = rng.standard_normal((16, 16), np.float32) / 4, rng.standard_normal((16, 16), np.float32) / 4
        out = jit(Tensor(x, device=VN), Tensor(y, device=VN)).numpy()
    np.testing.assert_allclose(out, _chain(Tensor(x, device=VN), Tensor(y, device=VN)).numpy(), rtol=1e-5)
    (graph,) = _graphs()
    bufs = [b for _, step_bufs, _, _ in graph.steps for b in step_bufs]
    assert any(b.offset > 0 for b in bufs), bufs  # a planned buffer is a view past the arena's start


def test_jit_call_is_one_sequence_replay(replays: dict[str, int]) -> None:
    jit = TinyJit(_chain)
    rng = np.random.default_rng(5)
    for i in range(4):
        x, y = (
            Tensor(rng.standard_normal((8, 8), np.float32), device=VN),
            Tensor(np.eye(8, dtype=np.float32), device=VN),
        )
        x.realize(), y.realize()
        replays.update(sequence=0, recording=0)
        jit(x, y)
        if i >= 2:  # captured at the second call; replayed from the third
            assert replays == {"sequence": 1, "recording": 0}


def test_jit_results_equal_non_jit_results_with_new_inputs_each_call() -> None:
    jit = TinyJit(_chain)
    rng = np.random.default_rng(6)
    for _ in range(6):
        x, y = rng.standard_normal((12, 12), np.float32) / 4, rng.standard_normal((12, 12), np.float32) / 4
        got = jit(Tensor(x, device=VN), Tensor(y, device=VN)).numpy()
        np.testing.assert_array_equal(got, _chain(Tensor(x, device=VN), Tensor(y, device=VN)).numpy())


def test_jit_keeps_one_sequence_per_set_of_input_buffers() -> None:
    graph_cache.clear()
    jit = TinyJit(lambda x: (x * 3 + 1).relu().contiguous() * 2)
    inputs = [Tensor(np.full(64, i, np.float32), device=VN).realize() for i in range(2)]
    for i in range(8):
        np.testing.assert_array_equal(
            jit(inputs[i % 2]).numpy(), np.full(64, (i % 2 * 3 + 1) * 2, np.float32)
        )
    (graph,) = _graphs()
    # inputs[0] at capture, then the two alternating buffers: no sequence built per call
    assert len(graph.sequences) <= 2


def test_jit_variable_values_are_written_not_rerecorded() -> None:
    graph_cache.clear()
    a = Variable("a", 0, 100)
    jit = TinyJit(lambda x, v: ((x * v).contiguous() + 1).contiguous())
    x = Tensor.ones(8, device=VN).contiguous().realize()
    for k in range(6):
        np.testing.assert_array_equal(jit(x, a.bind(k)).numpy(), np.full(8, k + 1, np.float32))
    (graph,) = _graphs()
    assert len(graph.sequences) == 1
    assert graph.var_vals_replace


def test_jit_with_a_symbolic_launch_size_computes_each_size_right() -> None:
    graph_cache.clear()
    n = Variable("n", 1, 64)
    jit = TinyJit(lambda x, v: (x.shrink(((0, v),)) * 2 + 1).contiguous().sum().contiguous())
    x = Tensor(np.arange(64, dtype=np.float32), device=VN).realize()
    for k in (5, 9, 17, 64, 3, 17):
        assert jit(x, n.bind(k)).item() == float((np.arange(k) * 2 + 1).sum())
    (graph,) = _graphs()
    assert graph.launch_dims_replace  # the sizes reached the graph as launch sizes
    assert len(graph.sequences) == 4  # one per size it replayed (17 twice), none per call


# ---------------------------------------------------------------- training


def _mlp_losses(device: str, steps: int = 8) -> list[float]:
    rng = np.random.default_rng(7)
    w1 = rng.standard_normal((784, 128), np.float32) * np.float32(1 / 28)
    w2 = rng.standard_normal((128, 10), np.float32) * np.float32(1 / 11.3)
    xs = rng.standard_normal((64, 784), np.float32)
    ys = rng.integers(0, 10, 64)
    l1, l2 = Tensor(w1, device=device), Tensor(w2, device=device)
    opt = SGD([l1, l2], lr=0.05)
    x, y = Tensor(xs, device=device), Tensor(ys.astype(np.int32), device=device)

    step = TinyJit(mlp_step(l1, l2, opt))
    return [step(x, y).item() for _ in range(steps)]


def _cpu_device_fails() -> str | None:
    """Why tinygrad's CPU device (the reference) cannot run here, or None: it compiles with
    $CC as if it were clang (the H200 machine's CC is a gcc, which refuses clang's flags)."""
    try:
        (Tensor([1.0], device="CPU") + 1).realize()
    except Exception as err:  # noqa: BLE001 - any reason the reference cannot run
        return f"tinygrad's CPU device does not run here ({type(err).__name__}); it needs clang as $CC"
    return None


def test_mlp_training_step_converges_as_on_tinygrads_cpu_device() -> None:
    reason = _cpu_device_fails()
    if reason is not None:
        pytest.skip(reason)
    vn_losses, cpu_losses = _mlp_losses(VN), _mlp_losses("CPU")
    assert vn_losses[-1] < vn_losses[0] * 0.8
    np.testing.assert_allclose(vn_losses, cpu_losses, rtol=1e-3)
