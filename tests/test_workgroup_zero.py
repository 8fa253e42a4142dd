"""var<workgroup> memory starts at zero, as WGSL promises, on every adapter.

wgpu-native 29 compiles every pipeline with wgpu-core's
``zero_initialize_workgroup_memory: false``, so on lavapipe and on NVIDIA the memory
starts with what an earlier workgroup left there; vyre_native adds the zeroing to the
kernel (vyre_native/zero_workgroup.py). Each kernel here reads memory it never
initialises; each runs several dispatches of several workgroup counts, so memory
carried over from an earlier workgroup would show.
"""

from __future__ import annotations

import numpy as np
import pytest

import vyre_native as vn
from vyre_native.reflect import _reflect
from vyre_native.reflect.tokens import _prepare
from vyre_native.zero_workgroup import zero_workgroup_source

WORKGROUP_COUNTS = (1, 5, 32)
DISPATCHES = 3


def dispatches(prog: vn.Pipeline, words_per_workgroup: int, workgroups: int, inputs=()) -> list[np.ndarray]:
    """``DISPATCHES`` replays of one recording, each output read back as (workgroups, words)."""
    dev = prog.device
    out = dev.alloc(4 * words_per_workgroup * workgroups)
    rec = prog.record(list(inputs), [out], workgroups=(workgroups, 1, 1))
    seen = []
    for _ in range(DISPATCHES):
        rec.replay().wait()
        seen.append(np.frombuffer(rec.read_output(0), np.uint32).reshape(workgroups, words_per_workgroup))
    return seen


COUNTER = """
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
var<workgroup> counts: array<atomic<u32>, 16>;
var<workgroup> plain: array<u32, 16>;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) i: u32, @builtin(workgroup_id) wg: vec3<u32>) {
    atomicAdd(&counts[i % 16u], 1u);
    if (i < 16u) { plain[i] += 1u; }
    workgroupBarrier();
    if (i < 16u) {
        out[wg.x * 32u + i] = atomicLoad(&counts[i]);
        out[wg.x * 32u + 16u + i] = plain[i];
    }
}
"""


@pytest.mark.parametrize("workgroups", WORKGROUP_COUNTS)
def test_a_kernel_counting_into_workgroup_arrays_reads_exact_counts(
    device: vn.Device, workgroups: int
) -> None:
    prog = device.compile(COUNTER)
    want = np.array([4] * 16 + [1] * 16, np.uint32)
    for seen in dispatches(prog, 32, workgroups):
        assert (seen == want).all(), seen


SCALARS = """
struct Acc { n: u32, total: f32, v: vec3<f32> }
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
var<workgroup> hits: u32;
var<workgroup> acc: Acc;
var<workgroup> m: mat2x2<f32>;
var<workgroup> flag: bool;

@compute @workgroup_size(8, 2)
fn main(@builtin(local_invocation_index) i: u32, @builtin(workgroup_id) wg: vec3<u32>) {
    if (i == 3u) {
        hits += 1u;
        acc.n += 2u;
        acc.total += 1.5;
        acc.v += vec3(1.0, 2.0, 3.0);
        m[1][0] += 4.0;
        flag = !flag;
    }
    workgroupBarrier();
    if (i == 0u) {
        let b = wg.x * 8u;
        out[b] = hits;
        out[b + 1u] = acc.n;
        out[b + 2u] = bitcast<u32>(acc.total);
        out[b + 3u] = bitcast<u32>(acc.v.x);
        out[b + 4u] = bitcast<u32>(acc.v.z);
        out[b + 5u] = bitcast<u32>(m[1][0]);
        out[b + 6u] = select(0u, 1u, flag);
        out[b + 7u] = bitcast<u32>(m[0][1]);
    }
}
"""


@pytest.mark.parametrize("workgroups", WORKGROUP_COUNTS)
def test_workgroup_scalars_structs_and_matrices_start_at_zero(device: vn.Device, workgroups: int) -> None:
    prog = device.compile(SCALARS)
    f = lambda x: int(np.float32(x).view(np.uint32))
    want = np.array([1, 2, f(1.5), f(1.0), f(3.0), f(4.0), 1, 0], np.uint32)
    for seen in dispatches(prog, 8, workgroups):
        assert (seen == want).all(), seen


