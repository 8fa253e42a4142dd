"""The core contract of vyre_native: devices, buffers, compile, pre-recorded dispatches.

Runs on any Vulkan adapter; on CI that is Mesa lavapipe (a CPU Vulkan driver).
Every kernel result is compared against numpy.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest
from support.kernels import COUNTER, DOUBLE, elementwise

import vyre_native as vn

# wgpu's primary backends, as info["backend"] names them: the default Device uses one.
PRIMARY_BACKENDS = {"Vulkan", "Metal", "D3D12"}

U = vn.BufferUsage

# ---------------------------------------------------------------- shaders used here

# b = a * scale + c, for i < n; the uniform sits between two inputs and the output.
AXPY = elementwise(
    "out[i] = a[i] * params.scale + c[i];",
    *("read a", "uniform params: Params", "read_write out", "read c"),
    head="struct Params { scale: f32, n: u32 }",
    guard="i < params.n",
)


# Writes only the first half of out (i < n / 2).
HALF = elementwise("out[i] = i + 1u;", "read_write out", ty="u32", guard="i < arrayLength(&out) / 2u")

# One invocation per workgroup marks its cell in an 8x8 grid with args[x_at]
# (the x count it was dispatched with), so the grid shows which workgroups ran.
INDIRECT_GRID = """
@group(0) @binding(0) var<storage, read> args: array<u32, {n}>;
@group(0) @binding(1) var<storage, read_write> grid: array<u32, 64>;

