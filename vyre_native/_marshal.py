"""Marshalling: every Python value an entry point takes becomes a C value here, once.

A converter owns the typed errors for values that have no C value at all: ints past
the C type (never a raw OverflowError), bools where a count is meant, wrong types,
text that is not valid UTF-8, buffers that hold Python objects rather than data, a
handle that was released. What a C value can carry and C can check (a size against a
device limit, a count against the bindings, usage bits, an output index, a launch
count of 0) is C's alone: no converter repeats it, so C's code and message are the
answer.

Each entry point converts its arguments with these, then makes one C call. The
common case of each converter is one or two exact type tests, since several run on
the recording path.
"""

from __future__ import annotations

import math
import numbers
import operator
import os
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._handles import Handle
from ._native import ffi, lib
from .errors import InvalidArgumentError, ReleasedError, WrongTypeError, shown

__all__ = [
    "U32_MAX",
    "U64_MAX",
    "new_array",
    "to_array",
    "to_bool",
    "to_choice",
    "to_constants",
    "to_count",
    "to_destination",
    "to_dims",
    "to_dtype",
    "to_index",
    "to_indirect",
    "to_int",
    "to_layout",
    "to_list",
    "to_little",
    "to_named",
    "to_path",
    "to_ptr",
    "to_readable",
    "to_seconds",
    "to_str_tuple",
    "to_timing",
    "to_u32",
    "to_u64",
    "to_usage",
    "to_utf8",
    "to_view",
    "to_views",
    "to_workgroups",
    "to_writable",
    "wrong_type",
]

U32_MAX = 0xFFFFFFFF
U64_MAX = 0xFFFFFFFFFFFFFFFF
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
_INTP_MAX = int(np.iinfo(np.intp).max)
#: numpy's NPY_MAXDIMS: 64 since numpy 2, 32 before
_MAX_DIMS = 64 if int(np.__version__.split(".")[0]) >= 2 else 32


def _numpy_bool(value: Any) -> bool:
    np = sys.modules.get("numpy")  # a numpy scalar exists only once numpy is imported
    return np is not None and isinstance(value, np.bool_)


def wrong_type(what: str, value: Any, wanted: str, fix: str) -> WrongTypeError:
    """The WrongTypeError for ``what`` given ``value`` where ``wanted`` is expected."""
    return WrongTypeError(f"{what}={shown(value)} is a {type(value).__name__}, not {wanted}. Fix: {fix}")


# ---- integers ---------------------------------------------------------------------------


def to_int(value: Any, what: str, lo: int, hi: int, ctype: str) -> int:
    """An int in [lo, hi] for a C ``ctype``: ints and numpy integer scalars (anything
    with ``__index__``), never a bool or a float."""
    if type(value) is not int:
        if isinstance(value, bool) or _numpy_bool(value):
            raise WrongTypeError(
                f"{what}={value!r} is a bool, not an int. Fix: pass an int (True and False are not numbers here)."
            )
        try:
            value = operator.index(value)
        except TypeError:
            raise wrong_type(
                what, value, "an int", "pass an int (a numpy integer scalar also works)."
            ) from None
    if value < lo:
        raise InvalidArgumentError(
            f"{what}={shown(value)} is {'negative' if lo == 0 else 'too small'}: it is passed to C as {ctype}, "
            f"which holds {lo} to {hi}. Fix: pass a value in that range."
        )
    if value > hi:
        raise InvalidArgumentError(
            f"{what}={shown(value)} does not fit {ctype}, which holds {lo} to {hi}. Fix: pass a value in that range."
        )
    return int(value)


def to_u64(value: Any, what: str) -> int:
    """A ``uint64_t``: sizes, offsets, usage bits."""
    if type(value) is int and 0 <= value <= U64_MAX:
        return value
    return to_int(value, what, 0, U64_MAX, "a uint64_t")


def to_u32(value: Any, what: str) -> int:
    """A ``uint32_t``: workgroup counts, launch counts."""
    if type(value) is int and 0 <= value <= U32_MAX:
        return value
    return to_int(value, what, 0, U32_MAX, "a uint32_t")