# A radix sort's local step, as in WebGPU radix sorts (kishimisu's among them): a digit
# histogram, an exclusive prefix sum whose first element is never written, because
# workgroup memory starts at zero, and a scatter by digit.
RADIX_STEP = """
@group(0) @binding(0) var<storage, read> keys: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
var<workgroup> hist: array<atomic<u32>, 16>;
var<workgroup> s_prefix_sum: array<u32, 17>;
var<workgroup> cursor: array<atomic<u32>, 16>;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) i: u32, @builtin(workgroup_id) wg: vec3<u32>) {
    let key = keys[wg.x * 64u + i];
    let digit = key & 15u;
    atomicAdd(&hist[digit], 1u);
    workgroupBarrier();
    if (i == 0u) {
        for (var d = 0u; d < 16u; d++) { s_prefix_sum[d + 1u] = s_prefix_sum[d] + atomicLoad(&hist[d]); }
    }
    workgroupBarrier();
    let at = s_prefix_sum[digit] + atomicAdd(&cursor[digit], 1u);
    out[wg.x * 81u + at] = key;
    if (i < 17u) { out[wg.x * 81u + 64u + i] = s_prefix_sum[i]; }
}
"""


@pytest.mark.parametrize("workgroups", WORKGROUP_COUNTS)
def test_a_prefix_sum_whose_first_element_must_start_at_zero_sorts_by_digit(
    device: vn.Device, workgroups: int
) -> None:
    keys = np.random.default_rng(workgroups).integers(0, 2**32, 64 * workgroups, dtype=np.uint32)
    prog = device.compile(RADIX_STEP)
    for seen in dispatches(prog, 81, workgroups, [device.upload(keys)]):
        for wg, row in enumerate(seen):
            block = keys[64 * wg : 64 * (wg + 1)]
            counts = np.bincount(block & 15, minlength=16)
            assert (row[64:] == np.concatenate([[0], np.cumsum(counts)])).all()
            assert (np.sort(row[:64] & 15, kind="stable") == row[:64] & 15).all()  # ordered by digit
            assert sorted(row[:64]) == sorted(block)  # a permutation of the block's keys


OVERRIDE_SIZED = """
override n: u32 = 64;
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
var<workgroup> tile: array<u32, n>;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) i: u32, @builtin(workgroup_id) wg: vec3<u32>) {
    for (var k = i; k < n; k += 64u) { tile[k] += k; }
    workgroupBarrier();
    if (i == 0u) {
        var sum = 0u;
        for (var k = 0u; k < n; k++) { sum += tile[k]; }
        out[wg.x] = sum;
    }
}
"""


