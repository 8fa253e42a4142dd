"""vn.Sequence: dispatches of several pipelines, copies and clears, replayed as one submit."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence as SequenceABC
from typing import TYPE_CHECKING, Any

from ._handles import Handle, handle_id
from ._lib import check, ffi, lib
from ._marshal import to_ptr, to_timing, to_u32, to_view
from .buffer import Bindable, Buffer, BufferView, copy_args
from .pipeline import Pipeline, dispatch_args
from .submission import Submission, replay, replay_one

if TYPE_CHECKING:
    from .device import Device


class Sequence(Handle):
    """Dispatches of several pipelines, copies and clears, replayed as one submit.

    Outputs in a sequence: ``add(..., clear_outputs=True)`` (the default) clears
    that dispatch's non-preserved outputs immediately before it, exactly as a
    recording does, so a step never sees what an earlier step left in its outputs;
    ``clear_outputs=False`` leaves them as the previous steps left them (ping-pong
    buffers, accumulations): the same argument as ``Pipeline.record`` and
    ``prerecord_persistent_dispatch`` take. Nothing else is cleared implicitly; ``clear(buf)``
    clears a buffer at that point. Consecutive dispatches with no clear between
    them share one compute pass.
    """

    _kind = "Sequence"
    _made_by = "device.sequence()"
    _device: Device
    _id: int  # the C id (handle_id), for csrc/python/launch.c

    @classmethod
    def _adopt(cls, device: Device, raw: Any) -> Sequence:
        self = cls._wrap(raw)  # an owning pointer (``owned``)
        self._id = handle_id(raw)
        self._device = device
        return self

    def __len__(self) -> int:
        return int(lib.vn_sequence_length(self._live()))

    def add(
        self,
        pipeline: Pipeline,
        inputs: SequenceABC[Bindable] = (),
        outputs: SequenceABC[Bindable] = (),
        params: Bindable | None = None,
        workgroups: SequenceABC[int] = (1, 1, 1),
        clear_outputs: bool = True,
        immediates: Any = None,
        *,
        bind: Mapping[str, Bindable] | None = None,
        indirect: tuple[Bindable, int] | None = None,
    ) -> Sequence:
        """Append a dispatch (same binding rules and checks as ``prerecord_persistent_dispatch``,
        ``bind=`` and ``indirect=`` too: the counts may come from a buffer an earlier step wrote).

        ``immediates``: this step's own ``var<immediate>`` data (exactly
        ``pipeline.immediate_size`` bytes, copied): per-step values with no uniform
        buffer and no bind-group change between steps.
        """
        ptr = self._live()
        args, pinned = dispatch_args(
            inputs, outputs, params, workgroups, immediates, bind, indirect, clear_outputs
        )
        pipe = to_ptr(pipeline, Pipeline, "Sequence.add pipeline")
        check(lib.vn_sequence_add(ptr, pipe, args))
        del pinned  # held until the call returned
        return self

    def copy(
        self,
        src: Bindable,
        dst: Bindable,
        nbytes: int | None = None,
        src_offset: int = 0,
        dst_offset: int = 0,
    ) -> Sequence:
        """Append a GPU copy (``nbytes=None``: as much as fits from the offsets); a view's
        offsets count from its start, and the copy stays inside it."""
        ptr = self._live()
        check(lib.vn_sequence_copy(ptr, *copy_args(src, dst, nbytes, src_offset, dst_offset)))
        return self

    def clear(self, buffer: Bindable) -> Sequence:
        """Append a clear to zero of the whole buffer, or of only the view's range."""
        view = ffi.new("vn_view *", to_view(buffer, "clear() buffer", Buffer, BufferView))
        check(lib.vn_sequence_clear(self._live(), view))
        return self

    def replay(self, n: int = 1, timing: bool | str = False) -> Submission:
        """Encode every step ``n`` times into one command buffer and submit it once.

        ``timing=True``: total GPU time; ``timing="dispatch"``: each dispatch in a
        pass of its own, timed (``Submission.dispatch_times_ns``). One submit holds at
        most 256 steps (n times the sequence's length, or one whole sequence); without
        timing a larger ``n`` goes in several submits, as ``Recording.replay`` does.
        """
        if timing is False and type(n) is int and n == 1:  # the launch path: one call
            return replay_one(self, 1)
        ptr = self._live()
        n_ = to_u32(n, "Sequence.replay n")
        steps = 1 if n_ == 1 else int(lib.vn_sequence_length(ptr))  # only a split reads it
        return replay(lib.vn_sequence_replay, ptr, n_, to_timing(timing), steps)