def to_index(value: Any, what: str) -> int:
    """An ``int64_t`` index; whether it names an output is C's check."""
    if type(value) is int and I64_MIN <= value <= I64_MAX:
        return value
    return to_int(value, what, I64_MIN, I64_MAX, "an int64_t")


def to_usage(value: Any, what: str) -> int:
    """Buffer usage bits: None is the default usage; which bits make a usage is C's check."""
    if value is None:
        return int(lib.VN_USAGE_DEFAULT)
    return to_u64(value, what)


def to_workgroups(value: Any) -> tuple[int, int, int]:
    """Three ``uint32_t`` workgroup counts (whether the device allows them is C's check)."""
    if type(value) is tuple and len(value) == 3:
        x, y, z = value
        # The common case in one expression; anything else takes the checks below.
        if (
            type(x) is int
            and type(y) is int
            and type(z) is int
            and 0 <= x <= U32_MAX
            and 0 <= y <= U32_MAX
            and 0 <= z <= U32_MAX
        ):
            return x, y, z
    if not isinstance(value, (tuple, list)) or len(value) != 3:
        raise WrongTypeError(
            f"workgroups={shown(value)} is not three counts. Fix: pass a tuple (x, y, z) of ints, e.g. (64, 1, 1)."
        )
    x, y, z = (to_u32(count, f"workgroups {axis}") for axis, count in zip("xyz", value))
    return x, y, z


# ---- flags, choices, numbers ------------------------------------------------------------------


def to_bool(value: Any, what: str) -> int:
    """A C flag (0 or 1) from a bool or a numpy bool, nothing else (``np.array`` is no flag)."""
    if value is True or value is False or _numpy_bool(value):
        return 1 if value else 0
    raise wrong_type(what, value, "a bool", "pass True or False.")


def to_choice(value: Any, what: str, choices: Mapping[Any, int]) -> int:
    """The C enum value of one of ``choices``' keys (None, bools and strs, matched by type too)."""
    if _numpy_bool(value):
        value = bool(value)
    listing = ", ".join(repr(k) for k in choices)
    if type(value) not in {type(k) for k in choices}:
        raise wrong_type(what, value, f"one of {listing}", "pass one of those.")
    code = choices.get(value)
    if code is None:
        raise InvalidArgumentError(f"{what}={shown(value)} is not one of {listing}. Fix: pass one of those.")
    return code


_TIMING_NONE = int(lib.VN_TIMING_NONE)
_TIMING = {
    False: _TIMING_NONE,
    None: _TIMING_NONE,
    True: lib.VN_TIMING_TOTAL,
    "dispatch": lib.VN_TIMING_PER_DISPATCH,
}


def to_timing(value: Any) -> int:
    """``timing=``: False/None -> no timing, True -> total GPU time, "dispatch" -> each dispatch."""
    if value is False:
        return _TIMING_NONE
    return to_choice(value, "timing", _TIMING)


def to_seconds(value: Any, what: str, most: float | None = None) -> float:
    """A timeout in seconds for C, where a negative value means "no limit". Where ``most``
    is None, None gives that, and a number past a double's range is for ever (inf). Where
    ``most`` is a number, the wait has an end: None, and a number above ``most`` (inf
    included), are refused. A negative or NaN number, which C would misread, is refused."""
    fix = f"pass a number of seconds from 0 to {most:g}." if most is not None else (
        "pass None (no limit) or a number of seconds >= 0."
    )
    if value is None and most is None:
        return -1.0
    if isinstance(value, bool) or _numpy_bool(value) or not isinstance(value, numbers.Real):
        raise wrong_type(what, value, "a number of seconds", fix)
    try:
        seconds = float(value)
    except OverflowError:  # an int or Fraction past a double's range: for ever, or negative
        seconds = math.inf if value > 0 else -math.inf  # type: ignore[operator]  # a Real orders with 0
    if not seconds >= 0 or (most is not None and not seconds <= most):  # also refuses NaN
        raise InvalidArgumentError(f"{what}={shown(value)} is not a time to wait. Fix: {fix}")
    return seconds


