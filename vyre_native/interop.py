"""Interop with wgpu-py in the same process: one copy of wgpu-native, shared objects.

``Device.from_wgpu(gpu_device)`` and ``Buffer.from_wgpu(gpu_buffer)`` wrap wgpu-py's
objects (each takes a reference of its own), ``buffer.to_wgpu()`` hands a buffer to
wgpu-py (with a new reference that wgpu-py releases when its object goes). Both
bindings must have loaded the same libwgpu_native file; anything else is refused,
since objects of one copy of the library mean nothing to another.

What wgpu-py may then do to a shared object that would take the process down:
wgpu-native aborts on submitting work that uses a buffer that is mapped, map-pending
or destroyed, or to a destroyed device, and it cannot be asked which one is. So
wgpu-py's own calls report to the C layer, by construction: wgpu-py reaches
wgpu-native only through one object, ``wgpu.backends.wgpu_native._api.libf`` (a
``SafeLibCalls`` whose attributes are the library's functions), and the first use of
interop replaces its ``wgpuBufferMapAsync``, ``wgpuBufferUnmap``, ``wgpuBufferDestroy``
and ``wgpuDeviceDestroy`` with hooks. Every path of wgpu-py to those four functions
passes them: ``gpu_buffer.map_async`` / ``map_sync`` / ``unmap`` / ``destroy``,
``type(x).destroy(x)``, a method saved before interop was used, a subclass, wgpu-py's
own helpers. A hook looks the handle up in a registry of the objects shared with
this layer (keyed by the wgpu-native address; a dict miss for every other object)
and tells C before the call (map, destroy) or after it (unmap):

- A map or destroy takes the device's life lock for writing
  (``vn_buffer_set_foreign_state``): it waits for a submit of ours between its check
  and its queue call, and every later submit, which re-checks its buffers under the
  read side of that lock, refuses the buffer with ``BindingError``.
- A device destroy goes through ``vn_device_destroy_shared`` instead of wgpu-py's
  call: it destroys the device as ``Device.destroy()`` does, under the life lock and
  the scope lock, so every later call is ``DeviceLostError``.

What stays outside: calling wgpu-native on a shared object other than through wgpu-py
(its raw cffi ``lib``, or another binding).

This module sits above the handle modules (it makes Devices and Buffers), so they do
not import it: importing it installs those three methods on their classes, and the
package's ``__init__`` imports it.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable
from typing import Any

from ._handles import new_slot, owned
from ._lib import WGPU_REQUIREMENT, check, ffi, lib, library_path, load_library
from ._turn import Turn
from .buffer import Buffer
from .device import Device
from .errors import LibraryError, WrongTypeError

_USABLE, _MAPPED, _DESTROYED = lib.VN_FOREIGN_USABLE, lib.VN_FOREIGN_MAPPED, lib.VN_FOREIGN_DESTROYED


# What an interop call nested in another on one thread (a signal handler's, a finalizer's)
# is refused with: the outer call holds the turn the nested one needs (see _turn.py).
_INSIDE = (
    "another interop call with wgpu-py (from_wgpu, to_wgpu, or wgpu-py's map, unmap or destroy of a shared "
    "object), which has the turn this one needs"
)


def _interop_turn() -> Turn:
    return Turn(_INSIDE)


class _DeviceWatch:
    """The C device shared with one wgpu-py GPUDevice.

    Kept in that GPUDevice's ``__dict__`` (so it lives as long as wgpu-py can call
    ``destroy`` on it) and, weakly, in ``_devices``. ``native`` is a C reference of its
    own: the C device outlives its ``vn.Device`` handle while recordings, reads or a new
    handle (``from_wgpu`` again) still use it, and a destroy must reach it then too.
    ``turn`` orders adopting it with wgpu-py's destroy: the watch is registered before
    the device is adopted, so a destroy either comes first (and adoption sees it) or
    waits for the adoption and reaches the new C device.
    """

    __slots__ = ("__weakref__", "device", "native", "turn")

    def __init__(self) -> None:
        self.native: Any = None  # None until adopted
        self.device: weakref.ref[Device] | None = None
        self.turn = _interop_turn()


class _BufferWatch:
    """The C buffer shared with wgpu-py under one wgpu-native buffer handle.

    Kept in the ``__dict__`` of each wgpu-py GPUBuffer of that handle (the adopted one,
    the ones ``to_wgpu`` made) and, weakly, in ``_buffers``: while any of them lives,
    the handle is alive (so its address names only it) and wgpu-py can map or destroy
    it. ``turn`` orders this handle's adoption, map, unmap and destroy with their
    reports, as ``_DeviceWatch.turn`` does for a device.
    """

    __slots__ = ("__weakref__", "device", "native", "turn", "wrappers")

    def __init__(self) -> None:
        self.native: Any = None  # the C buffer (a reference of its own), None until adopted
        self.device: Any = None  # the C device it was adopted or made on
        self.turn = _interop_turn()
        self.wrappers: list[weakref.ref[Any]] = []


# Registry lookup-and-insert happens in _registry's turn, so concurrent from_wgpu /
# to_wgpu calls on one object get one watch (and one vn.Device). The hooks only read it.
# Keys are wgpu-py's handle cdata: cffi pointers hash and compare by address, whatever
# their type, so a hook looks up the pointer it was passed without converting it.
_registry = _interop_turn()
_devices: weakref.WeakValueDictionary[Any, _DeviceWatch] = weakref.WeakValueDictionary()
_buffers: weakref.WeakValueDictionary[Any, _BufferWatch] = weakref.WeakValueDictionary()
_hooked = False


def _wgpu_native(call: str) -> tuple[Any, Any]:
    """wgpu-py's ffi and _api modules, after checking it loaded our library file.

    Installs the hooks on wgpu-py's library object the first time (in the registry's
    turn: ``call``, the interop call being made, is what a nested one is told).
    """
    try:
        from wgpu.backends.wgpu_native import _api, _ffi
    except ImportError as err:  # pragma: no cover - wgpu is a dependency
        raise LibraryError(f"wgpu-py is not importable ({err}). Fix: pip install '{WGPU_REQUIREMENT}'.") from None
    load_library()
    ours, theirs = os.path.realpath(library_path()), os.path.realpath(_ffi.lib_path)
    if ours != theirs:
        raise LibraryError(
            f"wgpu-py loaded wgpu-native from '{theirs}' but vyre_native from '{ours}': two copies of the "
            "library cannot share objects. Fix: unset WGPU_LIB_PATH, or set it for both before either loads."
        )
    global _hooked
    if not _hooked:
        with _registry(call):
            if not _hooked:
                _wgpu_types.update({t: _ffi.ffi.typeof(t) for t in ("uintptr_t", "WGPUBuffer")})
                _install_hooks(_api)
                _hooked = True
    return _ffi.ffi, _api


def _second_handle(retain: Any, native: Any, ctype: str) -> Any:
    """One more owning pointer to ``native``: ``retain`` (vn_*_retain_for_watch) writes
    the new reference into an owner's slot, and ``owned`` makes it a pointer."""
    own, out = new_slot(ctype)
    retain(native, out)
    return owned(own, ctype)


