"""What every handle class shares: the owned C pointer, release, and what a handle refuses.

A handle owns one reference to its C object through ``ffi.gc``. ``release()`` only
drops that Python reference: the C object is freed when the last Python reference
goes, which includes the local variable of any thread that is inside a C call on
it at that moment. So releasing from one thread while another uses the handle is
never a use-after-free, and needs no lock on the hot path.

Handles are made by the calls that create their C objects (``Device.upload``,
``Pipeline.record``, ...), never by calling the class; and they cannot be pickled or
copied, since what they own is memory and state of this process's GPU device.
"""

from __future__ import annotations

from typing import Any, Self

from .errors import ReleasedError, WrongTypeError


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
        """A handle owning ``ptr`` (already under ``ffi.gc``); the one way handles are made."""
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
