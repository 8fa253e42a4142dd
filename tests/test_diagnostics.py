"""Diagnostics: where a WGSL error is, which object an error is about, and a Fix that
names the real remedy."""

from __future__ import annotations

import pytest
import wgpu

import vyre_native as vn

# Line 3, column 5: an identifier that is not defined.
UNDEFINED = "@compute @workgroup_size(1)\nfn main() {\n    undefined_x = 1;\n}\n"
ONE = """
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(1)
fn fill() { out[0] = 1u; }
"""


def compile_error(device: vn.Device, src: str) -> vn.ShaderError:
    with pytest.raises(vn.ShaderError) as info:
        device.compile(src)
    return info.value


def test_shader_error_gives_line_and_column(device: vn.Device) -> None:
    err = compile_error(device, UNDEFINED)
    assert (err.line, err.column) == (3, 5)


def test_shader_error_shows_the_source_line_with_a_caret_under_the_column(device: vn.Device) -> None:
    what, source, caret, _fix = str(compile_error(device, UNDEFINED)).split("\n")
    assert "`undefined_x`" in what and "line 3, column 5" in what
    assert source == "    undefined_x = 1;"
    assert caret.startswith("    ^^^^^^^^^^^")  # under the whole identifier, from column 5


def test_shader_error_puts_the_fix_on_its_own_line(device: vn.Device) -> None:
    lines = str(compile_error(device, UNDEFINED)).split("\n")
    assert lines[-1] == "Fix: correct the WGSL at line 3, column 5."
    assert all("Fix:" not in line for line in lines[:-1])


def test_shader_error_column_counts_characters_not_bytes(device: vn.Device) -> None:
    err = compile_error(device, "@compute @workgroup_size(1)\nfn main() {\n    let é = 1 +;\n}\n")
    assert (err.line, err.column) == (3, 16)
    assert str(err).split("\n")[2] == " " * 15 + "^ expected expression"


def test_a_validation_error_names_the_pipeline_by_its_label(device: vn.Device) -> None:
    # wgpu-native itself finds the override without a value, at pipeline creation
    src = ONE.replace("out[0] = 1u;", "out[0] = k;").replace("@compute", "override k: u32;\n@compute")
    with pytest.raises(vn.ShaderError) as info:
        device.compile(src, entry_point="fill")
    assert "label = 'fill'" in str(info.value) and "'k'" in str(info.value)


def test_a_pipeline_is_labelled_by_its_entry_point(device: vn.Device) -> None:
    assert device.compile(ONE, entry_point="fill").label == "fill"


def test_binding_errors_name_the_pipeline(device: vn.Device) -> None:
    pipeline = device.compile(ONE, entry_point="fill")
    with pytest.raises(vn.BindingError, match=r"^pipeline `fill`: .*`out`.*Fix:"):
        pipeline.record([], [])


def test_buffers_carry_their_identity_as_wgpu_label() -> None:
    gpu_device = wgpu.gpu.request_adapter_sync().request_device_sync()
    dev = vn.Device.from_wgpu(gpu_device)
    buf = dev.alloc(16, usage=vn.BufferUsage.STORAGE | vn.BufferUsage.COPY_DST)
    enc = gpu_device.create_command_encoder()
    enc.copy_buffer_to_buffer(
        buf.to_wgpu(), 0, gpu_device.create_buffer(size=16, usage=wgpu.BufferUsage.COPY_DST), 0, 4
    )
    with pytest.raises(wgpu.GPUValidationError, match=rf"'vn buffer {buf.allocation_identity}' label"):
        enc.finish()


def test_timing_on_an_adopted_device_without_timestamp_query_says_to_request_it() -> None:
    adapter = wgpu.gpu.request_adapter_sync()
    assert "timestamp-query" in adapter.features  # lavapipe and the H200 have it
    dev = vn.Device.from_wgpu(adapter.request_device_sync())
    rec = dev.compile(ONE, entry_point="fill").record([], [dev.alloc(4)])
    with pytest.raises(vn.UnsupportedError) as info:
        rec.replay(timing=True)
    msg = str(info.value)
    assert 'created without the "timestamp-query" feature' in msg and "offers it" in msg
    assert "Fix: request the feature when creating the wgpu-py device" in msg
    assert 'required_features=["timestamp-query"]' in msg
    assert "has no timestamp queries" not in msg
