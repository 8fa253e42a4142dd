"""WGSL binding reflection (vyre_native.reflect), pure Python, and C's nesting-depth check
of WGSL (vn_wgsl_check_nesting): no GPU needed."""

from __future__ import annotations

import dataclasses
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vyre_native._lib import ffi, lib
from vyre_native.errors import ShaderError
from vyre_native.reflect import MAX_NESTING_DEPTH, Binding, reflect, tokenize
from vyre_native.reflect import tokens as reflect_tokens

MAIN = "@compute @workgroup_size(64) fn main() { let p = &x; }"
# WGSL's line breaks (CR LF is one)
LINE_BREAKS = ["\n", "\v", "\f", "\r", "\r\n", "\x85", "\u2028", "\u2029"]


def size_of(type_text: str, prelude: str = "", space: str = "storage, read_write") -> int:
    """min_size of a binding `x` of the given type, used by `main`."""
    wgsl = f"{prelude}\n@group(0) @binding(0) var<{space}> x: {type_text};\n{MAIN}"
    (binding,) = reflect(wgsl).bindings
    return binding.min_size


# ---------------------------------------------------------------- layout rules


@pytest.mark.parametrize(("type_text", "size"), [("f32", 4), ("i32", 4), ("u32", 4), ("f16", 2)])
def test_scalar_sizes(type_text: str, size: int) -> None:
    assert size_of(type_text, prelude="enable f16;") == size


@pytest.mark.parametrize("type_text", ["atomic<u32>", "atomic<i32>"])
def test_atomic_is_four_bytes(type_text: str) -> None:
    assert size_of(type_text) == 4


@pytest.mark.parametrize(
    ("type_text", "size"),
    [
        ("vec2<f32>", 8),
        ("vec3<f32>", 12),
        ("vec4<f32>", 16),
        ("vec2f", 8),
        ("vec3u", 12),
        ("vec4i", 16),
        ("vec2h", 4),
        ("vec3h", 6),
        ("vec4<f16>", 8),
    ],
)
def test_vector_sizes_including_shorthands(type_text: str, size: int) -> None:
    assert size_of(type_text) == size


def test_vec3_aligns_to_16_so_a_following_f32_packs_into_its_tail() -> None:
    assert size_of("S", "struct S { a: vec3<f32>, b: f32 }") == 16


def test_f32_before_vec3_pads_the_vec3_to_offset_16() -> None:
    assert size_of("S", "struct S { a: f32, b: vec3<f32> }") == 32


@pytest.mark.parametrize(
    ("type_text", "size"),
    [
        ("mat3x3<f32>", 48),
        ("mat4x4f", 64),
        ("mat2x2f", 16),
        ("mat3x2f", 24),
        ("mat2x3h", 16),
        ("mat4x3<f32>", 64),
    ],
)
def test_matrix_is_columns_of_padded_vectors(type_text: str, size: int) -> None:
    assert size_of(type_text) == size


def test_array_of_vec3_has_stride_16() -> None:
    assert size_of("array<vec3<f32>, 4>") == 64


@pytest.mark.parametrize("count", ["4", "4u", "4i", "0x4", "0x4u"])
def test_array_count_literal_forms(count: str) -> None:
    assert size_of(f"array<f32,{count}>") == 16


def test_nested_arrays() -> None:
    assert size_of("array<array<vec2<f32>, 3>, 2>") == 48


def test_bare_runtime_array_is_zero() -> None:
    assert size_of("array<f32>") == 0


def test_struct_ending_in_runtime_array_is_its_fixed_part() -> None:
    assert size_of("S", "struct S { n: u32, data: array<f32> }") == 4


def test_runtime_array_member_offset_follows_element_alignment() -> None:
    assert size_of("S", "struct S { n: u32, data: array<vec4<f32>> }") == 16


def test_align_attribute_moves_member_and_struct_alignment() -> None:
    # b at 16, ends at 20; the struct aligns to 16
    assert size_of("S", "struct S { a: u32, @align(16) b: u32 }") == 32


def test_size_attribute_reserves_bytes() -> None:
    assert size_of("S", "struct S { @size(32) a: u32, b: u32 }") == 36


def test_nested_struct_and_array_of_structs() -> None:
    prelude = """
        struct Inner { a: vec2<f32>, b: f32 }            // size 16, align 8
        struct Outer { x: f32, inner: Inner, arr: array<Inner, 3> }
    """
    # x 0..4, inner 8..24, arr 24..72
    assert size_of("Outer", prelude) == 72


def test_struct_may_be_used_before_it_is_declared() -> None:
    wgsl = f"""
        @group(0) @binding(0) var<storage, read_write> x: Outer;
        {MAIN}
        struct Outer {{ a: Inner, b: u32 }}
        struct Inner {{ v: vec4<f32> }}
    """
    assert reflect(wgsl).bindings[0].min_size == 32


def test_alias_and_old_type_alias() -> None:
    prelude = "alias V = vec4<f32>; type Pair = array<V, 2>;"
    assert size_of("array<Pair, 3>", prelude) == 96


@pytest.mark.parametrize(("type_text", "size"), [("S", 12), ("vec3<f32>", 12), ("f32", 4)])
def test_uniform_gets_natural_size_not_rounded_to_16(type_text: str, size: int) -> None:
    prelude = "struct S { a: u32, b: u32, c: u32 }"
    assert size_of(type_text, prelude, space="uniform") == size


@pytest.mark.parametrize(
    ("declaration", "type_text", "size"),
    [
        ("struct vec2f { a: f32, b: f32, c: f32 }", "vec2f", 12),
        ("struct f32 { a: vec4<u32> }", "f32", 16),
        ("struct vec2 { a: u32, b: u32, c: u32 }", "vec2", 12),
        ("struct atomic { a: vec4u }", "atomic", 16),
        ("struct array { a: u32, b: u32 }", "array", 8),
        ("alias vec2f = vec3<u32>;", "vec2f", 12),
        ("alias mat2x2f = array<u32, 9>;", "mat2x2f", 36),
        ("alias u32 = vec4<f32>;", "array<u32, 2>", 32),
        ("alias bool = u32;", "bool", 4),
    ],
)
def test_module_declarations_shadow_predeclared_type_names(
    declaration: str, type_text: str, size: int
) -> None:
    assert size_of(type_text, declaration) == size


def test_struct_vec2f_is_sized_by_its_members() -> None:
    assert size_of("vec2f", "struct vec2f { a: f32, b: f32, c: f32 }") == 12
    assert size_of("array<vec2f, 2>", "struct vec2f { a: f32, b: f32, c: f32 }") == 24


def test_bool_in_a_buffer_is_an_error() -> None:
    with pytest.raises(ShaderError, match=r"(?s)bool.*Fix: use u32"):
        size_of("S", "struct S { flag: bool }")


