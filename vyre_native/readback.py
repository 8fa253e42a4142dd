"""vn.PendingRead, and the Python side of the readback primitive's two endings.

Every read queues a GPU copy into a staging buffer and maps it (C). Its outcome is taken
once, by the first caller to find it back: the staging buffer becomes a pin the read
keeps (a ``vn_mapping``). Then every caller, any number, on any thread, is served from
that pin: either C copies the bytes into memory the caller has (``result_into``, typed
reads with ``copy=True``), or C hands out a reference on the pin and its mapped pointer
(``vn_pending_read_pin``), which Python then either copies once into a new ``bytes`` and
drops at once, or wraps as a read-only numpy array (``copy=False``) that keeps the pin
until the array and every view of it are gone. No lock is held while Python runs: the
pin covers only what it reads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import Any, ClassVar, Literal, overload

import numpy as np
from numpy.typing import NDArray

from ._handles import Handle, new_slot, not_picklable, owned
from ._lib import call_waiting, check, done_flag, ffi, lib, read_sliced
from ._marshal import to_bool, to_destination, to_index, to_layout
from ._typing import DTypeLike, ShapeLike
from .errors import WrongTypeError

_CHAR_P = ffi.typeof("char *")
#: a 1-D array's dtype and dimensions, checked against the read's byte length
Layout = tuple[np.dtype[Any], tuple[int, ...]]


class MappedStaging:
    """The base of every zero-copy array (``arr.base``, or its base's): the pin on one
    mapped staging buffer.

    numpy reads the memory through ``__array_interface__``, marked read-only, so the array
    cannot be made writable. Each array and view made from it holds it; when the last one
    is gone, the pin is released (C unmaps the staging buffer and returns it to the
    device's ring; on a device destroyed meanwhile, the last pin destroys it). It has no
    ``release()``: nothing may end it while its memory can still be read.
    """

    __slots__ = ("__array_interface__", "__weakref__", "_mapping", "nbytes")
    __array_interface__: dict[str, Any]
    nbytes: int
    _mapping: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # An address and a length from Python would be read as memory: only a pin does it.
        raise WrongTypeError(
            "vn.MappedStaging is not made by calling the class: it is the base of the array that a zero-copy "
            "read returns. Fix: call read(..., copy=False) (or PendingRead.result(copy=False))."
        )

    @classmethod
    def _of_pin(cls, mapping: Any, address: int, nbytes: int) -> MappedStaging:
        """The base of arrays over ``nbytes`` at ``address``, the memory that ``mapping``
        (from ``owned``: unpins when the last reference goes) keeps mapped."""
        self = cls.__new__(cls)
        self._mapping = mapping
        self.nbytes = nbytes
        self.__array_interface__ = {
            "version": 3,
            "shape": (nbytes,),
            "typestr": "|u1",
            "data": (address, True),  # read-only
        }
        return self

    def __repr__(self) -> str:
        return f"<vn.MappedStaging {self.nbytes} bytes of mapped staging memory>"

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise not_picklable(self)  # the array over it pickles its data

    def __reduce__(self) -> Any:
        raise not_picklable(self)


def _pin(read: Any) -> MappedStaging:
    """Wait for the read (one time slice a call, so Ctrl-C interrupts it) and pin its
    staging buffer."""
    mapping_own, mapping = new_slot("vn_mapping *")
    data = ffi.new("void **")
    call_waiting(lib.vn_pending_read_pin, read, mapping, data)
    owner = owned(mapping_own, "vn_mapping *")
    return MappedStaging._of_pin(owner, int(ffi.cast("uintptr_t", data[0])), int(lib.vn_pending_read_len(read)))


def mapped_bytes(read: Any) -> bytes:
    """Complete a read into a new ``bytes`` with one copy, straight from the pinned
    staging memory (a bytearray first and then ``bytes`` would copy twice), then unpin."""
    pin = _pin(read)
    try:
        address: int = pin.__array_interface__["data"][0]
        copied: bytes = ffi.buffer(ffi.cast(_CHAR_P, address), pin.nbytes)[:]
        return copied
    finally:
        ffi.release(pin._mapping)  # nothing else saw the pin: unpin now


def layout(dtype: DTypeLike | None, shape: ShapeLike | None, nbytes: int, what: str) -> Layout | None:
    """None for the bytes forms (no dtype, no shape), else the checked dtype and dims."""
    if dtype is None and shape is None:
        return None
    return to_layout(dtype, shape, nbytes, what)


def mapped(read: Any, form: Layout | None) -> memoryview | NDArray[Any]:
    """Complete a read without a copy: a read-only view of the pinned staging memory, a
    numpy array of ``form`` or (no form) a memoryview of bytes; the pin lives as long as
    the view and everything made from it."""
    flat: NDArray[np.uint8] = np.asarray(_pin(read))
    if form is None:
        return flat.data  # a memoryview whose .obj is the array
    dt, dims = form
    arr = flat.view(dt)
    return arr if len(dims) == 1 else arr.reshape(dims)


def start(begin: Any, *args: Any) -> Any:
    """Start a read with the C entry point ``begin(*args, vn_pending_read **out)``: the C
    read, released when dropped."""
    out_own, out = new_slot("vn_pending_read *")
    call_waiting(begin, *args, out)  # VN_PENDING: a CPU adapter's queue is busy
    return owned(out_own, "vn_pending_read *")


def complete(read: Any, form: Layout | None, copy: bool) -> bytes | memoryview | NDArray[Any]:
    """Complete a started read that nothing else holds, then free it: ``bytes`` with one
    copy (``copy``; form None), or without a copy (``mapped``)."""
    try:
        return mapped_bytes(read) if copy else mapped(read, form)
    finally:
        ffi.release(read)


#: A new array of at least this many bytes is a host block C keeps for reuse (its constant).
_HOST_BLOCK_MIN = int(lib.VN_HOST_BLOCK_MIN_BYTES)
_new_host_block = ffi.new_allocator(
    alloc=lib.vn_host_block_alloc, free=lib.vn_host_block_give, should_clear_after_alloc=False
)


def new_read_array(dtype: Any, shape: Any, nbytes: int, what: str) -> NDArray[Any]:
    """A new writable C-contiguous array of ``dtype`` and ``shape`` holding exactly
    ``nbytes``, for a copying read to fill (a shape that does not cover them is an
    ``InvalidArgumentError``)."""
    dt, dims = to_layout(dtype, shape, nbytes, what)
    return array_of(dt, dims, nbytes)


def array_of(dt: np.dtype[Any], dims: tuple[int, ...], nbytes: int) -> NDArray[Any]:
    """An uninitialised array of ``nbytes`` for a read to fill. From ``_HOST_BLOCK_MIN``
    bytes on, its memory is a host block (``vn_host_block_alloc``): one given back by an
    earlier array is reused, its pages already in place, so the read's copy is not slowed
    by faulting in fresh pages (host_blocks.c). The block's cffi owner is held by the
    array's ``base``, kept by every view of it, and is given back when the last of them
    is gone."""
    if nbytes < _HOST_BLOCK_MIN:
        return np.empty(dims, dtype=dt)
    try:
        # one C step takes the block and makes its owner: no Python runs between them
        # for a signal handler's exception (a KeyboardInterrupt) to orphan the block
        block = _new_host_block("char[]", nbytes)
    except MemoryError:
        check(int(lib.VN_ERROR_OUT_OF_MEMORY))  # raises, with the message C set
        raise
    return np.frombuffer(ffi.buffer(block), dtype=dt).reshape(dims)


def want_copy(copy: Any, what: str) -> bool:
    """The ``copy=`` flag: a bool, or a numpy bool."""
    return copy is True or (copy is not False and bool(to_bool(copy, what)))


class PendingRead(Handle):
    """A readback in flight (from ``read_async`` / ``read_output_async``), shared by any
    number of waiters, like a ``concurrent.futures.Future``.

    ``result()`` / ``result_into(out)`` / ``await`` wait for it and give its data, to every
    caller: any number of threads and asyncio tasks, in any order, as often as each likes.
    The first to find the data back takes the staging buffer once; every waiter is then
    served from it: ``result()`` gives each caller a new ``bytes`` (with ``dtype``, a new
    writable array) and ``result_into`` copies into each caller's memory, while every
    ``result(copy=False)`` shares the one read-only mapped memory. A failure (the device
    lost, say) is the same error for every waiter.

    Many can be in flight: each holds its own staging buffer from the device's ring, and
    keeps it (mapped, out of the ring) from completion until it is released or collected,
    or while a ``copy=False`` view of it lives: ``release()`` (or a ``with`` block) hands it
    back as soon as every waiter has its data.
    """

    _kind = "PendingRead"
    _made_by = "buffer.read_async() or recording.read_output_async(i)"
    byte_len: int

    @classmethod
    def _adopt(cls, read: Any) -> PendingRead:
        """The handle of a read from ``start`` (already released when dropped)."""
        self = cls._wrap(read)
        self.byte_len = int(lib.vn_pending_read_len(read))
        return self

    @property
    def done(self) -> bool:
        """True once the data is back (``result()`` will not wait). Never blocks.

        DeviceLostError when the device was lost first (the data will never come).
        """
        return done_flag(lib.vn_pending_read_done(self._live()))

    def __await__(self) -> Generator[Any, None, bytes]:
        """``data = await pending``: the bytes, waited for on a worker thread (the C wait
        releases the GIL), so the event loop's thread never blocks or spins."""
        return asyncio.to_thread(self.result).__await__()

    @overload
    def result(self, dtype: None = None, shape: None = None, *, copy: Literal[True] = True) -> bytes: ...
    @overload
    def result(self, dtype: None = None, shape: None = None, *, copy: Literal[False]) -> memoryview: ...
    @overload
    def result(self, dtype: None = None, shape: None = None, *, copy: bool) -> bytes | memoryview: ...
    @overload
    def result(
        self, dtype: DTypeLike, shape: ShapeLike | None = None, *, copy: bool = True
    ) -> NDArray[Any]: ...
    def result(
        self, dtype: DTypeLike | None = None, shape: ShapeLike | None = None, *, copy: bool = True
    ) -> bytes | memoryview | NDArray[Any]:
        """The bytes, once the read completes (one copy out of the staging buffer); with
        ``dtype`` (and ``shape``) a new writable numpy array, as ``Buffer.read`` gives.

        ``copy=False``: no copy at all, a read-only view of the mapped staging memory (a
        numpy array with ``dtype``, else a memoryview), as ``Buffer.read(copy=False)``."""
        ptr = self._live()
        form = layout(dtype, shape, self.byte_len, "PendingRead.result")
        if not want_copy(copy, "PendingRead.result copy"):
            return mapped(ptr, form)
        if form is None:
            return mapped_bytes(ptr)
        arr = array_of(form[0], form[1], self.byte_len)
        self.result_into(arr)
        return arr

    def result_into(self, out: Any) -> int:
        """Fill ``out`` as ``read_output_into`` does; returns the bytes written."""
        ptr = self._live()
        dst, capacity = to_destination(out, self.byte_len, "result_into")
        call_waiting(lib.vn_pending_read_finish, ptr, dst, capacity)
        return self.byte_len


class OutputReads(Handle):
    """The output reads both recording kinds share, through their kind's C entry points
    (``vn_dispatch_read_output*``, ``vn_recording_read_output*``: the same arguments and
    outcomes; C checks the index, and for a pre-recorded dispatch that it was replayed)."""

    __slots__ = ()
    # the kind's C entry points, as class attributes (cffi functions do not bind), read
    # once per subclass from its prefix: ``{prefix}_output_count``, ``_output_len``,
    # ``_read_output`` and ``_read_output_async``
    _c_prefix: ClassVar[str]
    _c_output_count: ClassVar[Any]
    _c_output_len: ClassVar[Any]
    _c_read_output: ClassVar[Any]
    _c_read_output_async: ClassVar[Any]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        prefix = cls._c_prefix
        cls._c_output_count = getattr(lib, f"{prefix}_output_count")
        cls._c_output_len = getattr(lib, f"{prefix}_output_len")
        cls._c_read_output = getattr(lib, f"{prefix}_read_output")
        cls._c_read_output_async = getattr(lib, f"{prefix}_read_output_async")

    @property
    def output_count(self) -> int:
        return int(self._c_output_count(self._live()))

    def output_byte_len(self, index: int) -> int:
        """``byte_len`` of output ``index`` (a view's own size)."""
        length = ffi.new("uint64_t *")
        check(self._c_output_len(self._live(), to_index(index, "output index"), length))
        return int(length[0])

    @overload
    def read_output(
        self, index: int, dtype: None = None, shape: None = None, *, copy: Literal[True] = True
    ) -> bytes: ...
    @overload
    def read_output(
        self, index: int, dtype: None = None, shape: None = None, *, copy: Literal[False]
    ) -> memoryview: ...
    @overload
    def read_output(
        self, index: int, dtype: None = None, shape: None = None, *, copy: bool
    ) -> bytes | memoryview: ...
    @overload
    def read_output(
        self, index: int, dtype: DTypeLike, shape: ShapeLike | None = None, *, copy: bool = True
    ) -> NDArray[Any]: ...
    def read_output(
        self, index: int, dtype: DTypeLike | None = None, shape: ShapeLike | None = None, *, copy: bool = True
    ) -> bytes | memoryview | NDArray[Any]:
        """Output ``index``'s bytes, after the work that writes it has completed (see the
        class), with one copy into a new ``bytes``; with ``dtype`` (and ``shape``) into a
        new writable numpy array instead. ``copy=False``: no copy, a read-only view of the
        mapped staging memory (a numpy array with ``dtype``, else a memoryview), as
        ``Buffer.read(copy=False)``. ``read_output_into`` fills memory you already have
        and is the path for repeated copying reads."""
        copying = want_copy(copy, "read_output copy")
        ptr = self._live()
        i = to_index(index, "output index")
        if copying and (dtype is not None or shape is not None):
            arr = new_read_array(dtype, shape, self.output_byte_len(i), "read_output")
            self.read_output_into(i, arr)
            return arr
        form = None if copying else layout(dtype, shape, self.output_byte_len(i), "read_output")
        return complete(start(self._c_read_output_async, ptr, i), form, copying)

    def read_output_async(self, index: int) -> PendingRead:
        """Start reading output ``index`` (after the checks ``read_output`` makes);
        ``.result()`` completes it."""
        return PendingRead._adopt(start(self._c_read_output_async, self._live(), to_index(index, "output index")))

    def read_output_into(self, index: int, out: Any) -> int:
        """Fill caller memory with output ``index``; returns the bytes written.

        A ``bytearray`` is resized to the output's ``byte_len`` (reusing its
        allocation) and refilled; any other writable C-contiguous buffer (a numpy
        array) of at least ``byte_len`` bytes is filled in place. One C call: wait,
        GPU copy to a reused staging buffer, memcpy into ``out``.
        """
        ptr = self._live()
        i = to_index(index, "output index")
        n = self.output_byte_len(i)
        dst, capacity = to_destination(out, n, "read_output_into")
        read = self._c_read_output
        read_sliced(lambda pending: read(ptr, i, dst, capacity, ffi.NULL, pending), dst, capacity)
        return n


def read_async(buffer_ptr: Any) -> PendingRead:
    """Start reading a live C buffer back."""
    return PendingRead._adopt(start(lib.vn_buffer_read_async, buffer_ptr))


def read_view_async(view: Any) -> PendingRead:
    """Start reading a C view (``vn_view *``) back: only its range."""
    return PendingRead._adopt(start(lib.vn_view_read_async, view))
