"""vn.Buffer, vn.BufferView and vn.BufferUsage."""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Literal, overload

from numpy.typing import NDArray

from ._handles import Handle, handle_id, not_picklable
from ._lib import call_waiting, check, ffi, lib, read_sliced
from ._marshal import to_count, to_destination, to_readable, to_u64, to_view
from ._typing import DTypeLike, ShapeLike
from .errors import WrongTypeError
from .readback import PendingRead, complete, layout, new_read_array, read_async, read_view_async, start, want_copy

if TYPE_CHECKING:
    from .device import Device


class BufferUsage(enum.IntFlag):
    """WGPUBufferUsage bits (the values of the C enum vn_buffer_usage). The default usage is ``DEFAULT``."""

    MAP_READ = lib.VN_USAGE_MAP_READ
    MAP_WRITE = lib.VN_USAGE_MAP_WRITE
    COPY_SRC = lib.VN_USAGE_COPY_SRC
    COPY_DST = lib.VN_USAGE_COPY_DST
    INDEX = lib.VN_USAGE_INDEX
    VERTEX = lib.VN_USAGE_VERTEX
    UNIFORM = lib.VN_USAGE_UNIFORM
    STORAGE = lib.VN_USAGE_STORAGE
    INDIRECT = lib.VN_USAGE_INDIRECT
    QUERY_RESOLVE = lib.VN_USAGE_QUERY_RESOLVE
    #: serves as any binding (storage, uniform, indirect) and copies both ways
    DEFAULT = lib.VN_USAGE_DEFAULT


class _Reads:
    """``read()`` in terms of ``read_async()`` and ``read_into()``: what a Buffer and a
    BufferView share (each reads its own range)."""

    __slots__ = ()

    def _read_len(self) -> int:
        raise NotImplementedError

    def read_async(self) -> PendingRead:
        raise NotImplementedError

    def read_into(self, out: Any) -> int:
        raise NotImplementedError

    def _start_read(self) -> Any:
        """Start reading this range: the C read (``readback.start``)."""
        raise NotImplementedError

    @overload
    def read(self, dtype: None = None, shape: None = None, *, copy: Literal[True] = True) -> bytes: ...
    @overload
    def read(self, dtype: None = None, shape: None = None, *, copy: Literal[False]) -> memoryview: ...
    @overload
    def read(self, dtype: None = None, shape: None = None, *, copy: bool) -> bytes | memoryview: ...
    @overload
    def read(
        self, dtype: DTypeLike, shape: ShapeLike | None = None, *, copy: bool = True
    ) -> NDArray[Any]: ...
    def read(
        self, dtype: DTypeLike | None = None, shape: ShapeLike | None = None, *, copy: bool = True
    ) -> bytes | memoryview | NDArray[Any]:
        """The bytes (a buffer's ``byte_len``, a view's ``nbytes``: only that range leaves
        the GPU), after all work submitted before the call.

        With ``dtype`` (and optionally ``shape``), a new writable numpy array instead,
        filled with one copy out of the staging memory; a shape that does not cover the
        byte length exactly is an ``InvalidArgumentError``.

        ``copy=False``: no copy. A read-only numpy array (with ``dtype``; else a read-only
        memoryview of the bytes) over the mapped staging memory itself, which stays mapped
        and pinned, and is never reused, until that array and every view of it are gone.
        Costs the GPU copy and the map; reading the array then reads that memory.
        """
        what = f"{type(self).__name__}.read"
        if want_copy(copy, what + " copy"):
            if dtype is None and shape is None:
                return complete(self._start_read(), None, True)
            arr = new_read_array(dtype, shape, self._read_len(), what)
            self.read_into(arr)
            return arr
        form = layout(dtype, shape, self._read_len(), what)
        return complete(self._start_read(), form, False)


