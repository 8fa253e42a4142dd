"""Multi-pass inclusive prefix scan of u32 (wrapping), reduce-then-scan.

A workgroup of 256 threads owns a block of 1024 elements (4 a thread). Each level
reduces its blocks to one sum each, until one block remains; that block is
scanned; then each level below is scanned block by block with the scanned sum of
the blocks before it added back. 1 M elements take three dispatches (reduce,
scan of 1024 block sums, scan + add back); 16 M take five (two reduces: 16384 and
then 16 block sums).

``scan_steps`` is also the radix sort's scan of its digit histograms.
"""

from __future__ import annotations

import numpy as np
from workload import Program, Step, blocks, params

WG = 256
BLOCK = 4 * WG

#: reduce: sums[b] = the sum of block b of src
REDUCE = """
struct Params { n: u32, p1: u32, p2: u32, p3: u32 }
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> sums: array<u32>;
@group(0) @binding(2) var<uniform> params: Params;

var<workgroup> part: array<u32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let base = wg.x * 1024u;
    var s = 0u;
    for (var j = 0u; j < 4u; j++) {
        let i = base + j * 256u + t;
        if (i < params.n) { s += src[i]; }
    }
    part[t] = s;
    workgroupBarrier();
    for (var stride = 128u; stride > 0u; stride >>= 1u) {
        if (t < stride) { part[t] += part[t + stride]; }
        workgroupBarrier();
    }
    if (t == 0u) { sums[wg.x] = part[0]; }
}
"""

#: scan + add back: dst = inclusive scan of src, block b adding carry[b - 1] (the
#: inclusive scan of the block sums); with one block (the top level) carry is unread
SCAN_ADD = """
struct Params { n: u32, p1: u32, p2: u32, p3: u32 }
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read> carry: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;
@group(0) @binding(3) var<uniform> params: Params;

var<workgroup> tile: array<u32, 1024>;
var<workgroup> part: array<u32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let base = wg.x * 1024u;
    for (var j = 0u; j < 4u; j++) {
        let i = base + j * 256u + t;  // coalesced loads
        var v = 0u;
        if (i < params.n) { v = src[i]; }
        tile[j * 256u + t] = v;
    }
    workgroupBarrier();
    let o = 4u * t;  // this thread scans tile[o .. o + 3]
    let v0 = tile[o];
    let v1 = v0 + tile[o + 1u];
    let v2 = v1 + tile[o + 2u];
    let v3 = v2 + tile[o + 3u];
    part[t] = v3;
    workgroupBarrier();
    for (var off = 1u; off < 256u; off <<= 1u) {
        var add = 0u;
        if (t >= off) { add = part[t - off]; }
        workgroupBarrier();
        part[t] += add;
        workgroupBarrier();
    }
    var prefix = 0u;
    if (t > 0u) { prefix = part[t - 1u]; }
    if (wg.x > 0u) { prefix += carry[wg.x - 1u]; }
    tile[o] = v0 + prefix;
    tile[o + 1u] = v1 + prefix;
    tile[o + 2u] = v2 + prefix;
    tile[o + 3u] = v3 + prefix;
    workgroupBarrier();
    for (var j = 0u; j < 4u; j++) {
        let i = base + j * 256u + t;
        if (i < params.n) { dst[i] = tile[j * 256u + t]; }
    }
}
"""


def scan_steps(p: Program, src: str, dst: str, n: int, prefix: str) -> list[Step]:
    """Append the dispatches of an inclusive scan of ``src`` (n u32) into ``dst``.

    Adds its kernels (if missing) and its scratch buffers, named ``prefix``...;
    returns the steps appended: 2 * levels - 1 (one step when n fits one block).
    """
    first = len(p.steps)
    if "scan_reduce" not in p.kernels:
        p.kernel("scan_reduce", REDUCE)
        p.kernel("scan_add", SCAN_ADD)
    sizes = [n]
    while sizes[-1] > BLOCK:
        sizes.append(blocks(sizes[-1], BLOCK))
    par = {}
    for m in set(sizes):
        par[m] = p.buffer(f"{prefix}params_{m}", params(m))
    zero = p.buffer(f"{prefix}no_carry", np.zeros(4, np.uint32))
    sums = [src] + [p.buffer(f"{prefix}sums{k}", 4 * sizes[k]) for k in range(1, len(sizes))]
    scanned = [dst] + [p.buffer(f"{prefix}scanned{k}", 4 * sizes[k]) for k in range(1, len(sizes))]
    for k in range(len(sizes) - 1):  # reduce down to one block
        p.add(
            "scan_reduce",
            (blocks(sizes[k], BLOCK), 1, 1),
            src=sums[k],
            sums=sums[k + 1],
            params=par[sizes[k]],
        )
    for k in reversed(range(len(sizes))):  # scan the top block, then add back level by level
        carry = zero if k == len(sizes) - 1 else scanned[k + 1]
        p.add(
            "scan_add",
            (blocks(sizes[k], BLOCK), 1, 1),
            src=sums[k],
            carry=carry,
            dst=scanned[k],
            params=par[sizes[k]],
        )
    return p.steps[first:]


SIZES = {
    # small: a two-level and a three-level scan (above 1 M = 1024 blocks of 1024), odd sizes
    "small": {"50K": 50_001, "1.1M": 1_100_003},
    "full": {"1M": 1 << 20, "16M": 1 << 24},
}


def build(size: str, n: int) -> Program:
    rng = np.random.default_rng(11)
    x = rng.integers(0, 1 << 32, size=n, dtype=np.uint32)
    p = Program(
        workload="scan",
        size=size,
        output="out",
        out_dtype=np.uint32,
        reference=lambda: np.cumsum(x, dtype=np.uint32),  # wraps mod 2**32, as u32 adds do
    )
    p.buffer("x", x)
    p.buffer("out", 4 * n)
    levels = (len(scan_steps(p, "x", "out", n, "")) + 1) // 2
    p.facts.update(elements=n, levels=levels, bytes=4 * n)
    return p