# Sizes and alignments of the member types, straight from the WGSL spec's table.
MEMBER_TYPES = {
    "f32": (4, 4),
    "u32": (4, 4),
    "f16": (2, 2),
    "vec2<f32>": (8, 8),
    "vec3<f32>": (12, 16),
    "vec4<f32>": (16, 16),
    "vec2h": (4, 4),
    "vec3h": (6, 8),
    "vec4h": (8, 8),
    "vec3i": (12, 16),
    "mat2x2f": (16, 8),
    "mat3x3f": (48, 16),
    "mat2x3h": (16, 8),
}


@given(st.lists(st.sampled_from(sorted(MEMBER_TYPES)), min_size=1, max_size=12))
def test_struct_size_matches_an_independent_oracle(members: list[str]) -> None:
    offset, align = 0, 1
    for name in members:
        size, member_align = MEMBER_TYPES[name]
        offset = (offset + member_align - 1) // member_align * member_align + size
        align = max(align, member_align)
    expected = (offset + align - 1) // align * align
    fields = ", ".join(f"m{i}: {t}" for i, t in enumerate(members))
    assert size_of("S", f"enable f16; struct S {{ {fields} }}") == expected


# ---------------------------------------------------------------- tokens and attributes


def test_attributes_in_any_order_and_spacing() -> None:
    wgsl = """
        @binding(1)@group(0) var<storage,read_write> x: array<f32>;
        @ group ( 2 )
        @ binding ( 3 )
        var < storage , read > y : array < vec4 < f32 > , 4 > ;
        @compute
        @workgroup_size(64)
        fn main() { let p = &x; let q = &y; }
    """
    got = [(b.group, b.binding, b.name) for b in reflect(wgsl).bindings]
    assert got == [(0, 1, "x"), (2, 3, "y")]


def test_nested_block_comments_hide_what_they_enclose() -> None:
    wgsl = """
        /* outer /* inner */ @group(0) @binding(1) var<uniform> hidden: u32; */
        // @group(0) @binding(2) var<uniform> also_hidden: u32;
        @group(0) @binding(0) var<storage, read_write> x: array<f32>;
        @compute @workgroup_size(64) fn main() { let p = &x; let h = hidden + also_hidden; }
    """
    assert [b.name for b in reflect(wgsl).bindings] == ["x"]


def test_unclosed_block_comment_is_an_error_with_its_line() -> None:
    with pytest.raises(ShaderError, match="never closed") as info:
        reflect(f"{MAIN}\n/* a /* b */ still open")
    assert info.value.line == 2


@pytest.mark.parametrize(
    "line_break", LINE_BREAKS, ids=lambda c: f"U+{ord(c[0]):04X}" + ("_LF" if len(c) > 1 else "")
)
def test_line_comment_ends_at_each_wgsl_line_break(line_break: str) -> None:
    wgsl = f"// a comment{line_break}@group(0) @binding(0) var<storage, read_write> x: u32;{line_break}{MAIN}"
    assert [b.name for b in reflect(wgsl).bindings] == ["x"]


def test_cr_only_file_reflects_its_bindings_and_entry_point() -> None:
    wgsl = "// vyre\r@group(0) @binding(0) var<storage, read_write> x: u32;\r// main\r" + MAIN + "\r"
    module = reflect(wgsl)
    assert [b.name for b in module.bindings] == ["x"]
    assert module.workgroup_size == (64, 1, 1)


@pytest.mark.parametrize(
    "line_break", LINE_BREAKS, ids=lambda c: f"U+{ord(c[0]):04X}" + ("_LF" if len(c) > 1 else "")
)
def test_errors_count_lines_at_each_wgsl_line_break_with_cr_lf_as_one(line_break: str) -> None:
    wgsl = line_break.join(["// 1", "// 2", "@group(0) @binding(0) var<storage, read_write> x: bool;", MAIN])
    with pytest.raises(ShaderError, match="bool") as info:
        reflect(wgsl)
    assert info.value.line == 3


def test_lrm_and_rlm_are_blankspace() -> None:
    wgsl = f"@group(0)\u200e@binding(0)\u200fvar<storage, read_write> x: u32;\n{MAIN}"
    assert [b.name for b in reflect(wgsl).bindings] == ["x"]


def test_binding_numbers_may_be_hex_and_const_expressions() -> None:
    wgsl = """
        const BASE = 2;
        @group(0) @binding(0x1u) var<storage> a: u32;
        @group(0) @binding(BASE * 2 - 1) var<storage> b: u32;
        @compute @workgroup_size(1) fn main() { let s = a + b; }
    """
    assert [(b.binding, b.name) for b in reflect(wgsl).bindings] == [(1, "a"), (3, "b")]


BASE_SHADER = """
    enable f16 ;
    const N : u32 = 4u ;
    override W = 8 ;
    struct S { a : f32 , @align ( 16 ) b : vec3 < f32 > , data : array < vec4h > , }
    @ group ( 1 ) @ binding ( 2 ) var < storage , read_write > out : S ;
    @ binding ( 0 ) @ group ( 0 ) var < uniform > params : array < vec4 < u32 > , N > ;
    var < workgroup > tile : array < f32 , 64 > ;
    fn helper ( i : u32 ) -> f32 { return f32 ( params [ i ] . x ) ; }
    @ compute @ workgroup_size ( W , N / 2 ) fn main ( ) { out . a = helper ( 0u ) ; }
"""


# Comments start after a blank so that a `/` token and the comment do not merge into `//`.
# WGSL's blankspace includes every line break and LRM/RLM; a `//` comment ends at any break.
SEPARATORS = [" ", "\t  ", " /**/", " /* a /* b */ c */", "\u200e", "\u200f"]
SEPARATORS += LINE_BREAKS + [f" // x{br}" for br in LINE_BREAKS]


@given(st.lists(st.sampled_from(SEPARATORS), min_size=200, max_size=200))
def test_whitespace_and_comments_between_tokens_change_nothing(seps: list[str]) -> None:
    tokens = BASE_SHADER.split()
    spaced = "".join(tok + seps[i % len(seps)] for i, tok in enumerate(tokens))
    assert reflect(spaced) == reflect(BASE_SHADER)


def test_base_shader_reflection() -> None:
    info = reflect(BASE_SHADER)
    assert info.workgroup_size == (8, 2, 1)
    assert info.bindings == [
        Binding(0, 0, "params", "uniform", is_output=False, preserve=False, min_size=64),
        Binding(1, 2, "out", "storage_read_write", is_output=True, preserve=False, min_size=32),
    ]
    assert info.overrides == {"W": "i32"}