class Buffer(_Reads, Handle):
    """A GPU buffer. Create with ``Device.upload`` or ``Device.alloc``.

    Immutable facts are plain attributes: ``byte_len`` (bytes asked for),
    ``allocation_len`` (padded to 4, at least 4), ``usage`` (BufferUsage) and
    ``allocation_identity`` (a process-wide monotonic id, never an address).
    """

    _kind = "Buffer"
    _made_by = "device.upload(data) or device.alloc(nbytes)"
    _device: Device
    byte_len: int
    allocation_len: int
    usage: BufferUsage
    allocation_identity: int
    _id: int  # the C id (handle_id), for csrc/python/launch.c

    #: ``Buffer.from_wgpu(gpu_buffer)`` and ``buffer.to_wgpu()``: interop with wgpu-py,
    #: installed by vyre_native.interop, which sits above this module.
    from_wgpu: ClassVar[Callable[[Any], Buffer]]
    to_wgpu: ClassVar[Callable[[Buffer], Any]]

    @classmethod
    def _adopt(cls, device: Device, raw: Any) -> Buffer:
        """The handle of ``raw``, an owning pointer (``owned``)."""
        self = cls._wrap(raw)
        self._id = handle_id(raw)
        self._device = device  # keeps the Device (and its close state) reachable
        desc = ffi.new("vn_buffer_desc *")
        check(lib.vn_buffer_describe(raw, desc))
        self.byte_len = int(desc.byte_len)
        self.allocation_len = int(desc.allocation_len)
        self.usage = BufferUsage(int(desc.usage))
        self.allocation_identity = int(desc.allocation_identity)
        return self

    @property
    def device(self) -> Device:
        return self._device

    def __repr__(self) -> str:
        state = " released" if self._ptr is None else ""
        return f"<vn.Buffer id={self.allocation_identity} {self.byte_len} bytes usage={self.usage!s}{state}>"

    def write(self, data: Any, offset: int = 0) -> None:
        """Queue a write of ``data`` at byte ``offset``: it lands after all work submitted
        before the call and before any later submit, and changes no other byte.

        Any offset and length. Whole 4-byte words cost one ``wgpuQueueWriteBuffer``; a
        partial first or last word is merged on the GPU queue (one submit of two word
        copies and a one-word dispatch each), which needs COPY_SRC usage (the default
        has it), except for a last word that ends the buffer.
        """
        _write(lib.vn_buffer_write, self._live(), data, offset, "Buffer.write")

    def _read_len(self) -> int:
        return self.byte_len

    def _start_read(self) -> Any:
        return start(lib.vn_buffer_read_async, self._live())

    def read_async(self) -> PendingRead:
        """Start reading the buffer back; returns a ``vn.PendingRead`` (``.result()`` completes it)."""
        return read_async(self._live())

    def read_into(self, out: Any) -> int:
        """Fill ``out`` with the buffer's bytes; see ``PrerecordedDispatch.read_output_into``."""
        ptr = self._live()
        dst, capacity = to_destination(out, self.byte_len, "Buffer.read_into")
        read_sliced(lambda pending: lib.vn_buffer_read(ptr, dst, capacity, pending), dst, capacity)
        return self.byte_len

    def view(self, offset: int, nbytes: int) -> BufferView:
        """The ``nbytes`` bytes at ``offset`` as a ``vn.BufferView``, which binds, copies,
        clears and reads wherever a buffer does (an arena allocator's tensors).

        C checks the range: inside the buffer (else ``InvalidArgumentError``), at least 1
        byte; any byte offset and size otherwise (writes, reads and copies are byte-exact).
        Binding one also needs the device's ``min_storage_buffer_offset_alignment`` (or the
        uniform one) at that point, and, as storage, a size in whole 4-byte words unless
        the view ends the buffer. The view keeps this buffer alive; once the buffer is released, using the
        view raises ``ReleasedError``. Costs one C call, no GPU work.
        """
        view = ffi.new(
            "vn_view *",
            (self._live(), to_u64(offset, "Buffer.view offset"), to_u64(nbytes, "Buffer.view nbytes"), 0),
        )
        resolved = ffi.new("vn_view *")
        check(lib.vn_view_check(view, resolved))
        return BufferView._make(self, int(resolved.offset), int(resolved.size))


