"""Adapter features: what every device requests, dev.features, required_features."""

from __future__ import annotations

import numpy as np
import pytest

import vyre_native as vn
from vyre_native.device import adapters_with_features

# Features that compute code uses: a device has each of them wherever its adapter does.
COMPUTE_FEATURES = {
    "timestamp-query",
    "shader-f16",
    "subgroups",
    "subgroup",
    "subgroup-barrier",
    "shader-f64",
    "shader-int64",
    "shader-float32-atomic",
    "shader-int64-atomic-min-max",
    "shader-int64-atomic-all-ops",
    "immediates",
    "pipeline-cache",
}
# Features no compute device requests unasked; used to provoke "the adapter lacks it".
RARE_FEATURES = ["ray-query", "cooperative-matrix", "texture-format-nv12", "texture-format-p010", "multiview"]

F16_KERNEL = """
enable f16;
@group(0) @binding(0) var<storage, read> x: array<f16>;
@group(0) @binding(1) var<storage, read_write> y: array<f16>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) { y[gid.x] = x[gid.x] * 2.0h + 0.5h; }
"""

SUBGROUP_KERNEL = """
@group(0) @binding(0) var<storage, read_write> y: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) i: u32, @builtin(subgroup_size) size: u32) {
    y[i] = subgroupAdd(1u) * 1000u + size;
}
"""


def adapter_features(device: vn.Device) -> frozenset[str]:
    infos = adapters_with_features(device.info["backend"])
    matches = [features for info, features in infos if info == device.info]
    assert matches, "the device's adapter is among the enumerated ones"
    return matches[0]


def test_a_device_has_every_compute_feature_its_adapter_offers(device: vn.Device) -> None:
    offered = adapter_features(device)
    assert COMPUTE_FEATURES & offered <= device.features
    assert device.features <= offered


def test_features_are_a_frozenset_of_names(device: vn.Device) -> None:
    assert isinstance(device.features, frozenset)
    assert all(isinstance(name, str) and name == name.lower() for name in device.features)


def test_timestamps_follow_the_timestamp_query_feature(device: vn.Device) -> None:
    assert device.timestamps == ("timestamp-query" in device.features)


def test_required_features_the_adapter_offers_are_granted(device: vn.Device) -> None:
    wanted = sorted(device.features)[:2]
    with vn.Device(required_features=wanted) as dev:
        assert set(wanted) <= dev.features


def test_required_features_the_adapter_lacks_are_an_unsupported_error_naming_each(device: vn.Device) -> None:
    missing = [name for name in RARE_FEATURES if name not in adapter_features(device)][:2]
    assert missing, f"the adapter offers every one of {RARE_FEATURES}; extend RARE_FEATURES"
    with pytest.raises(vn.UnsupportedError, match=r"does not offer the required feature\(s\) .*Fix:") as err:
        vn.Device(required_features=["timestamp-query", *missing])
    for name in missing:
        assert name in str(err.value)
    assert "timestamp-query" not in str(err.value).split("feature(s)")[1].split(". Fix")[0]


def test_an_unknown_feature_name_is_a_value_error() -> None:
    with pytest.raises(
        vn.InvalidArgumentError, match=r"required feature 'f16' is not a WebGPU or wgpu-native feature"
    ):
        vn.Device(required_features=["f16"])


def test_required_features_as_one_string_is_a_type_error() -> None:
    with pytest.raises(vn.WrongTypeError, match=r"required_features=\['shader-f16'\]"):
        vn.Device(required_features="shader-f16")


def compiled_where_featured(device: vn.Device, feature: str, kernel: str) -> vn.Pipeline | None:
    """`kernel` compiled, where the device has `feature`; where it has not, None once
    compile() has refused it with ShaderError."""
    if feature not in device.features:
        with pytest.raises(vn.ShaderError):
            device.compile(kernel)
        return None
    return device.compile(kernel)


def test_enable_f16_compiles_and_computes_where_the_adapter_has_shader_f16(device: vn.Device) -> None:
    prog = compiled_where_featured(device, "shader-f16", F16_KERNEL)
    if prog is None:
        return
    x = np.arange(64, dtype=np.float16)
    rec = prog.prerecord_persistent_dispatch([device.upload(x)], [device.alloc(x.nbytes)])
    rec.replay()
    assert np.array_equal(np.frombuffer(rec.read_output(0), np.float16), x * np.float16(2) + np.float16(0.5))


def test_subgroup_operations_run_where_the_adapter_has_subgroups(device: vn.Device) -> None:
    prog = compiled_where_featured(device, "subgroup", SUBGROUP_KERNEL)
    if prog is None:
        return
    rec = prog.prerecord_persistent_dispatch([], [device.alloc(64 * 4)])
    rec.replay()
    out = np.frombuffer(rec.read_output(0), np.uint32)
    size = int(out[0] % 1000)
    assert size in (1, 2, 4, 8, 16, 32, 64, 128)
    # every invocation of a full subgroup sees the subgroup's size as its sum of ones
    assert np.all(out == size * 1000 + size)