def test_directives_const_asserts_and_other_declarations_are_skipped() -> None:
    wgsl = """
        diagnostic(off, derivative_uniformity);
        requires readonly_and_readwrite_storage_textures;
        enable f16;
        const_assert 2 >= 1;
        const LUT = array<u32, 3>(1u, 2u, 3u);
        @must_use fn sq(a: f32) -> f32 { return a * a; }
        @compute @workgroup_size(8, 8)
        fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
            if (gid.x >= 3u && gid.y < 2u) { out.data[gid.x] = sq(1e-3) + f32(LUT[0]) + 0x1p4; }
        }
        struct Out { n: atomic<u32>, @align(32) data: array<f32> };
        @group(0) @binding(0) var<storage,read_write> out: Out;
    """
    assert [(b.name, b.min_size) for b in reflect(wgsl).bindings] == [("out", 32)]


# ---------------------------------------------------------------- which bindings


def test_bindings_are_sorted_by_group_then_binding() -> None:
    wgsl = """
        @group(1) @binding(0) var<storage> d: u32;
        @group(0) @binding(2) var<storage> c: u32;
        @group(0) @binding(0) var<storage> a: u32;
        @group(0) @binding(1) var<storage> b: u32;
        @compute @workgroup_size(1) fn main() { let s = a + b + c + d; }
    """
    assert [b.name for b in reflect(wgsl).bindings] == ["a", "b", "c", "d"]


def test_kinds_and_outputs() -> None:
    wgsl = """
        @group(0) @binding(0) var<storage> a: u32;
        @group(0) @binding(1) var<storage, read> b: u32;
        @group(0) @binding(2) var<storage, read_write> c: u32;
        @group(0) @binding(3) var<uniform> d: u32;
        @compute @workgroup_size(1) fn main() { c = a + b + d; }
    """
    got = [(b.kind, b.is_output) for b in reflect(wgsl).bindings]
    assert got == [
        ("storage_read", False),
        ("storage_read", False),
        ("storage_read_write", True),
        ("uniform", False),
    ]


def test_workgroup_and_private_vars_are_not_bindings() -> None:
    wgsl = """
        var<workgroup> tile: array<f32, 64>;
        var<private> seed: u32 = 1u;
        @group(0) @binding(0) var<storage, read_write> x: array<f32>;
        @compute @workgroup_size(64) fn main() { tile[0] = f32(seed); x[0] = tile[0]; }
    """
    assert [b.name for b in reflect(wgsl).bindings] == ["x"]


def test_unused_bindings_are_excluded() -> None:
    wgsl = """
        @group(0) @binding(0) var<storage, read_write> x: array<f32>;
        @group(0) @binding(1) var<storage> unused: array<f32>;
        @compute @workgroup_size(64) fn main() { x[0] = 1.0; }
    """
    assert [b.name for b in reflect(wgsl).bindings] == ["x"]


def test_use_through_helper_functions_is_transitive() -> None:
    wgsl = """
        @group(0) @binding(0) var<storage> deep: array<f32>;
        @group(0) @binding(1) var<storage, read_write> x: array<f32>;
        @group(0) @binding(2) var<storage> never: array<f32>;
        @compute @workgroup_size(64) fn main() { x[0] = outer(); }
        fn outer() -> f32 { return inner(1u); }
        fn inner(i: u32) -> f32 { return deep[i]; }
        fn not_called() -> f32 { return never[0]; }
    """
    assert [b.name for b in reflect(wgsl).bindings] == ["deep", "x"]


def test_member_named_like_a_global_does_not_use_it() -> None:
    wgsl = """
        struct P { data: u32 }
        @group(0) @binding(0) var<uniform> p: P;
        @group(0) @binding(1) var<storage> data: array<f32>;
        @compute @workgroup_size(1) fn main() { let n = p.data; }
    """
    assert [b.name for b in reflect(wgsl).bindings] == ["p"]


def test_local_shadowing_a_global_counts_as_use() -> None:
    wgsl = """
        @group(0) @binding(0) var<storage> data: array<f32>;
        @compute @workgroup_size(1) fn main() { let data = 1u; }
    """
    assert [b.name for b in reflect(wgsl).bindings] == ["data"]


MULTI_STAGE = """
    @group(0) @binding(0) var<storage> src: array<f32>;
    @group(0) @binding(1) var<storage, read_write> dst: array<f32>;
    @group(0) @binding(2) var<storage, read_write> hist: array<atomic<u32>, 256>;
    @group(1) @binding(0) var tex: texture_2d<f32>;
    @group(1) @binding(1) var samp: sampler;

    @vertex fn vs(@builtin(vertex_index) i: u32) -> @builtin(position) vec4<f32> {
        return vec4<f32>(f32(i), 0.0, 0.0, 1.0);
    }
    @fragment fn fs(@builtin(position) p: vec4<f32>) -> @location(0) vec4<f32> {
        return textureSample(tex, samp, p.xy);
    }
    @compute @workgroup_size(256) fn copy(@builtin(global_invocation_id) id: vec3<u32>) {
        dst[id.x] = src[id.x];
    }
    @compute @workgroup_size(16, 16)
    fn histogram(@builtin(global_invocation_id) id: vec3<u32>) {
        atomicAdd(&hist[u32(src[id.x])], 1u);
    }
"""


def test_module_with_several_stages_reflects_each_compute_entry_point() -> None:
    copy = reflect(MULTI_STAGE, entry_point="copy")
    histogram = reflect(MULTI_STAGE, entry_point="histogram")
    assert copy.workgroup_size == (256, 1, 1)
    assert [b.name for b in copy.bindings] == ["src", "dst"]
    assert histogram.workgroup_size == (16, 16, 1)
    assert [(b.name, b.min_size) for b in histogram.bindings] == [("src", 0), ("hist", 1024)]


def test_unused_texture_is_ignored() -> None:
    assert reflect(MULTI_STAGE, entry_point="copy").entry_point == "copy"


# ---------------------------------------------------------------- errors


def test_missing_entry_point_lists_compute_entry_points() -> None:
    with pytest.raises(ShaderError, match=r"(?s)`main` not found.*`copy`, `histogram`.*Fix:"):
        reflect(MULTI_STAGE)


@pytest.mark.parametrize(("entry", "stage"), [("vs", "vertex"), ("fs", "fragment")])
def test_non_compute_entry_point_is_an_error(entry: str, stage: str) -> None:
    with pytest.raises(ShaderError, match=rf"(?s)`{entry}` is a @{stage} entry point.*Fix:"):
        reflect(MULTI_STAGE, entry_point=entry)


def test_function_without_stage_attribute_is_not_an_entry_point() -> None:
    wgsl = "fn main() {} @compute @workgroup_size(1) fn other() {}"
    with pytest.raises(ShaderError, match=r"(?s)no @compute attribute.*`other`.*Fix:"):
        reflect(wgsl)


