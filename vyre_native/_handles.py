"""What every handle class shares: the owned C pointer, release, and what a handle refuses.

A handle's pointer is ``ffi.from_buffer(ctype, owner)``: a typed pointer whose value is
the C handle (an id, slot + generation, never an address: csrc/object/object.c) and which keeps
an ``Owner`` (``vyre_native._owner``, csrc/python/owner.c) alive; the owner holds that id,
the handle's one reference to the object. Two handles of one object are two ids, so
pointer values never mean identity (``allocation_identity`` does). ``release()`` only drops the
handle's pointer: the owner releases the C object when the last pointer to it goes,
which includes the argument of any thread that is inside a C call with it at that
moment. So releasing from one thread while another uses the handle is never a
use-after-free, and needs no lock on the hot path.

Why an owner and not ``ffi.gc``: the cycle collector calls every finalizer of an
unreachable cycle before it checks whether one resurrected the cycle (PEP 442), and
``ffi.gc`` releases from its finalizer; a handle that a ``__del__`` put back on a free
list (as tensor libraries' allocators do) then pointed at a released object. An owner
has no finalizer and is invisible to the cycle collector: the object is released only
when the owner is deallocated, which is when no handle can reach it any more.

Creation cannot orphan an object: a creating C call writes its new object into the
owner's own storage (``new_slot``'s out-parameter), so the owner holds it from the moment
C made it. There is no Python step between the call and ownership for a KeyboardInterrupt,
a trace or profile hook, or any other exception to land in; whatever happens after, the
owner is dropped and releases the object, or becomes the handle's.

Handles are made by the calls that create their C objects (``Device.upload``,
``Pipeline.record``, ...), never by calling the class; and they cannot be pickled or
copied, since what they own is memory and state of this process's GPU device.
"""

from __future__ import annotations

from typing import Any, Self

from ._native import ffi, lib
from ._owner import SLOT_SIZE, Owner, bind
from .errors import NotPicklableError, ReleasedError, WrongTypeError, shown

# The owner's release is a C function (vn_handle_release, which takes any live kind):
# no Python code runs in one, so no signal or hook lands there.


def c_address(name: str) -> int:
    """A C function of the compiled module as an address, for the _owner module, which
    links none of the C layer (csrc/python/owner.c's release, launch.c's calls)."""
    return int(ffi.cast("uintptr_t", ffi.addressof(lib, name)))


bind(c_address("vn_handle_release"))
assert ffi.sizeof("vn_view") <= SLOT_SIZE  # csrc/python/owner.c's slot holds a vn_view

_from_buffer = ffi.from_buffer
_types: dict[str, tuple[Any, Any]] = {}


def _slot_types(ctype: str) -> tuple[Any, Any]:
    """(out-parameter array type, pointer type) for ``"vn_buffer *"`` and the like."""
    types = _types.get(ctype)
    if types is None:
        pointer = ffi.typeof(ctype)
        types = _types[ctype] = (ffi.typeof(f"{ctype}[]"), pointer)
    return types


def new_slot(ctype: str) -> tuple[Owner, Any]:
    """``(owner, out)`` for a creating C call: pass ``out`` (a ``ctype *`` out-parameter
    into the owner's storage) to the call, and the owner holds what it writes; ``owned``
    then makes the handle's pointer. Dropped instead, the owner releases the object."""
    own = Owner()
    return own, _from_buffer(_slot_types(ctype)[0], own, True)


def new_view_slot() -> tuple[Owner, Any]:
    """``new_slot`` for a call that writes a ``vn_view`` (it holds a reference on the
    view's buffer): ``out[0]`` is the view; ``owned(owner, "vn_buffer *")`` its buffer."""
    own = Owner()
    return own, _from_buffer("vn_view[]", own, True)


def owned(owner: Owner, ctype: str) -> Any:
    """The handle's pointer to what ``owner`` holds: a ``ctype`` that keeps the owner (and
    so the object) alive as long as it exists. One C call: nothing can land between."""
    return _from_buffer(_slot_types(ctype)[1], owner)


def handle_id(ptr: Any) -> int:
    """The C id a handle's pointer holds, as an int: what csrc/python/launch.c passes to C
    (it holds the handle's ``_ptr`` for the call, which keeps the object alive)."""
    return int(ffi.cast("uintptr_t", ptr))


def not_picklable(obj: object) -> NotPicklableError:
    """The error for pickling ``obj``, a handle (or a view of one), naming its type and value."""
    kind = type(obj).__name__
    return NotPicklableError(
        f"{obj!r} (a vn.{kind}) cannot be pickled: it is a handle to memory and state of this process's GPU "
        "device, which means nothing in another process (Ray, multiprocessing and the like pickle what they "
        "send). Fix: one vn.Device per worker process, and send numpy arrays between them: upload them where the "
        "kernels run and read the results back (read(dtype) / read_output()) to send; vyre_native.worker.Worker "
        "does this."
    )


class Handle:
    """Base of every handle class: one owned C pointer."""

    __slots__ = ("__weakref__", "_ptr")
    _kind = "handle"
    #: how a user gets one, for the message of a direct construction
    _made_by = "the call that creates it"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        given = ", ".join([shown(a) for a in args] + [f"{k}={shown(v)}" for k, v in kwargs.items()])
        raise WrongTypeError(
            f"vn.{self._kind}({given[:80]}): a {self._kind} is not made by calling the class, but by "
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
        raise not_picklable(self)

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
