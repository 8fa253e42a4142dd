"""The runtime checks the compiler adds to a kernel, a choice per pipeline
(``Device.compile(..., bounds_checks=, loop_bounding=)``): both on by default, as in wgpu;
off only where the caller asks; the kernel computes the same either way."""

from __future__ import annotations

import numpy as np
import pytest
from support.kernels import DOUBLE

import vyre_native as vn
from vyre_native._handles import new_slot
from vyre_native._lib import ffi, lib

# y[i] = x[at[0] + i]: an index the kernel reads from a buffer, so no compiler can fold it
GATHER = """
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read> at: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;
@compute @workgroup_size(4)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    y[gid.x] = x[at[0] + gid.x];
}
"""

# y[at[0]] = 7 and y[0] = 1: a write at an index read from a buffer
SCATTER = """
@group(0) @binding(0) var<storage, read> at: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;
@compute @workgroup_size(1)
fn main() {
    y[at[0]] = 7u;
    y[0] = 1u;
}
"""

# y[i] = the sum of 0 .. n - 1 for n = x[i]: a counted loop whose count is data
COUNTED = """
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    var total = 0u;
    for (var k = 0u; k < x[gid.x]; k++) { total += k; }
    y[gid.x] = total;
}
"""

CHECKS = [(True, True), (True, False), (False, True), (False, False)]


def test_a_pipeline_has_every_check_by_default(device: vn.Device) -> None:
    assert device.compile(DOUBLE).runtime_checks == {"bounds_checks": True, "loop_bounding": True}


@pytest.mark.parametrize("bounds, loops", CHECKS)
def test_a_pipeline_says_the_checks_it_was_compiled_with(device: vn.Device, bounds: bool, loops: bool) -> None:
    prog = device.compile(DOUBLE, bounds_checks=bounds, loop_bounding=loops)
    assert prog.runtime_checks == {"bounds_checks": bounds, "loop_bounding": loops}


def test_by_default_a_read_out_of_range_gives_zero_or_an_element_in_range(device: vn.Device) -> None:
    x = np.arange(100, 116, dtype=np.uint32)
    prog = device.compile(GATHER)
    for start in (14, 1000, 2**31, 2**32 - 3):  # reads past the end, far past, and wrapping
        at = np.array([start], np.uint32)
        rec = prog.record([device.upload(x), device.upload(at)], [device.alloc(16)], workgroups=(1, 1, 1))
        rec.replay()
        got = np.frombuffer(rec.read_output(0), np.uint32)
        inside = (start + np.arange(4)) % 2**32 < 16
        assert np.array_equal(got[inside], x[(start + np.arange(4))[inside] % 2**32]), (start, got)
        assert all(v == 0 or v in x for v in got[~inside]), f"read at {start} gave {got}: out of the buffer"


def test_by_default_a_write_out_of_range_lands_nowhere_outside_its_binding(device: vn.Device) -> None:
    # y is a 16-byte view of a larger buffer whose other words must stay as written
    whole = device.upload(np.full(64, 0xAAAAAAAA, np.uint32))
    prog = device.compile(SCATTER)
    for at in (4, 17, 2**31):
        rec = prog.record([device.upload(np.array([at], np.uint32))], [whole.view(64, 16)], workgroups=(1, 1, 1),
                          clear_outputs=False)  # fmt: skip
        rec.replay().wait()
        words = whole.read(np.uint32)
        assert words[16] == 1, words[16:20]
        outside = np.concatenate([words[:16], words[20:]])
        assert np.all(outside == 0xAAAAAAAA), f"a write at index {at} of a 4-word view changed another word"


@pytest.mark.parametrize("bounds, loops", CHECKS)
def test_every_choice_of_checks_computes_the_same(device: vn.Device, bounds: bool, loops: bool) -> None:
    counts = np.arange(256, dtype=np.uint32) % 97
    prog = device.compile(COUNTED, bounds_checks=bounds, loop_bounding=loops)
    rec = prog.record([device.upload(counts)], [device.alloc(counts.nbytes)], workgroups=(4, 1, 1))
    rec.replay()
    expected = (counts.astype(np.int64) * (counts.astype(np.int64) - 1) // 2).astype(np.uint32)
    assert np.array_equal(np.frombuffer(rec.read_output(0), np.uint32), expected)


@pytest.mark.parametrize("name", ["bounds_checks", "loop_bounding"])
@pytest.mark.parametrize("value", ["no", 0.0, None, 2])
def test_a_check_takes_a_bool(device: vn.Device, name: str, value: object) -> None:
    with pytest.raises(vn.WrongTypeError, match=f"{name}.*Fix:"):
        device.compile(DOUBLE, **{name: value})  # type: ignore[arg-type]


def test_c_refuses_check_bits_it_does_not_know(device: vn.Device) -> None:
    src = DOUBLE.encode()
    own, out = new_slot("vn_shader *")
    status = lib.vn_shader_create(device._live(), src, len(src), lib.VN_CHECKS_ALL | 4, out)
    assert status == lib.VN_ERROR_INVALID_ARGUMENT
    message = ffi.string(lib.vn_last_error()).decode()
    assert "0x7" in message and "Fix:" in message
    assert out[0] == ffi.NULL
    del own
