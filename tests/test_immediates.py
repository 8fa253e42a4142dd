"""Immediates (push constants): var<immediate> data set per dispatch, with no buffer.

Lavapipe and the H200 both offer wgpu-native's "immediates" feature (lavapipe's
max_immediate_size is 128 bytes), so the feature-less paths run on a device adopted
from wgpu-py that was created without it.
"""

from __future__ import annotations

import numpy as np
import pytest
import wgpu
from support.kernels import COUNTER

import vyre_native as vn
from vyre_native._lib import check, ffi, lib

# Each launch adds its own `k` to every element of `acc`.
ADD_K = """
struct Step { k: u32, scale: u32 }
var<immediate> step: Step;
@group(0) @binding(0) var<storage, read_write> acc: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < arrayLength(&acc)) { acc[gid.x] = acc[gid.x] + step.k * step.scale; }
}
"""
N = 256


def step(k: int, scale: int = 1) -> bytes:
    return np.array([k, scale], np.uint32).tobytes()


@pytest.fixture(scope="module")
def add_k(device: vn.Device) -> vn.Pipeline:
    if "immediates" not in device.features:
        pytest.skip(f"adapter {device.info['name']} has no immediates; the feature-less tests cover it")
    return device.compile(ADD_K, preserve=["acc"])


@pytest.fixture(scope="module")
def bare_device() -> vn.Device:
    """A device adopted from wgpu-py, created without any optional feature."""
    return vn.Device.from_wgpu(wgpu.gpu.request_adapter_sync().request_device_sync())


def test_a_module_with_var_immediate_reports_its_byte_size_and_no_binding_for_it(add_k: vn.Pipeline) -> None:
    assert add_k.immediate_size == 8
    assert [b.name for b in add_k.bindings] == ["acc"]


def test_a_pipeline_without_var_immediate_has_immediate_size_zero(device: vn.Device) -> None:
    assert device.compile(COUNTER).immediate_size == 0


def test_immediate_size_follows_the_wgsl_layout_rules(device: vn.Device, add_k: vn.Pipeline) -> None:
    # u32 at 0, vec3<f32> aligned to 16 at 16: 28 bytes, rounded to the struct's 16
    src = ADD_K.replace(
        "struct Step { k: u32, scale: u32 }", "struct Step { k: u32, v: vec3<f32>, scale: u32 }"
    )
    assert device.compile(src).immediate_size == 32


def test_a_var_immediate_the_entry_point_does_not_use_takes_nothing(
    device: vn.Device, add_k: vn.Pipeline
) -> None:
    other = "\n@compute @workgroup_size(1) fn other() { acc[0] = 1u; }\n"
    assert device.compile(ADD_K + other, entry_point="other").immediate_size == 0


def test_an_entry_point_using_two_var_immediates_raises_shader_error(
    device: vn.Device, add_k: vn.Pipeline
) -> None:
    src = ADD_K.replace("var<immediate> step: Step;", "var<immediate> step: Step;\nvar<immediate> more: u32;")
    src = src.replace("step.k * step.scale", "step.k * more")
    with pytest.raises(vn.ShaderError, match=r"More than 1 immediate data variable") as info:
        device.compile(src)
    assert info.value.line == 4


def test_device_limits_report_max_immediate_size(device: vn.Device, add_k: vn.Pipeline) -> None:
    assert device.limits["max_immediate_size"] >= add_k.immediate_size > 0


