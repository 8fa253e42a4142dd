"""Replayable recordings, dispatch sequences, submissions and asynchronous reads."""

from __future__ import annotations

from collections.abc import Sequence as SequenceABC
from typing import TYPE_CHECKING, Any

from ._handles import Handle, destination
from ._lib import check, ffi, lib
from .buffer import Buffer
from .errors import InvalidArgumentError, OutputIndexError, WrongTypeError

if TYPE_CHECKING:
    from .device import Device
    from .pipeline import Pipeline

_U32_MAX = 0xFFFFFFFF


def _launches(n: Any, what: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise WrongTypeError(f"{what}.replay(n={n!r}): n must be an int. Fix: pass a launch count >= 1.")
    if not 1 <= n <= _U32_MAX:
        raise InvalidArgumentError(
            f"{what}.replay(n={n}): n must be in 1..{_U32_MAX}. Fix: pass a launch count >= 1."
        )
    return n


def _timing_mode(timing: Any) -> int:
    """replay(timing=...): False/None -> none, True -> total GPU time, "dispatch" -> per dispatch."""
    if timing is None or timing is False:
        return int(lib.VN_TIMING_NONE)
    if timing is True:
        return int(lib.VN_TIMING_TOTAL)
    if timing == "dispatch":
        return int(lib.VN_TIMING_PER_DISPATCH)
    raise InvalidArgumentError(
        f"timing={timing!r} is not one of False, True, 'dispatch'. Fix: pass True for the total GPU time "
        "or 'dispatch' for each dispatch's time."
    )


class Submission:
    """One queue submission: ``index``, ``done`` (non-blocking), ``wait(timeout)``, GPU times."""

    __slots__ = ("_ptr", "index")

    def __init__(self, raw: Any) -> None:
        self._ptr = ffi.gc(raw, lib.vn_submission_release)
        self.index: int = int(lib.vn_submission_index(raw))

    @property
    def done(self) -> bool:
        """True once the GPU has finished this submission's work. Never blocks."""
        return bool(lib.vn_submission_done(self._ptr))

    def wait(self, timeout: float | None = None) -> None:
        """Block (GIL released) until the work completes; TimeoutError after ``timeout`` seconds."""
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))):
            raise WrongTypeError(
                f"wait(timeout={timeout!r}) is a {type(timeout).__name__}. Fix: pass None or a number of seconds."
            )
        if timeout is not None and not timeout >= 0:  # also refuses NaN
            raise InvalidArgumentError(f"wait(timeout={timeout!r}): Fix: pass None or a number of seconds >= 0.")
        check(lib.vn_submission_wait(self._ptr, -1.0 if timeout is None else float(timeout)))

    def _gpu_times(self) -> list[int]:
        count = ffi.new("size_t *")
        check(lib.vn_submission_gpu_times(self._ptr, ffi.NULL, 0, count))
        if count[0] == 0:
            return []
        times = ffi.new("uint64_t[]", int(count[0]))
        check(lib.vn_submission_gpu_times(self._ptr, times, int(count[0]), count))
        return [int(times[i]) for i in range(int(count[0]))]

    @property
    def gpu_time_ns(self) -> int | None:
        """GPU time of the whole submission (first pass start to last pass end), in ns.

        Waits for the work. ``None`` unless replayed with ``timing=True`` or
        ``timing="dispatch"`` on a device with timestamp queries (``device.timestamps``).
        """
        times = self._gpu_times()
        return times[0] if times else None

    @property
    def dispatch_times_ns(self) -> list[int] | None:
        """Each dispatch's GPU time in ns, for a replay with ``timing="dispatch"``; else None."""
        times = self._gpu_times()
        return times[1:] if len(times) > 1 else None

    def __repr__(self) -> str:
        return f"<vn.Submission index={self.index} done={self.done}>"


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

    def __init__(self, raw: Any) -> None:
        super().__init__(ffi.gc(raw, lib.vn_pending_read_release))
        self.byte_len: int = int(lib.vn_pending_read_len(raw))

    def result(self) -> bytes:
        """The bytes, once the read completes (one copy out of the staging buffer)."""
        return mapped_bytes(self._live())

    def result_into(self, out: Any) -> int:
        """Fill ``out`` as ``read_output_into`` does; returns the bytes written."""
        ptr = self._live()
        dst = destination(out, self.byte_len, "result_into")
        check(lib.vn_pending_read_finish(ptr, dst, len(dst)))
        return self.byte_len


def read_async(buffer: Buffer) -> PendingRead:
    out = ffi.new("vn_pending_read **")
    check(lib.vn_buffer_read_async(buffer._live(), out))
    return PendingRead(out[0])


