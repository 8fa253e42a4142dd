"""vn.PrerecordedDispatch: a dispatch encoded once and submitted at most once."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, overload

from numpy.typing import NDArray

from ._handles import Handle
from ._lib import check, ffi, lib
from ._marshal import new_array, to_destination, to_index
from ._typing import DTypeLike, ShapeLike
from .readback import mapped_bytes

if TYPE_CHECKING:
    from .pipeline import Pipeline


class PrerecordedDispatch(Handle):
    """Made by ``Pipeline.prerecord_persistent_dispatch`` or ``prerecord_borrowed_dispatch``.

    The command buffer is encoded at creation; ``replay()`` only submits it, and a
    second ``replay()`` raises ``AlreadySubmittedError`` (WebGPU command buffers are
    single-submit). The recording keeps every bound buffer alive until it is released.
    """

    _kind = "PrerecordedDispatch"
    _made_by = "pipeline.prerecord_persistent_dispatch(...) or pipeline.prerecord_borrowed_dispatch(...)"
    _pipeline: Pipeline
    _index: Any

    @classmethod
    def _adopt(cls, pipeline: Pipeline, raw: Any) -> PrerecordedDispatch:
        # Kept to the minimum: this runs once per launch on the pre-record path.
        self = cls._wrap(ffi.gc(raw, lib.vn_dispatch_release))
        self._pipeline = pipeline
        # Only the one replay() that wins the C layer's exchange ever writes this,
        # so threads racing on replay() cannot clash over it.
        self._index = ffi.new("uint64_t *")
        return self

    @property
    def output_count(self) -> int:
        return int(lib.vn_dispatch_output_count(self._live()))

    def output_byte_len(self, index: int) -> int:
        """``byte_len`` of output ``index``."""
        length = ffi.new("uint64_t *")
        check(lib.vn_dispatch_output_len(self._live(), to_index(index, "output index"), length))
        return int(length[0])

    def replay(self) -> int:
        """Submit the recorded command buffer; returns the submission index.

        One C call (an atomic guard and a queue submit). Exactly one call ever
        succeeds, even when threads race; the others raise AlreadySubmittedError.
        """
        ptr = self._ptr
        if ptr is None:
            self._live()  # raises ReleasedError
        status = lib.vn_dispatch_replay(ptr, self._index)
        if status:
            check(status)
        index: int = self._index[0]
        return index

    @overload
    def read_output(self, index: int, dtype: None = None, shape: None = None) -> bytes: ...
    @overload
    def read_output(
        self, index: int, dtype: DTypeLike, shape: ShapeLike | None = None
    ) -> NDArray[Any]: ...
    def read_output(
        self, index: int, dtype: DTypeLike | None = None, shape: ShapeLike | None = None
    ) -> bytes | NDArray[Any]:
        """Output ``index``'s bytes, once this recording's own submission has completed.

        One copy, from the staging buffer into the new ``bytes``; with ``dtype`` (and
        ``shape``) into a new writable numpy array instead. ``read_output_into`` fills
        memory you already have and is the path for repeated reads.
        """
        if dtype is not None or shape is not None:
            ptr = self._live()
            length = ffi.new("uint64_t *")
            check(lib.vn_dispatch_output_len(ptr, to_index(index, "output index"), length))
            arr = new_array(dtype, shape, int(length[0]), "read_output")
            self.read_output_into(index, arr)
            return arr
        out = ffi.new("vn_pending_read **")
        check(lib.vn_dispatch_read_output_async(self._live(), to_index(index, "output index"), out))
        read = ffi.gc(out[0], lib.vn_pending_read_release)
        return mapped_bytes(read)

    def read_output_into(self, index: int, out: Any) -> int:
        """Fill caller memory with output ``index``; returns the bytes written.

        A ``bytearray`` is resized to the output's ``byte_len`` (reusing its
        allocation) and refilled; any other writable C-contiguous buffer (a numpy
        array) of at least ``byte_len`` bytes is filled in place. One C call: wait,
        GPU copy to a reused staging buffer, memcpy into ``out``.
        """
        ptr = self._live()
        i = to_index(index, "output index")
        length = ffi.new("uint64_t *")
        check(lib.vn_dispatch_output_len(ptr, i, length))
        n = int(length[0])
        dst, capacity = to_destination(out, n, "read_output_into")
        check(lib.vn_dispatch_read_output(ptr, i, dst, capacity, ffi.NULL))
        return n
