"""A stack of pre-norm transformer blocks, forward, f32, batch 1.

Per block (x: seq x width; heads of 64; causal attention):
    h  = x + (attention(layernorm1(x)) @ Wo + bo)
    x' = h + (gelu(layernorm2(h) @ W1 + b1) @ W2 + b2)
as 11 dispatches: layernorm, QKV matmul, scores (Q K^T / sqrt(64), causal),
softmax (max-subtracted: WGSL's exp has no overflow guard), probabilities @ V,
output matmul, residual add, layernorm, matmul + gelu (tanh approximation, its
argument clamped: tanh of a large f32 can be NaN on some drivers), matmul,
residual add. Matmuls are 16 x 16 tiles in workgroup memory, one output a thread.

Every block's weights are its own buffers (random, fixed seed); scratch buffers
are shared by the blocks; the residual stream ping-pongs between two buffers and
the first block reads the input, which is never written. Checked against the same
arithmetic in numpy (float64) with an absolute tolerance.
"""

from __future__ import annotations

import math

import numpy as np
from harness import elementwise
from workload import Program, blocks, params

HEAD = 64

LAYERNORM = """
struct Params { rows: u32, dim: u32, eps: f32, p3: u32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> gamma: array<f32>;
@group(0) @binding(2) var<storage, read> beta: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
@group(0) @binding(4) var<uniform> params: Params;

var<workgroup> red: array<f32, 256>;

fn total(t: u32, v: f32) -> f32 {
    red[t] = v;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s >>= 1u) {
        if (t < s) { red[t] += red[t + s]; }
        workgroupBarrier();
    }
    let r = red[0];
    workgroupBarrier();  // everyone has read red[0] before it is written again
    return r;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let d = params.dim;
    let off = wg.x * d;
    var s = 0.0;
    for (var c = t; c < d; c += 256u) { s += x[off + c]; }
    let mean = total(t, s) / f32(d);
    var v = 0.0;
    for (var c = t; c < d; c += 256u) {
        let e = x[off + c] - mean;
        v += e * e;
    }
    let inv = inverseSqrt(total(t, v) / f32(d) + params.eps);
    for (var c = t; c < d; c += 256u) {
        y[off + c] = (x[off + c] - mean) * inv * gamma[c] + beta[c];
    }
}
"""

MATMUL = """
struct Params { m: u32, n: u32, k: u32, gelu: u32 }
@group(0) @binding(0) var<storage, read> a: array<f32>;     // m x k
@group(0) @binding(1) var<storage, read> b: array<f32>;     // k x n
@group(0) @binding(2) var<storage, read> bias: array<f32>;  // n
@group(0) @binding(3) var<storage, read_write> c: array<f32>;  // m x n
@group(0) @binding(4) var<uniform> params: Params;

var<workgroup> ta: array<f32, 256>;
var<workgroup> tb: array<f32, 256>;

fn gelu(x: f32) -> f32 {
    let u = clamp(0.7978845608028654 * (x + 0.044715 * x * x * x), -15.0, 15.0);
    return 0.5 * x * (1.0 + tanh(u));
}

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let row = wg.y * 16u + lid.y;
    let col = wg.x * 16u + lid.x;
    let m = params.m;
    let n = params.n;
    let k = params.k;
    var acc = 0.0;
    for (var k0 = 0u; k0 < k; k0 += 16u) {
        let ak = k0 + lid.x;
        var av = 0.0;
        if (row < m && ak < k) { av = a[row * k + ak]; }
        ta[lid.y * 16u + lid.x] = av;
        let bk = k0 + lid.y;
        var bv = 0.0;
        if (bk < k && col < n) { bv = b[bk * n + col]; }
        tb[lid.y * 16u + lid.x] = bv;
        workgroupBarrier();
        for (var i = 0u; i < 16u; i++) { acc += ta[lid.y * 16u + i] * tb[i * 16u + lid.x]; }
        workgroupBarrier();
    }
    if (row < m && col < n) {
        var v = acc + bias[col];
        if (params.gelu != 0u) { v = gelu(v); }
        c[row * n + col] = v;
    }
}
"""

#: scores[h, i, j] = q_i . k_j * scale for j <= i (causal); qkv rows are [q | k | v]
SCORES = """
struct Params { seq: u32, dim: u32, heads: u32, hd: u32, scale: f32, p5: u32, p6: u32, p7: u32 }
@group(0) @binding(0) var<storage, read> qkv: array<f32>;
@group(0) @binding(1) var<storage, read_write> scores: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;

@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x;
    let i = gid.y;
    let h = gid.z;
    let s = params.seq;
    if (i >= s || j >= s) { return; }
    var acc = 0.0;
    if (j <= i) {
        let q = i * 3u * params.dim + h * params.hd;
        let kk = j * 3u * params.dim + params.dim + h * params.hd;
        for (var d = 0u; d < params.hd; d++) { acc += qkv[q + d] * qkv[kk + d]; }
    }
    scores[(h * s + i) * s + j] = acc * params.scale;
}
"""