class BufferView(_Reads):
    """``nbytes`` bytes of a ``vn.Buffer`` from ``offset``: made by ``buffer.view(offset, nbytes)``.

    Accepted wherever a buffer binds (inputs, outputs, params, ``bind=``, ``indirect=``,
    ``Sequence.copy``, ``Sequence.clear``); ``read``, ``read_into``, ``read_async`` and
    ``write`` touch only its range. Bind groups are cached by (buffer, offset, size), so
    the same view binds from the cache and another offset is another entry. A plain value
    that holds a reference to its buffer, which it keeps alive.
    """

    __slots__ = ("buffer", "nbytes", "offset")
    buffer: Buffer
    offset: int
    nbytes: int

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise WrongTypeError(
            "vn.BufferView is not made by calling the class. Fix: call buffer.view(offset, nbytes)."
        )

    @classmethod
    def _make(cls, buffer: Buffer, offset: int, nbytes: int) -> BufferView:
        self = cls.__new__(cls)
        object.__setattr__(self, "buffer", buffer)
        object.__setattr__(self, "offset", offset)
        object.__setattr__(self, "nbytes", nbytes)
        return self

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(
            f"vn.BufferView is immutable (tried to set {name}). Fix: make another with buffer.view()."
        )

    def __repr__(self) -> str:
        where = f"at offset {self.offset} of buffer {self.buffer.allocation_identity}"
        return f"<vn.BufferView {self.nbytes} bytes {where}>"

    def __eq__(self, other: object) -> bool:
        if type(other) is not BufferView:
            return NotImplemented
        return (self.buffer, self.offset, self.nbytes) == (other.buffer, other.offset, other.nbytes)

    def __hash__(self) -> int:
        return hash((id(self.buffer), self.offset, self.nbytes))

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise not_picklable(self)

    def __reduce__(self) -> Any:
        raise not_picklable(self)

    def __copy__(self) -> BufferView:
        return self  # an immutable value: the copy is the same view of the same buffer

    def __deepcopy__(self, memo: Any) -> Any:
        return self.buffer.__deepcopy__(memo)  # a deep copy would copy the buffer: refused

    @property
    def device(self) -> Device:
        return self.buffer.device

    def _c_view(self, what: str) -> Any:
        """A ``vn_view *`` for one C call (which checks it again: the buffer may be gone)."""
        return ffi.new("vn_view *", to_view(self, what, Buffer, BufferView))

    def write(self, data: Any, offset: int = 0) -> None:
        """Queue a write of ``data`` at byte ``offset`` into the view (as ``Buffer.write``);
        it must lie inside the view."""
        view = self._c_view("BufferView.write")
        _write(lib.vn_view_write, view, data, offset, "BufferView.write")

    def _read_len(self) -> int:
        return self.nbytes

    def _start_read(self) -> Any:
        return start(lib.vn_view_read_async, self._c_view("BufferView.read"))

    def read_async(self) -> PendingRead:
        """Start reading the view back; ``.result()`` completes it."""
        return read_view_async(self._c_view("BufferView.read_async"))

    def read_into(self, out: Any) -> int:
        """Fill ``out`` with the view's bytes, as ``Buffer.read_into``; returns ``nbytes``."""
        view = self._c_view("BufferView.read_into")
        dst, capacity = to_destination(out, self.nbytes, "BufferView.read_into")
        read_sliced(lambda pending: lib.vn_view_read(view, dst, capacity, pending), dst, capacity)
        return self.nbytes


#: what binds, copies and reads: a whole buffer or a range of one
Bindable = Buffer | BufferView


def copy_args(
    src: Bindable, dst: Bindable, nbytes: int | None, src_offset: int, dst_offset: int
) -> tuple[Any, Any, int, int, int]:
    """A copy's arguments as its C call takes them (``Device.copy``, ``Sequence.copy``): the
    two ``vn_view *``, the size (a ``uint64_t *``; NULL for None, as much as fits from the
    offsets), the offsets."""
    return (
        ffi.new("vn_view *", to_view(src, "copy src", Buffer, BufferView)),
        ffi.new("vn_view *", to_view(dst, "copy dst", Buffer, BufferView)),
        to_count(nbytes, "copy nbytes"),
        to_u64(src_offset, "copy src_offset"),
        to_u64(dst_offset, "copy dst_offset"),
    )


def _write(c_write: Any, target: Any, data: Any, offset: Any, what: str) -> None:
    """``Buffer.write`` and ``BufferView.write``: ``data`` at byte ``offset`` of ``target``
    (a ``vn_buffer *`` or ``vn_view *``), by ``c_write``, waiting where the queue is busy."""
    src, nbytes = to_readable(data, what)
    call_waiting(c_write, target, to_u64(offset, f"{what} offset"), src, nbytes)


def as_output(buffer: Buffer, offset: int, nbytes: int) -> Buffer | BufferView:
    """What a recording bound as an output: the buffer itself when it bound all of it."""
    if offset == 0 and nbytes == buffer.byte_len:
        return buffer
    return BufferView._make(buffer, offset, nbytes)
