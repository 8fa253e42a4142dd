"""Interop with wgpu-py in the same process: one copy of wgpu-native, shared objects.

``Device.from_wgpu(gpu_device)`` and ``Buffer.from_wgpu(gpu_buffer)`` wrap wgpu-py's
objects (each takes a reference of its own), ``buffer.to_wgpu()`` hands a buffer to
wgpu-py (with a new reference that wgpu-py releases when its object goes). Both
bindings must have loaded the same libwgpu_native file; anything else is refused,
since objects of one copy of the library mean nothing to another.

This module sits above the handle modules (it makes Devices and Buffers), so they do
not import it: importing it installs those three methods on their classes, and the
package's ``__init__`` imports it.
"""

from __future__ import annotations

import os
import weakref
from typing import Any

from ._lib import check, ffi, lib, library_path, load_library
from .buffer import Buffer
from .device import Device
from .errors import LibraryError, WrongTypeError

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


def device_from_wgpu(gpu_device: Any) -> Device:
    """Wrap a wgpu-py ``GPUDevice`` (same wgpu-native in the process; a reference of its own).

    The same GPUDevice always gives the same ``vn.Device``, so buffers adopted
    from it bind together. ``Buffer.to_wgpu()`` works for buffers of such a device.
    """
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
    device = Device._from_native(out[0])
    device._wgpu_device = gpu_device
    _watch_device(gpu_device, device)
    _adopted[key] = device
    return device


# wgpu-native aborts the process on submitting work that uses a buffer mapped or
# destroyed, or a device destroyed, and it offers no way to ask (wgpuBufferGetMapState
# is unimplemented in 29). So the adopted wgpu-py objects report their own map,
# unmap and destroy calls to the C layer, which then refuses such submits with a
# typed error. Each watched object holds a C reference to the vn objects it reports to.
_USABLE, _MAPPED, _DESTROYED = lib.VN_FOREIGN_USABLE, lib.VN_FOREIGN_MAPPED, lib.VN_FOREIGN_DESTROYED


def _watch_buffer(gpu_buffer: Any, raw: Any) -> None:
    """Make ``gpu_buffer``'s map_async / unmap / destroy report to the C buffer ``raw``.

    One C buffer per wgpu-py buffer (see buffer_from_wgpu); the watcher's reference
    keeps it as long as the wgpu-py buffer lives, which owns the same memory anyway.
    The wrappers hold the wgpu-py object weakly, so no reference cycle delays its release.
    """
    lib.vn_buffer_retain_for_watch(raw)
    watched = ffi.gc(raw, lib.vn_buffer_release)
    lib.vn_buffer_set_foreign_state(watched, _MAPPED if str(gpu_buffer.map_state) != "unmapped" else _USABLE)
    owner = weakref.ref(gpu_buffer)
    cls = type(gpu_buffer)

    def map_async(*args: Any, **kwargs: Any) -> Any:
        lib.vn_buffer_set_foreign_state(watched, _MAPPED)  # a pending map aborts a submit too
        return cls.map_async(owner(), *args, **kwargs)

    def unmap() -> None:
        cls.unmap(owner())
        lib.vn_buffer_set_foreign_state(watched, _USABLE)

    def destroy() -> None:
        lib.vn_buffer_set_foreign_state(watched, _DESTROYED)
        cls.destroy(owner())

    gpu_buffer.__dict__.update(_vn_native=watched, map_async=map_async, unmap=unmap, destroy=destroy)


def _watch_device(gpu_device: Any, device: Device) -> None:
    raw = device._live()
    lib.vn_device_retain_for_watch(raw)
    watched = ffi.gc(raw, lib.vn_device_release)
    owner = weakref.ref(gpu_device)
    cls = type(gpu_device)

    def destroy() -> None:
        lib.vn_device_mark_lost(watched, b"destroyed through wgpu-py (GPUDevice.destroy())")
        cls.destroy(owner())

    gpu_device.destroy = destroy


def buffer_from_wgpu(gpu_buffer: Any) -> Buffer:
    """Wrap a wgpu-py ``GPUBuffer`` (a reference of its own); its device via ``Device.from_wgpu``."""
    wffi, api = _wgpu_native()
    if not isinstance(gpu_buffer, api.GPUBuffer) or gpu_buffer._internal is None:
        raise WrongTypeError(
            f"Buffer.from_wgpu() takes a live wgpu.GPUBuffer, got {type(gpu_buffer).__name__}. "
            "Fix: pass device.create_buffer(...)."
        )
    device = device_from_wgpu(gpu_buffer._device)
    existing = gpu_buffer.__dict__.get("_vn_native")
    if existing is not None:
        # Adopted before: the same C buffer (and so the same identity and watcher).
        lib.vn_buffer_retain_for_watch(existing)
        return Buffer._adopt(device, existing)
    out = ffi.new("vn_buffer **")
    check(lib.vn_buffer_adopt(device._live(), _address(wffi, gpu_buffer._internal), out))
    buffer = Buffer._adopt(device, out[0])
    _watch_buffer(gpu_buffer, out[0])
    return buffer


def buffer_to_wgpu(buffer: Buffer) -> Any:
    """This buffer as a wgpu-py ``GPUBuffer`` holding its own reference (device from ``from_wgpu``)."""
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


Device.from_wgpu = staticmethod(device_from_wgpu)
Buffer.from_wgpu = staticmethod(buffer_from_wgpu)
Buffer.to_wgpu = buffer_to_wgpu