class Recording(Handle):
    """A replayable dispatch, from ``Pipeline.record``.

    ``replay(n)`` re-encodes the dispatch n times from the held pipeline and bind
    groups into one command buffer and submits it once: one C call, no Python
    between launches. Outputs are cleared before each launch unless preserved.
    """

    _kind = "Recording"
    _pipeline: Pipeline
    _outputs: list[Buffer]

    @classmethod
    def _adopt(cls, pipeline: Pipeline, raw: Any) -> Recording:
        self = cls(ffi.gc(raw, lib.vn_recording_release))
        self._pipeline = pipeline
        self._replayed = False
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
        check(lib.vn_recording_replay(self._live(), _launches(n, "Recording"), _timing_mode(timing), out))
        self._replayed = True
        return Submission(out[0])

    def _output(self, index: Any) -> Buffer:
        self._live()
        if isinstance(index, bool) or not isinstance(index, int):
            raise WrongTypeError(f"output index {index!r} is not an int. Fix: pass an int index.")
        if not 0 <= index < len(self._outputs):
            raise OutputIndexError(
                f"output index {index} is out of range for a recording with {len(self._outputs)} output(s). "
                f"Fix: pass an index from 0 to {len(self._outputs) - 1}."
            )
        return self._outputs[index]

    def read_output(self, index: int) -> bytes:
        """Output ``index`` after all work submitted so far (every replay) completes."""
        return self._output(index).read()

    def read_output_into(self, index: int, out: Any) -> int:
        return self._output(index).read_into(out)

    def read_output_async(self, index: int) -> PendingRead:
        """Start reading output ``index``; ``.result()`` completes it."""
        return read_async(self._output(index))


class Sequence(Handle):
    """Dispatches of several pipelines, copies and clears, replayed as one submit.

    Outputs in a sequence: ``add(..., clear_outputs=True)`` (the default) clears
    that dispatch's non-preserved outputs immediately before it, exactly as a
    recording does, so a step never sees what an earlier step left in its outputs;
    ``clear_outputs=False`` leaves them as the previous steps left them (ping-pong
    buffers, accumulations). Nothing else is cleared implicitly; ``clear(buf)``
    clears a buffer at that point. Consecutive dispatches with no clear between
    them share one compute pass.
    """

    _kind = "Sequence"

    def __init__(self, device: Device, raw: Any) -> None:
        super().__init__(ffi.gc(raw, lib.vn_sequence_release))
        self._device = device

    def __len__(self) -> int:
        return int(lib.vn_sequence_length(self._live()))

    def add(
        self,
        pipeline: Pipeline,
        inputs: SequenceABC[Buffer],
        outputs: SequenceABC[Buffer],
        params: Buffer | None = None,
        workgroups: SequenceABC[int] = (1, 1, 1),
        clear_outputs: bool = True,
    ) -> Sequence:
        """Append a dispatch (same binding rules and checks as ``prerecord_persistent_dispatch``)."""
        from .pipeline import Pipeline, dispatch_args

        ptr = self._live()
        if not isinstance(pipeline, Pipeline):
            raise WrongTypeError(
                f"add() takes a vn.Pipeline first, got {type(pipeline).__name__}. Fix: compile one."
            )
        args = dispatch_args(inputs, outputs, params, workgroups)
        check(lib.vn_sequence_add(ptr, pipeline._live(), *args, int(bool(clear_outputs))))
        return self

    def copy(
        self, src: Buffer, dst: Buffer, nbytes: int | None = None, src_offset: int = 0, dst_offset: int = 0
    ) -> Sequence:
        """Append a GPU copy (``nbytes=None``: as much as fits from the offsets)."""
        for name, value in (("src", src), ("dst", dst)):
            if not isinstance(value, Buffer):
                raise WrongTypeError(
                    f"copy {name} is a {type(value).__name__}, not a vn.Buffer. Fix: pass buffers."
                )
        for name, v in (("nbytes", nbytes), ("src_offset", src_offset), ("dst_offset", dst_offset)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
                raise InvalidArgumentError(f"copy {name}={v!r}: Fix: pass a non-negative int.")
        n = 0xFFFFFFFFFFFFFFFF if nbytes is None else nbytes
        check(lib.vn_sequence_copy(self._live(), src._live(), dst._live(), n, src_offset, dst_offset))
        return self

    def clear(self, buffer: Buffer) -> Sequence:
        """Append a clear of the whole buffer to zero."""
        if not isinstance(buffer, Buffer):
            raise WrongTypeError(
                f"clear() takes a vn.Buffer, got {type(buffer).__name__}. Fix: pass a buffer from device.alloc/upload."
            )
        check(lib.vn_sequence_clear(self._live(), buffer._live()))
        return self

    def replay(self, n: int = 1, timing: bool | str = False) -> Submission:
        """Encode every step ``n`` times into one command buffer and submit it once.

        ``timing=True``: total GPU time; ``timing="dispatch"``: each dispatch in a
        pass of its own, timed (``Submission.dispatch_times_ns``).
        """
        out = ffi.new("vn_submission **")
        check(lib.vn_sequence_replay(self._live(), _launches(n, "Sequence"), _timing_mode(timing), out))
        return Submission(out[0])


def submit(device: Device, work: SequenceABC[Recording | Sequence], timing: bool | str = False) -> Submission:
    if isinstance(work, (Recording, Sequence)) or not isinstance(work, SequenceABC):
        raise WrongTypeError("submit() takes a list of vn.Recording / vn.Sequence. Fix: wrap them in a list.")
    items = ffi.new("vn_work[]", max(len(work), 1))
    for i, w in enumerate(work):
        if isinstance(w, Recording):
            items[i].recording = w._live()
        elif isinstance(w, Sequence):
            items[i].sequence = w._live()
        else:
            raise WrongTypeError(
                f"submit() item {i} is a {type(w).__name__}, not a vn.Recording or vn.Sequence. Fix: record it first."
            )
    out = ffi.new("vn_submission **")
    check(lib.vn_device_submit(device._live(), items, len(work), _timing_mode(timing), out))
    return Submission(out[0])
