"""LSD radix sort of u32 keys, 4-bit digits: 8 passes of histogram, scan, scatter.

Per pass, with blocks of 1024 keys (a workgroup of 256 threads, 4 keys a thread):
- histogram: ``hist[d * blocks + b]`` = how many keys of block b have digit d
  (digit-major, so one scan of the whole array orders by digit, then by block);
- scan: the inclusive scan of ``hist`` (scan.py's kernels, two levels at 1 M keys);
- scatter, stable: a key's place is the exclusive scan at (its digit, its block),
  plus how many keys of that digit come before it in its block. Those local ranks
  come from one workgroup scan of per-thread digit counts, packed 16 bits a digit
  into two vec4<u32> (a block holds at most 1024 of a digit, so a field never
  carries into the next), plus the keys before it in the thread's own four.

The passes read the original keys first and then ping-pong between two buffers,
so the input is never written and every iteration sorts the same keys; after the
eighth pass the sorted keys are in ``a``.
"""

from __future__ import annotations

import numpy as np
from scan import BLOCK, scan_steps
from workload import Program, Step, blocks, params

DIGIT_BITS = 4
PASSES = 32 // DIGIT_BITS

HISTOGRAM = """
struct Params { n: u32, shift: u32, blocks: u32, p3: u32 }
@group(0) @binding(0) var<storage, read> keys: array<u32>;
@group(0) @binding(1) var<storage, read_write> hist: array<u32>;
@group(0) @binding(2) var<uniform> params: Params;

var<workgroup> counts: array<atomic<u32>, 16>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    if (t < 16u) { atomicStore(&counts[t], 0u); }  // workgroup memory is written before it is read
    workgroupBarrier();
    let base = wg.x * 1024u;
    for (var j = 0u; j < 4u; j++) {
        let i = base + j * 256u + t;
        if (i < params.n) { atomicAdd(&counts[(keys[i] >> params.shift) & 15u], 1u); }
    }
    workgroupBarrier();
    let c = atomicLoad(&counts[t & 15u]);
    if (t < 16u) { hist[t * params.blocks + wg.x] = c; }
}
"""

SCATTER = """
struct Params { n: u32, shift: u32, blocks: u32, p3: u32 }
@group(0) @binding(0) var<storage, read> keys_in: array<u32>;
@group(0) @binding(1) var<storage, read> hist: array<u32>;
@group(0) @binding(2) var<storage, read> offsets: array<u32>;  // inclusive scan of hist
@group(0) @binding(3) var<storage, read_write> keys_out: array<u32>;
@group(0) @binding(4) var<uniform> params: Params;

// per thread: digits 0..7 (lo) and 8..15 (hi), two 16-bit counts a component
var<workgroup> lo: array<vec4<u32>, 256>;
var<workgroup> hi: array<vec4<u32>, 256>;

fn field(packed_lo: vec4<u32>, packed_hi: vec4<u32>, d: u32) -> u32 {
    var word: u32;
    if (d < 8u) { word = packed_lo[d >> 1u]; } else { word = packed_hi[(d - 8u) >> 1u]; }
    return (word >> ((d & 1u) * 16u)) & 0xFFFFu;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let first = wg.x * 1024u + 4u * t;  // this thread's four keys, in order
    var key: array<u32, 4>;
    var digit: array<u32, 4>;
    var rank: array<u32, 4>;  // same-digit keys before it among this thread's
    var cnt: array<u32, 8>;
    for (var j = 0u; j < 4u; j++) {
        let i = first + j;
        digit[j] = 16u;  // past the end: no digit
        if (i < params.n) {
            let k = keys_in[i];
            let d = (k >> params.shift) & 15u;
            let sh = (d & 1u) * 16u;
            key[j] = k;
            digit[j] = d;
            rank[j] = (cnt[d >> 1u] >> sh) & 0xFFFFu;
            cnt[d >> 1u] += 1u << sh;
        }
    }
    let own_lo = vec4<u32>(cnt[0], cnt[1], cnt[2], cnt[3]);
    let own_hi = vec4<u32>(cnt[4], cnt[5], cnt[6], cnt[7]);
    lo[t] = own_lo;
    hi[t] = own_hi;
    workgroupBarrier();
    for (var off = 1u; off < 256u; off <<= 1u) {
        var a = vec4<u32>(0u);
        var b = vec4<u32>(0u);
        if (t >= off) {
            a = lo[t - off];
            b = hi[t - off];
        }
        workgroupBarrier();
        lo[t] += a;
        hi[t] += b;
        workgroupBarrier();
    }
    let before_lo = lo[t] - own_lo;  // same-digit keys in earlier threads of the block
    let before_hi = hi[t] - own_hi;
    for (var j = 0u; j < 4u; j++) {
        let d = digit[j];
        if (d < 16u) {
            let g = d * params.blocks + wg.x;
            let start = offsets[g] - hist[g];
            keys_out[start + field(before_lo, before_hi, d) + rank[j]] = key[j];
        }
    }
}
"""

SIZES = {
    "small": {"100K": 100_003},
    "full": {"1M": 1 << 20},
}


def build(size: str, n: int) -> Program:
    rng = np.random.default_rng(12)
    keys = rng.integers(0, 1 << 32, size=n, dtype=np.uint32)
    nb = blocks(n, BLOCK)
    p = Program(
        workload="radix_sort",
        size=size,
        output="a",
        out_dtype=np.uint32,
        reference=lambda: np.sort(keys, kind="stable"),
    )
    p.kernel("histogram", HISTOGRAM)
    p.kernel("scatter", SCATTER)
    p.buffer("keys", keys)
    p.buffer("a", 4 * n)
    p.buffer("b", 4 * n)
    p.buffer("hist", 4 * 16 * nb)
    p.buffer("offsets", 4 * 16 * nb)
    pass_params = [p.buffer(f"pass{k}", params(n, DIGIT_BITS * k, nb)) for k in range(PASSES)]
    scan: list[Step] = []
    src = "keys"
    for k in range(PASSES):
        dst = "b" if k % 2 == 0 else "a"
        p.add("histogram", (nb, 1, 1), keys=src, hist="hist", params=pass_params[k])
        if scan:  # the same scan every pass: its scratch buffers are shared
            p.steps.extend(scan)
        else:
            scan = scan_steps(p, "hist", "offsets", 16 * nb, "hist_")
        p.add(
            "scatter",
            (nb, 1, 1),
            keys_in=src,
            hist="hist",
            offsets="offsets",
            keys_out=dst,
            params=pass_params[k],
        )
        src = dst
    p.facts.update(keys=n, passes=PASSES, blocks=nb, scan_levels=(len(scan) + 1) // 2, bytes=4 * n)
    return p