def test_compute_entry_point_needs_workgroup_size() -> None:
    with pytest.raises(ShaderError, match=r"(?s)@workgroup_size.*Fix:"):
        reflect("@compute fn main() {}")


def test_texture_used_by_the_entry_point_is_an_error_naming_it() -> None:
    wgsl = """
        @group(0) @binding(2) var tex: texture_2d<f32>;
        @group(0) @binding(0) var<storage, read_write> x: array<vec4<f32>>;
        @compute @workgroup_size(1) fn main() { x[0] = textureLoad(tex, vec2(0, 0), 0); }
    """
    expected = r"@group\(0\) @binding\(2\) `tex` has type texture_2d<f32>, which vyre_native cannot"
    with pytest.raises(ShaderError, match="(?s)" + expected + r".*Fix:"):
        reflect(wgsl)


@pytest.mark.parametrize(
    "type_text",
    [
        "sampler",
        "sampler_comparison",
        "texture_storage_2d<rgba8unorm, write>",
        "binding_array<texture_2d<f32>, 4>",
        "acceleration_structure",
    ],
)
def test_other_used_handles_are_errors(type_text: str) -> None:
    wgsl = f"@group(0) @binding(0) var h: {type_text};\n" + MAIN.replace("&x", "&h")
    with pytest.raises(ShaderError, match=rf"(?s)`h` has type {type_text}, .*Fix:"):
        reflect(wgsl)


def test_preserve_marks_read_write_binding_as_uncleared_output() -> None:
    wgsl = """
        @group(0) @binding(0) var<storage, read_write> state: array<f32>;
        @group(0) @binding(1) var<storage, read_write> out: array<f32>;
        @compute @workgroup_size(1) fn main() { out[0] = state[0]; state[0] += 1.0; }
    """
    got = [(b.name, b.is_output, b.preserve) for b in reflect(wgsl, preserve=["state"]).bindings]
    assert got == [("state", True, True), ("out", True, False)]


def test_preserve_of_unknown_name_is_an_error_listing_read_write_bindings() -> None:
    wgsl = """
        @group(0) @binding(0) var<storage, read_write> out: array<f32>;
        @compute @workgroup_size(1) fn main() { out[0] = 1.0; }
    """
    with pytest.raises(ShaderError, match=r"(?s)`nope`, which is not a binding it uses.*`out`.*Fix:"):
        reflect(wgsl, preserve=["nope"])


def test_preserve_of_read_only_binding_is_an_error() -> None:
    wgsl = """
        @group(0) @binding(0) var<storage> a: array<f32>;
        @group(0) @binding(1) var<storage, read_write> out: array<f32>;
        @compute @workgroup_size(1) fn main() { out[0] = a[0]; }
    """
    with pytest.raises(ShaderError, match=r"(?s)`a`, which is a storage_read binding.*`out`.*Fix:"):
        reflect(wgsl, preserve=["a"])


def test_unknown_constant_is_an_error_listing_overrides() -> None:
    wgsl = "override BLOCK: u32 = 64; @compute @workgroup_size(BLOCK) fn main() {}"
    with pytest.raises(ShaderError, match=r"(?s)`BLOKC`.*`BLOCK`.*Fix:"):
        reflect(wgsl, constants={"BLOKC": 32})


def test_two_used_bindings_at_the_same_slot_is_an_error() -> None:
    wgsl = """
        @group(0) @binding(0) var<storage> a: u32;
        @group(0) @binding(0) var<storage> b: u32;
        @compute @workgroup_size(1) fn main() { let s = a + b; }
    """
    with pytest.raises(ShaderError, match=r"(?s)`a` and `b` are both @group\(0\) @binding\(0\).*Fix:"):
        reflect(wgsl)


# ---------------------------------------------------------------- consts and overrides


def test_const_in_array_size() -> None:
    assert size_of("array<f32, N * 2 + 1>", "const N: u32 = 4u;") == 36


def test_const_defined_from_another_const() -> None:
    assert size_of("array<f32, M>", "const M = N / 2; const N = 10;") == 20


def test_override_default_in_array_size() -> None:
    assert size_of("array<f32, N>", "override N: u32 = 8u;") == 32


def test_constants_override_the_default_in_array_size() -> None:
    wgsl = f"override N: u32 = 8u;\n@group(0) @binding(0) var<storage> x: array<f32, N>;\n{MAIN}"
    assert reflect(wgsl, constants={"N": 3}).bindings[0].min_size == 12


def test_override_without_value_in_array_size_is_an_error() -> None:
    with pytest.raises(ShaderError, match=r"(?s)override `N`.*Fix: pass constants=\{'N'"):
        size_of("array<f32, N>", "override N: u32;")


def test_size_expression_beyond_integer_arithmetic_is_an_error() -> None:
    with pytest.raises(ShaderError, match=r"(?s)`min\(2, 3\)` is not an integer expression.*Fix:"):
        size_of("array<f32, min(2, 3)>")


def test_recursive_declarations_are_an_error() -> None:
    with pytest.raises(ShaderError, match=r"(?s)`A` is defined in terms of itself.*Fix:"):
        size_of("A", "alias A = B; alias B = A;")


def test_workgroup_size_missing_dimensions_are_one() -> None:
    assert reflect("@compute @workgroup_size(4,2) fn main() {}").workgroup_size == (4, 2, 1)
    assert reflect("@compute @workgroup_size(4,2,1,) fn main() {}").workgroup_size == (4, 2, 1)


def test_workgroup_size_from_const_and_override_default() -> None:
    wgsl = "const X = 8; override Y = 4u; @compute @workgroup_size(X, Y * 2) fn main() {}"
    assert reflect(wgsl).workgroup_size == (8, 8, 1)


def test_workgroup_size_from_constants() -> None:
    wgsl = "override X: u32; @compute @workgroup_size(X) fn main() {}"
    assert reflect(wgsl, constants={"X": 128}).workgroup_size == (128, 1, 1)


def test_workgroup_size_depending_on_an_override_without_default_or_value_is_an_error() -> None:
    wgsl = "override X: u32; @compute @workgroup_size(X) fn main() {}"
    with pytest.raises(
        ShaderError, match=r"(?s)@workgroup_size of `main` depends on override `X`.*Fix: pass constants=\{'X'"
    ):
        reflect(wgsl)


def test_override_types_declared_or_inferred() -> None:
    wgsl = """
        enable f16;
        @id(0) override a: f32;
        override b = 1u;
        override c = 2;
        override d = 0.5;
        override e = 1.5h;
        override f = true;
        override g = b * 2u;
        override h: i32 = 3;
        @compute @workgroup_size(1) fn main() {}
    """
    assert reflect(wgsl).overrides == {
        "a": "f32",
        "b": "u32",
        "c": "i32",
        "d": "f32",
        "e": "f16",
        "f": "bool",
        "g": "u32",
        "h": "i32",
    }