def _number(value: Any, what: str) -> float | int | bool:
    """A WGSL override value as a plain Python bool, int or finite float."""
    if isinstance(value, bool) or _numpy_bool(value):
        return bool(value)
    if not isinstance(value, numbers.Real):
        raise wrong_type(what, value, "a number or a bool", "pass an int, a float or a bool.")
    if isinstance(value, numbers.Integral):
        number: float | int = int(value)
        try:
            float(number)
        except OverflowError:
            raise InvalidArgumentError(
                f"{what}={shown(number)} is too large for a WGSL override (a C double). Fix: pass a smaller number."
            ) from None
        return number
    number = float(value)
    if not math.isfinite(number):
        raise InvalidArgumentError(f"{what}={number!r} is not finite. Fix: pass a finite number.")
    return number


def to_constants(value: Any) -> dict[str, float | int | bool]:
    """``constants=``: override keys (text: a name, or an @id(n) override's "n") to finite
    numbers or bools; None is none. Which keys the module has is reflection's to check."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise wrong_type("constants", value, "a mapping", "pass a dict of override names to values, or None.")
    out: dict[str, float | int | bool] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise wrong_type(
                "constants key",
                key,
                "a str",
                "name each override by its WGSL name, an @id(n) override also by 'n'.",
            )
        to_utf8(key, "constants key")
        out[key] = _number(item, f"constants[{key!r}]")
    return out


# ---- text ----------------------------------------------------------------------------------


def _nul_error(what: str, value: str | bytes, at: int) -> InvalidArgumentError:
    """C reads text up to its first NUL: a NUL inside a value would silently cut it there."""
    return InvalidArgumentError(
        f"{what}={shown(value)} holds a NUL character at position {at}: C reads text only up to its first "
        f"NUL, so it would see {shown(value[:at])} and silently drop the rest. Fix: remove the NUL "
        "(pass each name as a separate item where a list of names is taken)."
    )


def to_utf8(value: Any, what: str, sized: bool = False) -> bytes:
    """UTF-8 bytes of a str for C; a str that has none (a lone surrogate) names where it
    breaks, and one holding a NUL, which C would cut short there, is refused, unless
    ``sized``: C takes its length too (WGSL, which allows a NUL in a comment)."""
    if not isinstance(value, str):
        raise wrong_type(what, value, "a str", "pass text (str).")
    if not sized and "\0" in value:
        raise _nul_error(what, value, value.index("\0"))
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as err:
        line = value.count("\n", 0, err.start) + 1
        column = err.start - (value.rfind("\n", 0, err.start) + 1) + 1
        raise InvalidArgumentError(
            f"{what} is not valid Unicode text: character {err.start} (line {line}, column {column}) is "
            f"{value[err.start]!r}, a lone surrogate, which has no UTF-8 encoding. Fix: remove it, or decode "
            "the source with errors='replace' before passing it."
        ) from None


def to_path(value: Any, what: str) -> bytes:
    """A file path as the bytes the OS uses (``os.fsencode``): a path need not be UTF-8."""
    if not isinstance(value, (str, bytes, os.PathLike)):
        raise wrong_type(what, value, "a path", "pass a str or bytes path.")
    try:
        path = os.fsencode(value)
    except UnicodeEncodeError as err:
        raise InvalidArgumentError(
            f"{what}={shown(value)} cannot be encoded for the file system ({err.reason} at position {err.start}). "
            "Fix: pass the path as bytes."
        ) from None
    if b"\0" in path:
        text = os.fsdecode(path)
        raise _nul_error(what, text, text.index("\0"))
    return path


def to_str_tuple(value: Any, what: str) -> tuple[str, ...]:
    """Names from any iterable of str (a single str is refused: it is an iterable of
    one-letter names)."""
    if isinstance(value, (str, bytes, bytearray, memoryview)) or not isinstance(value, Iterable):
        wanted = "a list of names"
        fix = f"pass a list, e.g. {what}=[{shown(value)}]." if isinstance(value, str) else f"pass {wanted}."
        raise wrong_type(what, value, wanted, fix)
    names = tuple(value)
    for i, name in enumerate(names):
        to_utf8(name, f"{what}[{i}]")
    return names


# ---- sequences and handles --------------------------------------------------------------------


#: the most items any list argument takes (inputs, outputs, output sizes, submit's work,
#: a Worker's arrays): a Sequence is walked item by item after this, so its length is
#: checked first (range(10**12) would otherwise be walked, and its items kept, for hours)
MAX_LIST_ITEMS = 1 << 20


def to_list(value: Any, what: str, wanted: str = "a list") -> Sequence[Any]:
    """A list, a tuple or another Sequence of at most MAX_LIST_ITEMS items; never text,
    bytes or a buffer (which are sequences too, but are passed where one item is meant)."""
    if type(value) is not list and type(value) is not tuple and (
        isinstance(value, (str, bytes, bytearray, memoryview, Handle)) or not isinstance(value, Sequence)
    ):
        raise wrong_type(what, value, wanted, f"pass {wanted}.")
    count = _length(value)
    if count > MAX_LIST_ITEMS:
        raise InvalidArgumentError(
            f"{what} has {_items(count)} items, more than any call takes ({MAX_LIST_ITEMS}). Fix: pass at most "
            f"{MAX_LIST_ITEMS} items, splitting the work into several calls."
        )
    return value


def _length(value: Sequence[Any]) -> int:
    """``len(value)``, or ``sys.maxsize + 1`` for a Sequence whose length no ``Py_ssize_t``
    holds (``range(2**64)``, whose len() raises OverflowError): more than any bound here."""
    try:
        return len(value)
    except OverflowError:
        return sys.maxsize + 1


def _items(count: int) -> str:
    """A count from ``_length``, as a message says it."""
    return f"more than {sys.maxsize}" if count > sys.maxsize else str(count)


def _class_names(cls: type[Handle] | tuple[type[Handle], ...]) -> str:
    classes = cls if isinstance(cls, tuple) else (cls,)
    return " or ".join(f"a vn.{c._kind}" for c in classes)


def to_ptr(handle: Any, cls: type[Handle] | tuple[type[Handle], ...], what: str) -> Any:
    """The C pointer of a live handle of class ``cls``."""
    if type(handle) is cls or isinstance(handle, cls):
        ptr = handle._ptr
        if ptr is not None:
            return ptr
        raise ReleasedError(
            f"{what} ({handle!r}) was released. Fix: pass a live {handle._kind}; a released handle cannot be used."
        )
    raise wrong_type(what, handle, _class_names(cls), f"pass {_class_names(cls)}.")


# ---- buffers and views: the C vn_view {buffer, offset, size, to_end} ------------------------------
#
# A Buffer is the view {buffer, 0, 0, to_end=1}: "to the end" is the flag alone, never a size
# value, so every size a caller gives is checked by C as the size it is (2**64 - 1 included).
# A BufferView carries the offset and size it was made with. The buffer and view classes are
# passed in, since this module sits below the modules that define them. Whether a view fits
# what it is passed to (its range, alignment, usage, device) is C's check.

View = tuple[Any, int, int, int]


def to_view(value: Any, what: str, buffer_cls: type[Handle], view_cls: type[Any]) -> View:
    """The C view (pointer, offset, size, to_end) of a live Buffer or BufferView."""
    if type(value) is buffer_cls:
        ptr = value._ptr
        if ptr is not None:
            return ptr, 0, 0, 1
    elif type(value) is view_cls:
        return to_ptr(value.buffer, buffer_cls, f"{what} (a view of it)"), value.offset, value.nbytes, 0
    return to_ptr(value, buffer_cls, what), 0, 0, 1


def to_views(values: Any, what: str, buffer_cls: type[Handle], view_cls: type[Any]) -> list[View]:
    """The C views of the buffers and views in ``values``, for a ``vn_view[]``. The caller
    keeps the list referenced until the C call returns: it holds the pointers' owners (a C
    array holds no reference, and a ``release()`` on another thread must not free an
    object mid-call)."""
    if type(values) is list or type(values) is tuple:
        fast = [
            (h._ptr, 0, 0, 1) if type(h) is buffer_cls and h._ptr is not None else None for h in values
        ]
        if None not in fast:
            return fast  # type: ignore[return-value]  # no None in it
    items = to_list(values, what, f"a list of vn.{buffer_cls._kind} or vn.BufferView")
    return [to_view(h, f"{what}[{i}]", buffer_cls, view_cls) for i, h in enumerate(items)]


def to_buffer_array(inputs: Any, outputs: Any, buffer_cls: type[Handle]) -> tuple[list[Any], int, int] | None:
    """The commonest launch's handles, when ``inputs`` and ``outputs`` are lists or tuples
    of live buffers (no views): the list of their pointers, the inputs then the outputs,
    and the two counts. The list goes to C's ``vn_buffer *const *`` as it is (cffi makes
    the call's temporary array from it, with no allocation of ours) and holds the
    pointers' owners, so the caller keeps it until the call returns. None for anything
    else (``to_views`` converts it)."""
    if (type(inputs) is list or type(inputs) is tuple) and (type(outputs) is list or type(outputs) is tuple):
        ptrs = [h._ptr if type(h) is buffer_cls else None for h in (*inputs, *outputs)]
        if None not in ptrs:
            return ptrs, len(inputs), len(outputs)
    return None


def to_count(value: Any, what: str) -> Any:
    """A byte count for C's ``const uint64_t *``: None ("as many as fit") is NULL, and any
    int a ``uint64_t`` holds is that count, 2**64 - 1 included (C checks it as it is: no
    value stands for "everything")."""
    if value is None:
        return ffi.NULL
    return ffi.new("uint64_t *", to_u64(value, what))


def to_named(value: Any, what: str) -> list[tuple[bytes, Any]]:
    """``bind={name: item}``: (UTF-8 name, item) pairs, in the mapping's order. Which names
    the pipeline has, and whether each item fits its binding, is C's check."""
    if not isinstance(value, Mapping):
        raise wrong_type(
            what, value, "a dict of binding names to buffers", "pass e.g. bind={'x': buf, 'y': out}."
        )
    pairs = []
    for key, item in value.items():
        if not isinstance(key, str):
            raise wrong_type(f"{what} key", key, "a str", "name each binding by its WGSL name.")
        pairs.append((to_utf8(key, f"{what} key"), item))
    return pairs


