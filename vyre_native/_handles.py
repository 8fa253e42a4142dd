"""What every handle class shares: the owned C pointer, release, and host buffers.

A handle owns one reference to its C object through ``ffi.gc``. ``release()`` only
drops that Python reference: the C object is freed when the last Python reference
goes, which includes the local variable of any thread that is inside a C call on
it at that moment. So releasing from one thread while another uses the handle is
never a use-after-free, and needs no lock on the hot path.
"""

from __future__ import annotations

from typing import Any

from ._lib import ffi
from .errors import InvalidArgumentError, ReleasedError, WrongTypeError


class Handle:
    """Base of Device, Buffer, Pipeline and the recordings: one owned C pointer."""

    __slots__ = ("__weakref__", "_ptr")
    _kind = "handle"

    def __init__(self, ptr: Any) -> None:
        self._ptr: Any = ptr

    def _live(self) -> Any:
        ptr = self._ptr
        if ptr is None:
            raise ReleasedError(
                f"this {self._kind} was released. Fix: create a new {self._kind}; a released handle cannot be used."
            )
        return ptr

    @property
    def released(self) -> bool:
        """True after ``release()`` (or ``close()`` for a device)."""
        return self._ptr is None

    def release(self) -> None:
        """Drop this handle's native object now (idempotent). Later use raises ReleasedError."""
        self._ptr = None

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def readable_bytes(obj: Any, what: str) -> tuple[Any, int]:
    """A C pointer into ``obj``'s memory (no copy) and its size in bytes."""
    try:
        view = memoryview(obj)
    except TypeError:
        raise WrongTypeError(
            f"{what} got {type(obj).__name__}, which does not expose a buffer. "
            "Fix: pass bytes, bytearray, memoryview or a numpy array."
        ) from None
    if not view.c_contiguous:
        raise InvalidArgumentError(
            f"{what} got a non-contiguous buffer of shape {view.shape} and strides {view.strides}. "
            "Fix: pass a C-contiguous copy (numpy.ascontiguousarray(x))."
        )
    return ffi.from_buffer(view), view.nbytes


def writable_bytes(obj: Any, need: int, what: str) -> Any:
    """A C pointer into ``obj``'s writable memory of at least ``need`` bytes (no copy)."""
    try:
        view = memoryview(obj)
    except TypeError:
        raise WrongTypeError(
            f"{what} got {type(obj).__name__}, which does not expose a buffer. "
            "Fix: pass a bytearray or a writable numpy array."
        ) from None
    if view.readonly:
        raise WrongTypeError(
            f"{what} got a read-only {type(obj).__name__}. Fix: pass a bytearray or a writable numpy array."
        )
    if not view.c_contiguous:
        raise InvalidArgumentError(
            f"{what} got a non-contiguous buffer of shape {view.shape} and strides {view.strides}. "
            "Fix: pass a C-contiguous array (numpy.empty(n, dtype=numpy.uint8))."
        )
    if view.nbytes < need:
        raise InvalidArgumentError(
            f"{what} got a buffer of {view.nbytes} bytes, but {need} are needed. "
            f"Fix: pass a writable buffer of at least {need} bytes."
        )
    return ffi.from_buffer(view, require_writable=True)


def resize_bytearray(out: bytearray, n: int) -> None:
    """Make ``out`` exactly n bytes long, reusing its allocation where it can."""
    have = len(out)
    if have > n:
        del out[n:]
    elif have < n:
        out.extend(bytes(n - have))


def destination(out: Any, n: int, what: str) -> Any:
    """Where a readback of n bytes goes: a bytearray is resized to exactly n bytes
    (reusing its allocation), any other writable C-contiguous buffer must hold n."""
    if isinstance(out, bytearray):
        resize_bytearray(out, n)
    return writable_bytes(out, n, what)