@given(st.integers(-50, 50), st.integers(-50, 50), st.integers(1, 50))
def test_size_expressions_evaluate_like_wgsl(a: int, b: int, c: int) -> None:
    expected = a * b + 3000 - int(a / c) + (b - a) * 2  # WGSL `/` truncates toward zero
    prelude = f"const A = {a}; const B = {b}; const C = {c};"
    assert size_of("array<u32, A * B + 3000 - A / C + (B - A) * 2>", prelude) == 4 * expected


def test_binding_sizes_count_one_element_of_a_runtime_sized_array() -> None:
    module = reflect(
        """
        struct Particles { count: u32, pad: vec3<u32>, items: array<vec4<f32>> }
        struct Fixed { a: f32, b: vec3<f32> }
        @group(0) @binding(0) var<storage, read> xs: array<vec3<f32>>;
        @group(0) @binding(1) var<storage, read_write> ps: Particles;
        @group(0) @binding(2) var<uniform> fixed: Fixed;
        @compute @workgroup_size(1) fn main() { _ = xs[0]; _ = ps.count; _ = fixed.a; }
        """
    )
    # pad (vec3, align 16) sits at 16..28, so items starts at 32: the fixed part
    assert [b.min_size for b in module.bindings] == [0, 32, 32]
    # vec3<f32> strides 16; Particles is its fixed 32 plus one 16-byte element
    assert module.binding_sizes == [16, 48, 32]


# ---------------------------------------------------------------- @id overrides

ID_SHADER = """
    @id(7) override k: u32 = 1;
    override w: u32 = 2;
    @compute @workgroup_size(k, w) fn main() {}
"""


def test_id_override_is_set_by_its_id_as_a_decimal_string() -> None:
    assert reflect(ID_SHADER, constants={"7": 16}).workgroup_size == (16, 2, 1)


def test_id_override_is_set_by_its_name() -> None:
    assert reflect(ID_SHADER, constants={"k": 16}).workgroup_size == (16, 2, 1)


def test_constants_reach_wgpu_under_webgpu_keys_the_id_for_id_overrides() -> None:
    assert reflect(ID_SHADER, constants={"k": 16, "w": 4}).constants == {"7": 16, "w": 4}
    assert reflect(ID_SHADER, constants={"7": 16}).constants == {"7": 16}


def test_override_ids_are_reflected() -> None:
    wgsl = "const BASE = 40; @id(BASE + 2) override a: u32 = 1; override b = 2u; " + MAIN
    assert reflect(wgsl).override_ids == {"a": 42}


def test_overrides_without_value_take_their_defaults() -> None:
    assert reflect(ID_SHADER).workgroup_size == (1, 2, 1)
    assert reflect(ID_SHADER).constants == {}


def test_id_override_set_by_both_name_and_id_is_an_error() -> None:
    with pytest.raises(ShaderError, match=r"(?s)sets override `k` twice, as 'k' and '7'.*Fix:"):
        reflect(ID_SHADER, constants={"k": 16, "7": 32})


def test_unknown_constant_lists_overrides_with_their_ids() -> None:
    with pytest.raises(ShaderError, match=r"(?s)`8`.*`k` \(@id\(7\): also '7'\), `w`.*Fix:.*@id\(8\) override"):
        reflect(ID_SHADER, constants={"8": 16})


def test_override_without_id_is_not_set_by_a_number() -> None:
    with pytest.raises(ShaderError, match=r"constants names `0`"):
        reflect("override w: u32 = 2; " + MAIN, constants={"0": 4})


# ---------------------------------------------------------------- workgroup memory


def workgroup_storage(declarations: str, body: str = "_ = &a;", constants: dict | None = None) -> int:
    wgsl = f"{declarations}\n@compute @workgroup_size(1) fn main() {{ {body} }}"
    return reflect(wgsl, constants=constants).workgroup_storage_size


def test_workgroup_storage_rounds_each_variable_up_to_16_bytes() -> None:
    assert workgroup_storage("var<workgroup> a: f32; var<workgroup> b: vec3<f32>;", "_ = &a; _ = &b;") == 32


def test_workgroup_storage_counts_only_variables_the_entry_point_uses() -> None:
    declarations = "var<workgroup> a: array<f32, 64>; var<workgroup> unused: array<f32, 4096>;"
    assert workgroup_storage(declarations) == 256


def test_workgroup_storage_counts_use_through_called_functions() -> None:
    declarations = "var<workgroup> a: array<u32, 8>; fn helper() { a[0] = 1u; }"
    assert workgroup_storage(declarations, "helper();") == 32


def test_workgroup_storage_sizes_bool_as_four_bytes() -> None:
    declarations = "struct Flags { on: bool, n: u32 } var<workgroup> a: array<Flags, 3>;"
    assert workgroup_storage(declarations) == 32  # 3 * 8 = 24, rounded up to 16


def test_workgroup_storage_sized_by_an_override_takes_its_value() -> None:
    declarations = "override N: u32 = 4; var<workgroup> a: array<f32, N>;"
    assert workgroup_storage(declarations) == 16
    assert workgroup_storage(declarations, constants={"N": 1 << 26}) == 1 << 28


def test_workgroup_storage_sized_by_an_override_without_value_is_an_error() -> None:
    with pytest.raises(ShaderError, match=r"(?s)depends on override `N`.*Fix: pass constants=\{'N'"):
        workgroup_storage("override N: u32; var<workgroup> a: array<f32, N>;")


# ---------------------------------------------------------------- nesting depth
#
# The rule is C's (csrc/resources/wgsl_depth.c, vn_wgsl_check_nesting, which vn_shader_create
# applies); reflection itself reads any depth. These tests call the C entry directly, the
# way vn_shader_create does, and compare it on random text with the Python walk it was
# ported from (nesting_model below, kept as the oracle).

LEVELS = MAX_NESTING_DEPTH
OPERATORS_PER_LEVEL = lib.VN_WGSL_OPERATORS_PER_LEVEL
ELSE_IFS_PER_LEVEL = lib.VN_WGSL_ELSE_IFS_PER_LEVEL
REFUSAL = re.compile(
    r"line (\d+), column (\d+): the WGSL nests deeper than (\d+) levels here \((\d+) open brackets, (\d+)"
    r" operators and (\d+) `else if`s around it; .*\. Fix: split the expression",
    re.DOTALL,
)


