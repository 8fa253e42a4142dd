"""vn.Recording: a dispatch resolved once and re-encoded by every replay."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._handles import handle_id, new_view_slot, owned
from ._lib import check, lib
from ._marshal import to_timing, to_u32
from .buffer import Bindable, Buffer, as_output
from .readback import OutputReads
from .submission import Submission, replay, replay_one

if TYPE_CHECKING:
    from .pipeline import Pipeline


class Recording(OutputReads):
    """A replayable dispatch, from ``Pipeline.record``.

    ``replay(n)`` re-encodes the dispatch n times from the held pipeline and bind
    groups into one command buffer and submits it once: one C call, no Python
    between launches. Outputs are cleared before each launch unless preserved.
    """

    _kind = "Recording"
    _c_prefix = "vn_recording"
    _made_by = "pipeline.record(inputs, outputs, ...)"
    _pipeline: Pipeline
    _outputs: list[Bindable]
    _id: int  # the C id (handle_id), for csrc/python/launch.c

    @classmethod
    def _adopt(cls, pipeline: Pipeline, raw: Any) -> Recording:
        self = cls._wrap(raw)  # an owning pointer (``owned``)
        self._id = handle_id(raw)
        self._pipeline = pipeline
        self._outputs = []
        for i in range(int(lib.vn_recording_output_count(raw))):
            own, view = new_view_slot()  # own holds the reference the call takes on the view's buffer
            check(lib.vn_recording_output(raw, i, view))
            buffer = Buffer._adopt(pipeline.device, owned(own, "vn_buffer *"))
            self._outputs.append(as_output(buffer, int(view[0].offset), int(view[0].size)))
        return self

    @property
    def outputs(self) -> list[Bindable]:
        """The outputs as bound, in output order: a ``vn.Buffer``, or a ``vn.BufferView``
        where a view was bound. ReleasedError after ``release()``."""
        self._live()
        return list(self._outputs)

    def release(self) -> None:
        """Drop the recording now (idempotent), and its own handles of the outputs with it:
        a buffer the caller holds stays, one only the recording held goes."""
        self._outputs = []
        super().release()

    def replay(self, n: int = 1, timing: bool | str = False) -> Submission:
        """Launch the dispatch ``n`` times (one command buffer, one submit, up to 256 launches).

        A larger ``n`` goes in submits of 256 launches, at most two in flight: the call
        waits for older ones (memory stays bounded whatever ``n``), and the Submission
        returned is the last one's. ``timing=True`` records the GPU time
        (``Submission.gpu_time_ns``); ``timing="dispatch"`` each launch's own (in a pass
        of its own); timed replays take ``n`` up to 256.
        """
        if timing is False and type(n) is int and n == 1:  # the launch path: one call
            return replay_one(self, 0)
        ptr = self._live()
        return replay(lib.vn_recording_replay, ptr, to_u32(n, "Recording.replay n"), to_timing(timing), 1)
