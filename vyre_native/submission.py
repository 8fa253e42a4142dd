"""vn.Submission: one queue submission, its completion and its GPU times."""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import Any

from ._handles import Handle, new_slot, owned
from ._lib import PENDING, call_waiting, check, check_wait, done_flag, ffi, lib
from ._owner import Owner, replay_once
from ._marshal import to_seconds

#: Parts of a replay(n) running at most before the oldest is waited for (C's constant).
_IN_FLIGHT = int(lib.VN_MAX_SUBMITS_IN_FLIGHT)
#: replay_part's mode for a replay without timing (C's constant)
NO_TIMING = int(lib.VN_TIMING_NONE)


class Submission(Handle):
    """One queue submission: ``index``, ``done`` (non-blocking), ``wait(timeout)``, GPU times.

    Returned by ``Recording.replay``, ``Sequence.replay`` and ``Device.submit``.
    """

    __slots__ = ("index",)
    index: int
    _kind = "Submission"
    _made_by = "recording.replay(), sequence.replay() or device.submit([...])"

    @classmethod
    def _adopt(cls, raw: Any) -> Submission:
        """The handle of ``raw``, an owning pointer (``owned``)."""
        self = cls._wrap(raw)
        self.index = int(lib.vn_submission_index(raw))
        return self

    @property
    def done(self) -> bool:
        """True once the GPU has finished this submission's work. Never blocks.

        DeviceLostError when the device was lost first (the work will never finish).
        """
        return done_flag(lib.vn_submission_done(self._live()))

    def __await__(self) -> Generator[Any, None, Submission]:
        """``await submission`` (e.g. ``await rec.replay()``): completes when the GPU has
        finished the work, waited for on a worker thread (the C wait releases the GIL),
        so the event loop's thread never blocks or spins. Gives the submission back."""

        def wait() -> Submission:
            self.wait()
            return self

        return asyncio.to_thread(wait).__await__()

    def wait(self, timeout: float | None = None) -> None:
        """Block (GIL released) until the work completes; TimeoutError after ``timeout`` seconds.

        Waits in slices of about 20 ms, so Ctrl-C raises KeyboardInterrupt at once;
        the work keeps running and the device stays usable.
        """
        ptr, seconds, waited = self._live(), to_seconds(timeout, "wait timeout"), ffi.new("double *")
        call_waiting(lib.vn_submission_wait, ptr, seconds, waited)

    def _gpu_times(self) -> list[int]:
        ptr = self._live()
        count = ffi.new("size_t *")
        call_waiting(lib.vn_submission_gpu_times, ptr, ffi.NULL, 0, count)
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
        state = "released" if self._ptr is None else f"done={self.done}"
        return f"<vn.Submission index={self.index} {state}>"


def replay_part(replay_fn: Any, ptr: Any, k: int, mode: int) -> Submission:
    """One C call ``replay_fn(ptr, k, mode, out)`` (vn_recording_replay, vn_sequence_replay):
    ``k`` launches in one command buffer and one submit, its Submission owned as it comes.
    ``replay(1)`` without timing is this alone (the launch path: no split, no conversion)."""
    out_own, out = new_slot("vn_submission *")
    status = replay_fn(ptr, k, mode, out)
    if status:  # VN_PENDING: a CPU adapter's queue still runs earlier work
        check_wait(status, replay_fn, ptr, k, mode, out)
    return Submission._adopt(owned(out_own, "vn_submission *"))


#: replay_once's ``which``: 0 a Recording, 1 a Sequence; the C function of each
_REPLAYS = (lib.vn_recording_replay, lib.vn_sequence_replay)


def replay_one(handle: Handle, which: int) -> Submission:
    """``replay()`` with the default arguments, the launch path of a Recording (``which`` 0)
    or a Sequence (1): one call (csrc/python/launch.c's replay_once), or ``replay_part``'s
    road through ``_REPLAYS[which]`` for a released handle (which raises) and a CPU
    adapter's busy queue (which waits, then calls again)."""
    made = replay_once(handle, which)
    if isinstance(made, Owner):
        return Submission._adopt(owned(made, "vn_submission *"))
    if made is not None and made != PENDING:
        check(made)  # a C status, never VN_OK (which comes as an Owner): raises
    # nothing was submitted: released (which raises) or a busy CPU queue (which waits)
    return replay_part(_REPLAYS[which], handle._live(), 1, NO_TIMING)


def replay(replay_fn: Any, ptr: Any, n: int, mode: int, steps: int) -> Submission:
    """``replay_fn(ptr, n, mode, out)`` (vn_recording_replay, vn_sequence_replay) of ``n``
    launches of ``steps`` steps each, in the parts C's ``vn_replay_split`` gives (the rule's
    one owner: one part when they fit one submit or are timed, else parts of as many
    launches as fit, at most so many running), each part one C call (``replay_part``), its
    own command buffer with its clears and fills as one replay encodes them. The loop is
    here, not in C, because waiting for the oldest running part must return to Python in
    time slices: Ctrl-C then interrupts a long replay promptly (leaving the parts submitted
    so far running), and each part's Submission is owned here as it comes. Returns the
    last part's Submission: the queue runs in order, so its completion implies them all."""
    # one launch is one part whatever the split says: no C call to ask (the common case)
    per_submit = 1 if n == 1 else lib.vn_replay_split(n, steps, mode)
    running: list[Submission] = []
    while True:
        k = min(per_submit, n)
        sub = replay_part(replay_fn, ptr, k, mode)
        n -= k
        if n == 0:
            return sub
        running.append(sub)
        if len(running) >= _IN_FLIGHT:
            running.pop(0).wait()