def to_indirect(value: Any, buffer_cls: type[Handle], view_cls: type[Any]) -> tuple[View, int]:
    """``indirect=(buffer_or_view, byte_offset)`` at a dispatch: the C view and a uint64_t
    offset into it. A name is ``compile()``'s ``indirect=``, not a dispatch's."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) != 2:
        raise wrong_type(
            "indirect",
            value,
            "a (buffer, byte_offset) pair",
            "pass e.g. indirect=(args, 0), args a vn.Buffer.",
        )
    target, offset = value
    if isinstance(target, str):
        raise wrong_type(
            "indirect buffer",
            target,
            "a vn.Buffer or vn.BufferView",
            "pass the buffer itself; a binding's name goes to compile(..., indirect=(name, offset)).",
        )
    return to_view(target, "indirect buffer", buffer_cls, view_cls), to_u64(offset, "indirect offset")


# ---- host memory ------------------------------------------------------------------------------

# Formats of plain data, the common ones, checked by a set lookup; others are parsed.
_PLAIN = frozenset(prefix + code for prefix in ("", "<", ">", "=", "@", "!") for code in "bBhHiIlLqQnNefd?c")
_FIELD_NAME = re.compile(r":[^:]*:")


def _plain_bytes(obj: Any, what: str, err: ValueError) -> memoryview:
    """The bytes of an object that refused to export a buffer (``err``): a numpy array
    of fixed-size items that the buffer protocol has no format for (datetime64,
    timedelta64, and structures holding them) is plain data like any other, as its
    ``copy=False`` read already is; anything else (a closed mmap) is a typed error."""
    if isinstance(obj, np.ndarray) and not obj.dtype.hasobject and obj.dtype.itemsize:
        if not obj.flags.c_contiguous:
            raise InvalidArgumentError(
                f"{what} got a non-contiguous buffer of shape {obj.shape} and strides {obj.strides}. "
                "Fix: pass a C-contiguous copy (numpy.ascontiguousarray(x))."
            )
        return memoryview(obj.reshape(-1).view(np.uint8))  # type: ignore[arg-type]  # an ndarray exports a buffer
    raise InvalidArgumentError(
        f"{what} got a {type(obj).__name__} that exposes no memory now ({err}). Fix: pass it while it is open "
        "and valid, or pass a copy of its data (bytes(x))."
    ) from None


def _view(obj: Any, what: str, writable: bool) -> memoryview:
    """A C-contiguous memoryview of plain data over ``obj``'s memory."""
    try:
        view = memoryview(obj)
    except ValueError as err:
        view = _plain_bytes(obj, what, err)
    except TypeError:
        wanted = "a writable buffer" if writable else "a buffer"
        fix = (
            "pass a bytearray or a writable numpy array."
            if writable
            else ("pass bytes, bytearray, memoryview or a numpy array.")
        )
        raise WrongTypeError(
            f"{what} got {type(obj).__name__}, which does not expose {wanted}. Fix: {fix}"
        ) from None
    if writable and view.readonly:
        raise WrongTypeError(
            f"{what} got a read-only {type(obj).__name__}. Fix: pass a bytearray or a writable numpy array."
        )
    fmt = view.format
    if fmt not in _PLAIN and "O" in _FIELD_NAME.sub("", fmt):
        raise WrongTypeError(
            f"{what} got a buffer of Python objects (format {fmt!r}): its memory holds object pointers, not "
            "data, which a GPU copy would leak and a read would overwrite. Fix: convert it to a numeric dtype, "
            "e.g. numpy.asarray(x, dtype=numpy.float32)."
        )
    if not view.c_contiguous:
        raise InvalidArgumentError(
            f"{what} got a non-contiguous buffer of shape {view.shape} and strides {view.strides}. "
            "Fix: pass a C-contiguous copy (numpy.ascontiguousarray(x))."
        )
    return view