def check_nesting(text: str, depth: int = LEVELS) -> tuple[int, ...] | None:
    """None when C accepts ``text`` at ``depth`` levels, else what its refusal says:
    (line, column, limit, brackets, operators, else-ifs), checked against the position C
    records for the error."""
    data = text.encode("utf-8")
    status = lib.vn_wgsl_check_nesting(data, len(data), depth)
    if status == lib.VN_OK:
        return None
    assert status == lib.VN_ERROR_SHADER
    message = ffi.string(lib.vn_last_error()).decode()
    match = REFUSAL.match(message)
    assert match is not None, message
    line, column = ffi.new("uint32_t *"), ffi.new("uint32_t *")
    assert lib.vn_last_error_position(line, column)
    assert (line[0], column[0]) == (int(match[1]), int(match[2]))
    return tuple(map(int, match.groups()))


def nested(kind: str, depth: int) -> str:
    """A module whose deepest point is ``depth`` levels of ``kind``."""
    if kind == "parentheses":  # at module scope: no braces around it
        return f"const c = {'(' * depth}1{')' * depth};\n{MAIN}"
    if kind == "template lists":  # laid out, too: the binding's size is reflected
        return f"@group(0) @binding(0) var<storage> x: {'array<' * depth}u32{', 1>' * depth};\n{MAIN}"
    if kind == "braces":
        return f"@compute @workgroup_size(1) fn main() {'{' * depth}{'}' * depth}"
    if kind == "operators":  # six chained operators are a level
        return f"const c = {'-' * (OPERATORS_PER_LEVEL * depth - 1)}1;\n{MAIN}"
    if kind == "an else-if chain":  # two `else if`s are a level, plus the body's and a branch's braces
        chain = " else if true {}" * (ELSE_IFS_PER_LEVEL * (depth - 2))
        return f"@compute @workgroup_size(1) fn main() {{ if true {{}}{chain} }}"
    raise ValueError(kind)


NESTINGS = ["parentheses", "template lists", "braces", "operators", "an else-if chain"]


def test_python_reads_the_limit_from_c() -> None:
    assert MAX_NESTING_DEPTH == lib.VN_WGSL_MAX_NESTING_DEPTH == 255


@pytest.mark.parametrize("kind", NESTINGS)
def test_nesting_at_the_maximum_depth_is_accepted(kind: str) -> None:
    assert check_nesting(nested(kind, LEVELS)) is None


@pytest.mark.parametrize("kind", NESTINGS)
def test_nesting_one_past_the_maximum_depth_is_refused_with_its_line_and_column(kind: str) -> None:
    text = nested(kind, LEVELS + 1)
    refusal = check_nesting(text)
    assert refusal is not None
    assert refusal[:3] == (*nesting_model(text, LEVELS)[:2], LEVELS)


def test_the_refusal_points_at_the_bracket_that_passes_the_limit() -> None:
    # `const c = ` is 10 characters; the 256th `(` is column 266 of line 2
    assert check_nesting(f"// a comment\nconst c = {'(' * 300}1{')' * 300};")[:4] == (2, 266, 255, 256)


@pytest.mark.parametrize("kind", NESTINGS)
@pytest.mark.parametrize("depth", [1000, 3000, 20_000])
def test_nesting_far_past_the_maximum_is_refused(kind: str, depth: int) -> None:
    assert check_nesting(nested(kind, depth)) is not None


@pytest.mark.parametrize("kind", NESTINGS)
def test_reflection_refuses_20000_levels_with_the_c_error_not_a_recursion_error(kind: str) -> None:
    text = nested(kind, 20_000)
    with pytest.raises(ShaderError, match=f"deeper than {LEVELS} levels") as info:
        reflect(text)
    assert (info.value.line, info.value.column) == check_nesting(text)[:2]


def test_comparisons_are_not_template_lists_so_they_do_not_nest() -> None:
    body = " ".join(f"let c{i} = a < b; let d{i} = a > b;" for i in range(2000))
    assert check_nesting(f"@compute @workgroup_size(1) fn main() {{ let a = 1; let b = 2; {body} }}") is None


def test_template_lists_nest_and_comparisons_do_not() -> None:
    assert check_nesting("alias t = array<array<u32, 1>, 1>;", 1) is not None  # two lists: two levels
    assert check_nesting("const c = (a < b) && (c > d);", 1) is None  # one level, few operators


def test_operators_in_separate_statements_and_arguments_do_not_add_up() -> None:
    table = ", ".join("-1.0" for _ in range(5000))
    assert check_nesting(f"const t = array<f32, 5000>({table});\n{MAIN}") is None


def test_separate_if_statements_do_not_add_up() -> None:
    ifs = " ".join(f"if i == {k} {{ let x = {k}; }} else {{ let y = {k}; }}" for k in range(2000))
    assert check_nesting(f"@compute @workgroup_size(1) fn main() {{ let i = 1; {ifs} }}") is None


def test_long_operator_chain_counts_against_the_depth() -> None:
    chain = " + ".join(["1"] * 2000)
    refusal = check_nesting(f"@compute @workgroup_size(1) fn main() {{ let s = {chain}; }}")
    assert refusal is not None
    assert refusal[3:] == (1, LEVELS * OPERATORS_PER_LEVEL, 0)  # in the body's brace: the rest are operators


@pytest.mark.parametrize("literal", ["1e-5", "1.5e-3f", "2E+7h", ".5e-1", "0x1p-3", "0x1.8p-2", "0X.8P+1f"])
def test_the_sign_of_an_exponent_is_no_operator(literal: str) -> None:
    # one level of a bracket leaves 5 operators of a limit of 12 (depth 1): four `*`
    expression = f"({' * '.join([literal] * 5)})"
    assert check_nesting(expression, 1) is None
    assert check_nesting(expression.replace(literal, "1 - 5"), 1) is not None


def test_brackets_in_comments_do_not_count() -> None:
    hidden = f"/* {'(' * 300} /* nested {'[' * 300} */ {'{' * 300} */ // {'(' * 300}\n"
    assert check_nesting(hidden + "const c = (1);", 0 + 1) is None


@pytest.mark.parametrize("line_break", LINE_BREAKS)
def test_a_line_comment_ends_at_every_wgsl_line_break(line_break: str) -> None:
    refusal = check_nesting(f"// {'(' * 5}{line_break}é = ((", 1)
    assert refusal is not None
    assert refusal[:2] == (2, 6)  # the second `(`, columns counted in characters


def test_an_unclosed_block_comment_hides_the_rest() -> None:
    # the compiler reports the comment; nothing after it can nest
    assert check_nesting("const c = 1; /* " + "(" * 1000, 1) is None


