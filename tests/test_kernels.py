"""Real kernels, each result checked against numpy.

Every kernel here writes its workgroup memory before reading it (written when
wgpu-native left that memory unzeroed); tests/test_workgroup_zero.py holds the kernels
that rely on WGSL's zero-initialisation, which compile() now adds.
"""

from __future__ import annotations

import numpy as np
import pytest
from support.kernels import elementwise

import vyre_native as vn

SCALE = elementwise(
    "y[i] = x[i] * params.scale;",
    *("read x", "read_write y", "uniform params: Params"),
    head="struct Params { scale: f32, n: u32 }",
    guard="i < params.n",
)

TRANSPOSE = """
struct Dims { rows: u32, cols: u32 }
@group(0) @binding(0) var<storage, read> a: array<f32>;        // rows x cols
@group(0) @binding(1) var<storage, read_write> t: array<f32>;  // cols x rows
@group(0) @binding(2) var<uniform> dims: Dims;

@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let c = gid.x;
    let r = gid.y;
    if (r < dims.rows && c < dims.cols) { t[c * dims.rows + r] = a[r * dims.cols + c]; }
}
"""

# One sum per workgroup of 256 elements, by a tree reduction in shared memory.
REDUCE = """
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> sums: array<f32>;
var<workgroup> scratch: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    scratch[lid] = x[wid.x * 256u + lid];  // every element written before any is read
    workgroupBarrier();
    for (var stride = 128u; stride > 0u; stride = stride / 2u) {
        if (lid < stride) { scratch[lid] = scratch[lid] + scratch[lid + stride]; }
        workgroupBarrier();
    }
    if (lid == 0u) { sums[wid.x] = scratch[0]; }
}
"""

# Two groups, declared out of order: group 1 before group 0, bindings descending.
# out0 = a * b, out1 = a + c
TWO_GROUPS = """
@group(1) @binding(1) var<storage, read_write> out1: array<f32>;
@group(1) @binding(0) var<storage, read> c: array<f32>;
@group(0) @binding(2) var<storage, read_write> out0: array<f32>;
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < arrayLength(&out0)) {
        out0[i] = a[i] * b[i];
        out1[i] = a[i] + c[i];
    }
}
"""

# out[i] = in[i] + 1 over a 2D grid of workgroups (65535 is the per-dimension limit).
PLUS_ONE_2D = """
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> dst: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = (wid.y * nwg.x + wid.x) * 256u + lid;
    if (i < arrayLength(&dst)) { dst[i] = src[i] + 1u; }
}
"""


def params(*fields: np.generic) -> bytes:
    return b"".join(np.asarray(f).tobytes() for f in fields)


def test_elementwise_kernel_with_uniform_params(device: vn.Device, run) -> None:
    rng = np.random.default_rng(1)
    n = 1000  # not a multiple of the workgroup size
    x = rng.standard_normal(1024).astype(np.float32)
    prog = device.compile(SCALE)
    (y,) = run(
        prog,
        [device.upload(x)],
        [device.alloc(x.nbytes)],
        params=device.upload(params(np.float32(-1.5), np.uint32(n))),
        workgroups=(-(-n // 64), 1, 1),
    )
    expected = np.zeros_like(x)
    expected[:n] = x[:n] * np.float32(-1.5)
    np.testing.assert_array_equal(y, expected)


def test_2d_grid_transposes_a_matrix(device: vn.Device, run) -> None:
    rows, cols = 48, 80
    a = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)
    prog = device.compile(TRANSPOSE)
    assert prog.workgroup_size == (8, 8, 1)
    (t,) = run(
        prog,
        [device.upload(a)],
        [device.alloc(a.nbytes)],
        params=device.upload(params(np.uint32(rows), np.uint32(cols))),
        workgroups=(cols // 8, rows // 8, 1),
    )
    np.testing.assert_array_equal(t.reshape(cols, rows), a.T)


def test_workgroup_shared_memory_tree_reduction(device: vn.Device, run) -> None:
    groups = 64
    rng = np.random.default_rng(2)
    x = rng.integers(-1000, 1000, groups * 256).astype(np.float32)  # integer sums are exact in f32
    prog = device.compile(REDUCE)
    assert [b.name for b in prog.bindings] == ["x", "sums"]  # workgroup memory takes no handle
    (sums,) = run(prog, [device.upload(x)], [device.alloc(groups * 4)], workgroups=(groups, 1, 1))
    np.testing.assert_array_equal(sums, x.reshape(groups, 256).sum(axis=1))


def test_two_bind_groups_declared_out_of_order(device: vn.Device, run) -> None:
    prog = device.compile(TWO_GROUPS)
    assert [(b.group, b.binding, b.name) for b in prog.bindings] == [
        (0, 0, "a"),
        (0, 1, "b"),
        (0, 2, "out0"),
        (1, 0, "c"),
        (1, 1, "out1"),
    ]
    rng = np.random.default_rng(3)
    a, b, c = (rng.standard_normal(256).astype(np.float32) for _ in range(3))
    out0, out1 = run(
        prog,
        [device.upload(a), device.upload(b), device.upload(c)],
        [device.alloc(a.nbytes), device.alloc(a.nbytes)],
        workgroups=(4, 1, 1),
    )
    np.testing.assert_array_equal(out0, a * b)
    np.testing.assert_array_equal(out1, a + c)


def test_64_mib_buffer_round_trips_through_a_kernel(device: vn.Device) -> None:
    n = 16 * 1024 * 1024  # 16M u32 = 64 MiB
    host = np.arange(n, dtype=np.uint32)
    host[::7] = 0xFFFFFFFE
    prog = device.compile(PLUS_ONE_2D)
    src, dst = device.upload(host), device.alloc(host.nbytes)
    assert src.byte_len == 64 * 1024 * 1024
    groups = n // 256  # 65536: one more than a dimension allows, so spread over y
    rec = prog.prerecord_persistent_dispatch([src], [dst], workgroups=(groups // 256, 256, 1))
    rec.replay()
    out = np.empty(n, dtype=np.uint32)
    assert rec.read_output_into(0, out) == host.nbytes
    np.testing.assert_array_equal(out, host + np.uint32(1))


def test_workgroups_beyond_the_per_dimension_limit_raise(device: vn.Device) -> None:
    prog = device.compile(PLUS_ONE_2D)
    limit = device.limits["max_compute_workgroups_per_dimension"]
    with pytest.raises(vn.InvalidArgumentError, match=str(limit)):
        prog.prerecord_persistent_dispatch([device.alloc(4)], [device.alloc(4)], workgroups=(limit + 1, 1, 1))


def test_many_recordings_in_a_row_are_each_right(device: vn.Device) -> None:
    prog = device.compile(SCALE)
    n = 256
    x, y = device.alloc(n * 4), device.alloc(n * 4)
    p = device.upload(params(np.float32(1), np.uint32(n)))
    rng = np.random.default_rng(4)
    out = np.empty(n, np.float32)
    for k in range(200):
        host = rng.standard_normal(n).astype(np.float32)
        scale = np.float32(k % 7 - 3)
        x.write(host)
        p.write(params(scale, np.uint32(n)))
        rec = prog.prerecord_persistent_dispatch([x], [y], params=p, workgroups=(n // 64, 1, 1))
        rec.replay()
        rec.read_output_into(0, out)
        np.testing.assert_array_equal(out, host * scale, err_msg=f"cycle {k}")
    stats = prog.bind_group_cache_stats()
    assert (stats["misses"], stats["hits"]) == (1, 199)