def to_readable(obj: Any, what: str) -> tuple[Any, int]:
    """A C pointer into ``obj``'s memory (no copy) and its size in bytes."""
    view = _view(obj, what, writable=False)
    return ffi.from_buffer(view), view.nbytes


def to_writable(obj: Any, what: str) -> tuple[Any, int]:
    """A C pointer into ``obj``'s writable memory (no copy) and its size in bytes; whether
    that is enough is C's check."""
    view = _view(obj, what, writable=True)
    return ffi.from_buffer(view, require_writable=True), view.nbytes


def to_destination(out: Any, n: int, what: str) -> tuple[Any, int]:
    """Where a readback of n bytes goes: a bytearray is first made exactly n bytes long
    (reusing its allocation), any other writable buffer is passed as it is."""
    if isinstance(out, bytearray) and len(out) != n:
        have = len(out)
        try:
            if have > n:
                del out[n:]
            else:
                out.extend(bytes(n - have))
        except BufferError:
            raise InvalidArgumentError(
                f"{what} must resize a bytearray of {have} bytes to {n} bytes, but it has a live export (a "
                "memoryview or numpy array over its memory), so Python forbids the resize. Fix: release that "
                f"view first, or pass a bytearray of exactly {n} bytes, or a numpy array."
            ) from None
    return to_writable(out, what)


