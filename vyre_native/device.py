"""vn.Device: one adapter and device, and what is created on it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from collections.abc import Sequence as SequenceABC
from typing import Any, ClassVar

import numpy as np

from ._handles import Handle, new_slot, owned
from ._lib import call_waiting, check, ffi, lib, load_library
from ._marshal import (
    to_choice,
    to_int,
    to_list,
    to_ptr,
    to_readable,
    to_str_tuple,
    to_timing,
    to_u64,
    to_usage,
    to_utf8,
)
from .buffer import Bindable, Buffer, BufferUsage, BufferView, copy_args
from .pipeline import Pipeline
from .replay import Recording
from .sequence import Sequence
from .submission import Submission

_POWER = {
    None: lib.VN_POWER_DEFAULT,
    "default": lib.VN_POWER_DEFAULT,
    "low-power": lib.VN_POWER_LOW,
    "high-performance": lib.VN_POWER_HIGH,
}
_I32_MAX = 0x7FFFFFFF
#: a copy between two devices goes through host memory this many bytes at a time
_HOST_COPY_CHUNK = 64 << 20

# The fields of the C struct, in its order: the header is the one list of them.
_LIMIT_FIELDS = tuple(name for name, _ in ffi.typeof("vn_limits").fields)


def _info_dict(info: Any) -> dict[str, str]:
    return {
        "name": ffi.string(info.name).decode("utf-8", "replace"),
        "vendor": ffi.string(info.vendor).decode("utf-8", "replace"),
        "backend": ffi.string(info.backend).decode(),
        "adapter_type": ffi.string(info.adapter_type).decode(),
        "driver": ffi.string(info.driver).decode("utf-8", "replace"),
        "uuid": ffi.string(info.uuid).decode(),
        "pci_bus": ffi.string(info.pci_bus).decode(),
    }


def _backend_arg(backend: Any) -> Any:
    """The C value of a ``backend=`` argument: NULL, or the name as UTF-8 (C checks the name)."""
    return ffi.NULL if backend is None else to_utf8(backend, "backend")


def _adapter_infos(name: Any) -> tuple[Any, int]:
    """(the C ``vn_device_info[]`` of every adapter of backend ``name`` (C value), count)."""
    load_library()
    count = ffi.new("size_t *")
    check(lib.vn_enumerate_adapters(name, ffi.NULL, 0, count))
    infos = ffi.new("vn_device_info[]", max(int(count[0]), 1))
    check(lib.vn_enumerate_adapters(name, infos, int(count[0]), count))
    return infos, min(int(count[0]), len(infos))


def adapters_with_features(backend: str | None = None) -> list[tuple[dict[str, str], frozenset[str]]]:
    """Each adapter of ``backend`` as (``Device.info`` dict, the names of its features)."""
    infos, found = _adapter_infos(_backend_arg(backend))
    return [
        (_info_dict(infos[i]), frozenset(ffi.string(infos[i].features).decode().split()))
        for i in range(found)
    ]


def enumerate_adapters(backend: str | None = None) -> list[dict[str, str]]:
    """Every adapter wgpu-native sees on ``backend`` (default: the platform's primary
    backends, Vulkan / Metal / DX12, never the OpenGL fallback unless ``backend="gl"``),
    as ``Device.info`` dicts; pass an index as ``Device(adapter=i, backend=...)``, or the
    ``"uuid"`` or ``"pci_bus"`` as ``Device(adapter=...)``: an identity that a change of
    order does not change."""
    return [info for info, _ in adapters_with_features(backend)]


class Device(Handle):
    """A GPU device with the adapter's own limits (not WebGPU's defaults).

    ``Device(power_preference=None | "low-power" | "high-performance")`` picks the
    default adapter; ``Device(adapter=i)`` the i-th of ``vn.enumerate_adapters()``;
    ``Device(adapter="GPU-<uuid>")`` (or the bare UUID, a unique prefix of it, or a PCI
    address ``"0000:3b:00.0"``) the adapter of that identity (``info["uuid"]``,
    ``info["pci_bus"]``; Vulkan adapters only).

    With no ``adapter=``, the GPU a scheduler assigned: where ``CUDA_VISIBLE_DEVICES``
    (NVIDIA), ``ROCR_VISIBLE_DEVICES`` / ``HIP_VISIBLE_DEVICES`` (AMD) or
    ``ZE_AFFINITY_MASK`` (Intel) is set, the first GPU it names (indices count that
    vendor's adapters in PCI order, as nvidia-smi numbers them; NVIDIA's ``GPU-<uuid>``
    entries match by UUID), and a GPU of that vendor it does not name is never chosen;
    other vendors' adapters (Mesa's lavapipe) stay visible. An entry that matches no
    adapter is an ``InvalidArgumentError`` naming the variable, its value and the
    adapters seen. See docs/guide/scaling.md.
    ``backend`` is ``"vulkan"``, ``"metal"``, ``"dx12"`` or ``"gl"``; the default is the
    platform's primary backends (never wgpu's OpenGL fallback), and ``info["backend"]``
    says which one runs. Creating one costs milliseconds (adapter and device requests);
    make one and keep it. ``close()`` (or leaving a ``with`` block) makes it and
    everything created on it unusable: later calls raise ``ReleasedError``.
    """

    _kind = "Device"
    _made_by = "vn.Device()"
    #: the wgpu-py GPUDevice this one wraps (Device.from_wgpu), else absent
    _wgpu_device: Any
    _info: dict[str, str]
    _limits: dict[str, int]
    _features: frozenset[str]

    #: ``Device.from_wgpu(gpu_device)``: interop with wgpu-py, installed by
    #: vyre_native.interop, which sits above this module.
    from_wgpu: ClassVar[Callable[[Any], Device]]

    def __init__(
        self,
        power_preference: str | None = None,
        adapter: int | str | None = None,
        backend: str | None = None,
        required_features: Iterable[str] = (),
    ) -> None:
        self._ptr = None  # a closed device until the C one exists
        power = to_choice(power_preference, "power_preference", _POWER)
        name = _backend_arg(backend)
        index, row = self._choose_adapter(adapter, name)
        # C knows the names and checks them against the adapter: one space-separated string.
        required = to_utf8(
            " ".join(to_str_tuple(required_features, "required_features")), "required_features"
        )
        load_library()
        out_own, out = new_slot("vn_device *")
        check(lib.vn_device_create(power, index, name, required, out))
        self._init_native(owned(out_own, "vn_device *"))
        if row is not None:  # the listing's identity: it knows the order of equal GPUs
            self._info["uuid"], self._info["pci_bus"] = row["uuid"], row["pci_bus"]

    @staticmethod
    def _choose_adapter(adapter: Any, name: Any) -> tuple[int, dict[str, str] | None]:
        """(index for vn_device_create, -1 for the default; the listing's row of it or None)."""
        if isinstance(adapter, str):
            wanted = to_utf8(adapter, "adapter")
        elif adapter is not None or not lib.vn_assigned_by_environment():
            return (-1 if adapter is None else to_int(adapter, "adapter", 0, _I32_MAX, "an int32_t")), None
        else:
            wanted = ffi.NULL
        infos, found = _adapter_infos(name)
        index = ffi.new("int32_t *")
        check(lib.vn_adapter_choose(infos, found, wanted, index))
        i = int(index[0])
        return (i, _info_dict(infos[i])) if i >= 0 else (-1, None)

    def _init_native(self, raw: Any) -> None:
        """Become the handle of ``raw``, an owning pointer (``owned``)."""
        self._ptr = raw
        info = ffi.new("vn_device_info *")
        check(lib.vn_device_get_info(raw, info))
        self._info = _info_dict(info)
        limits = ffi.new("vn_limits *")
        check(lib.vn_device_get_limits(raw, limits))
        self._limits = {name: int(getattr(limits, name)) for name in _LIMIT_FIELDS}
        names = ffi.new("char[]", 4096)
        check(lib.vn_device_get_features(raw, names, len(names)))
        self._features = frozenset(ffi.string(names).decode().split())

    @classmethod
    def _from_native(cls, raw: Any) -> Device:
        self = cls.__new__(cls)
        self._init_native(raw)
        return self

    # -- properties ------------------------------------------------------------------

    @property
    def info(self) -> dict[str, str]:
        """Adapter description: name, vendor, backend, adapter_type, driver, and uuid and pci_bus
        (the Vulkan device UUID and PCI address, "" where unknown: docs/guide/scaling.md)."""
        self._live()
        return dict(self._info)

    @property
    def features(self) -> frozenset[str]:
        """The device's features by name ("shader-f16", "subgroup", "timestamp-query", ...):
        every compute feature the adapter offers, and ``required_features``."""
        self._live()
        return self._features

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
        call_waiting(lib.vn_device_wait_idle, ptr)

    # -- buffers -----------------------------------------------------------------------

    def upload(self, data: Any, usage: BufferUsage | int | None = None) -> Buffer:
        """A new buffer holding a copy of ``data`` (any buffer-protocol object of plain data).

        The bytes go from ``data``'s memory straight into a mapping of the new
        buffer (one memcpy, no intermediate Python copy).
        """
        ptr = self._live()
        src, nbytes = to_readable(data, "upload")
        out_own, out = new_slot("vn_buffer *")
        check(lib.vn_buffer_create(ptr, nbytes, to_usage(usage, "upload usage"), src, out))
        return Buffer._adopt(self, owned(out_own, "vn_buffer *"))

    def alloc(self, nbytes: int, usage: BufferUsage | int | None = None) -> Buffer:
        """A new zero-filled buffer of ``nbytes`` bytes."""
        ptr = self._live()
        size, bits = to_u64(nbytes, "alloc nbytes"), to_usage(usage, "alloc usage")
        out_own, out = new_slot("vn_buffer *")
        check(lib.vn_buffer_create(ptr, size, bits, ffi.NULL, out))
        return Buffer._adopt(self, owned(out_own, "vn_buffer *"))

    def copy(
        self,
        src: Bindable,
        dst: Bindable,
        nbytes: int | None = None,
        src_offset: int = 0,
        dst_offset: int = 0,
    ) -> None:
        """Queue a copy of ``nbytes`` (``None``: as much as fits from the offsets) from
        ``src_offset`` into ``src`` to ``dst_offset`` into ``dst`` (buffers or views; a
        view's offsets count from its start), at any byte range: the arguments of
        ``Sequence.copy``, run now instead of as a step. No other byte of ``dst`` changes.

        Both on this device: ordered on the queue as a submit (after all work submitted
        before, before any later), no host wait. Whole words at the same offset within
        their words are one GPU copy. Any other range between two buffers that bind as
        storage (the default usage does) is one dispatch of a copy kernel, a partial first
        or last word merged in place (``dst`` then needs COPY_SRC usage, the default has
        it); without STORAGE, the partial words and bytes that shift within their words
        go through a temporary buffer, 4 MiB at a time. One buffer to itself works too,
        overlapping ranges as ``memmove``.

        ``src`` and ``dst`` on two devices (one of them this one): through the host, 64 MiB
        at a time, each a blocking readback of ``src`` (after the work queued on its
        device) and a write into ``dst``: one readback plus one write of the bytes.
        """
        ptr = self._live()
        c_src, c_dst, n, so, do = copy_args(src, dst, nbytes, src_offset, dst_offset)
        if src.device is dst.device:
            call_waiting(lib.vn_device_copy, ptr, c_src, c_dst, n, so, do)
            return
        resolved = ffi.new("uint64_t *")
        check(lib.vn_device_copy_check(ptr, c_src, c_dst, n, so, do, resolved))
        total = int(resolved[0])
        s_buf, s_at = (src.buffer, src.offset + so) if isinstance(src, BufferView) else (src, so)
        d_buf, d_at = (dst.buffer, dst.offset + do) if isinstance(dst, BufferView) else (dst, do)
        staging = np.empty(min(total, _HOST_COPY_CHUNK), np.uint8)
        for done in range(0, total, _HOST_COPY_CHUNK):
            part = staging[: min(_HOST_COPY_CHUNK, total - done)]
            s_buf.view(s_at + done, part.nbytes).read_into(part)
            d_buf.view(d_at + done, part.nbytes).write(part)

    # -- replay ----------------------------------------------------------------------

    def sequence(self) -> Sequence:
        """An empty ``vn.Sequence`` on this device."""
        out_own, out = new_slot("vn_sequence *")
        check(lib.vn_sequence_create(self._live(), out))
        return Sequence._adopt(self, owned(out_own, "vn_sequence *"))

    def submit(self, work: SequenceABC[Recording | Sequence], timing: bool | str = False) -> Submission:
        """Encode recordings and sequences, in order, into one command buffer; one queue submit.

        Any size: past 256 steps (a recording is one step, a sequence its length) the work
        goes in submits of 256 steps, in order, as ``replay(n)`` splits, at most two in
        flight (the call returns once the GPU has run all but the last two), and as one
        unit: no other thread's submit, write or read of this device lands between its
        parts. Returns a ``vn.Submission`` (the last part's, whose completion is the
        whole batch's); ``timing`` as for ``Recording.replay``, for at most 256 steps.
        """
        ptr = self._live()
        items = to_list(work, "submit() work", "a list of vn.Recording / vn.Sequence")
        c_items = ffi.new("vn_work[]", max(len(items), 1))
        pinned = [to_ptr(w, (Recording, Sequence), f"submit() work[{i}]") for i, w in enumerate(items)]
        for i, w in enumerate(items):
            if isinstance(w, Recording):
                c_items[i].recording = pinned[i]
            else:
                c_items[i].sequence = pinned[i]
        (out_own, out), count, mode = new_slot("vn_submission *"), len(items), to_timing(timing)
        # VN_PENDING: a CPU adapter's queue still runs earlier work
        call_waiting(lib.vn_device_submit, ptr, c_items, count, mode, out)
        del pinned  # held until the call returned
        return Submission._adopt(owned(out_own, "vn_submission *"))

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
        indirect: SequenceABC[Any] | None = None,
        constants: Mapping[str, float | int | bool] | None = None,
        *,
        zero_workgroup_memory: bool = True,
        bounds_checks: bool = True,
        loop_bounding: bool = True,
    ) -> Pipeline:
        """Compile a WGSL compute entry point into a ``vn.Pipeline``; see ``Pipeline``.

        ``var<workgroup>`` memory the entry point uses starts at zero in every workgroup,
        as WGSL promises (vyre_native adds the zeroing, which wgpu-native leaves out; see
        ``vyre_native.zero_workgroup``). ``zero_workgroup_memory=False`` leaves it out
        for a kernel that writes all its workgroup memory before reading it: the memory
        then starts with whatever an earlier workgroup left there.

        Runtime checks the compiler adds (both on by default, as in wgpu):
        ``bounds_checks`` keeps every index, pointer and array length in range (an access
        out of range reads zero or an element in range, and a write out of range lands
        nowhere outside its binding). ``bounds_checks=False`` makes such an access
        undefined behaviour: **memory-unsafe** (it may read or write other GPU memory, or
        lose the device); pass it only for a kernel whose every access is in range.
        ``loop_bounding`` gives every loop a counter the driver's compiler cannot see
        through, so a loop that never ends is not assumed to end (a driver may then
        miscompile it, or hang the GPU). ``loop_bounding=False`` is a promise that every
        loop terminates; counted loops then run faster (a tinygrad matmul about 2x on an
        H200). See ``Pipeline.runtime_checks``."""
        return Pipeline._compile(
            self, wgsl, entry_point, preserve, indirect, constants, zero_workgroup_memory, bounds_checks, loop_bounding
        )
