"""vn.PendingRead: a readback in flight, and the one-copy completion into ``bytes``."""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import Any, overload

from numpy.typing import NDArray

from ._handles import Handle
from ._lib import check, ffi, lib
from ._marshal import new_array, to_destination
from ._typing import DTypeLike, ShapeLike

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

    @property
    def done(self) -> bool:
        """True once the data is back (``result()`` will not wait). Never blocks."""
        return bool(lib.vn_pending_read_done(self._live()))

    def __await__(self) -> Generator[Any, None, bytes]:
        """``data = await pending``: the bytes, waited for on a worker thread (the C wait
        releases the GIL), so the event loop's thread never blocks or spins."""
        return asyncio.to_thread(self.result).__await__()

    @overload
    def result(self, dtype: None = None, shape: None = None) -> bytes: ...
    @overload
    def result(self, dtype: DTypeLike, shape: ShapeLike | None = None) -> NDArray[Any]: ...
    def result(
        self, dtype: DTypeLike | None = None, shape: ShapeLike | None = None
    ) -> bytes | NDArray[Any]:
        """The bytes, once the read completes (one copy out of the staging buffer); with
        ``dtype`` (and ``shape``) a new writable numpy array, as ``Buffer.read`` gives."""
        if dtype is None and shape is None:
            return mapped_bytes(self._live())
        arr = new_array(dtype, shape, self.byte_len, "PendingRead.result")
        self.result_into(arr)
        return arr

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


def read_view_async(view: Any) -> PendingRead:
    """Start reading a C view (``vn_view *``) back: only its range."""
    out = ffi.new("vn_pending_read **")
    check(lib.vn_view_read_async(view, out))
    return PendingRead._adopt(out[0])
