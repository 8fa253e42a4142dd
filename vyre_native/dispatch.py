"""vn.PrerecordedDispatch: a dispatch encoded once and submitted at most once."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from numpy.typing import NDArray

from ._handles import Handle
from ._lib import check, check_wait, ffi, lib, read_sliced
from ._marshal import new_array, to_destination, to_index
from ._typing import DTypeLike, ShapeLike
from .readback import OutputReads, PendingRead, complete, layout, start

if TYPE_CHECKING:
    from .pipeline import Pipeline


class PrerecordedDispatch(OutputReads, Handle):
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
        self = cls._wrap(raw)  # an owning pointer (``owned``)
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
            # VN_PENDING: a CPU adapter's queue still runs earlier work
            check_wait(status, lib.vn_dispatch_replay, ptr, self._index)
        index: int = self._index[0]
        return index

    def _read_output(
        self, index: int, dtype: DTypeLike | None, shape: ShapeLike | None, copy: bool
    ) -> bytes | memoryview | NDArray[Any]:
        """Once this recording's own submission has completed (its reads are queued after it)."""
        ptr = self._live()
        i = to_index(index, "output index")
        if copy and (dtype is not None or shape is not None):
            arr = new_array(dtype, shape, self.output_byte_len(i), "read_output")
            self.read_output_into(i, arr)
            return arr
        form = None if copy else layout(dtype, shape, self.output_byte_len(i), "read_output")
        return complete(start(lib.vn_dispatch_read_output_async, ptr, i), form, copy)

    def read_output_async(self, index: int) -> PendingRead:
        """Start reading output ``index`` (after the checks ``read_output`` makes);
        ``.result()`` completes it."""
        return PendingRead._adopt(
            start(lib.vn_dispatch_read_output_async, self._live(), to_index(index, "output index"))
        )

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
        read_sliced(
            lambda pending: lib.vn_dispatch_read_output(ptr, i, dst, capacity, ffi.NULL, pending),
            dst,
            capacity,
        )
        return n