#: probs[h, i, :] = softmax over j <= i of scores[h, i, j], 0 past i; one workgroup a row
SOFTMAX = """
struct Params { seq: u32, dim: u32, heads: u32, hd: u32, scale: f32, p5: u32, p6: u32, p7: u32 }
@group(0) @binding(0) var<storage, read> scores: array<f32>;
@group(0) @binding(1) var<storage, read_write> probs: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;

var<workgroup> red: array<f32, 64>;

fn reduce(t: u32, v: f32, take_max: bool) -> f32 {
    red[t] = v;
    workgroupBarrier();
    for (var s = 32u; s > 0u; s >>= 1u) {
        if (t < s) {
            if (take_max) { red[t] = max(red[t], red[t + s]); } else { red[t] += red[t + s]; }
        }
        workgroupBarrier();
    }
    let r = red[0];
    workgroupBarrier();
    return r;
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let i = wg.x;
    let s = params.seq;
    let row = (wg.y * s + i) * s;
    var m = -3.4e38;
    for (var j = t; j <= i; j += 64u) { m = max(m, scores[row + j]); }
    m = reduce(t, m, true);
    var sum = 0.0;
    for (var j = t; j <= i; j += 64u) { sum += exp(scores[row + j] - m); }
    let inv = 1.0 / reduce(t, sum, false);
    for (var j = t; j < s; j += 64u) {
        var p = 0.0;
        if (j <= i) { p = exp(scores[row + j] - m) * inv; }
        probs[row + j] = p;
    }
}
"""

#: att[i, c] = sum over j <= i of probs[head(c), i, j] * v_j[c]
ATTEND = """
struct Params { seq: u32, dim: u32, heads: u32, hd: u32, scale: f32, p5: u32, p6: u32, p7: u32 }
@group(0) @binding(0) var<storage, read> probs: array<f32>;
@group(0) @binding(1) var<storage, read> qkv: array<f32>;
@group(0) @binding(2) var<storage, read_write> att: array<f32>;
@group(0) @binding(3) var<uniform> params: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let c = gid.x;
    let i = gid.y;
    let s = params.seq;
    let dim = params.dim;
    if (c >= dim || i >= s) { return; }
    let row = ((c / params.hd) * s + i) * s;
    var acc = 0.0;
    for (var j = 0u; j <= i; j++) { acc += probs[row + j] * qkv[j * 3u * dim + 2u * dim + c]; }
    att[i * dim + c] = acc;
}
"""

ADD = elementwise(
    "c[i] = a[i] + b[i];",
    *("read a", "read b", "read_write c", "uniform params: Params"),
    head="struct Params { n: u32, p1: u32, p2: u32, p3: u32 }",
    guard="i < params.n",
    size=256,
)

SIZES = {
    # (sequence, width, depth)
    "small": {"s64-w64-x2": (64, 64, 2), "s64-w128-x2": (64, 128, 2)},
    "full": {"w256": (128, 256, 12), "w768": (128, 768, 12)},
}

EPS = 1e-5


def _layer_weights(rng: np.random.Generator, d: int) -> dict[str, np.ndarray]:
    def w(fan_in: int, fan_out: int) -> np.ndarray:
        return (rng.standard_normal((fan_in, fan_out)) / math.sqrt(fan_in)).astype(np.float32)

    def v(n: int, scale: float, centre: float = 0.0) -> np.ndarray:
        return (centre + scale * rng.standard_normal(n)).astype(np.float32)

    return {
        "ln1_g": v(d, 0.1, 1.0),
        "ln1_b": v(d, 0.1),
        "wqkv": w(d, 3 * d),
        "bqkv": v(3 * d, 0.02),
        "wo": w(d, d),
        "bo": v(d, 0.02),
        "ln2_g": v(d, 0.1, 1.0),
        "ln2_b": v(d, 0.1),
        "w1": w(d, 4 * d),
        "b1": v(4 * d, 0.02),
        "w2": w(4 * d, d),
        "b2": v(d, 0.02),
    }


