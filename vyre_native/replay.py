"""Replayable recordings, dispatch sequences, submissions and asynchronous reads."""

from __future__ import annotations

from collections.abc import Sequence as SequenceABC
from typing import TYPE_CHECKING, Any

from ._handles import Handle, destination
from ._lib import check, check_wait, ffi, lib
from .buffer import Buffer
from .errors import InvalidArgumentError, OutputIndexError, WrongTypeError

if TYPE_CHECKING:
    from .device import Device
    from .pipeline import Pipeline

_U32_MAX = 0xFFFFFFFF
# Steps one submit encodes at most (C's bound, VN_MAX_LAUNCHES_PER_SUBMIT), and how many
# such submits a long replay(n) keeps in flight before waiting for the oldest.
_PER_SUBMIT = int(lib.VN_MAX_LAUNCHES_PER_SUBMIT)
_IN_FLIGHT = 2


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
        return 0
    if timing is True:
        return 1
    if timing == "dispatch":
        return 2
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
        """True once the GPU has finished this submission's work. Never blocks.

        DeviceLostError when the device was lost first (the work will never finish).
        """
        done = lib.vn_submission_done(self._ptr)
        if done < 0:
            check(-done)  # lost, or inherited across fork()
        return bool(done)

    def wait(self, timeout: float | None = None) -> None:
        """Block (GIL released) until the work completes; TimeoutError after ``timeout`` seconds.

        Waits in slices of about 20 ms, so Ctrl-C raises KeyboardInterrupt at once;
        the work keeps running and the device stays usable.
        """
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))):
            raise WrongTypeError(
                f"wait(timeout={timeout!r}) is a {type(timeout).__name__}. Fix: pass None or a number of seconds."
            )
        if timeout is not None and not timeout >= 0:  # also refuses NaN
            raise InvalidArgumentError(f"wait(timeout={timeout!r}): Fix: pass None or a number of seconds >= 0.")
        ptr = self._ptr
        if timeout is None:
            status = lib.vn_submission_wait(ptr, -1.0, ffi.NULL)
            if status:
                check_wait(status, lambda: lib.vn_submission_wait(ptr, -1.0, ffi.NULL))
            return
        seconds, waited = float(timeout), ffi.new("double *")
        status = lib.vn_submission_wait(ptr, seconds, waited)
        check_wait(status, lambda: lib.vn_submission_wait(ptr, seconds, waited))

    def _gpu_times(self) -> list[int]:
        ptr, count = self._ptr, ffi.new("size_t *")
        check_wait(
            lib.vn_submission_gpu_times(ptr, ffi.NULL, 0, count),
            lambda: lib.vn_submission_gpu_times(ptr, ffi.NULL, 0, count),
        )
        if count[0] == 0:
            return []
        times = ffi.new("uint64_t[]", int(count[0]))
        check(lib.vn_submission_gpu_times(ptr, times, int(count[0]), count))
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
    check_wait(lib.vn_pending_read_map(read, data), lambda: lib.vn_pending_read_map(read, data))
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
        n = len(dst)
        check_wait(lib.vn_pending_read_finish(ptr, dst, n), lambda: lib.vn_pending_read_finish(ptr, dst, n))
        return self.byte_len


def _replay_in_submits(replay: Any, ptr: Any, n: int, per_submit: int) -> Submission:
    """Launch ``n`` times in submits of ``per_submit`` launches (C bounds one submit),
    keeping at most _IN_FLIGHT of them running: each holds encoder memory until the GPU
    has run it, so waiting for the oldest keeps memory bounded for any n. The waits are
    interruptible (Ctrl-C leaves the submits made so far running). Returns the last
    submit's Submission: the queue runs in order, so its completion implies all of them."""
    out = ffi.new("vn_submission **")
    running: list[Submission] = []
    while True:
        k = min(per_submit, n)
        status = replay(ptr, k, 0, out)
        check_wait(status, lambda: replay(ptr, k, 0, out))  # noqa: B023 -- used before k changes
        sub = Submission(out[0])
        n -= k
        if n == 0:
            return sub
        running.append(sub)
        if len(running) >= _IN_FLIGHT:
            running.pop(0).wait()


def read_async(buffer: Buffer) -> PendingRead:
    ptr, out = buffer._live(), ffi.new("vn_pending_read **")
    check_wait(lib.vn_buffer_read_async(ptr, out), lambda: lib.vn_buffer_read_async(ptr, out))
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
        """Launch the dispatch ``n`` times (one command buffer, one submit, up to 256 launches).

        A larger ``n`` goes in submits of 256 launches, at most two in flight: the call
        waits for older ones (memory stays bounded whatever ``n``), and the Submission
        returned is the last one's. ``timing=True`` records the GPU time
        (``Submission.gpu_time_ns``); ``timing="dispatch"`` each launch's own (in a pass
        of its own); timed replays take ``n`` up to 256.
        """
        ptr = self._live()
        n, mode = _launches(n, "Recording"), _timing_mode(timing)
        if n > _PER_SUBMIT and not mode:
            sub = _replay_in_submits(lib.vn_recording_replay, ptr, n, _PER_SUBMIT)
        else:
            out = ffi.new("vn_submission **")
            status = lib.vn_recording_replay(ptr, n, mode, out)
            if status:  # VN_PENDING: a CPU adapter's queue still runs earlier work
                check_wait(status, lambda: lib.vn_recording_replay(ptr, n, mode, out))
            sub = Submission(out[0])
        self._replayed = True
        return sub

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
        pass of its own, timed (``Submission.dispatch_times_ns``). One submit holds at
        most 256 steps (n times the sequence's length, or one whole sequence); without
        timing a larger ``n`` goes in several submits, as ``Recording.replay`` does.
        """
        ptr = self._live()
        n, mode = _launches(n, "Sequence"), _timing_mode(timing)
        steps = int(lib.vn_sequence_length(ptr))
        if n > 1 and n * steps > _PER_SUBMIT and not mode:
            return _replay_in_submits(lib.vn_sequence_replay, ptr, n, max(1, _PER_SUBMIT // max(steps, 1)))
        out = ffi.new("vn_submission **")
        status = lib.vn_sequence_replay(ptr, n, mode, out)
        check_wait(status, lambda: lib.vn_sequence_replay(ptr, n, mode, out))
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
    ptr, count, mode, out = device._live(), len(work), _timing_mode(timing), ffi.new("vn_submission **")
    status = lib.vn_device_submit(ptr, items, count, mode, out)
    check_wait(status, lambda: lib.vn_device_submit(ptr, items, count, mode, out))
    return Submission(out[0])
