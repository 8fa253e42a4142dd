"""vn.PrerecordedDispatch: a dispatch encoded once and submitted at most once."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._lib import check_wait, ffi, lib
from .readback import OutputReads

if TYPE_CHECKING:
    from .pipeline import Pipeline


class PrerecordedDispatch(OutputReads):
    """Made by ``Pipeline.prerecord_persistent_dispatch`` or ``prerecord_borrowed_dispatch``.

    The command buffer is encoded at creation; ``replay()`` only submits it, and a
    second ``replay()`` raises ``AlreadySubmittedError`` (WebGPU command buffers are
    single-submit). The recording keeps every bound buffer alive until it is released.
    """

    _kind = "PrerecordedDispatch"
    _c_prefix = "vn_dispatch"
    _made_by = "pipeline.prerecord_persistent_dispatch(...) or pipeline.prerecord_borrowed_dispatch(...)"
    _pipeline: Pipeline

    @classmethod
    def _adopt(cls, pipeline: Pipeline, raw: Any) -> PrerecordedDispatch:
        # Kept to the minimum: this runs once per launch on the pre-record path.
        self = cls._wrap(raw)  # an owning pointer (``owned``)
        self._pipeline = pipeline
        return self

    def replay(self) -> int:
        """Submit the recorded command buffer; returns the submission index.

        One C call (an atomic guard and a queue submit). Exactly one call ever
        succeeds, even when threads race; the others raise AlreadySubmittedError.
        """
        ptr = self._ptr
        if ptr is None:
            self._live()  # raises ReleasedError
        status = lib.vn_dispatch_replay(ptr, ffi.NULL)
        if status:
            # VN_PENDING: a CPU adapter's queue still runs earlier work
            check_wait(status, lib.vn_dispatch_replay, ptr, ffi.NULL)
        # this call's own: only the one replay that succeeded set it, before it returned
        index: int = lib.vn_dispatch_submission_index(ptr)
        return index
