"""Interop with wgpu-py in the same process: one copy of wgpu-native, shared objects.

``Device.from_wgpu(gpu_device)`` and ``Buffer.from_wgpu(gpu_buffer)`` wrap wgpu-py's
objects (each takes a reference of its own), ``buffer.to_wgpu()`` hands a buffer to
wgpu-py (with a new reference that wgpu-py releases when its object goes). Both
bindings must have loaded the same libwgpu_native file; anything else is refused,
since objects of one copy of the library mean nothing to another.
"""

from __future__ import annotations

import os
import weakref
from typing import TYPE_CHECKING, Any

from ._lib import check, ffi, lib, library_path, load_library
from .errors import LibraryError, WrongTypeError

if TYPE_CHECKING:
    from .buffer import Buffer
    from .device import Device

# One vn.Device per wgpu-py device, so buffers adopted from the same GPUDevice bind
# together (the binding checks compare devices).
_adopted: weakref.WeakValueDictionary[int, Device] = weakref.WeakValueDictionary()


def _wgpu_native() -> tuple[Any, Any]:
    """wgpu-py's ffi and _api modules, after checking it loaded our library file."""
    try:
        from wgpu.backends.wgpu_native import _api, _ffi
    except ImportError as err:  # pragma: no cover - wgpu is a dependency
        raise LibraryError(f"wgpu-py is not importable ({err}). Fix: pip install 'wgpu==0.32.*'.") from None
    load_library()
    ours, theirs = os.path.realpath(library_path()), os.path.realpath(_ffi.lib_path)
    if ours != theirs:
        raise LibraryError(
            f"wgpu-py loaded wgpu-native from '{theirs}' but vyre_native from '{ours}': two copies of the "
            "library cannot share objects. Fix: unset WGPU_LIB_PATH, or set it for both before either loads."
        )
    return _ffi.ffi, _api


def _address(wffi: Any, cdata: Any) -> int:
    return int(wffi.cast("uintptr_t", cdata))


def device_from_wgpu(cls: type[Device], gpu_device: Any) -> Device:
    wffi, api = _wgpu_native()
    if not isinstance(gpu_device, api.GPUDevice) or gpu_device._internal is None:
        raise WrongTypeError(
            f"from_wgpu() takes a live wgpu.GPUDevice of the wgpu-native backend, got {type(gpu_device).__name__}. "
            "Fix: pass adapter.request_device_sync()."
        )
    key = _address(wffi, gpu_device._internal)
    existing = _adopted.get(key)
    if existing is not None and not existing.released:
        return existing
    out = ffi.new("vn_device **")
    check(
        lib.vn_device_adopt(
            _address(wffi, api.get_wgpu_instance()),
            _address(wffi, gpu_device.adapter._internal),
            key,
            _address(wffi, gpu_device.queue._internal),
            out,
        )
    )
    device = cls._from_native(out[0])
    device._wgpu_device = gpu_device
    _adopted[key] = device
    return device


def buffer_from_wgpu(gpu_buffer: Any) -> Buffer:
    from .buffer import Buffer
    from .device import Device

    wffi, api = _wgpu_native()
    if not isinstance(gpu_buffer, api.GPUBuffer) or gpu_buffer._internal is None:
        raise WrongTypeError(
            f"Buffer.from_wgpu() takes a live wgpu.GPUBuffer, got {type(gpu_buffer).__name__}. "
            "Fix: pass device.create_buffer(...)."
        )
    device = Device.from_wgpu(gpu_buffer._device)
    out = ffi.new("vn_buffer **")
    check(lib.vn_buffer_adopt(device._live(), _address(wffi, gpu_buffer._internal), out))
    return Buffer._adopt(device, out[0])


def buffer_to_wgpu(buffer: Buffer) -> Any:
    wffi, api = _wgpu_native()
    gpu_device = getattr(buffer.device, "_wgpu_device", None)
    if gpu_device is None:
        raise WrongTypeError(
            "to_wgpu() needs the buffer's device to come from wgpu-py. "
            "Fix: create the device with vn.Device.from_wgpu(adapter.request_device_sync())."
        )
    address = ffi.new("uintptr_t *")
    check(lib.vn_buffer_export(buffer._live(), address))
    internal = wffi.cast("WGPUBuffer", address[0])
    # wgpu-py releases `internal` (the reference export just took) when it is collected.
    return api.GPUBuffer(
        "vyre_native", internal, gpu_device, buffer.allocation_len, int(buffer.usage), "unmapped"
    )