# wgpu-py's ffi types this module casts with, resolved once when the hooks go in. cffi
# parses a type string under its FFI's lock, which is not reentrant: a signal handler that
# made an interop call while its thread was inside wgpu-py's first parse of some type
# would wait for ever on its own thread. A cast with a resolved type takes no lock.
_wgpu_types: dict[str, Any] = {}


def _address(wffi: Any, cdata: Any) -> int:
    return int(wffi.cast(_wgpu_types["uintptr_t"], cdata))


# ---- the hooks on wgpu-py's library object -------------------------------------------


def _install_hooks(api: Any) -> None:
    """Put the hooks in place of four functions of wgpu-py's library object."""
    libf = getattr(api, "libf", None)
    names = ("wgpuBufferMapAsync", "wgpuBufferUnmap", "wgpuBufferDestroy", "wgpuDeviceDestroy")
    original: dict[str, Callable[..., Any]] = {}
    for name in names:
        fn = getattr(libf, name, None)
        if not callable(fn):
            raise LibraryError(
                f"wgpu-py's library object (wgpu.backends.wgpu_native._api.libf) has no {name}, so vyre_native "
                "cannot watch what wgpu-py does to shared buffers and devices. Fix: install the wgpu version "
                f"vyre_native pins (pip install '{WGPU_REQUIREMENT}')."
            )
        original[name] = fn
    buffer_map, buffer_unmap = original["wgpuBufferMapAsync"], original["wgpuBufferUnmap"]
    buffer_destroy, device_destroy = original["wgpuBufferDestroy"], original["wgpuDeviceDestroy"]

    def buffer_watch(handle: Any) -> _BufferWatch | None:
        # An empty registry (no interop buffer alive) costs one length check.
        return _buffers.get(handle) if _buffers else None

    def wgpuBufferMapAsync(buffer: Any, *args: Any) -> Any:
        watch = buffer_watch(buffer)
        if watch is None:
            return buffer_map(buffer, *args)
        with watch.turn("GPUBuffer.map_async() of a buffer shared with vyre_native"):
            if watch.native is None:  # its adoption failed
                return buffer_map(buffer, *args)
            # Mapped from now on: a pending map aborts a submit as a finished one does.
            before = lib.vn_buffer_set_foreign_state(watch.native, _MAPPED)
            try:
                return buffer_map(buffer, *args)
            except BaseException:
                # wgpu-native refused the map at once (wgpu-py raises its validation
                # error): nothing changed, so neither does the state.
                lib.vn_buffer_set_foreign_state(watch.native, before)
                raise

    def wgpuBufferUnmap(buffer: Any) -> Any:
        watch = buffer_watch(buffer)
        if watch is None:
            return buffer_unmap(buffer)
        with watch.turn("GPUBuffer.unmap() of a buffer shared with vyre_native"):
            result = buffer_unmap(buffer)
            if watch.native is not None:
                lib.vn_buffer_set_foreign_state(watch.native, _USABLE)
            return result

    def wgpuBufferDestroy(buffer: Any) -> Any:
        watch = buffer_watch(buffer)
        if watch is None:
            return buffer_destroy(buffer)
        with watch.turn("GPUBuffer.destroy() of a buffer shared with vyre_native"):
            if watch.native is not None:
                lib.vn_buffer_set_foreign_state(watch.native, _DESTROYED)
            return buffer_destroy(buffer)

    def wgpuDeviceDestroy(device: Any) -> Any:
        watch = _devices.get(device) if _devices else None
        if watch is None:
            return device_destroy(device)
        with watch.turn("GPUDevice.destroy() of a device shared with vyre_native"):
            if watch.native is None:
                return device_destroy(device)
            # wgpuDeviceDestroy fires no lost callback, and a submit of ours racing it
            # would abort: the C layer destroys the device itself, under its own locks.
            lib.vn_device_destroy_shared(watch.native, b"destroyed through wgpu-py (GPUDevice.destroy())")
            return None

    for hook in (wgpuBufferMapAsync, wgpuBufferUnmap, wgpuBufferDestroy, wgpuDeviceDestroy):
        setattr(libf, hook.__name__, hook)


