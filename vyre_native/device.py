"""vn.Device: one adapter and device, and what is created on it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ._handles import Handle, readable_bytes
from ._lib import check, check_wait, ffi, lib, load_library
from .buffer import Buffer, BufferUsage, usage_bits
from .errors import InvalidArgumentError, WrongTypeError

_POWER = {None: 0, "default": 0, "low-power": 1, "high-performance": 2}

_LIMIT_FIELDS = (
    "max_buffer_size",
    "max_storage_buffer_binding_size",
    "max_uniform_buffer_binding_size",
    "max_bind_groups",
    "max_bindings_per_bind_group",
    "max_storage_buffers_per_shader_stage",
    "max_uniform_buffers_per_shader_stage",
    "min_storage_buffer_offset_alignment",
    "min_uniform_buffer_offset_alignment",
    "max_compute_workgroup_storage_size",
    "max_compute_invocations_per_workgroup",
    "max_compute_workgroup_size_x",
    "max_compute_workgroup_size_y",
    "max_compute_workgroup_size_z",
    "max_compute_workgroups_per_dimension",
)


def _info_dict(info: Any) -> dict[str, str]:
    return {
        "name": ffi.string(info.name).decode("utf-8", "replace"),
        "vendor": ffi.string(info.vendor).decode("utf-8", "replace"),
        "backend": ffi.string(info.backend).decode(),
        "adapter_type": ffi.string(info.adapter_type).decode(),
        "driver": ffi.string(info.driver).decode("utf-8", "replace"),
    }


def _backend_arg(backend: str | None) -> Any:
    """The C value of a ``backend=`` argument: NULL, or the name as UTF-8 (C checks the name)."""
    if backend is None:
        return ffi.NULL
    if not isinstance(backend, str):
        raise WrongTypeError(
            f"backend={backend!r} is a {type(backend).__name__}, not a str. "
            'Fix: pass "vulkan", "metal", "dx12" or "gl", or None for the platform\'s primary backends.'
        )
    try:
        return backend.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgumentError(
            f'backend={backend!r} is not valid UTF-8 text. Fix: pass "vulkan", "metal", "dx12" or "gl".'
        ) from None


def adapters_with_features(backend: str | None = None) -> list[tuple[dict[str, str], frozenset[str]]]:
    """Each adapter of ``backend`` as (``Device.info`` dict, the names of its features)."""
    load_library()
    name = _backend_arg(backend)
    count = ffi.new("size_t *")
    check(lib.vn_enumerate_adapters(name, ffi.NULL, 0, count))
    infos = ffi.new("vn_device_info[]", max(int(count[0]), 1))
    check(lib.vn_enumerate_adapters(name, infos, int(count[0]), count))
    found = min(int(count[0]), len(infos))
    return [
        (_info_dict(infos[i]), frozenset(ffi.string(infos[i].features).decode().split()))
        for i in range(found)
    ]


def enumerate_adapters(backend: str | None = None) -> list[dict[str, str]]:
    """Every adapter wgpu-native sees on ``backend`` (default: the platform's primary
    backends, Vulkan / Metal / DX12, never the OpenGL fallback unless ``backend="gl"``),
    as ``Device.info`` dicts; pass an index as ``Device(adapter=i, backend=...)``."""
    return [info for info, _ in adapters_with_features(backend)]


class Device(Handle):
    """A GPU device with the adapter's own limits (not WebGPU's defaults).

    ``Device(power_preference=None | "low-power" | "high-performance")`` picks the
    default adapter; ``Device(adapter=i)`` the i-th of ``vn.enumerate_adapters()``.
    ``backend`` is ``"vulkan"``, ``"metal"``, ``"dx12"`` or ``"gl"``; the default is the
    platform's primary backends (never wgpu's OpenGL fallback), and ``info["backend"]``
    says which one runs. Creating one costs milliseconds (adapter and device requests);
    make one and keep it. ``close()`` (or leaving a ``with`` block) makes it and
    everything created on it unusable: later calls raise ``ReleasedError``.
    """

    _kind = "Device"
    #: the wgpu-py GPUDevice this one wraps (Device.from_wgpu), else absent
    _wgpu_device: Any

    def __init__(
        self, power_preference: str | None = None, adapter: int | None = None, backend: str | None = None
    ) -> None:
        if power_preference not in _POWER:
            raise InvalidArgumentError(
                f"power_preference={power_preference!r} is not one of None, 'low-power', 'high-performance'. "
                "Fix: pass one of those."
            )
        if adapter is not None and (isinstance(adapter, bool) or not isinstance(adapter, int) or adapter < 0):
            raise InvalidArgumentError(
                f"adapter={adapter!r} is not an adapter index. Fix: pass an index into vn.enumerate_adapters()."
            )
        load_library()
        out = ffi.new("vn_device **")
        name = _backend_arg(backend)
        check(lib.vn_device_create(_POWER[power_preference], -1 if adapter is None else adapter, name, out))
        self._init_native(out[0])

    def _init_native(self, raw: Any) -> None:
        Handle.__init__(self, ffi.gc(raw, lib.vn_device_release))
        info = ffi.new("vn_device_info *")
        check(lib.vn_device_get_info(raw, info))
        self._info = _info_dict(info)
        limits = ffi.new("vn_limits *")
        check(lib.vn_device_get_limits(raw, limits))
        self._limits = {name: int(getattr(limits, name)) for name in _LIMIT_FIELDS}

    @classmethod
    def _from_native(cls, raw: Any) -> Device:
        self = cls.__new__(cls)
        self._init_native(raw)
        return self

    @classmethod
    def from_wgpu(cls, gpu_device: Any) -> Device:
        """Wrap a wgpu-py ``GPUDevice`` (same wgpu-native in the process; a reference of its own).

        The same GPUDevice always gives the same ``vn.Device``, so buffers adopted
        from it bind together. ``Buffer.to_wgpu()`` works for buffers of such a device.
        """
        from .interop import device_from_wgpu

        return device_from_wgpu(cls, gpu_device)

    # -- properties ------------------------------------------------------------------

    @property
    def info(self) -> dict[str, str]:
        """Adapter description: name, vendor, backend, adapter_type, driver."""
        self._live()
        return dict(self._info)

    @property
    def limits(self) -> dict[str, int]:
        """The device's limits that matter for compute (sizes in bytes)."""
        self._live()
        return dict(self._limits)

    def __repr__(self) -> str:
        state = "closed" if self._ptr is None else f"{self._info['name']} ({self._info['backend']})"
        return f"<vn.Device {state}>"

    # -- lifetime ----------------------------------------------------------------------

    def close(self) -> None:
        """Close the device: it and everything created on it raise ReleasedError afterwards."""
        ptr = self._ptr
        if ptr is not None:
            lib.vn_device_close(ptr)
            self._ptr = None

    release = close

    def destroy(self) -> None:
        """Destroy the GPU device now, as if it were lost: later calls raise DeviceLostError.

        For tests of device-loss handling; ``close()`` is the normal way to finish.
        """
        check(lib.vn_device_destroy(self._live()))

    def wait_idle(self) -> None:
        """Block (GIL released) until all work submitted on this device has finished.

        Waits in slices of about 20 ms, so Ctrl-C raises KeyboardInterrupt at once.
        """
        ptr = self._live()
        check_wait(lib.vn_device_wait_idle(ptr), lambda: lib.vn_device_wait_idle(ptr))

    # -- buffers -----------------------------------------------------------------------

    def upload(self, data: Any, usage: BufferUsage | int | None = None) -> Buffer:
        """A new buffer holding a copy of ``data`` (any buffer-protocol object).

        The bytes go from ``data``'s memory straight into a mapping of the new
        buffer (one memcpy, no intermediate Python copy).
        """
        ptr = self._live()
        src, nbytes = readable_bytes(data, "upload")
        out = ffi.new("vn_buffer **")
        check(lib.vn_buffer_create(ptr, nbytes, usage_bits(usage), src, out))
        return Buffer._adopt(self, out[0])

    def alloc(self, nbytes: int, usage: BufferUsage | int | None = None) -> Buffer:
        """A new zero-filled buffer of ``nbytes`` bytes."""
        ptr = self._live()
        if isinstance(nbytes, bool) or not isinstance(nbytes, int):
            raise WrongTypeError(
                f"alloc({nbytes!r}): the size is a {type(nbytes).__name__}, not an int. Fix: pass a byte count."
            )
        if nbytes < 0:
            raise InvalidArgumentError(
                f"alloc({nbytes}): a size cannot be negative. Fix: pass a byte count >= 0."
            )
        if nbytes >= 1 << 64:
            raise InvalidArgumentError(
                f"alloc({nbytes}): the size does not fit 64 bits. Fix: pass a smaller size."
            )
        out = ffi.new("vn_buffer **")
        check(lib.vn_buffer_create(ptr, nbytes, usage_bits(usage), ffi.NULL, out))
        return Buffer._adopt(self, out[0])

    # -- replay ----------------------------------------------------------------------

    def sequence(self) -> Any:
        """An empty ``vn.Sequence`` on this device."""
        from .replay import Sequence

        out = ffi.new("vn_sequence **")
        check(lib.vn_sequence_create(self._live(), out))
        return Sequence(self, out[0])

    def submit(self, work: Sequence[Any], timing: bool | str = False) -> Any:
        """Encode recordings and sequences, in order, into one command buffer; one queue submit.

        Returns a ``vn.Submission``; ``timing`` as for ``Recording.replay``.
        """
        from .replay import submit

        return submit(self, work, timing)

    @property
    def timestamps(self) -> bool:
        """True when the adapter has timestamp queries, so replays can be timed on the GPU."""
        return bool(lib.vn_device_has_timestamps(self._live()))

    # -- pipelines ---------------------------------------------------------------------

    def compile(
        self,
        wgsl: str,
        entry_point: str = "main",
        preserve: Iterable[str] = (),
        indirect: Sequence[Any] | None = None,
        constants: Mapping[str, float | int | bool] | None = None,
    ) -> Any:
        """Compile a WGSL compute entry point into a ``vn.Pipeline``; see ``Pipeline``."""
        from .pipeline import Pipeline

        return Pipeline._compile(self, wgsl, entry_point, tuple(preserve), indirect, constants)