def test_the_check_takes_a_length_not_a_terminator() -> None:
    data = b"const c = (((((1)))));"
    assert lib.vn_wgsl_check_nesting(data, 12, 1) == lib.VN_ERROR_SHADER  # up to the 3rd `(`
    assert lib.vn_wgsl_check_nesting(data, 11, 1) == lib.VN_OK
    assert lib.vn_wgsl_check_nesting(ffi.NULL, 0, 1) == lib.VN_OK
    assert lib.vn_wgsl_check_nesting(ffi.NULL, 1, 1) == lib.VN_ERROR_INVALID_ARGUMENT


def nesting_model(text: str, depth: int) -> tuple[int, int, int, int, int] | None:
    """The nesting walk as reflect.py wrote it in Python before C owned the rule, over
    reflection's tokens: None, or (line, column, brackets, operators, else-ifs) where it
    refuses (comments are blanked character for character, so the column is the author's);
    an unclosed block comment runs to the end, as in C."""
    text = reflect_tokens._LINE_BREAK_RE.sub("\n", text)
    try:
        source = reflect_tokens._Source(text)
    except ShaderError:  # an unclosed block comment: keep the text before it
        pos, open_at = 0, -1
        while (m := reflect_tokens._COMMENT_RE.search(text, pos)) is not None:
            if m.group() == "//":
                pos = m.end()
                continue
            try:
                pos = reflect_tokens._block_comment_end(text, m.start()) if m.group() == "/*" else m.end()
            except ShaderError:
                open_at = m.start()
                break
        source = reflect_tokens._Source(text[:open_at] if open_at >= 0 else text)
    texts = source.texts
    offsets = [m.start(1) for m in source._tokens_re.finditer(source.text.rstrip(reflect_tokens._BLANK))]
    kinds = [reflect_tokens._kind(t) for t in texts]

    def joined(i: int, what: str) -> bool:
        return i + 1 < len(texts) and texts[i + 1] == what and offsets[i + 1] == offsets[i] + len(texts[i])

    templates: set[int] = set()  # WGSL's template-list discovery
    pending: list[tuple[int, int]] = []
    level, i = 0, 0
    while i < len(texts):
        t, step = texts[i], 1
        if kinds[i] == "ident":
            if i + 1 < len(texts) and texts[i + 1] == "<":
                if joined(i + 1, "<") or joined(i + 1, "="):
                    step = 3
                else:
                    pending.append((i + 1, level))
                    step = 2
        elif kinds[i] != "punct":
            pass
        elif t == ">":
            if pending and pending[-1][1] == level:
                templates |= {pending.pop()[0], i}
            elif joined(i, "="):
                step = 2
        elif t in "([":
            level += 1
        elif t in ")]":
            while pending and pending[-1][1] >= level:
                pending.pop()
            level = max(0, level - 1)
        elif t in "!=" and joined(i, "="):
            step = 2
        elif t in "=;{:":
            level = 0
            pending.clear()
        elif t in "&|" and joined(i, t):
            while pending and pending[-1][1] >= level:
                pending.pop()
            step = 2
        elif t == "-" and joined(i, ">"):
            step = 2
        i += step

    unit, else_if = OPERATORS_PER_LEVEL, OPERATORS_PER_LEVEL // ELSE_IFS_PER_LEVEL
    limit = (depth + 1) * unit
    ops, chains, cost = [0], [0], 0
    for i, t in enumerate(texts):
        if kinds[i] != "punct":
            if t == "else" and i + 1 < len(texts) and texts[i + 1] == "if":
                chains[-1] += 1
                cost += else_if
            else:
                continue
        elif t in ",;{":
            cost -= ops[-1]
            ops[-1] = 0
        if t in "([{" or (t == "<" and i in templates):
            if t == "[":
                ops[-1] += 1
                cost += 1
            ops.append(0)
            chains.append(0)
            cost += unit
        elif t in ")]}" or (t == ">" and i in templates):
            if len(ops) > 1:
                cost -= ops.pop() + chains.pop() * else_if + unit
            if t == "}":
                cost -= ops[-1]
                ops[-1] = 0
                if i + 1 == len(texts) or texts[i + 1] != "else":
                    cost -= chains[-1] * else_if
                    chains[-1] = 0
        elif t in "+-*/%&|^!~<>=.":
            ops[-1] += 1
            cost += 1
        if cost >= limit:
            brackets, else_ifs = len(ops) - 1, sum(chains)
            line, column = source.place(i)
            return line, column, brackets, cost - brackets * unit - else_ifs * else_if, else_ifs
    return None


SOUP = [
    *["(", ")", "[", "]", "{", "}", "<", ">", "-", "+", ".", "=", ",", ";", ":", "!", "&", "|", "*"],
    *["a", "a<", "é", "1", "1e-5", "0x1p-3", ".5", "else", "if", "else if ", " ", "\n", "\r\n", "\u2028"],
    *["<=", ">=", "==", "!=", "&&", "||", "->", "<<", ">>", "//", "/*", "*/", "\u200e"],
    *["0x", "1.", "0x1.", "e", "p", "x", "f", "u", "vec2<", "\t", "\v", "\x85", "\u2029", "\u200f", "\r"],
]
# without closers the walk's count only grows
OPENING_SOUP = ["(", "[", "{", "a<", "-", "!", ".", "else if ", "a", "1", " ", "array<u32, "]


@settings(max_examples=400)
@given(
    st.one_of(st.lists(st.sampled_from(SOUP), max_size=400), st.lists(st.sampled_from(OPENING_SOUP), max_size=200)),
    st.integers(0, 12),
)
def test_the_c_check_agrees_with_the_python_walk_on_any_bracket_and_operator_soup(
    parts: list[str], depth: int
) -> None:
    text = "".join(parts)
    refusal, model = check_nesting(text, depth), nesting_model(text, depth)
    if model is None:
        assert refusal is None, text
        return
    assert refusal is not None, text
    line, column, limit, *counts = refusal
    assert (line, column, limit, *counts) == (model[0], model[1], depth, *model[2:]), text


@given(st.lists(st.sampled_from(["(", ")", "[", "]", "-", "+", "1", "N", "<", ">", ","]), max_size=3000))
def test_any_array_count_expression_reflects_or_raises_shader_error(parts: list[str]) -> None:
    wgsl = f"const N = 2;\n@group(0) @binding(0) var<storage> x: array<u32, {''.join(parts)}>;\n{MAIN}"
    try:
        reflect(wgsl)
    except ShaderError:
        pass


def test_reflection_fills_every_field_of_its_records() -> None:
    found = reflect(f"@group(0) @binding(0) var<storage, read_write> x: array<f32>;\n{MAIN}")
    for record in (found, *found.bindings):
        assert set(vars(record)) == {f.name for f in dataclasses.fields(record)}


# ---------------------------------------------------------------- long declaration chains