def reference(x: np.ndarray, layers: list[dict[str, np.ndarray]], heads: int) -> np.ndarray:
    """The same forward pass in float64."""

    def ln(v: np.ndarray, g: np.ndarray, b: np.ndarray) -> np.ndarray:
        mu = v.mean(axis=1, keepdims=True)
        var = ((v - mu) ** 2).mean(axis=1, keepdims=True)
        return (v - mu) / np.sqrt(var + EPS) * g + b

    def gelu(v: np.ndarray) -> np.ndarray:
        return 0.5 * v * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (v + 0.044715 * v**3)))

    s, d = x.shape
    mask = np.tril(np.ones((s, s), bool))
    x = x.astype(np.float64)
    for lw in layers:
        w = {k: a.astype(np.float64) for k, a in lw.items()}
        qkv = ln(x, w["ln1_g"], w["ln1_b"]) @ w["wqkv"] + w["bqkv"]
        q, k, v = (qkv[:, i * d : (i + 1) * d].reshape(s, heads, HEAD).transpose(1, 0, 2) for i in range(3))
        sc = np.where(mask, q @ k.transpose(0, 2, 1) / math.sqrt(HEAD), -np.inf)
        p = np.exp(sc - sc.max(axis=2, keepdims=True))
        p /= p.sum(axis=2, keepdims=True)
        att = (p @ v).transpose(1, 0, 2).reshape(s, d)
        h = x + att @ w["wo"] + w["bo"]
        x = h + gelu(ln(h, w["ln2_g"], w["ln2_b"]) @ w["w1"] + w["b1"]) @ w["w2"] + w["b2"]
    return x


def build(size: str, shape: tuple[int, int, int]) -> Program:
    s, d, depth = shape
    heads = d // HEAD
    rng = np.random.default_rng(13)
    x = rng.standard_normal((s, d)).astype(np.float32)
    layers = [_layer_weights(rng, d) for _ in range(depth)]
    p = Program(
        workload="transformer",
        size=size,
        output="x1" if depth % 2 == 0 else "x0",
        out_dtype=np.float32,
        reference=lambda: reference(x, layers, heads),
        atol=1e-3,
    )
    for name, wgsl in (
        ("layernorm", LAYERNORM),
        ("matmul", MATMUL),
        ("scores", SCORES),
        ("softmax", SOFTMAX),
        ("attend", ATTEND),
        ("add", ADD),
    ):
        p.kernel(name, wgsl)
    p.buffer("x", x)
    for name, n in (("x0", s * d), ("x1", s * d), ("xn", s * d), ("qkv", 3 * s * d), ("att", s * d)):
        p.buffer(name, 4 * n)
    for name, n in (("proj", s * d), ("h", s * d), ("hn", s * d), ("f", 4 * s * d), ("g", s * d)):
        p.buffer(name, 4 * n)
    p.buffer("scores", 4 * heads * s * s)
    p.buffer("probs", 4 * heads * s * s)
    ln_par = p.buffer("ln_params", params(s, d, EPS))
    att_par = p.buffer("att_params", params(s, d, heads, HEAD, 1.0 / math.sqrt(HEAD)))
    add_par = p.buffer("add_params", params(s * d))
    mm = {
        "qkv": p.buffer("mm_qkv", params(s, 3 * d, d, 0)),
        "o": p.buffer("mm_o", params(s, d, d, 0)),
        "up": p.buffer("mm_up", params(s, 4 * d, d, 1)),
        "down": p.buffer("mm_down", params(s, d, 4 * d, 0)),
    }

    def matmul(a: str, w: str, bias: str, c: str, n: int, par: str) -> None:
        p.add("matmul", (blocks(n, 16), blocks(s, 16), 1), a=a, b=w, bias=bias, c=c, params=par)

    src = "x"
    for li, lw in enumerate(layers):
        wb = {k: p.buffer(f"l{li}_{k}", a) for k, a in lw.items()}
        dst = f"x{li % 2}"
        p.add("layernorm", (s, 1, 1), x=src, gamma=wb["ln1_g"], beta=wb["ln1_b"], y="xn", params=ln_par)
        matmul("xn", wb["wqkv"], wb["bqkv"], "qkv", 3 * d, mm["qkv"])
        p.add("scores", (blocks(s, 16), blocks(s, 16), heads), qkv="qkv", scores="scores", params=att_par)
        p.add("softmax", (s, heads, 1), scores="scores", probs="probs", params=att_par)
        p.add("attend", (blocks(d, 64), s, 1), probs="probs", qkv="qkv", att="att", params=att_par)
        matmul("att", wb["wo"], wb["bo"], "proj", d, mm["o"])
        p.add("add", (blocks(s * d, 256), 1, 1), a=src, b="proj", c="h", params=add_par)
        p.add("layernorm", (s, 1, 1), x="h", gamma=wb["ln2_g"], beta=wb["ln2_b"], y="hn", params=ln_par)
        matmul("hn", wb["w1"], wb["b1"], "f", 4 * d, mm["up"])
        matmul("f", wb["w2"], wb["b2"], "g", d, mm["down"])
        p.add("add", (blocks(s * d, 256), 1, 1), a="h", b="g", c=dst, params=add_par)
        src = dst
    weights = sum(a.size for lw in layers for a in lw.values())
    p.facts.update(seq=s, width=d, depth=depth, heads=heads, weights=weights, bytes=4 * weights)
    return p
