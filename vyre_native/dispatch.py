"""vn.PrerecordedDispatch: a dispatch encoded once and submitted at most once."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._handles import Handle, destination
from ._lib import check, check_wait, ffi, finish_read, lib
from .errors import OutputIndexError, WrongTypeError
from .replay import mapped_bytes

if TYPE_CHECKING:
    from .pipeline import Pipeline


class PrerecordedDispatch(Handle):
    """Made by ``Pipeline.prerecord_persistent_dispatch`` or ``prerecord_borrowed_dispatch``.

    The command buffer is encoded at creation; ``replay()`` only submits it, and a
    second ``replay()`` raises ``AlreadySubmittedError`` (WebGPU command buffers are
    single-submit). The recording keeps every bound buffer alive until it is released.
    """

    _kind = "PrerecordedDispatch"
    _pipeline: Pipeline
    _index: Any

    _lens: list[int] | None = None

    @classmethod
    def _adopt(cls, pipeline: Pipeline, raw: Any) -> PrerecordedDispatch:
        # Kept to the minimum: this runs once per launch on the pre-record path.
        self = cls(ffi.gc(raw, lib.vn_dispatch_release))
        self._pipeline = pipeline
        # Only the one replay() that wins the C layer's exchange ever writes this,
        # so threads racing on replay() cannot clash over it.
        self._index = ffi.new("uint64_t *")
        return self

    @property
    def _out_lens(self) -> list[int]:
        """Each output's byte_len, read from C on first use."""
        lens = self._lens
        if lens is None:
            raw = self._live()
            length = ffi.new("uint64_t *")
            lens = []
            for i in range(int(lib.vn_dispatch_output_count(raw))):
                check(lib.vn_dispatch_output_len(raw, i, length))
                lens.append(int(length[0]))
            self._lens = lens
        return lens

    @property
    def output_count(self) -> int:
        return len(self._out_lens)

    def output_byte_len(self, index: int) -> int:
        """``byte_len`` of output ``index``."""
        return self._out_lens[self._check_index(index)]

    def _check_index(self, index: Any) -> int:
        if isinstance(index, bool) or not isinstance(index, int):
            raise WrongTypeError(f"output index {index!r} is not an int. Fix: pass an int index.")
        if not 0 <= index < len(self._out_lens):
            raise OutputIndexError(
                f"output index {index} is out of range for a dispatch with {len(self._out_lens)} output(s). "
                f"Fix: pass an index from 0 to {len(self._out_lens) - 1}."
            )
        return index

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
            slot = self._index  # VN_PENDING: a CPU adapter's queue still runs earlier work
            check_wait(status, lambda: lib.vn_dispatch_replay(ptr, slot))
        index: int = self._index[0]
        return index

    def read_output(self, index: int) -> bytes:
        """Output ``index``'s bytes, once this recording's own submission has completed.

        One copy, from the staging buffer into the new ``bytes``; ``read_output_into``
        fills memory you already have and is the path for repeated reads.
        """
        self._check_index(index)
        ptr, out = self._live(), ffi.new("vn_pending_read **")
        check_wait(
            lib.vn_dispatch_read_output_async(ptr, index, out),
            lambda: lib.vn_dispatch_read_output_async(ptr, index, out),
        )
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
        n = self._out_lens[self._check_index(index)]
        dst = destination(out, n, "read_output_into")
        size, pending = len(dst), ffi.new("vn_pending_read **")
        status = lib.vn_dispatch_read_output(ptr, index, dst, size, ffi.NULL, pending)
        if status:
            finish_read(
                status, pending, dst, size, lambda: lib.vn_dispatch_read_output(ptr, index, dst, size, ffi.NULL, pending)
            )
        return n
