"""Operation 15: compiling a WGSL module into a compute pipeline.

vyre_native's ``dev.compile`` (reflection in Python, then shader module, explicit
bind-group layouts and the pipeline in C), wgpu-py's ``create_shader_module`` +
``create_compute_pipeline(layout="auto")``, raw C's ``wgpuDeviceCreateShaderModule``
+ ``wgpuDeviceCreateComputePipeline``. Every compile gets a source no earlier compile
saw (a different constant), so no driver or wgpu cache answers for it; each
pipeline is released inside the timer.

wgpu-native 29 has no C API for pipeline caches (its headers name the feature but no
function to create or use one), so a second process compiling the same modules is
only as fast as the driver's own shader cache makes it.
"""

from __future__ import annotations

import itertools

from harness import record_python, run_floor

COUNTER = itertools.count()
ROUNDS = 60


def source() -> str:
    k = next(COUNTER)
    return f"""
@group(0) @binding(0) var<storage, read> inp: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {{
    let i = gid.x;
    if (i < arrayLength(&out)) {{ out[i] = inp[i] * {k + 2}.0 + {k}.5; }}
}}
"""


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


def test_compile_wgpu_py(benchmark, wgx):
    benchmark.group = "compile"

    def target(src: str) -> None:
        module = wgx.device.create_shader_module(code=src)
        wgx.device.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})

    benchmark.pedantic(target, setup=lambda: ((source(),), {}), rounds=ROUNDS, iterations=1, warmup_rounds=2)
    record_python(benchmark, "wgpu-py", "compile")


def test_compile_raw_c(benchmark, cfloor):
    benchmark.group = "compile"
    lib, ctx, ffi = cfloor.lib, cfloor.ctx, cfloor.ffi
    sources = iter([ffi.new("char[]", source().encode()) for _ in range(ROUNDS + 1)])
    run_floor(
        benchmark, cfloor, "compile", lambda n, s: lib.floor_compile(ctx, next(sources), n, s), 1, ROUNDS
    )
