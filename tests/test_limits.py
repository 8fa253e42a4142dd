"""Limits that only show on the GPU, checked when the pipeline is compiled.

A workgroup size or an amount of workgroup memory that an `override` decides is checked
against the device's limits exactly as the literal form is, before wgpu-native builds
the pipeline (lavapipe ran such pipelines past its limits; an H200 lost its device).
Nesting that would overflow naga's stack is refused before naga parses it.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from support.child import run_child

import vyre_native as vn
from vyre_native._lib import lib
from vyre_native.reflect import MAX_NESTING_DEPTH, reflect

OVERRIDE_SIZE = """
override wg: u32 = 64;
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(wg) fn main(@builtin(local_invocation_index) i: u32) { out[i] = i; }
"""

OVERRIDE_MEMORY = """
override n: u32 = 16;
var<workgroup> tile: array<u32, n>;
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(1) fn main() {
    tile[n - 1] = 7u;
    workgroupBarrier();
    out[0] = tile[n - 1];
}
"""


def limit(device: vn.Device, name: str) -> int:
    return int(device.limits[name])


def compile_refused(device: vn.Device, said: str, src: str, constants: dict[str, int] | None = None) -> None:
    """compile(src, constants) raises ShaderError whose message matches `said` (a regex)
    and goes on to a Fix."""
    with pytest.raises(vn.ShaderError, match=rf"(?s){said}.*Fix:"):
        device.compile(src, constants=constants)


# ---------------------------------------------------------------- workgroup size


def test_override_driven_workgroup_size_over_the_invocation_limit_raises_shader_error_at_compile(
    device: vn.Device,
) -> None:
    too_many = limit(device, "max_compute_invocations_per_workgroup") * 2
    src = OVERRIDE_SIZE.replace("@workgroup_size(wg)", "@workgroup_size(wg / 2, 2)")
    compile_refused(
        device, rf"{too_many} invocations.*max_compute_invocations_per_workgroup", src, {"wg": too_many}
    )


def test_override_driven_workgroup_size_over_a_dimension_limit_raises_shader_error_at_compile(
    device: vn.Device,
) -> None:
    too_wide = limit(device, "max_compute_workgroup_size_x") + 1
    compile_refused(device, rf"x = {too_wide}.*max_compute_workgroup_size_x", OVERRIDE_SIZE, {"wg": too_wide})


def test_override_default_over_the_limit_raises_shader_error_at_compile(device: vn.Device) -> None:
    too_wide = limit(device, "max_compute_workgroup_size_x") + 1
    compile_refused(device, str(too_wide), OVERRIDE_SIZE.replace("= 64", f"= {too_wide}"))


def test_literal_workgroup_size_over_the_limit_raises_the_same_error(device: vn.Device) -> None:
    too_wide = limit(device, "max_compute_workgroup_size_x") + 1
    src = OVERRIDE_SIZE.replace("@workgroup_size(wg)", f"@workgroup_size({too_wide})")
    compile_refused(device, rf"x = {too_wide}.*max_compute_workgroup_size_x", src)


def test_override_driven_workgroup_size_at_the_limit_compiles_and_runs(device: vn.Device, run) -> None:
    most = min(
        limit(device, "max_compute_invocations_per_workgroup"), limit(device, "max_compute_workgroup_size_x")
    )
    prog = device.compile(OVERRIDE_SIZE, constants={"wg": most})
    assert prog.workgroup_size == (most, 1, 1)
    (out,) = run(prog, [], [device.alloc(4 * most)], dtype=np.uint32)
    assert (out == np.arange(most, dtype=np.uint32)).all()


# ---------------------------------------------------------------- workgroup memory


def test_override_driven_workgroup_memory_over_the_limit_raises_shader_error_at_compile(
    device: vn.Device,
) -> None:
    words = limit(device, "max_compute_workgroup_storage_size") // 4 + 1
    used = -(-4 * words // 16) * 16  # WebGPU rounds each variable up to 16 bytes
    said = rf"{used} bytes of var<workgroup>.*max_compute_workgroup_storage_size"
    compile_refused(device, said, OVERRIDE_MEMORY, {"n": words})


def test_override_driven_workgroup_memory_of_a_quarter_gib_is_refused_before_the_gpu_runs_it(
    device: vn.Device,
) -> None:
    with pytest.raises(vn.ShaderError, match="268435456 bytes of var<workgroup>"):
        device.compile(OVERRIDE_MEMORY, constants={"n": 1 << 26})


def test_literal_workgroup_memory_over_the_limit_raises_shader_error_at_compile(device: vn.Device) -> None:
    words = limit(device, "max_compute_workgroup_storage_size") // 4 + 4
    src = OVERRIDE_MEMORY.replace("array<u32, n>", f"array<u32, {words}>")
    compile_refused(device, rf"{4 * words} bytes of var<workgroup>", src)


def test_workgroup_memory_at_the_limit_compiles_and_runs(device: vn.Device, run) -> None:
    words = limit(device, "max_compute_workgroup_storage_size") // 4
    (out,) = run(
        device.compile(OVERRIDE_MEMORY, constants={"n": words}), [], [device.alloc(4)], dtype=np.uint32
    )
    assert out[0] == 7


def test_unused_workgroup_memory_does_not_count(device: vn.Device, run) -> None:
    # Four times the limit, declared but not used by the entry point: WebGPU counts only
    # the workgroup variables an entry point statically uses, so it compiles and runs.
    words = limit(device, "max_compute_workgroup_storage_size")
    src = f"var<workgroup> unused: array<u32, {words}>;\n" + OVERRIDE_SIZE
    assert reflect(src).workgroup_storage_size == 0
    (out,) = run(device.compile(src), [], [device.alloc(4 * 64)], dtype=np.uint32)
    np.testing.assert_array_equal(out, np.arange(64, dtype=np.uint32))


# ---------------------------------------------------------------- nesting depth


def nested_parentheses(depth: int) -> str:
    """A kernel whose deepest point is ``depth`` levels: the body's brace and the parentheses."""
    inner = "(" * (depth - 1) + "7u" + ")" * (depth - 1)
    return (
        "@group(0) @binding(0) var<storage, read_write> out: array<u32>;\n"
        f"@compute @workgroup_size(1) fn main() {{\n    let v = {inner};\n    out[0] = v;\n}}\n"
    )


