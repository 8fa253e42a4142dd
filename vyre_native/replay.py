"""vn.Recording: a dispatch resolved once and re-encoded by every replay."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from numpy.typing import NDArray

from ._handles import Handle
from ._lib import check, ffi, lib
from ._marshal import to_index, to_timing, to_u32
from ._typing import DTypeLike, ShapeLike
from .buffer import Buffer
from .readback import OutputReads, PendingRead
from .submission import Submission

if TYPE_CHECKING:
    from .pipeline import Pipeline


class Recording(OutputReads, Handle):
    """A replayable dispatch, from ``Pipeline.record``.

    ``replay(n)`` re-encodes the dispatch n times from the held pipeline and bind
    groups into one command buffer and submits it once: one C call, no Python
    between launches. Outputs are cleared before each launch unless preserved.
    """

    _kind = "Recording"
    _made_by = "pipeline.record(inputs, outputs, ...)"
    _pipeline: Pipeline
    _outputs: list[Buffer]

    @classmethod
    def _adopt(cls, pipeline: Pipeline, raw: Any) -> Recording:
        self = cls._wrap(ffi.gc(raw, lib.vn_recording_release))
        self._pipeline = pipeline
        self._outputs = []
        buf = ffi.new("vn_buffer **")
        for i in range(int(lib.vn_recording_output_count(raw))):
            check(lib.vn_recording_output(raw, i, buf))
            self._outputs.append(Buffer._adopt(pipeline.device, buf[0]))
        return self

    @property
    def outputs(self) -> list[Buffer]:
        """The output buffers, in output order."""
        return list(self._outputs)

    def replay(self, n: int = 1, timing: bool | str = False) -> Submission:
        """Launch the dispatch ``n`` times (one command buffer, one submit).

        ``timing=True`` records the GPU time (``Submission.gpu_time_ns``);
        ``timing="dispatch"`` each launch's own (in a pass of its own).
        """
        out = ffi.new("vn_submission **")
        check(lib.vn_recording_replay(self._live(), to_u32(n, "Recording.replay n"), to_timing(timing), out))
        return Submission._adopt(out[0])

    def _output(self, index: Any) -> Buffer:
        """Output ``index``'s buffer; C says whether the index names one."""
        ptr = self._live()
        i = to_index(index, "output index")
        buf = ffi.new("vn_buffer **")
        check(lib.vn_recording_output(ptr, i, buf))
        lib.vn_buffer_release(buf[0])  # the reference C gave; self._outputs holds the handle
        return self._outputs[i]

    def _read_output(
        self, index: int, dtype: DTypeLike | None, shape: ShapeLike | None, copy: bool
    ) -> bytes | memoryview | NDArray[Any]:
        """After all work submitted so far (every replay) completes."""
        return self._output(index).read(dtype, shape, copy=copy)

    def read_output_into(self, index: int, out: Any) -> int:
        return self._output(index).read_into(out)

    def read_output_async(self, index: int) -> PendingRead:
        """Start reading output ``index``; ``.result()`` completes it."""
        return self._output(index).read_async()
