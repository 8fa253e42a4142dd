"""Operation 15: compiling a WGSL module into a compute pipeline.

vyre_native's ``dev.compile`` (reflection in Python, then shader module, explicit
bind-group layouts and the pipeline in C), wgpu-py's ``create_shader_module`` +
``create_compute_pipeline(layout="auto")``, raw C's ``wgpuDeviceCreateShaderModule``
+ ``wgpuDeviceCreateComputePipeline``. Every compile gets a source no earlier compile
saw, in this run or an earlier one (a different constant, offset by a number drawn per
run: Mesa keeps compiled shaders on disk, ``~/.cache/mesa_shader_cache``, across
processes), so no driver, wgpu or vyre_native cache answers for it; each pipeline is
released inside the timer.

``compile_seen`` (15b) compiles one source again and again, seen before by every
cache: the driver's, and vyre_native's reflections of the sources it compiled
(``vyre_native.pipeline._REFLECTED``). The two rows are what a program that compiles
new kernels pays, and one that compiles the same kernels again.

wgpu-native 29 has no C API for pipeline caches (its headers name the feature but no
function to create or use one), so a second process compiling the same modules is
only as fast as the driver's own shader cache makes it.
"""

from __future__ import annotations

import itertools
import random

from harness import record_python, run_floor

# this run's constants: BASE to BASE + ~200, exact in f32 (k.5 needs k < 2**23)
BASE = random.randrange(1 << 21) * 2
COUNTER = itertools.count(BASE)
ROUNDS = 60


def source(k: int | None = None) -> str:
    k = next(COUNTER) if k is None else k
    return f"""
@group(0) @binding(0) var<storage, read> inp: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {{
    let i = gid.x;
    if (i < arrayLength(&out)) {{ out[i] = inp[i] * {k + 2}.0 + {k}.5; }}
}}
"""


SEEN = source(0)


def test_compile_vyre_native(benchmark, vnx):
    benchmark.group = "compile"
    benchmark.pedantic(
        lambda src: vnx.dev.compile(src).release(),
        setup=lambda: ((source(),), {}),
        rounds=ROUNDS,
        iterations=1,
        warmup_rounds=2,
    )
    record_python(benchmark, "vyre_native", "compile")


def wgpu_compile(device, src: str) -> None:
    module = device.create_shader_module(code=src)
    device.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})


def test_compile_wgpu_py(benchmark, wgx):
    benchmark.group = "compile"
    benchmark.pedantic(
        lambda src: wgpu_compile(wgx.device, src),
        setup=lambda: ((source(),), {}),
        rounds=ROUNDS,
        iterations=1,
        warmup_rounds=2,
    )
    record_python(benchmark, "wgpu-py", "compile")


def test_compile_raw_c(benchmark, cfloor):
    benchmark.group = "compile"
    lib, ctx, ffi = cfloor.lib, cfloor.ctx, cfloor.ffi
    sources = iter([ffi.new("char[]", source().encode()) for _ in range(ROUNDS + 1)])
    run_floor(
        benchmark, cfloor, "compile", lambda n, s: lib.floor_compile(ctx, next(sources), n, s), 1, ROUNDS
    )


def test_compile_seen_vyre_native(benchmark, vnx):
    benchmark.group = "compile_seen"
    benchmark.pedantic(lambda: vnx.dev.compile(SEEN).release(), rounds=ROUNDS, iterations=1, warmup_rounds=2)
    record_python(benchmark, "vyre_native", "compile_seen")


def test_compile_seen_wgpu_py(benchmark, wgx):
    benchmark.group = "compile_seen"
    benchmark.pedantic(lambda: wgpu_compile(wgx.device, SEEN), rounds=ROUNDS, iterations=1, warmup_rounds=2)
    record_python(benchmark, "wgpu-py", "compile_seen")


def test_compile_seen_raw_c(benchmark, cfloor):
    benchmark.group = "compile_seen"
    lib, ctx, ffi = cfloor.lib, cfloor.ctx, cfloor.ffi
    seen = ffi.new("char[]", SEEN.encode())
    run_floor(benchmark, cfloor, "compile_seen", lambda n, s: lib.floor_compile(ctx, seen, n, s), 1, ROUNDS)


def test_compile_seen_raw_c_on_new_thread(benchmark, cfloor):
    """Raw C's compile_seen with each compile on a new 8 MiB-stack thread, as
    vyre_native's compile runs (pipeline.c): the thread's cost beside the row above."""
    benchmark.group = "compile_seen_thread"
    lib, ctx, ffi = cfloor.lib, cfloor.ctx, cfloor.ffi
    seen = ffi.new("char[]", SEEN.encode())
    run_floor(
        benchmark, cfloor, "compile_seen_thread", lambda n, s: lib.floor_compile_on_new_thread(ctx, seen, n, s), 1, ROUNDS
    )