@pytest.mark.parametrize("n", [64, 300])
def test_an_override_sized_workgroup_array_starts_at_zero(device: vn.Device, n: int) -> None:
    prog = device.compile(OVERRIDE_SIZED, constants={"n": n})
    for workgroups in WORKGROUP_COUNTS:
        for seen in dispatches(prog, 1, workgroups):
            assert (seen == n * (n - 1) // 2).all(), seen


ATOMIC_STRUCTS = """
struct Bin { count: atomic<u32>, total: atomic<i32>, tag: vec2<f32> }
alias Bins = array<Bin, 8>;
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
var<workgroup> bins: Bins;
var<workgroup> grid: array<array<atomic<u32>, 3>, 5>;

@compute @workgroup_size(32)
fn main(@builtin(local_invocation_index) i: u32, @builtin(workgroup_id) wg: vec3<u32>) {
    atomicAdd(&bins[i % 8u].count, 1u);
    atomicSub(&bins[i % 8u].total, 2);
    if (i < 8u) { bins[i].tag.y += 1.0; }
    atomicAdd(&grid[i % 5u][i % 3u], 1u);
    workgroupBarrier();
    if (i < 8u) {
        out[wg.x * 39u + i] = atomicLoad(&bins[i].count);
        out[wg.x * 39u + 8u + i] = bitcast<u32>(atomicLoad(&bins[i].total));
        out[wg.x * 39u + 16u + i] = u32(bins[i].tag.y);
    }
    if (i < 15u) { out[wg.x * 39u + 24u + i] = atomicLoad(&grid[i / 3u][i % 3u]); }
}
"""


@pytest.mark.parametrize("workgroups", WORKGROUP_COUNTS)
def test_atomics_in_arrays_of_structs_and_nested_arrays_start_at_zero(
    device: vn.Device, workgroups: int
) -> None:
    prog = device.compile(ATOMIC_STRUCTS)
    grid = np.zeros((5, 3), np.uint32)
    for i in range(32):
        grid[i % 5, i % 3] += 1
    want = np.concatenate([[4] * 8, [np.uint32(2**32 - 8)] * 8, [1] * 8, grid.ravel()]).astype(np.uint32)
    for seen in dispatches(prog, 39, workgroups):
        assert (seen == want).all(), seen


_BODY = """{
    atomicAdd(&hits, 1u);
    workgroupBarrier();
    if (INDEX == 0u) { out[WG] = atomicLoad(&hits); }
}"""

SIGNATURES = {
    "no parameters": (
        "fn main()",
        {"INDEX": "0u", "WG": "0u"},
    ),
    "the index, oddly written": (
        "fn main(@builtin(local_invocation_index,) my_index : u32, @builtin(workgroup_id) wg: vec3<u32>,)",
        {"INDEX": "my_index", "WG": "wg.x"},
    ),
    "the index as a struct member": (
        "fn main(input: Input)",
        {"INDEX": "input.li", "WG": "input.wg.x"},
    ),
    "the index typed by an alias": (
        "fn main(@builtin(local_invocation_index) li: Index, @builtin(workgroup_id) wg: vec3<u32>)",
        {"INDEX": "li", "WG": "wg.x"},
    ),
    "only local_invocation_id": (
        "fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wg: vec3<u32>)",
        {"INDEX": "(lid.x + lid.y)", "WG": "wg.x"},
    ),
}
SIGNATURE_MODULE = """
alias Index = u32;
struct Input { @builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32, }
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
var<workgroup> hits: atomic<u32>;
@compute @workgroup_size(4, 2) SIGNATURE BODY
"""


@pytest.mark.parametrize("signature", list(SIGNATURES))
def test_every_way_of_writing_the_entry_points_parameters_gets_zeroed_memory(
    device: vn.Device, signature: str
) -> None:
    header, names = SIGNATURES[signature]
    body = _BODY
    for k, v in names.items():
        body = body.replace(k, v)
    prog = device.compile(SIGNATURE_MODULE.replace("SIGNATURE", header).replace("BODY", body))
    workgroups = 1 if signature == "no parameters" else 5  # workgroup_id is needed to write apart
    for seen in dispatches(prog, 1, workgroups):
        assert (seen == 8).all(), seen


SHADOWED = """
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
var<workgroup> tile: array<u32, 4>;
fn bump() { tile[1] += 1u; }
fn read() -> u32 { return tile[1]; }

@compute @workgroup_size(4)
fn main(@builtin(local_invocation_index) tile: u32, @builtin(workgroup_id) wg: vec3<u32>) {
    if (tile == 0u) { bump(); }
    workgroupBarrier();
    if (tile == 0u) { out[wg.x] = read(); }
}
"""


def test_workgroup_memory_named_like_an_entry_parameter_is_zeroed_too(device: vn.Device) -> None:
    prog = device.compile(SHADOWED)
    for workgroups in WORKGROUP_COUNTS:
        for seen in dispatches(prog, 1, workgroups):
            assert (seen == 1).all(), seen


def zeroing_function(src: str, entry: str) -> str:
    """The zeroing function the rewrite adds to ``src`` for entry point ``entry``."""
    module, parsed, used = _reflect(_prepare(src), entry, (), {})
    zeroed = zero_workgroup_source(parsed, entry, used, module.workgroup_size)
    assert zeroed is not None
    return zeroed[zeroed.index("\nfn _vn_zero_workgroup") :]


def test_only_the_workgroup_memory_the_entry_point_uses_is_zeroed() -> None:
    src = """
var<workgroup> mine: array<u32, 64>;
var<workgroup> other: array<u32, 1000000>;
@compute @workgroup_size(64) fn a(@builtin(local_invocation_index) i: u32) { mine[i] = mine[i] + 1u; }
@compute @workgroup_size(64) fn b(@builtin(local_invocation_index) i: u32) { other[i] = 1u; }
"""
    tail = zeroing_function(src, "a")
    assert "mine[" in tail and "other" not in tail


def test_a_wgsl_error_in_a_kernel_with_workgroup_memory_keeps_its_own_line_and_column(
    device: vn.Device,
) -> None:
    # on the line where the zeroing call goes in, after it
    line = "fn main() { t = 1u; let x: u32 = 1.5; }"
    src = f"var<workgroup> t: u32;\n@compute @workgroup_size(1)\n{line}\n"
    with pytest.raises(vn.ShaderError) as caught:
        device.compile(src)
    assert (caught.value.line, caught.value.column) == (3, line.index("x:") + 1)


HIDES_BARRIER = """
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
var<workgroup> t: u32;
fn workgroupBarrier() {}
@compute @workgroup_size(1) fn main() { t = 7u; out[0] = t; }
"""


def test_a_module_hiding_workgroupBarrier_is_refused_with_the_opt_out_as_its_fix(device: vn.Device) -> None:
    with pytest.raises(vn.ShaderError, match=r"(?s)`workgroupBarrier`.*Fix:.*zero_workgroup_memory=False") as info:
        device.compile(HIDES_BARRIER)
    # at the module's own declaration: `fn workgroupBarrier` on line 4
    assert (info.value.line, info.value.column) == (4, 4)


def test_the_opt_out_compiles_a_module_hiding_workgroupBarrier(device: vn.Device, run) -> None:
    prog = device.compile(HIDES_BARRIER, zero_workgroup_memory=False)
    (out,) = run(prog, [], [device.alloc(4)], dtype=np.uint32)
    assert out[0] == 7


def test_zero_workgroup_memory_takes_only_a_bool(device: vn.Device) -> None:
    with pytest.raises(vn.WrongTypeError, match="zero_workgroup_memory.*Fix:"):
        device.compile(COUNTER, zero_workgroup_memory="no")  # type: ignore[arg-type]


def test_the_opt_out_is_per_pipeline_a_same_source_compiled_after_it_is_zeroed(device: vn.Device) -> None:
    device.compile(COUNTER, zero_workgroup_memory=False)
    prog = device.compile(COUNTER)
    want = np.array([4] * 16 + [1] * 16, np.uint32)
    for seen in dispatches(prog, 32, 5):
        assert (seen == want).all(), seen


def _struct_chain(n: int, last: str) -> str:
    """``n`` structs, each the only member `a` of the one before, the last holding ``last``."""
    return "\n".join([f"struct Q{i} {{ a: Q{i + 1} }}" for i in range(n)] + [f"struct Q{n} {{ {last} }}"])


def test_a_chain_of_structs_too_deep_to_write_as_one_path_is_zeroed_within_the_nesting_limit(
    device: vn.Device,
) -> None:
    # 1,600 links: w.a.a...a written whole is 1,600 operators, past the nesting check's
    # 255 levels of 6; the zeroing goes on from a pointer every _PATH_MAX accesses instead
    src = (
        _struct_chain(1600, "n: atomic<u32>, v: array<u32, 4>")
        + "\nvar<workgroup> w: Q0;\n@group(0) @binding(0) var<storage, read_write> o: array<u32>;\n"
        "@compute @workgroup_size(1)\nfn main() { let p = &w; _ = p; o[0] = 1u; }\n"
    )
    device.compile(src)  # refused before ("nests deeper than 255 levels"), with no place


CHAIN_40 = (
    _struct_chain(40, "n: atomic<u32>, v: array<u32, 4>, s: u32")
    + """
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
var<workgroup> w: Q0;
@compute @workgroup_size(4)
fn main(@builtin(local_invocation_index) i: u32, @builtin(workgroup_id) wg: vec3<u32>) {
    let leaf = &w""" + ".a" * 40 + """;
    atomicAdd(&(*leaf).n, 1u);
    (*leaf).v[i] += 1u;
    if (i == 0u) { (*leaf).s += 1u; }
    workgroupBarrier();
    if (i == 0u) { out[wg.x * 3u] = atomicLoad(&(*leaf).n); out[wg.x * 3u + 1u] = (*leaf).v[3]; out[wg.x * 3u + 2u] = (*leaf).s; }
}
"""
)


@pytest.mark.parametrize("workgroups", WORKGROUP_COUNTS)
def test_atomics_and_arrays_at_the_end_of_a_chain_past_one_paths_length_start_at_zero(
    device: vn.Device, workgroups: int
) -> None:
    prog = device.compile(CHAIN_40)  # 40 links: past _PATH_MAX, so through a pointer
    for seen in dispatches(prog, 3, workgroups):
        assert (seen == [4, 1, 1]).all(), seen


def test_a_struct_without_atomics_or_arrays_is_zeroed_whole_however_deep() -> None:
    # 20,000 links: the rewrite reads each struct once (it scanned the module for each,
    # quadratic: minutes here) and zeroes the struct as `w = Q0();`, not as a path
    src = _struct_chain(20000, "x: u32") + "\nvar<workgroup> w: Q0;\n@compute @workgroup_size(1) fn main() { let p = &w; _ = p; }\n"
    tail = zeroing_function(src, "main")
    assert "w = Q0();" in tail and ".a" not in tail


def test_a_rewrite_that_does_not_compile_is_refused_at_the_workgroup_declaration(
    device: vn.Device, monkeypatch: pytest.MonkeyPatch
) -> None:
    import vyre_native.pipeline as pipeline

    monkeypatch.setattr(pipeline, "zero_workgroup_source", lambda *args: "not wgsl")
    src = "@group(0) @binding(0) var<storage, read_write> o: array<u32>;\nvar<workgroup> t9: u32;\n" \
          "@compute @workgroup_size(1) fn main() { t9 = 1u; o[0] = t9; }\n"
    with pytest.raises(vn.ShaderError, match=r"(?s)does not compile, though the module itself does.*Fix:.*zero_workgroup_memory=False") as info:
        device.compile(src)
    assert (info.value.line, info.value.column) == (2, 16)
