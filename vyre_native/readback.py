"""vn.PendingRead: a readback in flight, and the one-copy completion into ``bytes``."""

from __future__ import annotations

from typing import Any

from ._handles import Handle
from ._lib import check, ffi, lib
from ._marshal import to_destination

_CHAR_P = ffi.typeof("char *")


def mapped_bytes(read: Any) -> bytes:
    """Complete a pending read into a new ``bytes`` with one copy, straight from the
    mapped staging memory (a bytearray first and then ``bytes`` would copy twice)."""
    data = ffi.new("void **")
    check(lib.vn_pending_read_map(read, data))
    try:
        copied: bytes = ffi.buffer(ffi.cast(_CHAR_P, data[0]), int(lib.vn_pending_read_len(read)))[:]
        return copied
    finally:
        lib.vn_pending_read_unmap(read)


class PendingRead(Handle):
    """A readback in flight (from ``read_async`` / ``read_output_async``).

    ``result()`` / ``result_into(out)`` wait for it and return the bytes; each read
    completes once. Many can be in flight: each holds its own staging buffer from
    the device's ring until it completes.
    """

    _kind = "PendingRead"
    _made_by = "buffer.read_async() or recording.read_output_async(i)"
    byte_len: int

    @classmethod
    def _adopt(cls, raw: Any) -> PendingRead:
        self = cls._wrap(ffi.gc(raw, lib.vn_pending_read_release))
        self.byte_len = int(lib.vn_pending_read_len(raw))
        return self

    def result(self) -> bytes:
        """The bytes, once the read completes (one copy out of the staging buffer)."""
        return mapped_bytes(self._live())

    def result_into(self, out: Any) -> int:
        """Fill ``out`` as ``read_output_into`` does; returns the bytes written."""
        ptr = self._live()
        dst, capacity = to_destination(out, self.byte_len, "result_into")
        check(lib.vn_pending_read_finish(ptr, dst, capacity))
        return self.byte_len


def read_async(buffer_ptr: Any) -> PendingRead:
    """Start reading a live C buffer back."""
    out = ffi.new("vn_pending_read **")
    check(lib.vn_buffer_read_async(buffer_ptr, out))
    return PendingRead._adopt(out[0])
