"""vn.Submission: one queue submission, its completion and its GPU times."""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import Any

from ._handles import Handle
from ._lib import check, ffi, lib
from ._marshal import to_seconds


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
        self = cls._wrap(ffi.gc(raw, lib.vn_submission_release))
        self.index = int(lib.vn_submission_index(raw))
        return self

    @property
    def done(self) -> bool:
        """True once the GPU has finished this submission's work. Never blocks."""
        return bool(lib.vn_submission_done(self._live()))

    def __await__(self) -> Generator[Any, None, Submission]:
        """``await submission`` (e.g. ``await rec.replay()``): completes when the GPU has
        finished the work, waited for on a worker thread (the C wait releases the GIL),
        so the event loop's thread never blocks or spins. Gives the submission back."""

        def wait() -> Submission:
            self.wait()
            return self

        return asyncio.to_thread(wait).__await__()

    def wait(self, timeout: float | None = None) -> None:
        """Block (GIL released) until the work completes; TimeoutError after ``timeout`` seconds."""
        check(lib.vn_submission_wait(self._live(), to_seconds(timeout, "wait timeout")))

    def _gpu_times(self) -> list[int]:
        ptr = self._live()
        count = ffi.new("size_t *")
        check(lib.vn_submission_gpu_times(ptr, ffi.NULL, 0, count))
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