@compute @workgroup_size(1)
fn main(@builtin(workgroup_id) wid: vec3<u32>) {{
    grid[wid.y * 8u + wid.x] = args[{x_at}];
}}
"""

# A fixed-size output: its size is known from the declaration.
FIXED_OUT = """
@group(0) @binding(0) var<storage, read> inp: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32, 64>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    out[gid.x] = inp[gid.x] + 0.5;
}
"""


def f32(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype=np.float32)


def u32(data: bytes) -> np.ndarray:
    return np.frombuffer(data, dtype=np.uint32)


def params_bytes(scale: float, n: int) -> bytes:
    return np.array([scale], np.float32).tobytes() + np.array([n], np.uint32).tobytes()


@pytest.fixture(scope="module")
def axpy(device: vn.Device) -> vn.Pipeline:
    return device.compile(AXPY)


# ================================================================ Device


def test_device_info_describes_the_adapter(device: vn.Device) -> None:
    info = device.info
    assert set(info) == {"name", "vendor", "backend", "adapter_type", "driver", "uuid", "pci_bus"}
    assert all(isinstance(v, str) for v in info.values())
    assert info["name"]
    assert info["backend"] in PRIMARY_BACKENDS


def test_device_limits_list_the_compute_limits(device: vn.Device) -> None:
    limits = device.limits
    for key in (
        "max_buffer_size",
        "max_storage_buffer_binding_size",
        "max_uniform_buffer_binding_size",
        "max_bind_groups",
        "max_compute_invocations_per_workgroup",
        "max_compute_workgroups_per_dimension",
    ):
        assert isinstance(limits[key], int) and limits[key] > 0, key
    assert limits["max_compute_workgroups_per_dimension"] >= 65535


def test_device_limits_are_the_adapters_own_not_webgpu_defaults(device: vn.Device) -> None:
    assert device.limits["max_buffer_size"] > 268435456  # WebGPU's default maxBufferSize


def test_device_context_manager_closes_the_device() -> None:
    with vn.Device() as dev:
        assert not dev.released
        assert dev.upload(b"1234").read() == b"1234"
    assert dev.released


def test_closed_device_raises_released_error() -> None:
    dev = vn.Device()
    dev.close()
    with pytest.raises(vn.ReleasedError):
        dev.upload(b"1234")
    with pytest.raises(vn.ReleasedError):
        dev.alloc(4)
    with pytest.raises(vn.ReleasedError):
        dev.compile(DOUBLE)
    with pytest.raises(vn.ReleasedError):
        _ = dev.info


def test_closing_a_device_makes_its_buffers_pipelines_and_recordings_unusable() -> None:
    dev = vn.Device()
    buf = dev.upload(np.ones(64, np.float32))
    out = dev.alloc(256)
    prog = dev.compile(DOUBLE)
    rec = prog.prerecord_persistent_dispatch([buf], [out], workgroups=(1, 1, 1))
    dev.close()
    with pytest.raises(vn.ReleasedError):
        buf.read()
    with pytest.raises(vn.ReleasedError):
        prog.prerecord_persistent_dispatch([buf], [out], workgroups=(1, 1, 1))
    with pytest.raises(vn.ReleasedError):
        rec.replay()


# ================================================================ Buffers


@pytest.mark.parametrize(
    "make",
    [
        lambda b: np.frombuffer(b, dtype=np.uint8).copy(),
        bytes,
        bytearray,
        memoryview,
    ],
    ids=["numpy", "bytes", "bytearray", "memoryview"],
)
def test_upload_round_trips_any_buffer_protocol_object(device: vn.Device, make) -> None:
    data = bytes(range(256)) * 4 + b"xyz"
    buf = device.upload(make(data))
    assert buf.read() == data


def test_upload_of_a_numpy_array_keeps_its_values(device: vn.Device) -> None:
    host = np.linspace(-1, 1, 1000, dtype=np.float32)
    np.testing.assert_array_equal(f32(device.upload(host).read()), host)


def test_byte_len_is_the_size_asked_for(device: vn.Device) -> None:
    assert device.upload(b"abcde").byte_len == 5
    assert device.alloc(4097).byte_len == 4097


@pytest.mark.parametrize(("nbytes", "padded"), [(0, 4), (1, 4), (3, 4), (4, 4), (5, 8), (8, 8), (1001, 1004)])
def test_allocation_len_pads_to_four_bytes_and_at_least_four(
    device: vn.Device, nbytes: int, padded: int
) -> None:
    assert device.alloc(nbytes).allocation_len == padded
    assert device.upload(bytes(nbytes)).allocation_len == padded


def test_zero_length_buffer_reads_empty(device: vn.Device) -> None:
    assert device.alloc(0).read() == b""


def test_default_usage_is_reported(device: vn.Device) -> None:
    buf = device.alloc(16)
    assert buf.usage == vn.BufferUsage.DEFAULT
    assert buf.usage == U.STORAGE | U.UNIFORM | U.INDIRECT | U.COPY_SRC | U.COPY_DST


def test_explicit_usage_is_reported(device: vn.Device) -> None:
    usage = U.STORAGE | U.COPY_DST
    buf = device.upload(b"\0" * 16, usage=usage)
    assert buf.usage == usage
    assert isinstance(buf.usage, vn.BufferUsage)


def test_explicit_usage_narrows_what_the_buffer_can_do(device: vn.Device) -> None:
    buf = device.upload(b"\0" * 16, usage=U.STORAGE | U.COPY_DST)
    with pytest.raises(vn.VyreError, match="COPY_SRC"):
        buf.read()  # no COPY_SRC: it cannot be copied out


def test_allocation_identity_increases_strictly(device: vn.Device) -> None:
    ids = [device.alloc(4).allocation_identity for _ in range(8)]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)


def test_allocation_identity_is_never_reused_after_release(device: vn.Device) -> None:
    seen = set()
    for _ in range(16):
        buf = device.alloc(64)
        assert buf.allocation_identity not in seen
        assert all(buf.allocation_identity > s for s in seen)
        seen.add(buf.allocation_identity)
        buf.release()  # frees the native buffer now: nothing else references it
        del buf


def test_alloc_reads_zeros(device: vn.Device) -> None:
    assert device.alloc(1000).read() == bytes(1000)


def test_write_at_an_offset_then_read(device: vn.Device) -> None:
    buf = device.upload(np.zeros(16, np.uint32))
    buf.write(np.array([7, 8, 9], np.uint32), offset=20)
    expected = np.zeros(16, np.uint32)
    expected[5:8] = [7, 8, 9]
    np.testing.assert_array_equal(u32(buf.read()), expected)


def test_write_of_an_odd_tail_that_ends_the_buffer(device: vn.Device) -> None:
    buf = device.alloc(7)
    buf.write(b"abcdefg")
    assert buf.read() == b"abcdefg"


@pytest.mark.parametrize("start_len", [0, 3, 100, 5000], ids=["empty", "shorter", "equal", "longer"])
def test_read_into_a_bytearray_leaves_it_exactly_byte_len_long(device: vn.Device, start_len: int) -> None:
    data = bytes(range(100))
    buf = device.upload(data)
    out = bytearray(b"\xee" * start_len)
    assert buf.read_into(out) == 100
    assert out == data


def test_read_into_a_numpy_array_fills_it_in_place(device: vn.Device) -> None:
    host = np.arange(256, dtype=np.int32)
    buf = device.upload(host)
    out = np.full(256, -1, dtype=np.int32)
    before = out.ctypes.data
    assert buf.read_into(out) == host.nbytes
    assert out.ctypes.data == before
    np.testing.assert_array_equal(out, host)


def test_released_buffer_raises_released_error(device: vn.Device) -> None:
    buf = device.upload(b"12345678")
    buf.release()
    assert buf.released
    buf.release()  # idempotent
    with pytest.raises(vn.ReleasedError):
        buf.read()
    with pytest.raises(vn.ReleasedError):
        buf.write(b"0000")
    with pytest.raises(vn.ReleasedError):
        buf.read_into(bytearray(8))


def test_buffer_as_a_context_manager_releases_it(device: vn.Device) -> None:
    with device.alloc(8) as buf:
        assert buf.read() == bytes(8)
    with pytest.raises(vn.ReleasedError):
        buf.read()


# ================================================================ compile


def test_compile_reflects_bindings_with_their_layout(device: vn.Device) -> None:
    wgsl = """
    struct Params { scale: f32, n: u32 }
    @group(0) @binding(0) var<storage, read> a: array<f32>;
    @group(0) @binding(1) var<uniform> params: Params;
    @group(0) @binding(2) var<storage, read_write> out: array<f32, 16>;
    @group(1) @binding(0) var<storage, read_write> state: array<u32, 4>;

    @compute @workgroup_size(16)
    fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
        out[gid.x] = a[gid.x] * params.scale;
        state[0] = params.n;
    }
    """
    prog = device.compile(wgsl, preserve=["state"])
    assert prog.bindings == [
        vn.Binding(0, 0, "a", "storage_read", False, False, 0),
        vn.Binding(0, 1, "params", "uniform", False, False, 8),
        vn.Binding(0, 2, "out", "storage_read_write", True, False, 64),
        vn.Binding(1, 0, "state", "storage_read_write", True, True, 16),
    ]
    out = prog.bindings[2]
    assert {f: getattr(out, f) for f in ("group", "binding", "name", "kind", "is_output", "preserve")} == {
        "group": 0,
        "binding": 2,
        "name": "out",
        "kind": "storage_read_write",
        "is_output": True,
        "preserve": False,
    }
    assert out.min_size == 64  # array<f32, 16>
    assert prog.entry_point == "main"
    assert prog.workgroup_size == (16, 1, 1)


def test_compile_an_entry_point_with_another_name(device: vn.Device, run) -> None:
    prog = device.compile(DOUBLE.replace("fn main", "fn double_it"), entry_point="double_it")
    assert prog.entry_point == "double_it"
    host = np.arange(64, dtype=np.float32)
    (out,) = run(prog, [device.upload(host)], [device.alloc(host.nbytes)])
    np.testing.assert_array_equal(out, host * 2)


def test_compile_one_entry_point_of_a_module_with_several(device: vn.Device, run) -> None:
    wgsl = """
    @group(0) @binding(0) var<storage, read> x: array<f32>;
    @group(0) @binding(1) var<storage, read_write> sq: array<f32>;
    @group(0) @binding(2) var<storage, read_write> neg: array<f32>;

    @compute @workgroup_size(64)
    fn square(@builtin(global_invocation_id) gid: vec3<u32>) {
        if (gid.x < arrayLength(&sq)) { sq[gid.x] = x[gid.x] * x[gid.x]; }
    }

    @compute @workgroup_size(64)
    fn negate(@builtin(global_invocation_id) gid: vec3<u32>) {
        if (gid.x < arrayLength(&neg)) { neg[gid.x] = -x[gid.x]; }
    }
    """
    square = device.compile(wgsl, entry_point="square")
    negate = device.compile(wgsl, entry_point="negate")
    assert [b.name for b in square.bindings] == ["x", "sq"]
    assert [b.name for b in negate.bindings] == ["x", "neg"]
    host = np.linspace(-3, 3, 128, dtype=np.float32)
    x = device.upload(host)
    (sq,) = run(square, [x], [device.alloc(host.nbytes)], workgroups=(2, 1, 1))
    (neg,) = run(negate, [x], [device.alloc(host.nbytes)], workgroups=(2, 1, 1))
    np.testing.assert_array_equal(sq, host * host)
    np.testing.assert_array_equal(neg, -host)


def test_compile_constants_set_override_values(device: vn.Device, run) -> None:
    wgsl = """
    override factor: f32 = 1.0;
    @group(0) @binding(0) var<storage, read> inp: array<f32>;
    @group(0) @binding(1) var<storage, read_write> out: array<f32>;

    @compute @workgroup_size(64)
    fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
        if (gid.x < arrayLength(&out)) { out[gid.x] = inp[gid.x] * factor; }
    }
    """
    host = np.arange(64, dtype=np.float32)
    inp = device.upload(host)
    (default,) = run(device.compile(wgsl), [inp], [device.alloc(host.nbytes)])
    (tripled,) = run(device.compile(wgsl, constants={"factor": 3.0}), [inp], [device.alloc(host.nbytes)])
    np.testing.assert_array_equal(default, host)
    np.testing.assert_array_equal(tripled, host * 3)


def test_compiling_a_source_again_reflects_it_as_the_first_time(device: vn.Device, run) -> None:
    # compile() keeps what reflection found per source, entry point, preserve and constants
    wgsl = """
    override block: u32 = 4;
    @group(0) @binding(0) var<storage, read_write> out: array<u32>;
    @compute @workgroup_size(block) fn main(@builtin(local_invocation_index) i: u32) { out[i] = block; }
    @compute @workgroup_size(2) fn two(@builtin(local_invocation_index) i: u32) { out[i] = 7u; }
    """
    for _ in range(2):
        assert device.compile(wgsl).workgroup_size == (4, 1, 1)
        assert device.compile(wgsl, constants={"block": 8}).workgroup_size == (8, 1, 1)
        assert device.compile(wgsl, entry_point="two").workgroup_size == (2, 1, 1)
        assert device.compile(wgsl, preserve=["out"]).bindings[0].preserve
        assert not device.compile(wgsl).bindings[0].preserve
        with pytest.raises(vn.ShaderError, match="preserve names `nothing`"):
            device.compile(wgsl, preserve=["nothing"])
    (out,) = run(device.compile(wgsl, constants={"block": 8}), [], [device.alloc(32)], dtype=np.uint32)
    assert out.tolist() == [8] * 8


def test_compile_keeps_a_bounded_number_of_reflections(device: vn.Device) -> None:
    from vyre_native import pipeline

    for k in range(pipeline._REFLECTED_MAX + 5):
        device.compile(
            "@group(0) @binding(0) var<storage, read_write> o: array<u32>;\n"
            f"@compute @workgroup_size(1) fn main() {{ o[0] = {k}u; }}"
        )
        assert len(pipeline._REFLECTED) <= pipeline._REFLECTED_MAX


ID_OVERRIDE = """
@id(7) override k: u32 = 1;
override w: u32 = 2;
@group(0) @binding(0) var<storage, read_write> out: array<u32, 2>;
@compute @workgroup_size(1) fn main() { out[0] = k; out[1] = w; }
"""


@pytest.mark.parametrize("key", ["7", "k"])
def test_id_override_is_set_by_its_id_string_or_by_its_name(device: vn.Device, run, key: str) -> None:
    (out,) = run(
        device.compile(ID_OVERRIDE, constants={key: 5, "w": 9}), [], [device.alloc(8)], dtype=np.uint32
    )
    assert out.tolist() == [5, 9]


def test_overrides_without_a_value_take_their_defaults(device: vn.Device, run) -> None:
    (out,) = run(device.compile(ID_OVERRIDE), [], [device.alloc(8)], dtype=np.uint32)
    assert out.tolist() == [1, 2]


def test_struct_named_vec2f_binds_at_the_size_of_its_members(device: vn.Device, run) -> None:
    wgsl = """
    struct vec2f { a: f32, b: f32, c: f32 }
    @group(0) @binding(0) var<storage, read_write> out: vec2f;
    @compute @workgroup_size(1) fn main() { out.c = 3.0; }
    """
    prog = device.compile(wgsl)
    assert prog.bindings[0].min_size == 12
    (out,) = run(prog, [], [device.alloc(12)])
    assert out.tolist() == [0.0, 0.0, 3.0]


def test_cr_only_module_compiles_and_runs(device: vn.Device, run) -> None:
    wgsl = "// a comment\r@group(0) @binding(0) var<storage, read_write> out: array<u32>;\r"
    wgsl += "@compute @workgroup_size(1)\rfn main() { out[0] = 5u; }\r"
    (out,) = run(device.compile(wgsl), [], [device.alloc(4)], dtype=np.uint32)
    assert out[0] == 5


def test_compile_syntax_error_raises_shader_error_with_its_line(device: vn.Device) -> None:
    wgsl = (
        "@group(0) @binding(0) var<storage, read_write> out: array<f32>;\n"
        "\n"
        "@compute @workgroup_size(64)\n"
        "fn main(@builtin(global_invocation_id) gid: vec3<u32>) {\n"
        "    out[gid.x] = 1.0 +;\n"
        "}\n"
    )
    with pytest.raises(vn.ShaderError) as info:
        device.compile(wgsl)
    assert info.value.line == 5
    assert isinstance(info.value, vn.VyreError)
    assert "Fix:" in str(info.value)


# ================================================================ binding resolution


def test_handles_bind_in_group_binding_order_with_params_taking_the_uniform(
    device: vn.Device, axpy, run
) -> None:
    n = 200
    a = np.arange(256, dtype=np.float32)
    c = np.full(256, 0.25, dtype=np.float32)
    (out,) = run(
        axpy,
        [device.upload(a), device.upload(c)],  # bindings 0 and 3, in order
        [device.alloc(a.nbytes)],  # binding 2
        params=device.upload(params_bytes(3.0, n)),  # binding 1
        workgroups=(4, 1, 1),
    )
    expected = np.zeros(256, np.float32)
    expected[:n] = a[:n] * 3.0 + c[:n]
    np.testing.assert_array_equal(out, expected)


def test_uniform_takes_the_next_input_when_params_is_none(device: vn.Device, axpy, run) -> None:
    a = np.arange(64, dtype=np.float32)
    c = np.ones(64, dtype=np.float32)
    (out,) = run(
        axpy,
        [device.upload(a), device.upload(params_bytes(-2.0, 64)), device.upload(c)],
        [device.alloc(a.nbytes)],
    )
    np.testing.assert_array_equal(out, a * -2.0 + c)


def test_too_many_inputs_raise_binding_error_naming_the_bindings(device: vn.Device, double) -> None:
    x = device.upload(np.ones(64, np.float32))
    with pytest.raises(vn.BindingError, match=r"@group\(0\) @binding\(0\) `inp`"):
        double.prerecord_persistent_dispatch([x, x], [device.alloc(256)])


def test_too_few_inputs_raise_binding_error_naming_the_binding(device: vn.Device, axpy) -> None:
    a = device.upload(np.ones(64, np.float32))
    with pytest.raises(vn.BindingError, match=r"@group\(0\) @binding\(3\) `c`"):
        axpy.prerecord_persistent_dispatch(
            [a], [device.alloc(256)], params=device.upload(params_bytes(1, 64))
        )


def test_too_few_outputs_raise_binding_error_naming_the_binding(device: vn.Device, double) -> None:
    x = device.upload(np.ones(64, np.float32))
    with pytest.raises(vn.BindingError, match=r"@group\(0\) @binding\(1\) `out`"):
        double.prerecord_persistent_dispatch([x], [])


def test_too_many_outputs_raise_binding_error_naming_the_binding(device: vn.Device, double) -> None:
    x = device.upload(np.ones(64, np.float32))
    with pytest.raises(vn.BindingError, match=r"@group\(0\) @binding\(1\) `out`"):
        double.prerecord_persistent_dispatch([x], [device.alloc(256), device.alloc(256)])


def test_params_without_a_uniform_binding_raise_binding_error(device: vn.Device, double) -> None:
    x = device.upload(np.ones(64, np.float32))
    with pytest.raises(vn.BindingError):
        double.prerecord_persistent_dispatch([x], [device.alloc(256)], params=device.upload(bytes(16)))


def test_output_without_copy_src_usage_raises_binding_error(device: vn.Device, double) -> None:
    x = device.upload(np.ones(64, np.float32))
    out = device.alloc(256, usage=U.STORAGE | U.COPY_DST)
    with pytest.raises(vn.BindingError, match="COPY_SRC") as info:
        double.prerecord_persistent_dispatch([x], [out])
    assert "`out`" in str(info.value)


def test_input_without_storage_usage_raises_binding_error(device: vn.Device, double) -> None:
    x = device.upload(np.ones(64, np.float32), usage=U.UNIFORM | U.COPY_DST)
    with pytest.raises(vn.BindingError, match="STORAGE"):
        double.prerecord_persistent_dispatch([x], [device.alloc(256)])


def test_buffer_smaller_than_min_size_raises_binding_error(device: vn.Device) -> None:
    prog = device.compile(FIXED_OUT)
    x = device.upload(np.ones(64, np.float32))
    with pytest.raises(vn.BindingError, match=r"`out`.*256"):
        prog.prerecord_persistent_dispatch([x], [device.alloc(128)])


def test_buffer_from_another_device_raises_binding_error(device: vn.Device, double) -> None:
    with vn.Device() as other:
        foreign = other.upload(np.ones(64, np.float32))
        with pytest.raises(vn.BindingError, match="another device"):
            double.prerecord_persistent_dispatch([foreign], [device.alloc(256)])


def test_released_buffer_as_a_handle_raises_released_error(device: vn.Device, double) -> None:
    x = device.upload(np.ones(64, np.float32))
    x.release()
    with pytest.raises(vn.ReleasedError):
        double.prerecord_persistent_dispatch([x], [device.alloc(256)])


@pytest.mark.parametrize("case", ["ok", "too_many_inputs", "missing_usage"])
def test_whole_buffers_and_views_of_them_take_the_same_checks(device: vn.Device, double, case: str) -> None:
    """A launch of whole buffers takes its own C entry (no argument struct); one of views
    takes the general one: both make the same checks, with the same messages."""
    x, out = device.upload(np.ones(64, np.float32)), device.alloc(256)
    ins = {"ok": [x], "too_many_inputs": [x, x]}.get(case) or [
        device.upload(np.ones(64, np.float32), usage=vn.BufferUsage.COPY_SRC)
    ]
    roads = {"buffers": (ins, [out]), "views": ([b.view(0, 256) for b in ins], [out.view(0, 256)])}
    if case == "ok":
        for inputs, outputs in roads.values():
            rec = double.prerecord_persistent_dispatch(inputs, outputs)
            rec.replay()
            np.testing.assert_array_equal(np.frombuffer(rec.read_output(0), np.float32), np.full(64, 2, np.float32))
        return
    messages = []
    for inputs, outputs in roads.values():
        with pytest.raises(vn.BindingError) as err:
            double.prerecord_persistent_dispatch(inputs, outputs)
        messages.append(str(err.value))
    assert messages[0] == messages[1]
    assert "pipeline `main`" in messages[0]


def test_bind_group_cache_hits_on_repeated_handles_and_misses_on_new(device: vn.Device) -> None:
    prog = device.compile(DOUBLE)
    x, out = device.upload(np.ones(64, np.float32)), device.alloc(256)
    assert prog.bind_group_cache_stats()["hits"] == 0
    prog.prerecord_persistent_dispatch([x], [out])
    first = prog.bind_group_cache_stats()
    assert (first["hits"], first["misses"], first["entries"]) == (0, 1, 1)
    for _ in range(3):
        prog.prerecord_persistent_dispatch([x], [out])
    again = prog.bind_group_cache_stats()
    assert (again["hits"], again["misses"]) == (3, 1)
    prog.prerecord_persistent_dispatch([x], [device.alloc(256)])
    new = prog.bind_group_cache_stats()
    assert (new["hits"], new["misses"]) == (3, 2)
    assert new["capacity"] > 0


# ================================================================ recordings


def test_outputs_are_cleared_before_the_dispatch(device: vn.Device) -> None:
    prog = device.compile(HALF)
    out = device.upload(np.full(128, 0xDEADBEEF, np.uint32))  # garbage the kernel half overwrites
    rec = prog.prerecord_persistent_dispatch([], [out], workgroups=(2, 1, 1))
    rec.replay()
    expected = np.zeros(128, np.uint32)
    expected[:64] = np.arange(1, 65)
    np.testing.assert_array_equal(u32(rec.read_output(0)), expected)


def test_preserved_state_carries_over_across_recordings(device: vn.Device) -> None:
    prog = device.compile(COUNTER, preserve=["acc"])
    (binding,) = prog.bindings
    assert binding.preserve and binding.is_output
    start = np.arange(100, dtype=np.uint32) * 10
    state = device.upload(start)
    k = 5
    for _ in range(k):
        rec = prog.prerecord_persistent_dispatch([], [state], workgroups=(2, 1, 1))
        rec.replay()
    np.testing.assert_array_equal(u32(rec.read_output(0)), start + k)
    np.testing.assert_array_equal(u32(state.read()), start + k)


def test_replay_returns_the_submission_index(device: vn.Device, double) -> None:
    a, o = device.upload(np.ones(64, np.float32)), device.alloc(256)
    first, last = (double.prerecord_persistent_dispatch([a], [o]) for _ in range(2))
    between = double.record([a], [o])
    i1 = first.replay()
    i2 = between.replay().index
    i3 = last.replay()
    # the queue's own numbering: each submit's index after the one before
    assert all(isinstance(i, int) for i in (i1, i2, i3)) and i1 < i2 < i3


def test_second_replay_raises_already_submitted(device: vn.Device, double) -> None:
    rec = double.prerecord_persistent_dispatch([device.upload(np.ones(64, np.float32))], [device.alloc(256)])
    rec.replay()
    with pytest.raises(vn.AlreadySubmittedError, match="Fix:"):
        rec.replay()
    np.testing.assert_array_equal(f32(rec.read_output(0)), np.full(64, 2, np.float32))


def test_read_output_before_replay_raises_not_submitted(device: vn.Device, double) -> None:
    rec = double.prerecord_persistent_dispatch([device.upload(np.ones(64, np.float32))], [device.alloc(256)])
    with pytest.raises(vn.NotSubmittedError) as info:
        rec.read_output(0)
    assert isinstance(info.value, vn.VyreError)
    assert "Fix:" in str(info.value)


@pytest.mark.parametrize("start_len", [0, 10, 256, 4096], ids=["empty", "shorter", "equal", "longer"])
def test_read_output_into_a_bytearray_leaves_it_exactly_byte_len_long(
    device: vn.Device, double, start_len: int
) -> None:
    host = np.arange(64, dtype=np.float32)
    rec = double.prerecord_persistent_dispatch([device.upload(host)], [device.alloc(host.nbytes)])
    rec.replay()
    out = bytearray(b"\xab" * start_len)
    assert rec.read_output_into(0, out) == host.nbytes
    assert len(out) == host.nbytes
    np.testing.assert_array_equal(f32(bytes(out)), host * 2)


def test_read_output_into_a_numpy_array_fills_it_in_place(device: vn.Device, double) -> None:
    host = np.arange(64, dtype=np.float32)
    rec = double.prerecord_persistent_dispatch([device.upload(host)], [device.alloc(host.nbytes)])
    rec.replay()
    out = np.full(64, np.nan, dtype=np.float32)
    before = out.ctypes.data
    assert rec.read_output_into(0, out) == host.nbytes
    assert out.ctypes.data == before
    np.testing.assert_array_equal(out, host * 2)


def test_read_output_into_a_too_small_numpy_array_raises(device: vn.Device, double) -> None:
    rec = double.prerecord_persistent_dispatch([device.upload(np.ones(64, np.float32))], [device.alloc(256)])
    rec.replay()
    with pytest.raises(vn.InvalidArgumentError):
        rec.read_output_into(0, np.empty(10, np.float32))


@pytest.mark.parametrize("index", [1, 7, -1])
def test_output_index_out_of_range_raises_output_index_error(device: vn.Device, double, index: int) -> None:
    rec = double.prerecord_persistent_dispatch([device.upload(np.ones(64, np.float32))], [device.alloc(256)])
    rec.replay()
    with pytest.raises(vn.OutputIndexError) as info:
        rec.read_output(index)
    assert isinstance(info.value, IndexError)
    with pytest.raises(IndexError):
        rec.read_output_into(index, bytearray())


def test_recording_keeps_its_buffers_alive_after_their_handles_are_released(
    device: vn.Device, double
) -> None:
    host = np.arange(64, dtype=np.float32)
    x, out = device.upload(host), device.alloc(host.nbytes)
    rec = double.prerecord_persistent_dispatch([x], [out])
    x.release()
    out.release()
    del x, out
    gc.collect()
    rec.replay()
    np.testing.assert_array_equal(f32(rec.read_output(0)), host * 2)


def test_released_recording_raises_released_error(device: vn.Device, double) -> None:
    rec = double.prerecord_persistent_dispatch([device.upload(np.ones(64, np.float32))], [device.alloc(256)])
    rec.release()
    with pytest.raises(vn.ReleasedError):
        rec.replay()


# ================================================================ indirect dispatch


def test_indirect_dispatch_takes_workgroup_counts_from_the_args_buffer(device: vn.Device) -> None:
    prog = device.compile(INDIRECT_GRID.format(n=3, x_at=0), indirect=("args", 0))
    args = device.upload(np.array([3, 2, 1], np.uint32))
    rec = prog.prerecord_persistent_dispatch([args], [device.alloc(256)], workgroups=(8, 8, 1))  # ignored
    rec.replay()
    expected = np.zeros((8, 8), np.uint32)
    expected[:2, :3] = 3
    np.testing.assert_array_equal(u32(rec.read_output(0)).reshape(8, 8), expected)


def test_indirect_dispatch_reads_the_counts_at_its_byte_offset(device: vn.Device) -> None:
    prog = device.compile(INDIRECT_GRID.format(n=6, x_at=3), indirect=("args", 12))
    args = device.upload(np.array([7, 7, 7, 5, 4, 1], np.uint32))
    rec = prog.prerecord_persistent_dispatch([args], [device.alloc(256)], workgroups=(1, 1, 1))
    rec.replay()
    expected = np.zeros((8, 8), np.uint32)
    expected[:4, :5] = 5
    np.testing.assert_array_equal(u32(rec.read_output(0)).reshape(8, 8), expected)


def test_indirect_args_buffer_too_short_for_the_offset_raises_binding_error(device: vn.Device) -> None:
    wgsl = INDIRECT_GRID.format(n=3, x_at=0).replace("array<u32, 3>", "array<u32>")
    prog = device.compile(wgsl, indirect=("args", 4))
    with pytest.raises(vn.BindingError, match="args"):
        prog.prerecord_persistent_dispatch([device.upload(np.ones(3, np.uint32))], [device.alloc(256)])


def test_indirect_names_an_unknown_binding_raises_binding_error(device: vn.Device) -> None:
    with pytest.raises(vn.BindingError, match="nope"):
        device.compile(INDIRECT_GRID.format(n=3, x_at=0), indirect=("nope", 0))


# ================================================================ borrowed dispatch


def test_borrowed_dispatch_uploads_inputs_and_allocates_outputs(device: vn.Device, axpy) -> None:
    a = np.arange(128, dtype=np.float32)
    c = np.full(128, 1.5, dtype=np.float32)
    rec = axpy.prerecord_borrowed_dispatch(
        [a, params_bytes(0.5, 100), c], workgroups=(2, 1, 1), output_sizes=[a.nbytes]
    )
    rec.replay()
    expected = np.zeros(128, np.float32)
    expected[:100] = a[:100] * 0.5 + c[:100]
    assert rec.output_byte_len(0) == a.nbytes
    np.testing.assert_array_equal(f32(rec.read_output(0)), expected)


def test_borrowed_dispatch_sizes_outputs_from_their_declared_type(device: vn.Device) -> None:
    prog = device.compile(FIXED_OUT)
    host = np.arange(64, dtype=np.float32)
    rec = prog.prerecord_borrowed_dispatch([host], workgroups=(1, 1, 1))
    rec.replay()
    assert rec.output_byte_len(0) == 64 * 4
    np.testing.assert_array_equal(f32(rec.read_output(0)), host + 0.5)


def test_borrowed_dispatch_runtime_sized_output_without_sizes_raises_binding_error(
    device: vn.Device, double
) -> None:
    with pytest.raises(vn.BindingError, match=r"@group\(0\) @binding\(1\) `out`"):
        double.prerecord_borrowed_dispatch([np.ones(64, np.float32)], workgroups=(1, 1, 1))


def test_borrowed_dispatch_uploads_preserved_state_from_the_host_list(device: vn.Device) -> None:
    prog = device.compile(COUNTER, preserve=["acc"])
    start = np.arange(64, dtype=np.uint32) * 3
    rec = prog.prerecord_borrowed_dispatch([start], workgroups=(1, 1, 1))
    rec.replay()
    np.testing.assert_array_equal(u32(rec.read_output(0)), start + 1)


def test_borrowed_dispatch_with_the_wrong_number_of_host_buffers_raises_binding_error(
    device: vn.Device, double
) -> None:
    with pytest.raises(vn.BindingError, match="inp"):
        double.prerecord_borrowed_dispatch([], output_sizes=[256])


# ================================================================ leaks


def _cycle(device: vn.Device, prog: vn.Pipeline, host: np.ndarray) -> None:
    x, out = device.upload(host), device.alloc(host.nbytes)
    rec = prog.prerecord_persistent_dispatch([x], [out], workgroups=(1, 1, 1))
    rec.replay()
    np.testing.assert_array_equal(f32(rec.read_output(0)), host * 2)


def test_live_objects_return_to_their_counts_after_record_replay_read_cycles(device: vn.Device) -> None:
    host = np.arange(64, dtype=np.float32)
    warm = device.compile(DOUBLE)
    _cycle(device, warm, host)  # the device's staging buffer for this size now exists
    del warm
    gc.collect()
    before = vn.debug.live_objects()

    prog = device.compile(DOUBLE)
    for _ in range(30):
        _cycle(device, prog, host)
    during = vn.debug.live_objects()
    assert during["pipelines"] == before["pipelines"] + 1
    del prog
    gc.collect()
    assert vn.debug.live_objects() == before


def test_live_objects_return_to_their_counts_after_a_device_is_dropped() -> None:
    gc.collect()
    before = vn.debug.live_objects()
    dev = vn.Device()
    prog = dev.compile(DOUBLE)
    host = np.arange(64, dtype=np.float32)
    for _ in range(10):
        _cycle(dev, prog, host)
    assert vn.debug.live_objects()["devices"] == before["devices"] + 1
    dev.close()
    del dev, prog
    gc.collect()
    assert vn.debug.live_objects() == before


def test_enumerate_adapters_lists_each_adapter_as_an_info_dict() -> None:
    adapters = vn.enumerate_adapters()
    assert adapters, "at least the adapter the suite runs on"
    assert all(set(a) == {"name", "vendor", "backend", "adapter_type", "driver", "uuid", "pci_bus"} for a in adapters)
    assert all(a["backend"] in PRIMARY_BACKENDS for a in adapters)


def test_device_on_an_enumerated_adapter_describes_that_adapter() -> None:
    adapters = vn.enumerate_adapters()
    index = len(adapters) - 1
    with vn.Device(adapter=index) as dev:
        assert dev.info == adapters[index]


def test_adapter_index_out_of_range_raises_value_error_naming_the_count() -> None:
    count = len(vn.enumerate_adapters())
    with pytest.raises(vn.InvalidArgumentError, match=rf"{count} adapter\(s\) found.*Fix:"):
        vn.Device(adapter=count)
