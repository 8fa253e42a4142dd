"""Shared pieces of the benchmark suite: the kernel, sizes, round counts, the
raw-C floor's build and loader, and the helpers that time each way alike.

Imported by conftest.py and the test_bench_*.py files (pytest puts this folder on
sys.path: the suite runs with the default "prepend" import mode, see pytest.ini).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent

# The tests' kernels and their one kernel writer (tests/support/kernels.py), so that a
# kernel both suites run is written once.
sys.path.insert(0, str(HERE.parent / "tests"))
from support.kernels import ADD_IMMEDIATE as ADD_IMMEDIATE  # noqa: E402
from support.kernels import elementwise as elementwise  # noqa: E402

# ---- the kernel and sizes ----------------------------------------------------------

#: out[i] = in[i] * 2.0; one workgroup of 64 covers the launch benchmarks' 64 floats.
WGSL = """
@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < arrayLength(&dst) && i < arrayLength(&src)) {
        dst[i] = src[i] * 2.0;
    }
}
"""

IO_FLOATS = 64
IO_BYTES = IO_FLOATS * 4  # 256 B: the launch benchmarks' input and output
#: distinct output buffers cycled through by the cache-miss benchmark: more than
#: vyre_native's default bind-group cache capacity (256), so every lookup misses.
MISS_SETS = 300
SMALL_READ = 4 << 10  # 4 KiB
BIG_READ = 64 << 20  # 64 MiB
#: operations between untimed drains (replay what was recorded, wait for the queue);
#: also the length of a replay burst (floor.c's BATCH)
DRAIN_EVERY = 64
BURST = DRAIN_EVERY

WAYS = ("vyre_native", "wgpu-py", "raw-C")


def fill_dispatch(nbytes: int, max_per_dimension: int) -> tuple[int, int]:
    """How vyre_native's zero fill (vn.debug.fill_wgsl(), csrc/resources/fill.c) clears a buffer
    of ``nbytes`` (a multiple of 4): (entry point: 0 ``fill_words``, 1 ``fill_quads``
    where nbytes is a multiple of 16; workgroups of 256, at most 65535 or the device's
    per-dimension limit). floor.c's fill_plan is the same rule in C."""
    variant = 1 if nbytes % 16 == 0 else 0
    elements = nbytes // (16 if variant else 4)
    return variant, min(-(-elements // 256), 65535, max_per_dimension)


#: operation id -> (table label, what one operation is)
OPERATIONS: dict[str, tuple[str, str]] = {
    "prerecord_hit": ("pre-record, bind-group cache hit", "record one dispatch with the same buffers"),
    "prerecord_miss": ("pre-record, bind-group cache miss", "bind group created + record one dispatch"),
    "replay": ("replay (submit pre-recorded)", "submit one pre-encoded command buffer"),
    "replay_burst": ("replay, 64 back to back", "one of 64 pre-encoded submits in a row"),
    "replay_wait": ("replay + wait (1 workgroup)", "submit pre-encoded, block until complete"),
    "encode_submit": ("record + replay per dispatch", "encode + submit one dispatch"),
    "read_output_4KiB": ("read_output 4 KiB", "GPU buffer -> new host bytes"),
    "read_output_64MiB": ("read_output 64 MiB", "GPU buffer -> new host bytes"),
    "read_output_into_4KiB": ("read_output_into 4 KiB", "GPU buffer -> reused numpy array"),
    "read_output_into_64MiB": ("read_output_into 64 MiB", "GPU buffer -> reused numpy array"),
    "read_zero_copy_64MiB": ("read copy=False 64 MiB", "GPU buffer -> read-only array over mapped staging"),
    "read_zero_copy_sum_64MiB": ("read copy=False 64 MiB + sum", "the same, then numpy sum of every float"),
    "read_typed_copy_64MiB": ("read copy=True 64 MiB", "GPU buffer -> new float32 array"),
    "read_typed_copy_sum_64MiB": ("read copy=True 64 MiB + sum", "the same, then numpy sum of every float"),
    "read_typed_map_64MiB": (
        "staging copy + map 64 MiB (no host copy)",
        "raw C only: a zero-copy read's floor",
    ),
    "borrowed_dispatch": ("borrowed dispatch end to end", "upload + record + replay + read back"),
    "recording_replay": ("Recording.replay() (re-encode + submit)", "encode + submit one dispatch"),
    "replay_n": ("Recording.replay(64), per launch", "one of 64 launches in one command buffer"),
    "sequence_1000": (
        "sequence of 1000, per dispatch (host)",
        "one of 1000 dispatches in one pass, one submit",
    ),
    "sequence_1000_wait": (
        "sequence of 1000, per dispatch (done)",
        "one of 1000 dispatches in one pass, submit + wait",
    ),
    "sequence_1000_chain": (
        "sequence of 1000, dependent chain, per dispatch (host)",
        "one of 1000 dispatches in one pass, each reading the last one's output (bindings change every step)",
    ),
    "sequence_1000_chain_wait": (
        "sequence of 1000, dependent chain, per dispatch (done)",
        "the same chain, submit + wait: GPU time per dispatch with a barrier between each two",
    ),
    "sequence_1000_graph": (
        "sequence of 1000, graph (pipeline and bindings change every step, host)",
        "one of 1000 dependent dispatches in one pass, alternating two pipelines, each step its own bind group",
    ),
    "sequence_1000_graph_wait": (
        "sequence of 1000, graph, per dispatch (done)",
        "the same graph, submit + wait",
    ),
    "sequence_1000_immediates": (
        "sequence of 1000, per-step immediates",
        "one of 1000 dispatches in one pass, each setting its own var<immediate> scalar",
    ),
    "sequence_1000_uniforms": (
        "sequence of 1000, per-step uniform buffers",
        "one of 1000 dispatches in one pass, each binding its own uniform buffer",
    ),
    "sequence_1000_clear": (
        "sequence of 1000 clearing, per step (host)",
        "one of 1000 steps that clear their output (fill in the one pass), one submit",
    ),
    "sequence_1000_clear_wait": (
        "sequence of 1000 clearing, per step (done)",
        "one of 1000 clearing steps in one pass, submit + wait",
    ),
    "sequence_1000_clear_naive": (
        "1000 clearing steps, clear_buffer + pass each (host)",
        "one of 1000 steps written clear_buffer + pass + dispatch, one submit",
    ),
    "clear_64MiB_gpu": ("clear 64 MiB between two dispatches (GPU time)", "GPU time by timestamps"),
    "async_read_16x4MiB": ("16 x 4 MiB readbacks in flight", "64 MiB read back as 16 slices at once"),
    "workgroup_1KiB_zeroed_gpu": (
        "1024 workgroups, 1 KiB var<workgroup> zeroed (GPU time)",
        "one dispatch as compile() makes it, WGSL's zeroing of workgroup memory included",
    ),
    "workgroup_1KiB_not_zeroed_gpu": (
        "1024 workgroups, 1 KiB var<workgroup>, zeroing off (GPU time)",
        "the same dispatch compiled with zero_workgroup_memory=False",
    ),
    "workgroup_16KiB_zeroed_gpu": (
        "1024 workgroups, 16 KiB var<workgroup> zeroed (GPU time)",
        "one dispatch as compile() makes it, WGSL's zeroing of workgroup memory included",
    ),
    "workgroup_16KiB_not_zeroed_gpu": (
        "1024 workgroups, 16 KiB var<workgroup>, zeroing off (GPU time)",
        "the same dispatch compiled with zero_workgroup_memory=False",
    ),
    "interrupt_wait": (
        "Ctrl-C during wait(), to KeyboardInterrupt",
        "SIGINT sent while wait() blocks on a running kernel -> KeyboardInterrupt raised",
    ),
}

#: launches per Recording.replay(n) and dispatches per sequence in those benchmarks
REPLAY_N = 64
SEQUENCE_LEN = 1000
READ_PARTS = 16


# ---- round counts ----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Rounds:
    """How long each kind of benchmark runs.

    Python-side ways time one operation per round (``rounds`` rounds); the raw-C
    floor times ``c_ops`` operations per round in C, ``c_rounds`` rounds, so both
    sides see about the same number of operations.
    """

    launch: int  # rounds of a launch-cost operation (vn, wgpu-py)
    launch_warmup: int
    burst: int  # rounds of BURST replays each
    c_launch_rounds: int
    c_launch_ops: int
    small_read: int
    c_small_rounds: int
    c_small_ops: int
    big_read: int  # rounds of a 64 MiB readback (1 op per round on every side)


FULL = Rounds(
    launch=4000,
    launch_warmup=64,
    burst=60,
    c_launch_rounds=40,
    c_launch_ops=100,
    small_read=1500,
    c_small_rounds=30,
    c_small_ops=50,
    big_read=20,
)
QUICK = Rounds(
    launch=150,
    launch_warmup=8,
    burst=4,
    c_launch_rounds=5,
    c_launch_ops=30,
    small_read=60,
    c_small_rounds=3,
    c_small_ops=20,
    big_read=3,
)

# ---- session facts reported in the JSON's machine_info (filled by the fixtures) -----------

SESSION: dict[str, Any] = {
    "raw_c": {"available": None, "reason": "the raw-C floor was not needed by the benchmarks selected"},
}


# ---- timing helpers ------------------------------------------------------------------------


class Drainer:
    """An untimed ``setup`` for ``benchmark.pedantic``: every ``every`` rounds it runs
    ``drain`` (replay what the timed part recorded, wait for the queue), then returns
    ``make()``'s value as the target's argument when ``make`` is given.

    Without the drain, the queue (and, for recordings that are never submitted,
    wgpu-native's memory: it does not reclaim a command buffer dropped unsubmitted)
    grows through the run and later rounds measure a different state than early ones.
    """

    def __init__(
        self, drain: Callable[[], None], make: Callable[[], Any] | None = None, every: int = DRAIN_EVERY
    ) -> None:
        self.drain = drain
        self.make = make
        self.every = every
        self.count = 0

    def __call__(self) -> tuple[tuple[Any, ...], dict[str, Any]] | None:
        self.count += 1
        if self.count % self.every == 0:
            self.drain()
        if self.make is None:
            return None
        return (self.make(),), {}


def wgpu_wait(wgx: Any) -> None:
    """Block until wgpu-py's queue is idle.

    wgpu-py 0.32's public ``queue.on_submitted_work_done_sync()`` fails against the
    wgpu-native it ships (its callback lacks the WGPUStringView argument: a cffi
    TypeError), so this uses ``device._poll_wait()``, the blocking
    ``wgpuDevicePoll(device, true, NULL)`` wgpu-py itself waits with; the public call
    is used where the private one is gone.
    """
    poll_wait = getattr(wgx.device, "_poll_wait", None)
    if poll_wait is not None:
        poll_wait()
    else:  # pragma: no cover - a later wgpu-py
        wgx.queue.on_submitted_work_done_sync()


def _per_operation(benchmark: Any, seconds: Iterable[float]) -> Any:
    """Replace the benchmark's samples with per-operation ones, so that pytest-benchmark's
    own table and JSON speak per operation on every row (a round of many operations,
    or of one C call doing many, would otherwise read that many times slower)."""
    from pytest_benchmark.stats import Stats

    per_op = Stats()
    for s in seconds:
        per_op.update(s)
    benchmark.stats.stats = per_op
    return per_op


def _per_op_info(info: dict[str, Any], s: Any, nbytes: int | None) -> None:
    info["per_op_ns_median"] = s.median * 1e9
    info["per_op_ns_min"] = s.min * 1e9
    info["per_op_ns_q1"] = s.q1 * 1e9
    info["per_op_ns_q3"] = s.q3 * 1e9
    if nbytes:
        info["bytes"] = nbytes
        info["gb_per_s"] = nbytes / info["per_op_ns"]


def record_python(
    benchmark: Any, way: str, operation: str, nbytes: int | None = None, ops_per_round: int = 1, **extra: Any
) -> None:
    """extra_info for a vyre_native or wgpu-py benchmark (one call per round, or
    ``ops_per_round`` operations in one timed round: each round then counts as its
    per-operation average)."""
    info = benchmark.extra_info
    info.update(way=way, operation=operation, ops_per_round=ops_per_round, **extra)
    stats = getattr(benchmark, "stats", None)
    if stats is None:  # --benchmark-disable
        return
    s = stats.stats
    if ops_per_round != 1:
        s = _per_operation(benchmark, [d / ops_per_round for d in s.data])
    info["per_op_ns"] = s.mean * 1e9
    _per_op_info(info, s, nbytes)


def run_floor(
    benchmark: Any,
    floor: Floor,
    operation: str,
    call: Callable[[int, Any], int],
    ops: int,
    rounds: int,
    nbytes: int | None = None,
    per_sample: int = 1,
    **extra: Any,
) -> None:
    """Time a raw-C entry point: each round is one C call doing ``ops`` operations.
    Where one C sample covers ``per_sample`` operations (a submit of 1000 dispatches),
    every figure is divided by it.

    ``call(n, samples)`` runs the operation n times in C and returns the total ns;
    C times each operation on its own into ``samples``, and those per-operation
    samples replace pytest-benchmark's per-round ones (its table then reads per
    operation, as every other row does). ``extra_info["per_op_ns"]`` is the mean from
    the C totals, the median, min and quartiles come from the C samples.
    """
    ffi = floor.ffi
    buf = ffi.new("int64_t[]", ops)
    totals: list[int] = []
    samples: list[int] = []

    def target() -> None:
        totals.append(floor.check(call(ops, buf)))
        samples.extend(buf)

    floor.check(call(max(1, min(ops, 8)), buf))  # warm up, untimed
    benchmark.pedantic(target, rounds=rounds, iterations=1, warmup_rounds=0)
    info = benchmark.extra_info
    info.update(way="raw-C", operation=operation, ops_per_round=ops, **extra)
    if per_sample != 1:
        info["ops_per_sample"] = per_sample
    if totals and getattr(benchmark, "stats", None) is not None:
        s = _per_operation(benchmark, [ns * 1e-9 / per_sample for ns in samples])
        info["per_op_ns"] = sum(totals) / (ops * len(totals) * per_sample)
        _per_op_info(info, s, nbytes)


def sequence_operation(benchmark: Any, operation: str, wait: bool) -> str:
    """The operation (and benchmark group) of a sequence row: ``operation`` for the host
    cost, ``operation + "_wait"`` to completion."""
    name = operation + ("_wait" if wait else "")
    benchmark.group = name
    return name


def bench_vn_sequence(benchmark: Any, vnx: Any, rounds: Rounds, seq: Any, operation: str, wait: bool) -> None:
    """One replay of a vyre_native sequence of SEQUENCE_LEN steps per round: host cost
    (the drain untimed), or with ``wait`` to completion; reported per step."""
    operation = sequence_operation(benchmark, operation, wait)
    if wait:
        benchmark.pedantic(lambda: seq.replay().wait(), rounds=rounds.burst, warmup_rounds=1)
    else:
        benchmark.pedantic(
            seq.replay, setup=Drainer(vnx.dev.wait_idle, every=1), rounds=rounds.burst, warmup_rounds=1
        )
        vnx.dev.wait_idle()
    record_python(benchmark, "vyre_native", operation, ops_per_round=SEQUENCE_LEN)


def bench_wgpu_sequence(
    benchmark: Any, wgx: Any, rounds: Rounds, submit: Callable[[], None], operation: str, wait: bool
) -> None:
    """The same through wgpu-py: ``submit`` encodes and submits SEQUENCE_LEN steps."""
    operation = sequence_operation(benchmark, operation, wait)
    if wait:

        def target() -> None:
            submit()
            wgpu_wait(wgx)

        benchmark.pedantic(target, rounds=rounds.burst, warmup_rounds=1)
    else:
        benchmark.pedantic(
            submit, setup=Drainer(lambda: wgpu_wait(wgx), every=1), rounds=rounds.burst, warmup_rounds=1
        )
        wgpu_wait(wgx)
    record_python(benchmark, "wgpu-py", operation, ops_per_round=SEQUENCE_LEN)


def bench_floor_sequence(
    benchmark: Any, floor: Floor, rounds: Rounds, operation: str, wait: bool, call: Callable[[int, Any], int]
) -> None:
    """The raw-C floor of the same: each sample one submit of SEQUENCE_LEN steps,
    ``call(n, samples)`` (waiting or not as ``wait`` says)."""
    operation = sequence_operation(benchmark, operation, wait)
    run_floor(benchmark, floor, operation, call, rounds.burst, 1, per_sample=SEQUENCE_LEN)


def bench_vn_launch(
    benchmark: Any, vnx: Any, rounds: Rounds, target: Callable[[], Any], operation: str
) -> None:
    """``target`` (one vyre_native launch) a round, the queue drained untimed every
    DRAIN_EVERY rounds and at the end."""
    benchmark.pedantic(
        target, setup=Drainer(vnx.dev.wait_idle), rounds=rounds.launch, warmup_rounds=rounds.launch_warmup
    )
    vnx.dev.wait_idle()
    record_python(benchmark, "vyre_native", operation)


def bench_wgpu_encode_submit(benchmark: Any, wgx: Any, rounds: Rounds, operation: str) -> None:
    """wgpu-py encoding and submitting one dispatch per round (what vyre_native records)."""
    encode, group, fill, queue = wgx.encode, wgx.group, wgx.fill, wgx.queue

    def target() -> None:
        queue.submit([encode(group, fill)])

    benchmark.pedantic(
        target,
        setup=Drainer(lambda: wgpu_wait(wgx)),
        rounds=rounds.launch,
        warmup_rounds=rounds.launch_warmup,
    )
    wgpu_wait(wgx)
    record_python(benchmark, "wgpu-py", operation)


def bench_floor_launch(
    benchmark: Any, floor: Floor, rounds: Rounds, operation: str, entry: str | None = None
) -> None:
    """The raw-C floor of a launch-cost row: ``floor_<entry>(ctx, n, samples)`` (``entry``
    defaults to the operation), ``rounds.c_launch_ops`` operations a round."""
    call = floor.call(entry or operation)
    run_floor(benchmark, floor, operation, call, rounds.c_launch_ops, rounds.c_launch_rounds)


def bench_floor_one_call(benchmark: Any, floor: Floor, rounds: Rounds, operation: str, entry: str) -> None:
    """``floor_one_<entry>(ctx)`` a round: one raw-C operation per call across cffi,
    timed by pytest-benchmark as the vyre_native rows are (the interpreter runs between
    calls), the queue flushed and drained untimed every DRAIN_EVERY rounds and at the end.
    The floor of a launch made from Python (``<operation>_one_call``)."""
    run, flush, ctx = getattr(floor.lib, "floor_one_" + entry), floor.lib.floor_one_flush, floor.ctx

    def target() -> None:
        if run(ctx):
            floor.check(-1)

    benchmark.pedantic(
        target,
        setup=Drainer(lambda: floor.check(flush(ctx))),
        rounds=rounds.launch,
        warmup_rounds=rounds.launch_warmup,
    )
    floor.check(flush(ctx))
    record_python(benchmark, "raw-C", operation + "_one_call")


# ---- the raw-C floor -----------------------------------------------------------------------

FLOOR_CDEF = """
typedef struct floor_ctx floor_ctx;
const char *floor_last_error(void);
floor_ctx *floor_create(const char *lib_path, const char *wgsl, uint64_t io_bytes, uint32_t miss_count,
                        uint64_t small_bytes, uint64_t big_bytes);
void floor_destroy(floor_ctx *c);
const char *floor_adapter_name(floor_ctx *c);
const char *floor_backend(floor_ctx *c);
const char *floor_driver(floor_ctx *c);
uint32_t floor_library_version(void);
int floor_timestamps(floor_ctx *c);
int64_t floor_prerecord_hit(floor_ctx *c, uint64_t n, int64_t *samples);
int64_t floor_prerecord_miss(floor_ctx *c, uint64_t n, int64_t *samples);
int64_t floor_replay(floor_ctx *c, uint64_t n, int64_t *samples);
int64_t floor_replay_burst(floor_ctx *c, uint64_t n, int64_t *samples);
int64_t floor_replay_wait(floor_ctx *c, uint64_t n, int64_t *samples);
int64_t floor_encode_submit(floor_ctx *c, uint64_t n, int64_t *samples);
int64_t floor_read(floor_ctx *c, int which, uint64_t n, int reuse, int64_t *samples);
int64_t floor_borrowed(floor_ctx *c, const void *host, uint64_t nbytes, uint64_t n, int64_t *samples);
int64_t floor_write(floor_ctx *c, const void *host, uint64_t nbytes, uint64_t n, int64_t *samples);
int64_t floor_compile(floor_ctx *c, const char *wgsl, uint64_t n, int64_t *samples);
int64_t floor_compile_on_new_thread(floor_ctx *c, const char *wgsl, uint64_t n, int64_t *samples);
int floor_result(floor_ctx *c, void *dst, uint64_t nbytes);
int64_t floor_memcpy(floor_ctx *c, uint64_t n);
int64_t floor_encode_n_submit(floor_ctx *c, uint32_t launches, uint64_t n, int64_t *samples);
int64_t floor_one_pass(floor_ctx *c, uint32_t dispatches, int wait, uint64_t n, int64_t *samples);
int64_t floor_chain(floor_ctx *c, uint32_t dispatches, int wait, uint64_t n, int64_t *samples);
int64_t floor_graph(floor_ctx *c, uint32_t steps, int wait, uint64_t n, int64_t *samples);
int64_t floor_read_parts(floor_ctx *c, uint32_t parts, uint64_t n, int64_t *samples);
int floor_fill_setup(floor_ctx *c, const char *fill_wgsl);
int floor_one_prerecord(floor_ctx *c);
int floor_one_encode_submit(floor_ctx *c);
int floor_one_flush(floor_ctx *c);
int64_t floor_fill_in_pass(floor_ctx *c, uint32_t steps, int wait, uint64_t n, int64_t *samples);
int64_t floor_clear_gpu(floor_ctx *c, int how, uint64_t n, int64_t *samples);
int64_t floor_copy(floor_ctx *c, int shifted, uint64_t bytes, uint64_t n, int64_t *samples);
"""

_LIB_NAMES = {
    "linux": "libwgpu_native-release.so",
    "darwin": "libwgpu_native-release.dylib",
    "win32": "wgpu_native-release.dll",
}


class FloorError(RuntimeError):
    pass


class Floor:
    """The compiled floor.c, loaded with cffi in ABI mode, and its context."""

    def __init__(self, ffi: Any, lib: Any, ctx: Any, so_path: str, compiler: str) -> None:
        self.ffi, self.lib, self.ctx = ffi, lib, ctx
        self.so_path, self.compiler = so_path, compiler

    def call(self, entry: str, *args: Any) -> Callable[[int, Any], int]:
        """``floor_<entry>(ctx, *args, n, samples)`` as run_floor's ``call(n, samples)``."""
        run, ctx = getattr(self.lib, "floor_" + entry), self.ctx
        return lambda n, samples: run(ctx, *args, n, samples)

    def check(self, ns: int) -> int:
        if ns < 0:
            raise FloorError(
                "raw-C floor: " + self.ffi.string(self.lib.floor_last_error()).decode("utf-8", "replace")
            )
        return int(ns)

    def describe(self) -> dict[str, Any]:
        s = self.ffi.string
        return {
            "available": True,
            "compiler": self.compiler,
            "adapter": s(self.lib.floor_adapter_name(self.ctx)).decode("utf-8", "replace"),
            "backend": s(self.lib.floor_backend(self.ctx)).decode(),
            "driver": s(self.lib.floor_driver(self.ctx)).decode("utf-8", "replace"),
        }

    def close(self) -> None:
        if self.ctx is not None:
            self.lib.floor_destroy(self.ctx)
            self.ctx = None


class FloorUnavailable:
    """Stands in for the floor when it cannot be built; its tests skip with ``reason``."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def describe(self) -> dict[str, Any]:
        return {"available": False, "reason": self.reason}

    def close(self) -> None:
        pass


def wgpu_resources_dir() -> pathlib.Path | None:
    spec = importlib.util.find_spec("wgpu")
    if spec is None or spec.origin is None:
        return None
    return pathlib.Path(spec.origin).parent / "resources"


def wgpu_library_path() -> str:
    """The wgpu-native file vyre_native loads: WGPU_LIB_PATH, else the wgpu package's own."""
    override = os.environ.get("WGPU_LIB_PATH")
    if override:
        return override
    res = wgpu_resources_dir()
    if res is None:
        raise FloorError("the wgpu package is not installed")
    return str(res / _LIB_NAMES.get(sys.platform, _LIB_NAMES["linux"]))


def find_compiler() -> str | None:
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name:
            found = shutil.which(name)
            if found:
                return found
    return None


def build_floor(build_dir: pathlib.Path) -> Floor | FloorUnavailable:
    """Compile floor.c with the system C compiler and load it; never raises."""
    if sys.platform == "win32":
        return FloorUnavailable("the raw-C floor is built for POSIX hosts (dlopen, clock_gettime)")
    cc = find_compiler()
    if cc is None:
        return FloorUnavailable("no C compiler found ($CC, cc, gcc, clang are not on PATH)")
    res = wgpu_resources_dir()
    if res is None or not (res / "webgpu.h").exists() or not (res / "wgpu.h").exists():
        return FloorUnavailable(f"webgpu.h / wgpu.h not found in the wgpu package ({res})")
    try:
        import cffi
    except ImportError:
        return FloorUnavailable("cffi is not installed")
    sources = [str(p) for p in sorted((HERE / "floor").glob("*.c"))]  # floor.c and its parts (floor.h)
    so_path = build_dir / "floor.so"
    cmd = [cc, "-O2", "-shared", "-fPIC", "-std=gnu11", "-I", str(res), *sources, "-o", str(so_path), "-ldl", "-pthread"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        return FloorUnavailable(f"running {cc} failed: {err}")
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return FloorUnavailable(f"{cc} could not compile floor.c: {' | '.join(tail)}")
    version = subprocess.run(
        [cc, "--version"], capture_output=True, text=True, check=False
    ).stdout.splitlines()
    compiler = f"{cc} ({version[0] if version else 'unknown version'})"
    ffi = cffi.FFI()
    ffi.cdef(FLOOR_CDEF)
    try:
        lib = ffi.dlopen(str(so_path))
    except OSError as err:
        return FloorUnavailable(f"loading the compiled floor failed: {err}")
    try:
        lib_path = wgpu_library_path()
    except FloorError as err:
        return FloorUnavailable(str(err))
    ctx = lib.floor_create(lib_path.encode(), WGSL.encode(), IO_BYTES, MISS_SETS, SMALL_READ, BIG_READ)
    if ctx == ffi.NULL:
        return FloorUnavailable(
            "floor_create failed: " + ffi.string(lib.floor_last_error()).decode("utf-8", "replace")
        )
    # The clears-in-pass rows dispatch vyre_native's own zero-fill kernel.
    from vyre_native.debug import fill_wgsl

    if lib.floor_fill_setup(ctx, fill_wgsl().encode()) != 0:
        reason = ffi.string(lib.floor_last_error()).decode("utf-8", "replace")
        lib.floor_destroy(ctx)
        return FloorUnavailable(f"floor_fill_setup failed: {reason}")
    return Floor(ffi, lib, ctx, str(so_path), compiler)


def host_cpu() -> str:
    """The host CPU's model name and logical core count."""
    name = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    if not name:
        import platform

        name = platform.processor() or platform.machine()
    return f"{name} ({os.cpu_count()} logical cores)"
