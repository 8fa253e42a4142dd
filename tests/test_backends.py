"""Backend choice: Device(backend=...) and enumerate_adapters(backend=...)."""

from __future__ import annotations

import sys

import pytest

import vyre_native as vn

PRIMARY_BACKENDS = {"Vulkan", "Metal", "D3D12"}
# A backend this platform's wgpu-native is built without, so it never has an adapter.
ABSENT_BACKEND = "metal" if sys.platform == "win32" else "dx12"


def test_default_device_runs_on_a_primary_backend_never_the_gl_fallback(device: vn.Device) -> None:
    assert device.info["backend"] in PRIMARY_BACKENDS


def test_default_enumeration_lists_only_primary_backends() -> None:
    assert {a["backend"] for a in vn.enumerate_adapters()} <= PRIMARY_BACKENDS


def test_enumerating_gl_lists_only_opengl_adapters() -> None:
    assert {a["backend"] for a in vn.enumerate_adapters(backend="gl")} <= {"OpenGL", "OpenGLES"}


def test_a_device_on_the_backend_its_info_names_runs_on_that_backend(device: vn.Device) -> None:
    name = device.info["backend"]  # "Vulkan", "Metal" or "D3D12": accepted as backend names, any case
    with vn.Device(backend=name) as dev:
        assert dev.info["backend"] == name
    with vn.Device(backend=name.lower()) as dev:
        assert dev.info["backend"] == name


def test_enumerating_one_backend_lists_only_its_adapters(device: vn.Device) -> None:
    name = device.info["backend"]
    adapters = vn.enumerate_adapters(backend=name.lower())
    assert adapters and {a["backend"] for a in adapters} == {name}


def test_adapter_index_counts_within_the_named_backend(device: vn.Device) -> None:
    name = device.info["backend"]
    adapters = vn.enumerate_adapters(backend=name)
    with vn.Device(backend=name, adapter=len(adapters) - 1) as dev:
        assert dev.info == adapters[-1]


def test_an_unknown_backend_name_is_a_value_error_listing_the_choices() -> None:
    with pytest.raises(
        vn.InvalidArgumentError, match=r"backend 'cuda'.*Fix: pass \"vulkan\", \"metal\", \"dx12\" or \"gl\""
    ):
        vn.Device(backend="cuda")
    with pytest.raises(ValueError, match="backend 'vulkan2'"):
        vn.enumerate_adapters(backend="vulkan2")


def test_a_backend_that_is_not_a_string_is_a_type_error() -> None:
    with pytest.raises(vn.WrongTypeError, match="backend=1 is a int"):
        vn.Device(backend=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        vn.enumerate_adapters(backend=b"vulkan")  # type: ignore[arg-type]


def test_a_backend_without_an_adapter_is_a_library_error_saying_where_to_look() -> None:
    assert vn.enumerate_adapters(backend=ABSENT_BACKEND) == []
    with pytest.raises(
        vn.LibraryError,
        match=rf"(?s)no GPU adapter found on backend '{ABSENT_BACKEND}'.*Fix:.*enumerate_adapters",
    ):
        vn.Device(backend=ABSENT_BACKEND)