def test_nesting_at_the_maximum_depth_compiles_and_runs(device: vn.Device, run) -> None:
    (out,) = run(
        device.compile(nested_parentheses(MAX_NESTING_DEPTH)), [], [device.alloc(4)], dtype=np.uint32
    )
    assert out[0] == 7


def test_1000_deep_nesting_is_refused_by_compile_with_its_line_and_column(device: vn.Device) -> None:
    with pytest.raises(
        vn.ShaderError, match=f"^line 3, column 267: the WGSL nests deeper than {MAX_NESTING_DEPTH}"
    ) as info:
        device.compile(nested_parentheses(1000))
    # `    let v = ` is 12 characters; the body's brace, `=` and 255 `(` pass the limit
    assert (info.value.line, info.value.column) == (3, 267)
    assert "Fix:" in str(info.value)


def nesting_refused(src: str) -> bool:
    data = src.encode()
    return lib.vn_wgsl_check_nesting(data, len(data), MAX_NESTING_DEPTH) != lib.VN_OK


# Few examples: at these depths lavapipe takes seconds to build each pipeline.
@settings(max_examples=6, deadline=None)
@given(st.lists(st.sampled_from(["(", "-(", "i32(", "max(1i, "]), min_size=240, max_size=270))
def test_compile_refuses_exactly_what_the_nesting_check_refuses_and_builds_the_rest(
    device: vn.Device, openers: list[str]
) -> None:
    expression = "".join(openers) + "7i" + ")" * len(openers)
    src = (
        "@group(0) @binding(0) var<storage, read_write> out: array<u32>;\n"
        f"@compute @workgroup_size(1) fn main() {{ let v = u32({expression}); out[0] = v; }}\n"
    )
    if nesting_refused(src):
        event("refused")
        with pytest.raises(vn.ShaderError, match="nests deeper"):
            device.compile(src)
    else:
        event("accepted")
        device.compile(src)


@pytest.mark.parametrize(
    ("construct", "expression"),
    [
        ("parentheses", "(" * 3000 + "1u" + ")" * 3000),  # naga: SIGSEGV near 2,960
        ("indexing", "out[" * 3000 + "0u" + "]" * 3000),  # near 2,680
        ("negations", "u32(" + "- " * 20000 + "1i)"),  # near 14,500
        ("an operator chain", " + ".join(["1u"] * 20000)),  # near 14,500
        ("an else-if chain", "0u; if true {}" + " else if true {}" * 20000),  # near 6,200
    ],
    # Ids by construct: pytest puts the id in PYTEST_CURRENT_TEST, which the child
    # inherits, and an environment string over 128 KiB fails exec with E2BIG.
    ids=lambda value: value if len(value) < 40 else "source",
)
def test_nesting_that_crashes_naga_is_refused_with_shader_error_and_the_process_lives(
    construct: str, expression: str
) -> None:
    # In a child interpreter: were the guard missing, naga's stack overflow would kill it,
    # failing this test instead of the whole suite.
    src = (
        "@group(0) @binding(0) var<storage, read_write> out: array<u32>;\n"
        f"@compute @workgroup_size(1) fn main() {{ out[0] = {expression}; }}\n"
    )
    result = run_child(
        """
        dev = vn.Device()
        try:
            dev.compile(sys.stdin.read())
            report({"outcome": "compiled"})
        except vn.VyreError as e:
            report({"outcome": type(e).__name__, "message": str(e)})
        dev.compile("@compute @workgroup_size(1) fn main() {}")  # the device still works
        """,
        timeout=300,
        stdin=src,
    )
    assert result["outcome"] == "ShaderError"
    assert f"deeper than {MAX_NESTING_DEPTH} levels" in result["message"]
    assert "Fix:" in result["message"]


def test_the_public_c_shader_create_refuses_nesting_that_crashes_naga() -> None:
    # vn_shader_create called directly, as a C caller would: in a child, where a missing
    # check would let naga's stack overflow kill it
    result = run_child(
        """
        from vyre_native._lib import ffi, lib
        dev = vn.Device()
        src = b"@compute @workgroup_size(1) fn main() { let v = " + b"(" * 3000 + b"1" + b")" * 3000 + b"; }"
        out = ffi.new("vn_shader **")
        status = lib.vn_shader_create(dev._live(), src, len(src), lib.VN_CHECKS_ALL, out)
        line, column = ffi.new("uint32_t *"), ffi.new("uint32_t *")
        lib.vn_last_error_position(line, column)
        report({"status": status, "message": ffi.string(lib.vn_last_error()).decode(),
                "place": [line[0], column[0]], "shader": out[0] != ffi.NULL})
        """,
        timeout=300,
    )
    assert result["status"] == lib.VN_ERROR_SHADER
    assert result["message"].startswith(
        f"line 1, column 303: the WGSL nests deeper than {MAX_NESTING_DEPTH} levels"
    )
    assert result["place"] == [1, 303]
    assert not result["shader"]