def new_array(dtype: Any, shape: Any, nbytes: int, what: str) -> NDArray[Any]:
    """A new writable C-contiguous numpy array of ``dtype`` and ``shape`` that holds
    exactly ``nbytes`` (the readback fills it with one copy); ``shape=None`` is 1-D."""
    dt, dims = to_layout(dtype, shape, nbytes, what)
    return np.empty(dims, dtype=dt)


def to_dtype(dtype: Any, what: str, made: bool = True) -> tuple[np.dtype[Any], tuple[int, ...]]:
    """A numpy dtype of plain data (fixed-size bytes: no Python objects, not empty), as
    ``(item dtype, item shape)``. A subarray dtype is its items: ``'(2,)>u4'`` is
    ``('>u4', (2,))`` (a subarray of subarrays its axes outermost first), as numpy itself makes an array of it (``numpy.empty(8, '(2,)>u4')``
    has shape (8, 2) and dtype >u4), so every path (a read, a Worker's output, its byte
    order swap) handles an array of plain items, never a subarray dtype, which numpy's
    ``astype`` would broadcast into a repeated extra axis. Any other dtype (structured
    ones and ``datetime64`` included) is its item with shape ``()``.

    ``made``: an array is made over GPU bytes in it (a read, a Worker's output), so a
    dtype with a Unicode (``'U'``) part is refused: numpy trusts its words to be code
    points, and an element of any other word raises SystemError when it is read."""
    try:
        dt: np.dtype[Any] = np.dtype(dtype)
    except Exception as err:  # noqa: BLE001 - numpy's parse of a malformed dtype raises TypeError, ValueError,
        # SyntaxError ('(2,'), RecursionError (a list nested past the limit) and more: none is a dtype
        raise WrongTypeError(
            f"{what}: dtype={shown(dtype)} is not a numpy dtype ({type(err).__name__}: {str(err)[:200]}). "
            "Fix: pass e.g. numpy.float32 or 'u4', or a dtype numpy.dtype() accepts."
        ) from None
    if dt.hasobject or dt.itemsize == 0:
        raise WrongTypeError(
            f"{what}: dtype {dt} holds {'Python objects' if dt.hasobject else 'nothing'}, not data. "
            "Fix: pass a numeric or plain structured dtype, e.g. numpy.float32."
        )
    if made and any(leaf.kind == "U" for leaf in _leaves(dt)):
        raise WrongTypeError(
            f"{what}: {shown(dt)} holds Unicode text ('U'), whose 4-byte words numpy trusts to be code "
            "points: GPU words that are not would make elements that raise SystemError when read. Fix: read "
            "them as uint32 ('<u4') and decode, e.g. ''.join(map(chr, words)), or as 'S' bytes."
        )
    # A subarray of subarrays is one level at a time: ('(2,)u4', (3,)) is u4 with axes (3, 2).
    inner: tuple[int, ...] = ()
    while dt.subdtype is not None:
        dt, axes = dt.subdtype
        inner += tuple(axes)
    return dt, inner