@pytest.mark.parametrize(
    ("chain", "type_text", "size"),
    [
        ("".join(f"const c{i + 1} = c{i} + 1;\n" for i in range(5000)), "array<u32, c5000>", 4 * 5001),
        ("".join(f"alias a{i + 1} = a{i};\n" for i in range(5000)), "a5000", 4),
        ("".join(f"struct s{i + 1} {{ x: s{i} }}\n" for i in range(5000)), "s5000", 4),
        ("".join(f"alias a{i + 1} = array<a{i}, 1>;\n" for i in range(5000)), "a5000", 4),
    ],
    ids=["consts", "aliases", "structs", "arrays through aliases"],
)
def test_long_chains_of_declarations_resolve_without_exhausting_pythons_stack(
    chain: str, type_text: str, size: int
) -> None:
    prelude = "const c0 = 1; alias a0 = u32; struct s0 { x: u32 }\n" + chain
    assert size_of(type_text, prelude) == size


def test_binding_size_of_a_long_chain_of_runtime_sized_structs_takes_no_recursion() -> None:
    # invalid WGSL (a runtime-sized struct as a member), which compile() reflects before
    # naga refuses it: the binding size is a loop, so this raises no RecursionError
    chain = "".join(f"struct s{i + 1} {{ a: u32, s: s{i} }}\n" for i in range(3000))
    wgsl = f"struct s0 {{ a: u32, r: array<f32> }}\n{chain}@group(0) @binding(0) var<storage> x: s3000;\n{MAIN}"
    found = reflect(wgsl)
    # each struct: a u32, then the next at offset 4; s0 binds 4 + one element
    assert (found.bindings[0].min_size, found.binding_sizes) == (4, [8 + 4 * 3000])


def test_layout_of_arrays_nested_to_the_maximum_depth_fits_pythons_stack() -> None:
    # the layout recurses once per template list: C's limit bounds it
    assert size_of("array<" * MAX_NESTING_DEPTH + "u32" + ", 1>" * MAX_NESTING_DEPTH) == 4


def test_arrays_nested_one_past_the_maximum_are_refused_by_c_before_the_layout() -> None:
    depth = MAX_NESTING_DEPTH + 1
    declaration = "@group(0) @binding(0) var<storage, read_write> x: "
    wgsl = f"{declaration}{'array<' * depth}u32{', 1>' * depth};\n{MAIN}"
    with pytest.raises(ShaderError, match=f"nests deeper than {MAX_NESTING_DEPTH} levels") as info:
        reflect(wgsl)
    # the `<` of the array that passes the limit
    assert (info.value.line, info.value.column) == (1, len(declaration) + 6 * depth)


def test_long_chain_of_override_types_is_followed_without_recursion() -> None:
    chain = "".join(f"override o{i + 1} = o{i};\n" for i in range(5000))
    assert reflect(f"override o0 = 1u;\n{chain}{MAIN}").overrides["o5000"] == "u32"


def test_cycle_through_a_long_chain_is_an_error_naming_a_declaration() -> None:
    chain = "".join(f"const c{i + 1} = c{i};\n" for i in range(3000))
    with pytest.raises(ShaderError, match=r"(?s)is defined in terms of itself.*Fix:"):
        size_of("array<u32, c3000>", f"const c0 = c3000;\n{chain}")


# ---------------------------------------------------------------- identifiers (WGSL: XID_Start XID_Continue*)

# Names WGSL allows whose characters Python's \w does not all match: combining marks
# (spacing Mc, non-spacing Mn), a decomposed é (e + U+0301), a connector (‿), the
# middle dot (XID_Continue), and ℘, an XID_Start that is no letter.
UNICODE_NAMES = {
    "hindi": "गति",
    "telugu": "వేగం",
    "decomposed_e_acute": "e\u0301lan",
    "connector": "a\u203fb",
    "middle_dot": "l\u00b7l",
    "weierstrass_p": "\u2118p",
    "variation_selector": "x\U000e0100",
}


@pytest.mark.parametrize("name", list(UNICODE_NAMES.values()), ids=list(UNICODE_NAMES))
def test_a_binding_named_with_any_xid_characters_is_reflected_whole(name: str) -> None:
    wgsl = f"@group(0) @binding(0) var<storage, read_write> {name}: array<u32, 4>;\n" + MAIN.replace(
        "&x", f"&{name}"
    )
    (binding,) = reflect(wgsl).bindings
    assert (binding.name, binding.min_size) == (name, 16)


@pytest.mark.parametrize("name", list(UNICODE_NAMES.values()), ids=list(UNICODE_NAMES))
def test_a_name_of_xid_characters_is_one_token(name: str) -> None:
    assert [t.text for t in tokenize(f"let {name} = 1;")] == ["let", name, "=", "1", ";"]


def test_a_character_that_is_no_xid_continue_ends_a_name() -> None:
    # ² (a digit to Python's \w, No) and ٣ (a decimal digit, not ASCII): no WGSL number or
    # name continues with either, so each is a token of its own.
    texts = [t.text for t in tokenize("let x\u00b2 = \u0663; var గతి = 1.5e3;")]
    assert texts == ["let", "x", "\u00b2", "=", "\u0663", ";", "var", "గతి", "=", "1.5e3", ";"]



def test_every_binding_kind_reflection_names_has_the_code_c_gives_it() -> None:
    from vyre_native.reflect.entry import _BINDING_KINDS, _KIND_CODES

    assert set(_BINDING_KINDS.values()) == set(_KIND_CODES)
    assert len(set(_KIND_CODES.values())) == len(_KIND_CODES)  # one code a kind


OUT_OF_RANGE = "override k: u32 = 1u;\noverride f: f32 = 1.0;\n@compute @workgroup_size(1) fn main() { _ = k; _ = f; }\n"


@pytest.mark.parametrize(
    ("constants", "line", "range_"),
    [
        ({"k": 2**32}, 1, "u32 (0 to 4294967295)"),
        ({"k": -1}, 1, "u32 (0 to 4294967295)"),
        ({"f": 1e39}, 2, "f32 (-3.40282347e+38 to 3.40282347e+38)"),
    ],
)
def test_a_constant_outside_its_overrides_type_is_refused_at_the_override(
    constants: dict[str, float], line: int, range_: str
) -> None:
    # wgpu-native refused it at pipeline creation, "Source f64 value doesn't fit", with no place
    (name, value), = constants.items()
    with pytest.raises(ShaderError, match=rf"(?s)override `{name}` the value {re.escape(repr(value))}, outside its type {re.escape(range_)}.*Fix:") as info:
        reflect(OUT_OF_RANGE, constants=constants)
    assert (info.value.line, info.value.column) == (line, 10)


def test_constants_at_the_ends_of_their_types_range_are_taken() -> None:
    reflect(OUT_OF_RANGE, constants={"k": 2**32 - 1, "f": -3.4028234663852886e38})