def test_a_1000_step_sequence_adds_each_steps_own_immediate(device: vn.Device, add_k: vn.Pipeline) -> None:
    acc = device.alloc(4 * N)
    seq = device.sequence()
    ks = np.random.default_rng(7).integers(0, 1000, size=1000, dtype=np.uint32)
    for k in ks:
        seq.add(add_k, [], [acc], workgroups=(N // 64, 1, 1), immediates=step(int(k)))
    seq.replay().wait()
    np.testing.assert_array_equal(acc.read(np.uint32), np.full(N, ks.sum(dtype=np.uint64), np.uint32))


def test_sequence_steps_with_their_own_immediates_share_one_bind_group(device: vn.Device) -> None:
    pipeline = device.compile(ADD_K, preserve=["acc"])  # a fresh cache to count
    acc = device.alloc(4 * N)
    seq = device.sequence()
    for k in range(100):
        seq.add(pipeline, [], [acc], workgroups=(N // 64, 1, 1), immediates=step(k))
    stats = pipeline.bind_group_cache_stats()
    assert (stats["misses"], stats["hits"], stats["entries"]) == (1, 99, 1)


def test_a_recording_replays_its_immediates_at_every_launch(device: vn.Device, add_k: vn.Pipeline) -> None:
    acc = device.alloc(4 * N)
    rec = add_k.record([], [acc], workgroups=(N // 64, 1, 1), immediates=step(5, 3))
    rec.replay(4).wait()
    rec.replay().wait()
    np.testing.assert_array_equal(acc.read(np.uint32), np.full(N, 5 * 15, np.uint32))


def test_immediates_are_copied_when_recorded(device: vn.Device, add_k: vn.Pipeline) -> None:
    acc = device.alloc(4 * N)
    values = bytearray(step(2))
    rec = add_k.record([], [acc], workgroups=(N // 64, 1, 1), immediates=values)
    values[:] = step(1000)
    rec.replay().wait()
    np.testing.assert_array_equal(acc.read(np.uint32), np.full(N, 2, np.uint32))


def test_a_prerecorded_dispatch_uses_its_immediates(device: vn.Device, add_k: vn.Pipeline) -> None:
    acc = device.alloc(4 * N)
    imm = np.array([7, 6], np.uint32)  # any buffer-protocol object
    dispatch = add_k.prerecord_persistent_dispatch([], [acc], workgroups=(N // 64, 1, 1), immediates=imm)
    dispatch.replay()
    np.testing.assert_array_equal(dispatch.read_output(0, np.uint32), np.full(N, 42, np.uint32))


def test_immediates_of_the_wrong_size_raise_naming_both_sizes(device: vn.Device, add_k: vn.Pipeline) -> None:
    acc = device.alloc(4 * N)
    with pytest.raises(
        vn.InvalidArgumentError, match=r"pipeline `main`: immediates has 4 bytes.* is 8 bytes.*Fix:"
    ):
        add_k.record([], [acc], immediates=np.uint32(1).tobytes())


def test_missing_immediates_raise_naming_the_size_needed(device: vn.Device, add_k: vn.Pipeline) -> None:
    with pytest.raises(
        vn.InvalidArgumentError, match=r"immediates has 0 bytes.* 8 bytes.*Fix: pass exactly 8"
    ):
        device.sequence().add(add_k, [], [device.alloc(4 * N)])


def test_immediates_on_a_pipeline_without_var_immediate_raise(device: vn.Device) -> None:
    plain = device.compile(COUNTER)
    with pytest.raises(
        vn.InvalidArgumentError, match=r"4 bytes of immediates.*declares no var<immediate>.*Fix:"
    ):
        plain.prerecord_persistent_dispatch([], [device.alloc(4 * N)], immediates=b"\0\0\0\0")


def test_a_borrowed_dispatch_of_a_pipeline_with_immediates_says_where_they_go(add_k: vn.Pipeline) -> None:
    with pytest.raises(
        vn.InvalidArgumentError,
        match=r"`main` declares 8 bytes of var<immediate>.*borrowed dispatch.*Fix:.*immediates=",
    ):
        add_k.prerecord_borrowed_dispatch([bytes(4 * N)])


def test_immediates_that_are_not_bytes_like_raise_wrong_type(device: vn.Device, add_k: vn.Pipeline) -> None:
    with pytest.raises(vn.WrongTypeError, match=r"immediates got int.*Fix:"):
        add_k.record([], [device.alloc(4 * N)], immediates=5)


def test_immediate_data_above_the_device_limit_raises_naming_both(
    device: vn.Device, add_k: vn.Pipeline
) -> None:
    limit = device.limits["max_immediate_size"]
    words = limit // 4 + 1
    src = ADD_K.replace(
        "struct Step { k: u32, scale: u32 }",
        f"struct Step {{ k: u32, scale: u32, pad: array<u32, {words}> }}",
    )
    with pytest.raises(
        vn.ShaderError, match=rf"(?s){4 * words + 8} bytes of var<immediate>.* {limit} bytes.*Fix:"
    ):
        device.compile(src)


def test_compiling_var_immediate_without_the_feature_raises_unsupported(bare_device: vn.Device) -> None:
    assert "immediates" not in bare_device.features
    with pytest.raises(vn.UnsupportedError) as info:
        bare_device.compile(ADD_K)
    msg = str(info.value)
    assert "var<immediate>" in msg and '"immediates" feature' in msg
    assert "\nFix: create the device with the feature" in msg  # this adapter offers it


def test_a_pipeline_layout_with_immediates_needs_the_feature_in_c(bare_device: vn.Device) -> None:
    # The shader of a module with var<immediate> already fails on such a device (naga
    # wants the capability); C's own check guards the layout behind it. Called directly
    # with a shader that compiles there and a layout that asks for immediates.
    dev = bare_device._live()
    src = COUNTER.encode()
    shader = ffi.new("vn_shader **")
    check(lib.vn_shader_create(dev, src, len(src), lib.VN_CHECKS_ALL, shader))
    try:
        names = [ffi.new("char[]", b"acc"), ffi.new("char[]", b"main")]
        binding = ffi.new(
            "vn_binding_desc *",
            {"kind": lib.VN_BINDING_STORAGE_READ_WRITE, "min_size": 0, "binding_size": 4, "name": names[0]},
        )
        desc = ffi.new(
            "vn_pipeline_desc *",
            {
                "entry_point": names[1],
                "bindings": binding,
                "binding_count": 1,
                "indirect_binding": -1,
                "immediate_size": 4,
            },
        )
        out = ffi.new("vn_pipeline **")
        assert lib.vn_pipeline_create(dev, shader[0], desc, out) == lib.VN_ERROR_UNSUPPORTED
        msg = ffi.string(lib.vn_last_error()).decode()
        assert "entry point `main` declares 4 bytes of var<immediate> data" in msg and "\nFix:" in msg
    finally:
        lib.vn_shader_release(shader[0])