def _leaves(dt: np.dtype[Any]) -> Iterator[np.dtype[Any]]:
    """The plain parts of ``dt``: its fields' fields (a subarray's item's), down to those
    that are not structured."""
    base = dt.base
    if base.names is None:
        yield base
        return
    for name in base.names:
        yield from _leaves(base.fields[name][0])  # type: ignore[index]  # a structured dtype has fields


def to_little(dt: np.dtype[Any], what: str) -> np.dtype[Any]:
    """``dt`` in WGSL's byte order (little-endian), for ``astype`` to convert the values to
    or from. ``astype`` converts a structured dtype field by field, so where two fields
    share bytes one's swap overwrites the other's: such a dtype is refused unless it is
    little-endian already (then nothing is converted)."""
    little = dt.newbyteorder("<")
    if little != dt and _overlaps(dt):
        raise WrongTypeError(
            f"{what}: {shown(dt)} is not little-endian and has fields that share bytes: converting it "
            "to WGSL's byte order field by field would mix their bytes. Fix: pass it little-endian "
            "(dtype.newbyteorder('<')) and swap the values yourself, or use fields that do not overlap."
        )
    return little


def _overlaps(dt: np.dtype[Any]) -> bool:
    """Whether two fields of ``dt``, or of a structure inside it, share a byte (a field
    that is a structure, or a subarray of one, spans all its bytes: its items never
    overlap each other, and its own fields are checked inside it)."""
    base = dt.base
    if base.names is None:
        return False
    parts = []
    for name in base.names:
        field, offset = base.fields[name][:2]  # type: ignore[index]  # a structured dtype has fields
        if _overlaps(field):
            return True
        parts.append((offset, offset + field.itemsize))
    end = 0
    for start, stop in sorted(parts):
        if start < end and stop > start:
            return True
        end = max(end, stop)
    return False


