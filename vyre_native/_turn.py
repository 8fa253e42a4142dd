"""Turns: one call at a time on some state, and never a wait on one's own thread.

``turn = Turn(inside=..., fix=...)``, then ``with turn("Worker.run()"): ...`` around the
part of a call that uses the state. Another thread's call waits for its turn; a call
nested on the thread that has the turn (a signal handler or a finalizer that ran in the
middle of the outer call) raises ``ReentryError`` naming the nested call, instead of
waiting for ever on its own thread or working on the outer call's half-done state. The
Worker (``worker.py``) and the interop guards (``interop.py``) take their turns here.

Why nothing can split a turn (CPython runs a Python signal handler, and so raises
KeyboardInterrupt, only at its eval-breaker checks: a function's start, after a call
returns, a loop's back edge; a finalizer may run at any instruction, but cannot raise
into the code it interrupts):

- The lock is a ``_thread.RLock``, whose acquire records its owner in the same C call:
  there is no moment at which the lock is held and its owner unknown, so the nested
  call's check (``_is_owned``) always tells whether its own thread has the turn.
- The acquire is a C call made by an attribute read (``_take``, a property whose getter
  is ``RLock.acquire``), the last thing ``__enter__`` does: an attribute read and a
  return are not eval-breaker checks, so no handler runs between the acquire and the
  ``with`` statement's protected block. (The acquire is not a C ``__enter__``: from 3.14
  on, a ``with`` calls ``__enter__`` with a CALL, which checks the eval breaker after a C
  function returns and before the block is protected, CPython gh-148874; an ``__enter__``
  in Python is entered and left without that check.) A handler that runs while the
  acquire waits for another thread runs before the lock is taken: it may take its own
  turn (and give it back) or raise, and then the acquire takes nothing.
- The release is ``RLock.release`` itself as ``__exit__`` (one C call): the ``with``
  calls it before any check, on the normal path and on the exceptional one, so a turn
  abandoned by an exception is given back.
- In a forked child the thread that had a turn is not there to give it back: every
  turn starts free there (``os.register_at_fork``), as every inherited object is then
  unusable with ``ForkedError`` anyway.

tests/test_turns.py delivers signals and finalizers at every instruction of these steps.
"""

from __future__ import annotations

import _thread
import os
import weakref
from collections.abc import Callable

from .errors import ReentryError


class _Lock(_thread.RLock):  # type: ignore[misc]  # typeshed calls it final; CPython lets it be a base
    """An RLock whose ``with`` takes it with no eval-breaker check between the C acquire
    and the block (see the module's docstring); ``__exit__`` is RLock's own C release."""

    __slots__ = ()

    _is_owned: Callable[[], bool]  # RLock's own (threading.Condition uses it); typeshed leaves it out

    _take = property(_thread.RLock.acquire)  # reading it acquires: a C call, no CALL instruction

    def __enter__(self) -> None:  # type: ignore[override]
        self._take  # noqa: B018 - the acquire, the last step before the with's block


class Turn:
    """One call at a time on some state (see the module's docstring).

    ``inside``: what the outer call is, for a nested call's ReentryError ("another call
    of the same Worker (run or compile), whose buffers that call is using"); ``fix``: what
    to do instead, after the common remedy (make the call outside the handler).
    """

    __slots__ = ("__weakref__", "_fix", "_inside", "_lock")

    def __init__(self, inside: str, fix: str = "") -> None:
        self._inside = inside
        self._fix = fix
        self._lock = _Lock()
        _TURNS.add(self)

    def __call__(self, call: str) -> _Lock:
        """The lock, for ``with turn(call):``; ReentryError when this thread has the turn.

        ``call`` names the call about to take the turn, as its user wrote it ("Worker.run()",
        "Device.from_wgpu()"): the nested call is the one the message is about."""
        lock = self._lock
        if lock._is_owned():
            raise ReentryError(
                f"{call} was called on a thread that is inside {self._inside}: a signal handler or a finalizer ran "
                f"in the middle of that call and made this one, which would wait for ever on its own thread (or work "
                f"on that call's half-done state). Fix: make the call outside the signal handler or finalizer (e.g. "
                f"set a flag there and act on it once the handler returns){self._fix}."
            )
        return lock

    def mine(self) -> bool:
        """Whether this thread has the turn now."""
        return self._lock._is_owned()

    def _forget(self) -> None:
        """In a forked child: free (the thread that had the turn is not in the child). A
        ``with`` of the forking thread that had it gives back the parent's lock object,
        which nothing else uses any more."""
        self._lock = _Lock()


_TURNS: weakref.WeakSet[Turn] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for turn in list(_TURNS):
        turn._forget()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_after_fork_in_child)