# ---- devices -------------------------------------------------------------------------


def _is_closed(native: Any) -> bool:
    info = ffi.new("vn_device_info *")
    return bool(lib.vn_device_get_info(native, info) == lib.VN_ERROR_RELEASED)


def device_from_wgpu(gpu_device: Any) -> Device:
    """Wrap a wgpu-py ``GPUDevice`` (same wgpu-native in the process; a reference of its own).

    The same GPUDevice always gives the same ``vn.Device`` while that one is open, from
    any number of threads at once, so buffers adopted from it bind together.
    ``Buffer.to_wgpu()`` works for buffers of such a device.
    """
    wffi, api = _wgpu_native("Device.from_wgpu()")
    if not isinstance(gpu_device, api.GPUDevice) or gpu_device._internal is None:
        raise WrongTypeError(
            f"from_wgpu() takes a live wgpu.GPUDevice of the wgpu-native backend, got {type(gpu_device).__name__}. "
            "Fix: pass adapter.request_device_sync()."
        )
    # Adopted before: found without a turn (a lookup of finished state), so this works
    # from a signal handler too, even inside another interop call on the same thread.
    watch = _devices.get(gpu_device._internal)
    existing = watch.device() if watch is not None and watch.device is not None else None
    if existing is not None and not existing.released:
        return existing
    with _registry("Device.from_wgpu()"):
        return _device_locked(wffi, api, gpu_device)[0]


def _device_locked(wffi: Any, api: Any, gpu_device: Any) -> tuple[Device, _DeviceWatch]:
    """The vn.Device of ``gpu_device`` and its watch; the caller has ``_registry``'s turn."""
    key = gpu_device._internal
    watch = _devices.get(key)
    if watch is None:
        watch = _DeviceWatch()
        gpu_device.__dict__["_vn_watch"] = watch
        _devices[key] = watch
    existing = watch.device() if watch.device is not None else None
    if existing is not None and not existing.released:
        return existing, watch
    with watch.turn("Device.from_wgpu()"):
        if watch.native is None or _is_closed(watch.native):
            # First use, or its vn.Device was closed (and everything made on it with
            # it): a new C device, which the watch follows from now on.
            out_own, out = new_slot("vn_device *")
            check(
                lib.vn_device_adopt(
                    _address(wffi, api.get_wgpu_instance()),
                    _address(wffi, gpu_device.adapter._internal),
                    _address(wffi, key),
                    _address(wffi, gpu_device.queue._internal),
                    out,
                )
            )
            native = owned(out_own, "vn_device *")
            if gpu_device._poller is None:
                # wgpu-py destroyed it before this watch was registered (its destroy()
                # stops the device's poller and forgets it): lost from the start.
                lib.vn_device_destroy_shared(native, b"destroyed through wgpu-py (GPUDevice.destroy())")
            watch.native = native
        # A handle of its own on the watched C device (the last handle was collected,
        # not closed: recordings or reads may still use that C device, so it stays the one).
        raw = _second_handle(lib.vn_device_retain_for_watch, watch.native, "vn_device *")
    device = Device._from_native(raw)
    device._wgpu_device = gpu_device
    watch.device = weakref.ref(device)
    return device, watch