def to_dims(shape: Any, what: str) -> tuple[int, ...]:
    """The dimensions of a numpy shape, as numpy takes one: an int (a numpy integer, a 0-d
    integer array), or a sequence of at most ``_MAX_DIMS`` ints (a tuple, a list, a 1-d
    array, a range), each >= 0. Its length is checked before it is walked; an iterator
    (which has none: ``itertools.count()`` never ends), text, bytes and a mapping are
    not shapes."""
    if type(shape) is not tuple and type(shape) is not list:
        if isinstance(shape, np.ndarray) and shape.ndim == 1:
            pass
        elif isinstance(shape, Sequence) and not isinstance(shape, (str, bytes, bytearray, memoryview)):
            pass
        elif hasattr(type(shape), "__index__") and not (isinstance(shape, np.ndarray) and shape.ndim):
            shape = (shape,)  # an int; to_int takes it, or refuses it (a bool, a 0-d float array)
        else:
            raise wrong_type(
                f"{what} shape", shape, "a shape", "pass an int or a tuple of ints, e.g. 64 or (8, 8)."
            )
    count = _length(shape)
    if count > _MAX_DIMS:
        raise _too_many_dims(what, shape, _items(count))
    return tuple(to_int(d, f"{what} shape[{i}]", 0, I64_MAX, "a non-negative size") for i, d in enumerate(shape))


def _too_many_dims(what: str, shape: Any, count: object) -> InvalidArgumentError:
    return InvalidArgumentError(
        f"{what}: shape {shown(shape)} has {count} dimensions, above the {_MAX_DIMS} a numpy array can have. "
        "Fix: pass a shape of fewer dimensions."
    )


def to_array(dtype: Any, shape: Any, what: str) -> tuple[np.dtype[Any], tuple[int, ...]]:
    """The numpy dtype and dimensions of an array of ``dtype`` and ``shape`` (a subarray
    dtype's item shape appended, see ``to_dtype``), checked against what numpy can make."""
    dt, inner = to_dtype(dtype, what)
    return dt, _numpy_shape(dt, to_dims(shape, what) + inner, what)


def to_layout(dtype: Any, shape: Any, nbytes: int, what: str) -> tuple[np.dtype[Any], tuple[int, ...]]:
    """The numpy dtype and dimensions of an array of ``dtype`` and ``shape`` over exactly
    ``nbytes``; ``shape=None`` is 1-D."""
    if dtype is None:
        raise WrongTypeError(
            f"{what}: shape={shown(shape)} was given without a dtype. Fix: pass dtype too, e.g. dtype=numpy.float32."
        )
    dt, inner = to_dtype(dtype, what)
    item = dt.itemsize * math.prod(inner)  # one item of the dtype as given
    if shape is None:
        if nbytes % item:
            raise InvalidArgumentError(
                f"{what}: {nbytes} bytes are not a whole number of {np.dtype(dtype)} items ({item} bytes each). "
                "Fix: pass a dtype whose size divides the byte length."
            )
        dims: tuple[int, ...] = (nbytes // item,)
    else:
        dims = to_dims(shape, what)
        count = math.prod(dims)
        if count * item != nbytes:
            raise InvalidArgumentError(
                f"{what}: shape {dims} of {np.dtype(dtype)} is {count * item} bytes, but the data is {nbytes} bytes. "
                f"Fix: pass a shape of {nbytes // item if nbytes % item == 0 else 'a matching'} "
                "items in all, or shape=None for a 1-D array."
            )
    return dt, _numpy_shape(dt, dims + inner, what)


def _numpy_shape(dt: np.dtype[Any], dims: tuple[int, ...], what: str) -> tuple[int, ...]:
    """``dims``, checked against what numpy can make at all (an empty array included):
    at most ``_MAX_DIMS`` dimensions, and the non-zero ones times the item size within
    an ``intp``."""
    if len(dims) > _MAX_DIMS:
        raise _too_many_dims(what, dims, len(dims))
    extent = dt.itemsize * math.prod(d for d in dims if d)
    if extent > _INTP_MAX:
        raise InvalidArgumentError(
            f"{what}: shape {dims} of {dt} spans {extent} bytes counting its non-zero dimensions, above the "
            f"{_INTP_MAX} numpy allows any array (an empty one too). Fix: pass smaller dimensions."
        )
    return dims
