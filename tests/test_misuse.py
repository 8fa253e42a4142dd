"""Every misuse gives a clear, typed error, and the device keeps working afterwards.

Each case asserts three things: the exception class (and, where the package promises
one, its built-in base: ValueError, TypeError, IndexError, MemoryError); that the
message names the offending values (the size, the index, the binding name...); and
that the message carries a "Fix:" remedy. In-process cases then prove the session
device still works (an upload/read round trip and a small dispatch).

Cases that can reach a wgpu-native abort (device loss, invalid buffer usages,
library loading, races with destroy) run in a child interpreter, so one abort fails
one test instead of killing the suite; the child reports its outcome as JSON and the
parent asserts on it and on returncode == 0.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from support.child import run_child, run_scenario
from support.errors import check_message, raised
from support.kernels import DOUBLE

import vyre_native as vn

U = vn.BufferUsage


# ---------------------------------------------------------------- shaders


# A uniform first, then an output.
SCALE = """
struct Params { scale: f32, n: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(1)
fn main() { out[0] = params.scale; }
"""

# A fixed-size input: its declared type needs 64 * 4 = 256 bytes.
FIXED = """
@group(0) @binding(0) var<storage, read> inp: array<f32, 64>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(1)
fn main() { out[0] = inp[3]; }
"""

# Indirect: the workgroup counts come from `args`.
INDIRECT = """
@group(0) @binding(0) var<storage, read> args: array<u32, 4>;
@group(0) @binding(1) var<storage, read_write> out: array<u32, 64>;

@compute @workgroup_size(1)
fn main(@builtin(workgroup_id) w: vec3<u32>) { out[w.x] = args[0]; }
"""

# ---------------------------------------------------------------- helpers


def assert_device_works(dev: vn.Device) -> None:
    """An upload/read round trip and a small dispatch still give the right answers."""
    host = np.arange(64, dtype=np.float32)
    buf = dev.upload(host)
    np.testing.assert_array_equal(np.frombuffer(buf.read(), np.float32), host)
    prog = dev.compile(DOUBLE)
    rec = prog.prerecord_persistent_dispatch([buf], [dev.alloc(host.nbytes)], workgroups=(1, 1, 1))
    rec.replay()
    np.testing.assert_array_equal(np.frombuffer(rec.read_output(0), np.float32), host * 2)


def misuse(dev: vn.Device, fn: Callable[[], Any], cls: type[BaseException], *values: object) -> str:
    """fn() raises cls naming values with a Fix, and dev still works afterwards."""
    with pytest.raises(cls) as info:
        fn()
    assert isinstance(info.value, vn.VyreError), f"{type(info.value).__name__} is not a vn.VyreError"
    msg = check_message(info.value, *values)
    assert_device_works(dev)
    return msg


@pytest.fixture()
def io(device: vn.Device) -> tuple[vn.Buffer, vn.Buffer]:
    """A 64-float input and a matching output."""
    return device.upload(np.arange(64, dtype=np.float32)), device.alloc(256)


# ================================================================ WGSL


def test_wgsl_syntax_error_raises_shader_error_with_its_line(device: vn.Device) -> None:
    src = "@compute @workgroup_size(1)\nfn main() {\n    let x = 1 +;\n}\n"
    with pytest.raises(vn.ShaderError) as info:
        device.compile(src)
    check_message(info.value, "wgsl:3")
    assert info.value.line == 3
    assert_device_works(device)


def test_wgsl_type_error_raises_shader_error_naming_the_types(device: vn.Device) -> None:
    src = "@compute @workgroup_size(1)\nfn main() {\n    let x: f32 = 1u;\n}\n"
    misuse(device, lambda: device.compile(src), vn.ShaderError, "`x`", "f32", "u32", "wgsl:3")


def test_missing_entry_point_raises_shader_error_naming_it(device: vn.Device) -> None:
    misuse(device, lambda: device.compile(DOUBLE, entry_point="nope"), vn.ShaderError, "`nope`", "`main`")


def test_vertex_entry_point_used_as_compute_raises_shader_error(device: vn.Device) -> None:
    src = (
        "@vertex fn vs() -> @builtin(position) vec4<f32> { return vec4<f32>(0.0); }\n"
        "@compute @workgroup_size(1) fn main() {}\n"
    )
    misuse(device, lambda: device.compile(src, entry_point="vs"), vn.ShaderError, "`vs`", "@vertex")


def test_texture_binding_used_by_the_entry_point_raises_shader_error(device: vn.Device) -> None:
    src = """
    @group(0) @binding(0) var tex: texture_2d<f32>;
    @group(0) @binding(1) var<storage, read_write> out: array<f32>;
    @compute @workgroup_size(1) fn main() { out[0] = textureLoad(tex, vec2<i32>(0, 0), 0).x; }
    """
    misuse(device, lambda: device.compile(src), vn.ShaderError, "`tex`", "texture_2d", "@binding(0)")


def test_sampler_binding_used_by_the_entry_point_raises_shader_error(device: vn.Device) -> None:
    src = """
    @group(0) @binding(0) var samp: sampler;
    @group(0) @binding(1) var<storage, read_write> out: array<f32>;
    @compute @workgroup_size(1) fn main() { let s = samp; out[0] = 1.0; }
    """
    misuse(device, lambda: device.compile(src), vn.ShaderError, "`samp`", "sampler")


def test_workgroup_size_above_the_limit_raises_shader_error(device: vn.Device) -> None:
    misuse(
        device, lambda: device.compile("@compute @workgroup_size(2048) fn main() {}"), vn.ShaderError, "2048"
    )


def test_override_without_a_value_raises_shader_error_naming_it(device: vn.Device) -> None:
    src = "override wg: u32;\n@compute @workgroup_size(wg) fn main() {}\n"
    misuse(device, lambda: device.compile(src), vn.ShaderError, "wg")


def test_compile_of_a_non_str_raises_type_error(device: vn.Device) -> None:
    msg = misuse(device, lambda: device.compile(b"fn main() {}"), TypeError, "bytes")
    assert "str" in msg


# ================================================================ handles


def test_too_many_inputs_raise_binding_error_naming_the_binding(device, double, io) -> None:
    a, o = io
    misuse(
        device, lambda: double.prerecord_persistent_dispatch([a, a], [o]), vn.BindingError, "`inp`", "2 input"
    )


def test_too_few_inputs_raise_binding_error_naming_the_binding(device, double, io) -> None:
    _, o = io
    misuse(device, lambda: double.prerecord_persistent_dispatch([], [o]), vn.BindingError, "`inp`", "0 input")


def test_too_many_outputs_raise_binding_error_naming_the_binding(device, double, io) -> None:
    a, o = io
    misuse(device, lambda: double.record([a], [o, o]), vn.BindingError, "`out`", "2 output")


def test_too_few_outputs_raise_binding_error_naming_the_binding(device, double, io) -> None:
    a, _ = io
    misuse(device, lambda: double.record([a], []), vn.BindingError, "`out`", "0 output")


def test_params_without_a_uniform_binding_raise_binding_error(device, double, io) -> None:
    a, o = io
    misuse(device, lambda: double.record([a], [o], params=a), vn.BindingError, "params", "uniform")


def test_output_without_copy_src_raises_binding_error(device, double, io) -> None:
    a, _ = io
    out = device.alloc(256, usage=U.STORAGE | U.COPY_DST)
    misuse(
        device,
        lambda: double.prerecord_persistent_dispatch([a], [out]),
        vn.BindingError,
        "`out`",
        "COPY_SRC",
        f"buffer {out.allocation_identity}",
    )


def test_uniform_binding_given_a_buffer_without_uniform_usage_raises_binding_error(device) -> None:
    prog = device.compile(SCALE)
    params = device.upload(np.zeros(2, np.float32), usage=U.STORAGE | U.COPY_DST)
    out = device.alloc(16)
    misuse(device, lambda: prog.record([], [out], params=params), vn.BindingError, "`params`", "UNIFORM")
    misuse(device, lambda: prog.record([params], [out]), vn.BindingError, "`params`", "UNIFORM", "input 0")


def test_buffer_smaller_than_the_declared_type_raises_binding_error(device) -> None:
    prog = device.compile(FIXED)
    small = device.alloc(16)
    misuse(
        device,
        lambda: prog.prerecord_persistent_dispatch([small], [device.alloc(16)]),
        vn.BindingError,
        "`inp`",
        "16 bytes",
        "256",
    )


def test_buffer_from_another_device_raises_binding_error(device, double) -> None:
    other = vn.Device()
    try:
        foreign = other.upload(np.zeros(64, np.float32))
        msg = misuse(
            device,
            lambda: double.prerecord_persistent_dispatch([foreign], [device.alloc(256)]),
            vn.BindingError,
            "`inp`",
            f"buffer {foreign.allocation_identity}",
        )
        assert "another device" in msg
        assert_device_works(other)
    finally:
        other.close()


def test_pipeline_from_another_device_in_a_sequence_raises_binding_error(device, double) -> None:
    other = vn.Device()
    try:
        seq = other.sequence()
        a, o = other.upload(np.zeros(64, np.float32)), other.alloc(256)
        msg = misuse(device, lambda: seq.add(double, [a], [o]), vn.BindingError, "pipeline")
        assert "another device" in msg
    finally:
        other.close()


# ---- released handles


def _released_buffer(device: vn.Device) -> vn.Buffer:
    buf = device.upload(np.arange(64, dtype=np.float32))
    buf.release()
    return buf


@pytest.mark.parametrize(
    "call",
    [
        lambda b: b.read(),
        lambda b: b.read_into(bytearray()),
        lambda b: b.write(b"1234"),
        lambda b: b.read_async(),
    ],
    ids=["read", "read_into", "write", "read_async"],
)
def test_released_buffer_raises_released_error(device, call) -> None:
    buf = _released_buffer(device)
    assert buf.released
    misuse(device, lambda: call(buf), vn.ReleasedError, "Buffer")


@pytest.mark.parametrize("role", ["inputs", "outputs"])
def test_released_buffer_passed_to_a_dispatch_raises_released_error_naming_its_role(
    device, double, role
) -> None:
    buf = _released_buffer(device)
    live_in, live_out = device.upload(np.zeros(64, np.float32)), device.alloc(256)
    ins, outs = ([buf], [live_out]) if role == "inputs" else ([live_in], [buf])
    # Which of several handles was released must be told: "inputs[0]" / "outputs[0]".
    msg = misuse(device, lambda: double.prerecord_persistent_dispatch(ins, outs), vn.ReleasedError, "Buffer")
    assert re.search(rf"{role}\[0\]", msg), f"the message does not say which handle ({role}[0]): {msg!r}"


def test_released_buffer_as_params_or_in_a_sequence_raises_released_error(device) -> None:
    prog = device.compile(SCALE)
    buf = _released_buffer(device)
    misuse(device, lambda: prog.record([], [device.alloc(16)], params=buf), vn.ReleasedError, "Buffer")
    seq = device.sequence()
    misuse(device, lambda: seq.copy(buf, device.alloc(256)), vn.ReleasedError, "Buffer")
    misuse(device, lambda: seq.clear(buf), vn.ReleasedError, "Buffer")


@pytest.mark.parametrize(
    "call",
    [
        lambda p, a, o, dev: p.prerecord_persistent_dispatch([a], [o]),
        lambda p, a, o, dev: p.record([a], [o]),
        lambda p, a, o, dev: p.prerecord_borrowed_dispatch([np.zeros(64, np.float32)], output_sizes=[256]),
        lambda p, a, o, dev: dev.sequence().add(p, [a], [o]),
        lambda p, a, o, dev: p.bind_group_cache_stats(),
    ],
    ids=["prerecord", "record", "borrowed", "sequence_add", "cache_stats"],
)
def test_released_pipeline_raises_released_error(device, io, call) -> None:
    prog = device.compile(DOUBLE)
    prog.release()
    a, o = io
    misuse(device, lambda: call(prog, a, o, device), vn.ReleasedError, "Pipeline")


@pytest.mark.parametrize(
    "call",
    [
        lambda r: r.replay(),
        lambda r: r.read_output(0),
        lambda r: r.read_output_into(0, np.empty(64, np.float32)),
    ],
    ids=["replay", "read_output", "read_output_into"],
)
def test_released_prerecorded_dispatch_raises_released_error(device, double, io, call) -> None:
    a, o = io
    rec = double.prerecord_persistent_dispatch([a], [o])
    rec.replay()
    rec.release()
    misuse(device, lambda: call(rec), vn.ReleasedError, "PrerecordedDispatch")


@pytest.mark.parametrize(
    "call",
    [
        lambda r, dev: r.replay(),
        lambda r, dev: r.read_output(0),
        lambda r, dev: r.read_output_into(0, np.empty(64, np.float32)),
        lambda r, dev: r.read_output_async(0),
        lambda r, dev: dev.submit([r]),
    ],
    ids=["replay", "read_output", "read_output_into", "read_output_async", "submit"],
)
def test_released_recording_raises_released_error(device, double, io, call) -> None:
    a, o = io
    rec = double.record([a], [o])
    rec.replay().wait()
    rec.release()
    misuse(device, lambda: call(rec, device), vn.ReleasedError, "Recording")


def test_released_sequence_raises_released_error(device, double, io) -> None:
    a, o = io
    seq = device.sequence().add(double, [a], [o])
    seq.release()
    misuse(device, lambda: seq.replay(), vn.ReleasedError, "Sequence")
    misuse(device, lambda: seq.add(double, [a], [o]), vn.ReleasedError, "Sequence")


# ================================================================ dispatch sizes


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("how", ["prerecord", "record", "sequence_add"])
def test_workgroups_above_the_device_limit_raise_invalid_argument(device, double, io, axis, how) -> None:
    a, o = io
    limit = device.limits["max_compute_workgroups_per_dimension"]
    wg = [1, 1, 1]
    wg[axis] = limit + 1
    calls = {
        "prerecord": lambda: double.prerecord_persistent_dispatch([a], [o], workgroups=tuple(wg)),
        "record": lambda: double.record([a], [o], workgroups=tuple(wg)),
        "sequence_add": lambda: device.sequence().add(double, [a], [o], workgroups=tuple(wg)),
    }
    misuse(device, calls[how], vn.InvalidArgumentError, limit + 1, limit)
    with pytest.raises(ValueError):
        calls[how]()


@pytest.mark.parametrize(
    ("workgroups", "named"),
    [((1, 1), "(1, 1)"), ((1, -1, 1), "-1"), ((1.5, 1, 1), "1.5"), ("abc", "'abc'"), (None, "None")],
    ids=["two_counts", "negative", "float", "str", "none"],
)
@pytest.mark.parametrize("how", ["prerecord", "record", "sequence_add"])
def test_workgroups_not_three_non_negative_ints_raise_type_or_value_error(
    device, double, io, workgroups, named, how
) -> None:
    a, o = io
    calls = {
        "prerecord": lambda: double.prerecord_persistent_dispatch([a], [o], workgroups=workgroups),
        "record": lambda: double.record([a], [o], workgroups=workgroups),
        "sequence_add": lambda: device.sequence().add(double, [a], [o], workgroups=workgroups),
    }
    misuse(device, calls[how], (TypeError, ValueError), named)


def test_replay_count_out_of_range_raises(device, double, io) -> None:
    a, o = io
    rec = double.record([a], [o])
    misuse(device, lambda: rec.replay(0), ValueError, "n=0")
    misuse(device, lambda: rec.replay(-1), ValueError, "n=-1")
    misuse(device, lambda: rec.replay("2"), TypeError, "'2'")


# ================================================================ indirect dispatch


def test_indirect_offset_not_a_multiple_of_four_raises(device) -> None:
    misuse(
        device, lambda: device.compile(INDIRECT, indirect=("args", 2)), vn.InvalidArgumentError, "2", "`args`"
    )


def test_indirect_names_an_unknown_buffer_raises_binding_error(device) -> None:
    misuse(
        device, lambda: device.compile(INDIRECT, indirect=("nope", 0)), vn.BindingError, "`nope`", "`args`"
    )


def test_indirect_buffer_too_short_for_three_counts_raises_binding_error(device) -> None:
    prog = device.compile(INDIRECT, indirect=("args", 8))
    args = device.upload(np.array([1, 1, 1, 1], np.uint32))  # 16 bytes; 8 + 12 = 20 needed
    misuse(
        device,
        lambda: prog.prerecord_persistent_dispatch([args], [device.alloc(256)]),
        vn.BindingError,
        "`args`",
        "16 bytes",
        "offset 8",
        "20",
    )


def test_indirect_buffer_without_indirect_usage_raises_binding_error(device) -> None:
    prog = device.compile(INDIRECT, indirect=("args", 0))
    args = device.upload(np.array([1, 1, 1, 1], np.uint32), usage=U.STORAGE | U.COPY_DST)
    misuse(device, lambda: prog.record([args], [device.alloc(256)]), vn.BindingError, "`args`", "INDIRECT")


@pytest.mark.parametrize("preserve", [[], ["out"]], ids=["cleared", "preserved"])
def test_indirect_buffer_that_is_a_read_write_binding_raises_binding_error(device, preserve) -> None:
    # Preserved or not: the counts and a writable binding of one buffer in one dispatch
    # are a usage-scope conflict (wgpu refuses it at Finish), so preserve= is no remedy.
    msg = misuse(
        device,
        lambda: device.compile(INDIRECT, indirect=("out", 0), preserve=preserve),
        vn.BindingError,
        "`out`",
        "usage scope",
    )
    assert "preserve" not in msg


def test_indirect_not_a_name_offset_pair_raises_type_error(device) -> None:
    misuse(device, lambda: device.compile(INDIRECT, indirect="args"), TypeError, "'args'")


# ================================================================ sizes and host buffers


def test_alloc_negative_raises_value_error(device) -> None:
    misuse(device, lambda: device.alloc(-1), ValueError, "-1")


def test_alloc_beyond_64_bits_raises_value_error(device) -> None:
    misuse(device, lambda: device.alloc(2**70), ValueError, str(2**70))


def test_alloc_of_a_str_raises_type_error(device) -> None:
    # WrongTypeError (a TypeError) is the package's class for an argument of the wrong type.
    misuse(device, lambda: device.alloc("x"), TypeError, "'x'")


def test_alloc_above_max_buffer_size_raises_out_of_memory(device) -> None:
    limit = device.limits["max_buffer_size"]
    msg = misuse(device, lambda: device.alloc(limit + 1), vn.OutOfMemoryError, limit + 1, limit)
    assert "maxBufferSize" in msg
    with pytest.raises(MemoryError):
        device.alloc(limit + 1)


def test_upload_of_a_non_buffer_object_raises_type_error(device) -> None:
    misuse(device, lambda: device.upload(object()), TypeError, "object")
    misuse(device, lambda: device.upload([1.0, 2.0]), TypeError, "list")


def test_upload_of_a_non_contiguous_view_raises_value_error(device) -> None:
    view = np.arange(64, dtype=np.float32)[::2]
    misuse(device, lambda: device.upload(view), ValueError, "(32,)", "(8,)")


@pytest.mark.parametrize(
    ("usage", "named"),
    [(0, "0x0"), (1 << 64, str(1 << 64)), (0x400, "0x400")],
    ids=["empty", "beyond_64_bits", "unknown_bit"],
)
def test_alloc_with_a_usage_that_is_no_set_of_flags_raises_value_error(device, usage, named) -> None:
    misuse(device, lambda: device.alloc(16, usage=usage), ValueError, named)


def test_buffer_write_past_the_end_raises_value_error(device) -> None:
    buf = device.alloc(256)
    misuse(device, lambda: buf.write(bytes(260)), ValueError, "260", "256")
    misuse(device, lambda: buf.write(b"1234", offset=254), ValueError, "offset 254", "256")


def test_buffer_write_offset_of_a_str_raises_type_error(device) -> None:
    buf = device.alloc(256)
    misuse(device, lambda: buf.write(b"1234", offset="4"), TypeError, "'4'")


def test_sequence_clear_of_a_non_buffer_raises_type_error_with_a_fix(device) -> None:
    seq = device.sequence()
    misuse(device, lambda: seq.clear("buf"), TypeError, "str")


def test_sequence_copy_misuse_raises_value_error(device) -> None:
    a, b = device.alloc(256), device.alloc(256)
    seq = device.sequence()
    misuse(device, lambda: seq.copy(a, a), ValueError, f"buffer {a.allocation_identity}")
    misuse(device, lambda: seq.copy(a, b, nbytes=3), ValueError, "nbytes 3")
    misuse(device, lambda: seq.copy(a, b, nbytes=512), ValueError, "512", "256")
    misuse(device, lambda: seq.replay(), ValueError, "empty")


def test_submit_misuse_raises(device, double, io) -> None:
    a, o = io
    rec = double.record([a], [o])
    misuse(device, lambda: device.submit([]), ValueError, "[]")
    misuse(device, lambda: device.submit(rec), TypeError, "list")
    misuse(device, lambda: device.submit([rec, "x"]), TypeError, "work[1]", "str")


# ================================================================ readback


def test_read_output_before_replay_raises_not_submitted(device, double, io) -> None:
    a, o = io
    rec = double.prerecord_persistent_dispatch([a], [o])
    misuse(device, lambda: rec.read_output(0), vn.NotSubmittedError, "output 0", "replay()")
    misuse(
        device, lambda: rec.read_output_into(0, np.empty(64, np.float32)), vn.NotSubmittedError, "output 0"
    )


def test_second_replay_raises_already_submitted(device, double, io) -> None:
    a, o = io
    rec = double.prerecord_persistent_dispatch([a], [o])
    index = rec.replay()
    misuse(device, lambda: rec.replay(), vn.AlreadySubmittedError, f"submission {index}")


def reads_of_output_refused(
    device: vn.Device, rec: vn.PrerecordedDispatch | vn.Recording, index: int
) -> None:
    """Both reads of output `index` of a replayed one-output recording are refused, naming it."""
    misuse(device, lambda: rec.read_output(index), vn.OutputIndexError, f"index {index}", "1 output")
    misuse(device, lambda: rec.read_output_into(index, bytearray()), IndexError, f"index {index}")


@pytest.mark.parametrize("index", [1, 7, -1, -2])
def test_prerecorded_output_index_out_of_range_raises_output_index_error(device, double, io, index) -> None:
    a, o = io
    rec = double.prerecord_persistent_dispatch([a], [o])
    rec.replay()
    reads_of_output_refused(device, rec, index)


@pytest.mark.parametrize("index", [1, -1])
def test_recording_output_index_out_of_range_raises_output_index_error(device, double, io, index) -> None:
    a, o = io
    rec = double.record([a], [o])
    rec.replay()
    reads_of_output_refused(device, rec, index)


def test_output_index_of_a_str_raises_type_error(device, double, io) -> None:
    a, o = io
    rec = double.prerecord_persistent_dispatch([a], [o])
    rec.replay()
    misuse(device, lambda: rec.read_output("0"), TypeError, "'0'")


def _replayed(kind: str, double: vn.Pipeline, a: vn.Buffer, o: vn.Buffer) -> Any:
    if kind == "prerecorded":
        rec = double.prerecord_persistent_dispatch([a], [o])
        rec.replay()
    else:
        rec = double.record([a], [o])
        rec.replay()
    return rec


@pytest.mark.parametrize("kind", ["prerecorded", "recording"])
def test_read_output_into_bytes_raises_type_error(device, double, io, kind) -> None:
    rec = _replayed(kind, double, *io)
    misuse(device, lambda: rec.read_output_into(0, bytes(256)), TypeError, "bytes", "read-only")


@pytest.mark.parametrize("kind", ["prerecorded", "recording"])
def test_read_output_into_a_too_small_array_raises_value_error(device, double, io, kind) -> None:
    rec = _replayed(kind, double, *io)
    misuse(device, lambda: rec.read_output_into(0, np.empty(10, np.uint8)), ValueError, "10 bytes", "256")


@pytest.mark.parametrize("kind", ["prerecorded", "recording"])
def test_read_output_into_a_non_contiguous_array_raises_value_error(device, double, io, kind) -> None:
    rec = _replayed(kind, double, *io)
    view = np.empty(1024, np.uint8)[::2]
    misuse(device, lambda: rec.read_output_into(0, view), ValueError, "(512,)", "(2,)")


@pytest.mark.parametrize("kind", ["prerecorded", "recording"])
def test_read_output_into_a_non_buffer_raises_type_error(device, double, io, kind) -> None:
    rec = _replayed(kind, double, *io)
    misuse(device, lambda: rec.read_output_into(0, [0] * 64), TypeError, "list")


@pytest.mark.parametrize("route", ["buffer.read_into", "read_output_into", "result_into"])
def test_every_read_into_too_small_a_destination_names_both_sizes(device, double, io, route) -> None:
    """One C rule (readback.c, vn_check_destination) for every read into caller memory."""
    rec = _replayed("recording", double, *io)
    small = np.empty(10, np.uint8)
    call = {
        "buffer.read_into": lambda: io[1].read_into(small),
        "read_output_into": lambda: rec.read_output_into(0, small),
        "result_into": lambda: io[1].read_async().result_into(small),
    }[route]
    misuse(device, call, ValueError, "into 10 bytes", "has 256", "at least 256 bytes")


def test_failed_read_into_leaves_the_destination_untouched(device, double, io) -> None:
    rec = _replayed("prerecorded", double, *io)
    dst = np.full(10, 7, np.uint8)
    with pytest.raises(ValueError):
        rec.read_output_into(0, dst)
    assert (dst == 7).all()


def test_buffer_read_without_copy_src_raises_value_error(device) -> None:
    buf = device.upload(np.zeros(4, np.float32), usage=U.STORAGE | U.COPY_DST)
    misuse(device, lambda: buf.read(), ValueError, "COPY_SRC", f"buffer {buf.allocation_identity}")


# ================================================================ what wgpu would reject, refused first


def test_same_buffer_as_input_and_output_raises_binding_error_naming_both_bindings(device, double) -> None:
    # A buffer bound writable may have no read-only use in the same dispatch (WebGPU's
    # usage scope). wgpu would find it only when the command buffer is finished (for a
    # Recording: at every replay); the C layer refuses it when the handles are
    # resolved, naming both bindings.
    buf = device.alloc(256)
    ident = f"buffer {buf.allocation_identity}"
    misuse(device, lambda: double.record([buf], [buf]), vn.BindingError, ident, "`inp`", "`out`")
    misuse(
        device, lambda: double.prerecord_persistent_dispatch([buf], [buf]), vn.BindingError, ident, "`out`"
    )
    misuse(device, lambda: device.sequence().add(double, [buf], [buf]), vn.BindingError, ident, "`inp`")
    # With zero workgroups nothing is dispatched, but the handles are still refused.
    misuse(device, lambda: double.record([buf], [buf], workgroups=(0, 1, 1)), vn.BindingError, ident)


def test_invalid_usage_combinations_raise_a_typed_error_without_aborting() -> None:
    # MAP_* goes only with the opposite COPY_*. alloc creates the buffer unmapped; upload
    # creates it mapped at creation and then asks for its mapped range, which
    # wgpu-native answers with an abort when the buffer is invalid. Refused up front
    # (InvalidArgumentError) or by wgpu's validation (ValidationError): either is typed.
    res = run_child(
        """
        d = vn.Device()
        out = {}
        for name, usage in [("alloc_map_read_storage", U.MAP_READ | U.STORAGE),
                            ("upload_map_read_storage", U.MAP_READ | U.STORAGE),
                            ("upload_map_write_storage", U.MAP_WRITE | U.COPY_SRC | U.STORAGE)]:
            make = d.alloc if name.startswith("alloc") else d.upload
            arg = 16 if name.startswith("alloc") else bytes(16)
            out[name] = outcome(lambda: make(arg, usage=usage))
        b = d.upload(np.arange(4, dtype=np.float32))
        out["works_after"] = b.read() == np.arange(4, dtype=np.float32).tobytes()
        report(out)
        """
    )
    for name in ("alloc_map_read_storage", "upload_map_read_storage", "upload_map_write_storage"):
        raised(res[name], (vn.InvalidArgumentError, vn.ValidationError), "MAP", "0x")
    assert res["works_after"]


# ================================================================ device loss and close

_LOSS_OPS = [
    "upload",
    "alloc",
    "compile",
    "prerecord",
    "record",
    "replay",
    "recording_replay",
    "sequence_replay",
    "sequence_add",
    "sequence",
    "submit",
    "read_output",
    "read_output_into",
    "recording_read_output",
    "buffer_read",
    "buffer_write",
    "read_async",
    "wait_idle",
]


@functools.cache
def _after_end(mode: str) -> dict[str, Any]:
    """Outcome of every call after dev.destroy() or dev.close(), from one child (run once per mode)."""
    return run_scenario("misuse_after_end", mode, timeout=300)  # type: ignore[no-any-return]


@pytest.mark.parametrize("op", _LOSS_OPS)
def test_every_call_after_destroy_raises_device_lost_error(op: str) -> None:
    msg = raised(_after_end("destroy")[op], vn.DeviceLostError)
    assert "lost" in msg or "destroy" in msg, msg


@pytest.mark.parametrize("op", _LOSS_OPS)
def test_every_call_after_close_raises_released_error(op: str) -> None:
    msg = raised(_after_end("close")[op], vn.ReleasedError)
    assert "closed" in msg or "released" in msg, msg


@pytest.mark.parametrize("mode", ["destroy", "close"])
def test_waiting_on_a_submission_after_the_device_ends_does_not_hang(mode: str) -> None:
    res = _after_end(mode)["submission_wait"]
    assert not res.get("hang"), "Submission.wait() hung after the device ended"
    if not res["ok"]:
        assert "VyreError" in res["mro"], res


@pytest.mark.parametrize("mode", ["destroy", "close"])
def test_everything_made_on_an_ended_device_is_freed(mode: str) -> None:
    live = _after_end(mode)["live_after"]
    for kind in ("buffers", "pipelines", "dispatches", "recordings", "sequences", "pending_reads", "shaders"):
        assert live[kind] == 0, (kind, live)


def test_destroy_twice_raises_device_lost_error_and_close_after_destroy_works() -> None:
    res = run_child(
        """
        d = vn.Device()
        d.destroy()
        out = {"second": outcome(d.destroy)}
        out["close"] = outcome(d.close)
        out["after_close"] = outcome(lambda: d.upload(b"1234"))
        report(out)
        """
    )
    raised(res["second"], vn.DeviceLostError)
    assert res["close"]["ok"]
    raised(res["after_close"], vn.ReleasedError)


# A child's opening: read_async queues a copy and a map of a staging buffer, then
# destroy() destroys the device and that staging buffer under the pending read.
PENDING_READ_THEN_DESTROY = """
d = vn.Device()
b = d.upload(np.arange(16, dtype=np.float32))
pending = b.read_async()
d.destroy()
"""


def test_pending_read_finished_after_destroy_raises_device_lost_error() -> None:
    # Finishing the read must report the loss, not read a destroyed mapping.
    res = run_child(PENDING_READ_THEN_DESTROY + 'report({"result": outcome(pending.result)})\n')
    raised(res["result"], vn.DeviceLostError)


def test_pending_read_dropped_after_destroy_is_freed() -> None:
    res = run_child(
        PENDING_READ_THEN_DESTROY + "del pending\nimport gc\ngc.collect()\nreport(vn.debug.live_objects())\n"
    )
    assert res["pending_reads"] == 0


def test_destroy_while_other_threads_read_back_raises_device_lost_error() -> None:
    # Reader threads loop readbacks (Buffer.read; Recording.replay + read_output) while
    # the main thread destroys the device under them, in several rounds with different
    # delays. Every reader must stop with DeviceLostError: no abort, no hang.
    res = run_child(
        f"""
        import time
        rounds = []
        for delay in (0.02, 0.05, 0.08, 0.11, 0.14, 0.17):
            d = vn.Device()
            b = d.upload(np.arange(1 << 16, dtype=np.float32))
            p = d.compile({DOUBLE!r})
            rc = p.record([b], [d.alloc(b.byte_len)], workgroups=(1024, 1, 1))
            def read_loop():
                while True:
                    b.read()
            def replay_loop():
                while True:
                    rc.replay()
                    rc.read_output(0)
            loops = {{"buffer_read": read_loop, "recording_read": replay_loop}}
            rounds.append(outcomes_across(d.destroy, loops, delay))
        report(rounds)
        """,
        timeout=300,
    )
    for i, r in enumerate(res):
        for name, outcome in r.items():
            try:
                raised(outcome, vn.DeviceLostError)
            except AssertionError as err:
                raise AssertionError(f"round {i}, {name}: {err}") from None


# ================================================================ wgpu-py objects changed behind vn's back

# A wgpu-py device adopted with vn.Device.from_wgpu, a vn pipeline on it, and an input
# buffer made by wgpu-py and adopted with vn.Buffer.from_wgpu.
_INTEROP_SETUP = """
import wgpu
gpu_device = wgpu.gpu.request_adapter_sync().request_device_sync()
d = vn.Device.from_wgpu(gpu_device)
p = d.compile({double!r})
o = d.alloc(256)
WU = wgpu.BufferUsage
"""


def test_adopted_wgpu_buffer_still_mapped_raises_a_typed_error_not_an_abort() -> None:
    # wgpu-native aborts on a submit that references a mapped buffer.
    res = run_child(
        _INTEROP_SETUP.format(double=DOUBLE)
        + """
gpu_buf = gpu_device.create_buffer(size=256, usage=WU.STORAGE | WU.COPY_DST | WU.COPY_SRC, mapped_at_creation=True)
b = vn.Buffer.from_wgpu(gpu_buf)
def run():
    rec = p.prerecord_persistent_dispatch([b], [o])
    rec.replay()
out = {"prerecord": outcome(run), "recording": outcome(lambda: p.record([b], [o]).replay())}
gpu_buf.unmap()
out["after_unmap"] = outcome(lambda: p.record([b], [o]).replay().wait())
report(out)
"""
    )
    for how in ("prerecord", "recording"):
        raised(res[how], (vn.BindingError, vn.ValidationError), "mapped")
    assert res["after_unmap"]["ok"], res["after_unmap"]


def test_adopted_wgpu_buffer_destroyed_by_wgpu_py_raises_a_typed_error_not_an_abort() -> None:
    # wgpu-native aborts on a submit that references a destroyed buffer.
    res = run_child(
        _INTEROP_SETUP.format(double=DOUBLE)
        + """
gpu_buf = gpu_device.create_buffer(size=256, usage=WU.STORAGE | WU.COPY_DST | WU.COPY_SRC)
b = vn.Buffer.from_wgpu(gpu_buf)
rec = p.record([b], [o])
pre = p.prerecord_persistent_dispatch([b], [o])
gpu_buf.destroy()
report({"recording": outcome(rec.replay), "prerecorded": outcome(pre.replay), "read": outcome(b.read)})
"""
    )
    for how in ("recording", "prerecorded", "read"):
        raised(res[how], (vn.BindingError, vn.ValidationError, vn.ReleasedError), "destroyed")


def test_adopted_wgpu_device_destroyed_by_wgpu_py_raises_device_lost_error() -> None:
    # gpu_device.destroy() fires no lost callback; a later submit to it aborts in wgpu-native.
    res = run_child(
        _INTEROP_SETUP.format(double=DOUBLE)
        + """
a = d.upload(np.ones(64, np.float32))
pre = p.prerecord_persistent_dispatch([a], [o])
rec = p.record([a], [o])
gpu_device.destroy()
report({"prerecorded": outcome(pre.replay), "recording": outcome(rec.replay), "read": outcome(a.read),
        "upload": outcome(lambda: d.upload(b"1234"))})
"""
    )
    for how in ("prerecorded", "recording", "read", "upload"):
        raised(res[how], vn.DeviceLostError)


# ================================================================ loading wgpu-native


def test_missing_library_file_raises_library_error_naming_the_path() -> None:
    path = "/nonexistent/libwgpu.so"
    res = run_child("report(outcome(vn.Device))", env={"WGPU_LIB_PATH": path})
    msg = raised(res, vn.LibraryError, path)
    assert "WGPU_LIB_PATH" in msg


def _other_shared_library() -> str:
    import ctypes.util

    for candidate in ("/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6"):
        if os.path.exists(candidate):
            return candidate
    name = ctypes.util.find_library("m") or ctypes.util.find_library("c")
    assert name, "no libm or libc to stand in for a foreign shared library"
    return name


def test_a_different_shared_library_raises_library_error_naming_a_missing_symbol() -> None:
    path = _other_shared_library()
    res = run_child(
        """
        first = outcome(vn.Device)
        second = outcome(vn.Device)   # the failed load is remembered, not retried into a crash
        report({"first": first, "second": second})
        """,
        env={"WGPU_LIB_PATH": path},
    )
    msg = raised(res["first"], vn.LibraryError, path)
    assert re.search(r"no symbol wgpu\w+", msg), msg
    assert res["second"]["msg"] == res["first"]["msg"]


def test_wgpu_package_not_installed_raises_library_error_with_pip_install() -> None:
    res = run_child(
        """
        import importlib.util
        os.environ.pop("WGPU_LIB_PATH", None)
        real_find_spec = importlib.util.find_spec
        def find_spec(name, *args, **kwargs):
            if name == "wgpu" or name.startswith("wgpu."):
                return None
            return real_find_spec(name, *args, **kwargs)
        importlib.util.find_spec = find_spec
        report(outcome(vn.Device))
        """
    )
    msg = raised(res, vn.LibraryError, "pip install")
    assert "wgpu" in msg


def test_bad_power_preference_raises_value_error() -> None:
    with pytest.raises(ValueError) as info:
        vn.Device(power_preference="fastest")
    check_message(info.value, "'fastest'")