# ---- buffers -------------------------------------------------------------------------


def _buffer_watch(key: Any) -> _BufferWatch:
    """The watch of buffer handle ``key``, registered (not yet adopted) if there is none;
    in ``_registry``'s turn. The caller keeps it alive (``_attach``)."""
    watch = _buffers.get(key)
    if watch is None:
        watch = _BufferWatch()
        _buffers[key] = watch
    return watch


def _attach(watch: _BufferWatch, gpu_buffer: Any) -> None:
    """``gpu_buffer`` keeps ``watch`` (and so the registry entry) alive."""
    gpu_buffer.__dict__["_vn_watch"] = watch
    watch.wrappers = [ref for ref in watch.wrappers if ref() is not None and ref() is not gpu_buffer]
    watch.wrappers.append(weakref.ref(gpu_buffer))


def buffer_from_wgpu(gpu_buffer: Any) -> Buffer:
    """Wrap a wgpu-py ``GPUBuffer`` (a reference of its own); its device via ``Device.from_wgpu``.

    Adopting the same buffer again, or one that ``to_wgpu`` made, gives a handle on
    the same C buffer (same ``allocation_identity``).
    """
    wffi, api = _wgpu_native("Buffer.from_wgpu()")
    if not isinstance(gpu_buffer, api.GPUBuffer) or gpu_buffer._internal is None:
        raise WrongTypeError(
            f"Buffer.from_wgpu() takes a live wgpu.GPUBuffer, got {type(gpu_buffer).__name__}. "
            "Fix: pass device.create_buffer(...)."
        )
    with _registry("Buffer.from_wgpu()"):
        device, device_watch = _device_locked(wffi, api, gpu_buffer._device)
        key = gpu_buffer._internal
        # Registered before wgpu-py's map state is read: a map on another thread either
        # set that state first, or finds the watch and waits for its turn.
        watch = _buffer_watch(key)
        _attach(watch, gpu_buffer)
        with watch.turn("Buffer.from_wgpu()"):
            if watch.native is None or watch.device is not device_watch.native:
                # First adoption, or the last one was on a device closed since.
                out_own, out = new_slot("vn_buffer *")
                mapped = str(gpu_buffer.map_state) != "unmapped"  # a pending map aborts a submit too
                check(lib.vn_buffer_adopt(device._live(), _address(wffi, key), mapped, out))
                watch.native, watch.device = owned(out_own, "vn_buffer *"), device_watch.native
            raw = _second_handle(lib.vn_buffer_retain_for_watch, watch.native, "vn_buffer *")
        return Buffer._adopt(device, raw)


def buffer_to_wgpu(buffer: Buffer) -> Any:
    """This buffer as a wgpu-py ``GPUBuffer`` (device from ``from_wgpu``), watched as an adopted one is.

    While a wgpu-py object of this buffer lives, the same one is returned.
    """
    wffi, api = _wgpu_native("Buffer.to_wgpu()")
    gpu_device = getattr(buffer.device, "_wgpu_device", None)
    if gpu_device is None:
        raise WrongTypeError(
            "to_wgpu() needs the buffer's device to come from wgpu-py. "
            "Fix: create the device with vn.Device.from_wgpu(adapter.request_device_sync())."
        )
    native = buffer._live()
    with _registry("Buffer.to_wgpu()"):
        device_watch: _DeviceWatch = gpu_device.__dict__["_vn_watch"]  # set with _wgpu_device
        address = ffi.new("uintptr_t *")
        check(lib.vn_buffer_export(native, address))  # a new reference, for a new wgpu-py object
        internal = wffi.cast(_wgpu_types["WGPUBuffer"], address[0])
        watch = _buffer_watch(internal)
        with watch.turn("Buffer.to_wgpu()"):  # wgpu-py has no object of it before this returns one
            if watch.native is None or watch.device is not device_watch.native:
                watch.native = _second_handle(lib.vn_buffer_retain_for_watch, native, "vn_buffer *")
                watch.device = device_watch.native
        for ref in watch.wrappers:
            existing = ref()
            if existing is not None and existing._internal is not None:
                api.libf.wgpuBufferRelease(internal)  # not needed: that object holds one
                return existing
        # wgpu-py releases `internal` (the reference export just took) when it is collected.
        gpu_buffer = api.GPUBuffer(
            "vyre_native", internal, gpu_device, buffer.allocation_len, int(buffer.usage), "unmapped"
        )
        _attach(watch, gpu_buffer)
        return gpu_buffer


Device.from_wgpu = staticmethod(device_from_wgpu)
Buffer.from_wgpu = staticmethod(buffer_from_wgpu)
Buffer.to_wgpu = buffer_to_wgpu
