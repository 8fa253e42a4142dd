"""What every handle class shares: the owned C pointer, release, and what a handle refuses.

A handle owns one reference to its C object through ``ffi.gc``. ``release()`` only
drops that Python reference: the C object is freed when the last Python reference
goes, which includes the local variable of any thread that is inside a C call on
it at that moment. So releasing from one thread while another uses the handle is
never a use-after-free, and needs no lock on the hot path.

A creating C call writes its new object into a *slot* (``new_slot``) that owns it from
that moment until ``owned`` moves it into the handle's pointer, in steps no
KeyboardInterrupt can land between: the object is released exactly once however the
caller is interrupted ("call, then wrap the result in ffi.gc" leaked the object, and
through it its device, when one landed in between).

Handles are made by the calls that create their C objects (``Device.upload``,
``Pipeline.record``, ...), never by calling the class; and they cannot be pickled or
copied, since what they own is memory and state of this process's GPU device.
"""

from __future__ import annotations

from typing import Any, Self

from ._native import ffi, lib
from .errors import ReleasedError, WrongTypeError

# Every release is a C function: no Python code runs in one, so no signal lands there.
_new, _gc, _NULL = ffi.new, ffi.gc, ffi.NULL
_release, _slot_release, _view_slot_release = lib.vn_handle_release, lib.vn_slot_release, lib.vn_view_slot_release


def new_slot(ctype: Any) -> Any:
    """An out-parameter (``"vn_buffer **"``...) for a creating C call that owns what the
    call writes into it, until ``owned`` moves it out: collected, it releases that."""
    return _gc(_new(ctype), _slot_release)


def new_view_slot() -> Any:
    """A ``vn_view *`` out-parameter that owns the reference a call takes on its buffer."""
    return _gc(_new("vn_view *"), _view_slot_release)


# How the move cannot be split: CPython raises a pending signal's exception only at a
# function's start and after a call has returned (never inside a subscript or an
# attribute store, nor before a call starts). Between reading the slot and ffi.gc
# returning there is no such point; the one right after it drops ffi.gc's result, which
# releases the object. So at every point exactly one of the slot and that result owns it.


def owned(slot: Any) -> Any:
    """Move the object out of ``slot``: the owning pointer (released when collected) a
    handle keeps."""
    ptr = slot[0]
    slot[0] = _NULL
    return _gc(ptr, _release)


def owned_view_buffer(view: Any) -> Any:
    """``owned`` for the buffer of a view slot (``new_view_slot``)."""
    ptr = view.buffer
    view.buffer = _NULL
    return _gc(ptr, _release)


class Handle:
    """Base of every handle class: one owned C pointer."""

    __slots__ = ("__weakref__", "_ptr")
    _kind = "handle"
    #: how a user gets one, for the message of a direct construction
    _made_by = "the call that creates it"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        shown = ", ".join([repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()])
        raise WrongTypeError(
            f"vn.{self._kind}({shown[:80]}): a {self._kind} is not made by calling the class, but by "
            f"{self._made_by}. Fix: call that."
        )

    @classmethod
    def _wrap(cls, ptr: Any) -> Self:
        """A handle owning ``ptr`` (from ``owned``); the one way handles are made."""
        self = cls.__new__(cls)
        self._ptr = ptr
        return self

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

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    # -- what a handle cannot be --------------------------------------------------------

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise WrongTypeError(
            f"a vn.{self._kind} cannot be pickled: it is a handle to memory and state of this process's GPU "
            "device, which means nothing in another process. Fix: pickle the data instead (read it back with "
            "read() / read_output()), and create the object again where it is needed."
        )

    def __reduce__(self) -> Any:
        return self.__reduce_ex__(None)

    def __copy__(self) -> Any:
        raise WrongTypeError(
            f"a vn.{self._kind} cannot be copied: it is a handle to one native object, and a copy would be a "
            f"second owner of it. Fix: share the same object (handles are passed by reference), or create a new "
            f"{self._kind}."
        )

    def __deepcopy__(self, memo: Any) -> Any:
        return self.__copy__()
