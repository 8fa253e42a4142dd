"""One exception class per C status code, and the one-line check every call site uses.

The C layer returns a ``vn_status`` (a stable enum, its one table ``csrc/include/status_codes.h``)
and keeps the message of the last failure in thread-local storage. Each class's ``code``
is read from the compiled module, never copied here, and is that class's one entry in the
map from code to class (``tests/test_errors.py`` holds every error code of C's table to
exactly one class). ``check(status)`` returns on success and otherwise raises the class
mapped to the code, carrying the C message ("<what happened, with values>. Fix:
<remedy>").

Classes that have an obvious built-in counterpart also derive from it, so callers
can catch what a Python user expects: an output index out of range is an
``IndexError``, a bad value a ``ValueError``, a wrong type a ``TypeError``, a
timeout a ``TimeoutError``, an allocation failure a ``MemoryError``.

``shown(value)`` is how every message shows a value a caller gave: the one place, so that
no refusal can fail while it is being written.
"""

from __future__ import annotations

import pickle

from ._native import lib


class VyreError(Exception):
    """Base class of every error this package raises. ``.code`` is the C status code."""

    code: int = lib.VN_ERROR_INTERNAL

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code


class InvalidArgumentError(VyreError, ValueError):
    """A value is out of range or malformed (a size, a workgroup count, an offset)."""

    code = lib.VN_ERROR_INVALID_ARGUMENT


class AlreadySubmittedError(VyreError):
    """A single-submit recording was replayed a second time."""

    code = lib.VN_ERROR_ALREADY_SUBMITTED


class BindingError(VyreError):
    """Handles do not match the pipeline's bindings (count, usage, size, device)."""

    code = lib.VN_ERROR_BINDING


class ValidationError(VyreError):
    """wgpu-native reported a validation error; its message is kept."""

    code = lib.VN_ERROR_VALIDATION


class ShaderError(VyreError):
    """WGSL that does not compile, or uses what this package cannot bind.

    ``line`` and ``column`` (1-based; the column in characters) say where the compiler's
    error is (from its span, or, where its message has none, from the declaration it
    names); the message then shows that source line with a caret under the column, and
    the Fix on a line of its own. Both are None for an error with no place, whose message
    begins "WGSL error with no position". Reflection's own errors (``vyre_native.reflect``)
    set both the same way (the line by WGSL's line breaks), or, for one about an argument
    rather than a place in the WGSL, say "no line or column" and set neither.
    """

    code = lib.VN_ERROR_SHADER

    def __init__(
        self, message: str, code: int | None = None, line: int | None = None, column: int | None = None
    ) -> None:
        super().__init__(message, code)
        self.line = line
        self.column = column


class OutOfMemoryError(VyreError, MemoryError):
    """A GPU or host allocation failed, or a size exceeds the device's maximum."""

    code = lib.VN_ERROR_OUT_OF_MEMORY


class OutputIndexError(VyreError, IndexError):
    """An output index outside the recording's outputs."""

    code = lib.VN_ERROR_OUTPUT_INDEX


class ReleasedError(VyreError):
    """A handle (buffer, pipeline, recording, device) was used after release()."""

    code = lib.VN_ERROR_RELEASED


class DeviceLostError(VyreError):
    """The device was lost or destroyed; nothing on it can run any more."""

    code = lib.VN_ERROR_DEVICE_LOST


class LibraryError(VyreError):
    """wgpu-native is missing, cannot be loaded, or is of another version."""

    code = lib.VN_ERROR_LIBRARY


class NotSubmittedError(VyreError):
    """Output read back before the recording was replayed."""

    code = lib.VN_ERROR_NOT_SUBMITTED


class WaitTimeoutError(VyreError, TimeoutError):
    """A wait on GPU work ran past its timeout."""

    code = lib.VN_ERROR_TIMEOUT


class InternalError(VyreError):
    """An unexpected failure inside the C layer or wgpu-native."""

    code = lib.VN_ERROR_INTERNAL


class WrongTypeError(VyreError, TypeError):
    """An argument of the wrong type (not a buffer-protocol object, not a Buffer)."""

    code = lib.VN_ERROR_WRONG_TYPE


class UnsupportedError(VyreError):
    """The adapter lacks a feature the call needs (``required_features``, immediates, ...)."""

    code = lib.VN_ERROR_UNSUPPORTED


class ForkedError(VyreError):
    """An object inherited across ``os.fork()``: unusable in the child; create a vn.Device there."""

    code = lib.VN_ERROR_FORKED


class ReentryError(VyreError, RuntimeError):
    """A call made from a signal handler or a finalizer while its own thread was inside a
    call that holds a lock the nested one needs (Python's own ``RuntimeError: reentrant
    call`` is the model): the nested call is refused instead of waiting for ever."""

    code = lib.VN_ERROR_REENTERED


class NotPicklableError(VyreError, pickle.PicklingError):
    """A handle pickled, as a distributed engine (Ray, multiprocessing) does to send it to
    another process: what it owns is this process's GPU device. One ``vn.Device`` per
    worker process, and numpy arrays between them, is the pattern (``vyre_native.worker``).

    A ``pickle.PicklingError``, not a ``TypeError``: Ray wraps a ``TypeError`` from
    pickling in its own message, but lets this one reach the caller as it is."""

    code = lib.VN_ERROR_NOT_PICKLABLE


#: an int of more bits than this is shown by its size: its digits would fill the message
#: (and past 4300 digits ``repr`` raises ValueError, sys.get_int_max_str_digits)
_SHOWN_INT_BITS = 256


def shown(value: object) -> str:
    """``repr(value)``, cut short (a message names the value, it does not dump it); an int
    past ``_SHOWN_INT_BITS`` bits as its bit length ("an int of 16610 bits"), never
    converted to digits. A repr that raises (a list nested past the recursion limit, a
    class whose ``__repr__`` fails) is named by its type: the refusal being written must
    not fail itself."""
    if isinstance(value, int) and value.bit_length() > _SHOWN_INT_BITS:
        return f"<{'a negative' if value < 0 else 'an'} int of {value.bit_length()} bits>"
    try:
        text = repr(value)
    except Exception as err:  # noqa: BLE001 - any failing repr; KeyboardInterrupt still goes through
        return f"<a {type(value).__name__} whose repr raised {type(err).__name__}>"
    return text if len(text) <= 80 else text[:77] + "..."


# Each class's own ``code`` is its one entry: the table is the classes defined above.
_BY_CODE: dict[int, type[VyreError]] = {
    cls.code: cls
    for cls in list(globals().values())
    if isinstance(cls, type) and issubclass(cls, VyreError) and cls is not VyreError
}


def error_class(code: int) -> type[VyreError]:
    """The exception class for a C status code (``VyreError`` for an unknown one)."""
    return _BY_CODE.get(code, VyreError)


def raise_for(code: int, message: str) -> None:
    """Raise the exception mapped to ``code`` with ``message``."""
    raise error_class(code)(message, code)
