"""vn.Buffer and vn.BufferUsage."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any

from ._handles import Handle, destination, readable_bytes
from ._lib import check, ffi, finish_read, lib
from .errors import InvalidArgumentError, WrongTypeError

if TYPE_CHECKING:
    from .device import Device


class BufferUsage(enum.IntFlag):
    """WGPUBufferUsage bits. The default usage is ``DEFAULT``."""

    MAP_READ = 0x1
    MAP_WRITE = 0x2
    COPY_SRC = 0x4
    COPY_DST = 0x8
    INDEX = 0x10
    VERTEX = 0x20
    UNIFORM = 0x40
    STORAGE = 0x80
    INDIRECT = 0x100
    QUERY_RESOLVE = 0x200
    #: serves as any binding (storage, uniform, indirect) and copies both ways
    DEFAULT = STORAGE | UNIFORM | INDIRECT | COPY_SRC | COPY_DST


def usage_bits(usage: BufferUsage | int | None) -> int:
    if usage is None:
        return int(BufferUsage.DEFAULT)
    if isinstance(usage, bool) or not isinstance(usage, int):
        raise WrongTypeError(
            f"usage={usage!r} is not a BufferUsage. Fix: combine vn.BufferUsage flags, e.g. "
            "vn.BufferUsage.STORAGE | vn.BufferUsage.COPY_SRC."
        )
    if usage <= 0 or usage >= 1 << 64:
        raise InvalidArgumentError(
            f"usage=0x{usage:x} is not a set of BufferUsage flags. Fix: combine vn.BufferUsage flags."
        )
    return int(usage)


class Buffer(Handle):
    """A GPU buffer. Create with ``Device.upload`` or ``Device.alloc``.

    Immutable facts are plain attributes: ``byte_len`` (bytes asked for),
    ``allocation_len`` (padded to 4, at least 4), ``usage`` (BufferUsage) and
    ``allocation_identity`` (a process-wide monotonic id, never an address).
    """

    _kind = "Buffer"
    _device: Device
    byte_len: int
    allocation_len: int
    usage: BufferUsage
    allocation_identity: int

    @classmethod
    def _adopt(cls, device: Device, raw: Any) -> Buffer:
        self = cls(ffi.gc(raw, lib.vn_buffer_release))
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

    @classmethod
    def from_wgpu(cls, gpu_buffer: Any) -> Buffer:
        """Wrap a wgpu-py ``GPUBuffer`` (a reference of its own); its device via ``Device.from_wgpu``."""
        from .interop import buffer_from_wgpu

        return buffer_from_wgpu(gpu_buffer)

    def to_wgpu(self) -> Any:
        """This buffer as a wgpu-py ``GPUBuffer`` holding its own reference (device from ``from_wgpu``)."""
        from .interop import buffer_to_wgpu

        return buffer_to_wgpu(self)

    def __repr__(self) -> str:
        state = " released" if self._ptr is None else ""
        return f"<vn.Buffer id={self.allocation_identity} {self.byte_len} bytes usage={self.usage!s}{state}>"

    def write(self, data: Any, offset: int = 0) -> None:
        """Queue a write of ``data`` at byte ``offset``; it lands before any later submit.

        Offset and length must be multiples of 4, except a write that ends the buffer.
        """
        ptr = self._live()
        src, nbytes = readable_bytes(data, "Buffer.write")
        if isinstance(offset, bool) or not isinstance(offset, int):
            raise WrongTypeError(
                f"Buffer.write offset={offset!r} is a {type(offset).__name__}, not an int. Fix: pass a byte offset."
            )
        if offset < 0:
            raise InvalidArgumentError(
                f"Buffer.write offset={offset} is negative. Fix: pass a byte offset >= 0."
            )
        check(lib.vn_buffer_write(ptr, offset, src, nbytes))

    def read(self) -> bytes:
        """The buffer's ``byte_len`` bytes, after all work submitted before the call."""
        result: bytes = self.read_async().result()
        return result

    def read_async(self) -> Any:
        """Start reading the buffer back; returns a ``vn.PendingRead`` (``.result()`` completes it)."""
        from .replay import read_async

        return read_async(self)

    def read_into(self, out: Any) -> int:
        """Fill ``out`` with the buffer's bytes; see ``PrerecordedDispatch.read_output_into``."""
        ptr = self._live()
        dst = destination(out, self.byte_len, "Buffer.read_into")
        n, pending = len(dst), ffi.new("vn_pending_read **")
        status = lib.vn_buffer_read(ptr, dst, n, pending)
        if status:
            finish_read(status, pending, dst, n, lambda: lib.vn_buffer_read(ptr, dst, n, pending))
        return self.byte_len
