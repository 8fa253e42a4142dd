"""vn.Buffer and vn.BufferUsage."""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Literal, overload

from numpy.typing import NDArray

from ._handles import Handle
from ._lib import check, ffi, lib
from ._marshal import new_array, to_destination, to_readable, to_u64
from ._typing import DTypeLike, ShapeLike
from .readback import PendingRead, complete, layout, read_async, start, want_copy

if TYPE_CHECKING:
    from .device import Device


class BufferUsage(enum.IntFlag):
    """WGPUBufferUsage bits (the values of the C enum vn_buffer_usage). The default usage is ``DEFAULT``."""

    MAP_READ = lib.VN_USAGE_MAP_READ
    MAP_WRITE = lib.VN_USAGE_MAP_WRITE
    COPY_SRC = lib.VN_USAGE_COPY_SRC
    COPY_DST = lib.VN_USAGE_COPY_DST
    INDEX = lib.VN_USAGE_INDEX
    VERTEX = lib.VN_USAGE_VERTEX
    UNIFORM = lib.VN_USAGE_UNIFORM
    STORAGE = lib.VN_USAGE_STORAGE
    INDIRECT = lib.VN_USAGE_INDIRECT
    QUERY_RESOLVE = lib.VN_USAGE_QUERY_RESOLVE
    #: serves as any binding (storage, uniform, indirect) and copies both ways
    DEFAULT = lib.VN_USAGE_DEFAULT


class Buffer(Handle):
    """A GPU buffer. Create with ``Device.upload`` or ``Device.alloc``.

    Immutable facts are plain attributes: ``byte_len`` (bytes asked for),
    ``allocation_len`` (padded to 4, at least 4), ``usage`` (BufferUsage) and
    ``allocation_identity`` (a process-wide monotonic id, never an address).
    """

    _kind = "Buffer"
    _made_by = "device.upload(data) or device.alloc(nbytes)"
    _device: Device
    byte_len: int
    allocation_len: int
    usage: BufferUsage
    allocation_identity: int

    #: ``Buffer.from_wgpu(gpu_buffer)`` and ``buffer.to_wgpu()``: interop with wgpu-py,
    #: installed by vyre_native.interop, which sits above this module.
    from_wgpu: ClassVar[Callable[[Any], Buffer]]
    to_wgpu: ClassVar[Callable[[Buffer], Any]]

    @classmethod
    def _adopt(cls, device: Device, raw: Any) -> Buffer:
        self = cls._wrap(ffi.gc(raw, lib.vn_buffer_release))
        self._device = device  # keeps the Device (and its close state) reachable
        desc = ffi.new("vn_buffer_desc *")
        check(lib.vn_buffer_describe(raw, desc))
        self.byte_len = int(desc.byte_len)
        self.allocation_len = int(desc.allocation_len)
        self.usage = BufferUsage(int(desc.usage))
        self.allocation_identity = int(desc.allocation_identity)
        return self

    @property
    def device(self) -> Device:
        return self._device

    def __repr__(self) -> str:
        state = " released" if self._ptr is None else ""
        return f"<vn.Buffer id={self.allocation_identity} {self.byte_len} bytes usage={self.usage!s}{state}>"

    def write(self, data: Any, offset: int = 0) -> None:
        """Queue a write of ``data`` at byte ``offset``; it lands before any later submit.

        Offset and length must be multiples of 4, except a write that ends the buffer.
        """
        ptr = self._live()
        src, nbytes = to_readable(data, "Buffer.write")
        check(lib.vn_buffer_write(ptr, to_u64(offset, "Buffer.write offset"), src, nbytes))

    @overload
    def read(self, dtype: None = None, shape: None = None, *, copy: Literal[True] = True) -> bytes: ...
    @overload
    def read(self, dtype: None = None, shape: None = None, *, copy: Literal[False]) -> memoryview: ...
    @overload
    def read(self, dtype: None = None, shape: None = None, *, copy: bool) -> bytes | memoryview: ...
    @overload
    def read(
        self, dtype: DTypeLike, shape: ShapeLike | None = None, *, copy: bool = True
    ) -> NDArray[Any]: ...
    def read(
        self, dtype: DTypeLike | None = None, shape: ShapeLike | None = None, *, copy: bool = True
    ) -> bytes | memoryview | NDArray[Any]:
        """The buffer's ``byte_len`` bytes, after all work submitted before the call.

        With ``dtype`` (and optionally ``shape``), a new writable numpy array instead,
        filled with one copy out of the staging memory; a shape that does not cover the
        byte length exactly is an ``InvalidArgumentError``.

        ``copy=False``: no copy. A read-only numpy array (with ``dtype``; else a read-only
        memoryview of the bytes) over the mapped staging memory itself, which stays mapped
        and pinned, and is never reused, until that array and every view of it are gone.
        Costs the GPU copy and the map; reading the array then reads that memory.
        """
        ptr = self._live()
        if want_copy(copy, "Buffer.read copy"):
            if dtype is None and shape is None:
                return complete(start(ptr), None, True)
            arr = new_array(dtype, shape, self.byte_len, "Buffer.read")
            self.read_into(arr)
            return arr
        form = layout(dtype, shape, self.byte_len, "Buffer.read")
        return complete(start(ptr), form, False)

    def read_async(self) -> PendingRead:
        """Start reading the buffer back; returns a ``vn.PendingRead`` (``.result()`` completes it)."""
        return read_async(self._live())

    def read_into(self, out: Any) -> int:
        """Fill ``out`` with the buffer's bytes; see ``PrerecordedDispatch.read_output_into``."""
        ptr = self._live()
        dst, capacity = to_destination(out, self.byte_len, "Buffer.read_into")
        check(lib.vn_buffer_read(ptr, dst, capacity))
        return self.byte_len
