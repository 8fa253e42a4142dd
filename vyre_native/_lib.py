"""Loading: the compiled cffi module, and wgpu-native behind it.

wgpu-native is loaded on first use (the first ``Device``), not at import, so that
``import vyre_native`` always works and a missing or mismatched library surfaces as
a catchable ``vn.LibraryError`` with a Fix. The file is the one the installed
``wgpu`` package ships (the same copy wgpu-py loads), or ``WGPU_LIB_PATH`` when set,
as wgpu-py honours it.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import pathlib
import sys
import threading
from collections.abc import Callable
from typing import Any

from . import _log
from ._handles import new_slot
from ._marshal import to_path
from ._native import ffi, lib
from .errors import LibraryError, raise_for

__all__ = [
    "PENDING",
    "WGPU_REQUIREMENT",
    "call_waiting",
    "check",
    "check_wait",
    "done_flag",
    "ffi",
    "introspect",
    "lib",
    "library_path",
    "load_library",
    "read_sliced",
]

#: Not an error: a blocking C call waited one time slice (VN_WAIT_SLICE_MS) and the
#: work is not done yet; calling it again keeps waiting.
PENDING: int = lib.VN_PENDING

#: The pip requirement of the wgpu package this build compiled against ("wgpu==X.Y.Z"):
#: pyproject.toml's pin, compiled into the C layer, for every message that says what to
#: install.
WGPU_REQUIREMENT: str = ffi.string(lib.vn_wgpu_requirement()).decode()

_LIB_NAMES = {
    "linux": "libwgpu_native-release.so",
    "darwin": "libwgpu_native-release.dylib",
    "win32": "wgpu_native-release.dll",
}
# Reentrant: a signal handler (or a finalizer) that runs on the loading thread between two
# of load_library's steps and calls into vyre_native (vn.library_version(), a Device) loads
# the library itself, or finds it loaded, instead of waiting for ever on its own thread.
# Every step is idempotent, so the interrupted load then finishes as if alone.
_load_lock = threading.RLock()
_loaded = False


def check(status: int) -> None:
    """Return on VN_OK, else raise the exception mapped to the status code."""
    if status:
        raise_for(status, ffi.string(lib.vn_last_error()).decode("utf-8", "replace"))


def done_flag(done: int) -> bool:
    """A C ``done`` probe's answer: 1 done, 0 not yet, minus a status when it never will
    be (the device lost, the object inherited across fork()): raised as its error."""
    if done < 0:
        check(-done)
    return bool(done)


def check_wait(status: int, fn: Callable[..., int], *args: Any) -> None:
    """Finish a call ``fn(*args)`` that waits in time slices and first returned
    ``status``: repeat it while it returns VN_PENDING, then ``check`` its status.

    Between slices Python runs its signal handlers, so Ctrl-C during a wait raises
    KeyboardInterrupt within one slice (about 20 ms) instead of when the GPU finishes;
    the work itself carries on, and the device stays usable.
    """
    while status == PENDING:
        status = fn(*args)
    check(status)


def call_waiting(fn: Callable[..., int], *args: Any) -> None:
    """``fn(*args)``, finished as ``check_wait`` finishes it."""
    check_wait(fn(*args), fn, *args)


def read_sliced(read: Callable[[Any], int], dst: Any, capacity: int) -> None:
    """Run a synchronous C read into ``dst`` (vn_view_read, vn_buffer_read,
    vn_dispatch_read_output: ``read(pending)`` calls it with its ``vn_pending_read **``)
    one time slice at a time, as check_wait does. VN_PENDING with nothing in ``pending``:
    the read has not started (a CPU adapter's queue is still busy), so call it again;
    VN_PENDING with a read in ``pending``: keep finishing that read, and release it
    however the wait ends (never waits: a read still in flight goes to its device)."""
    own, pending = new_slot("vn_pending_read *")  # own releases a started read however this ends
    status = read(pending)
    while status == PENDING and not own.held:
        status = read(pending)
    if status != PENDING:
        check(status)
        return
    started = pending[0]
    try:
        call_waiting(lib.vn_pending_read_finish, started, dst, capacity)
    finally:
        # now, not at collection: the read's staging is reused. These are the owner's
        # only references (``started`` is a plain pointer), so it is released here.
        del started, pending, own


def introspect(op: int, **inputs: Any) -> Any:
    """One call of C's introspection door, ``vn_introspect(op, io)``: ``inputs`` set the
    fields of the ``vn_introspection`` the op reads (text as bytes, kept alive for the
    call); returns it, filled. ``vn.debug``'s functions and the tests read C through it."""
    kept = {name: ffi.new("char[]", value) if isinstance(value, bytes) else value for name, value in inputs.items()}
    io = ffi.new("vn_introspection *", kept)
    check(lib.vn_introspect(op, io))
    return io


def library_path() -> str:
    """The wgpu-native file to load: ``WGPU_LIB_PATH``, else the ``wgpu`` package's own."""
    override = os.environ.get("WGPU_LIB_PATH")
    if override:
        return override
    spec = importlib.util.find_spec("wgpu")
    if spec is None or spec.origin is None:
        raise LibraryError(
            "the wgpu package is not installed, and it carries the wgpu-native library vyre_native runs on. "
            f"Fix: pip install '{WGPU_REQUIREMENT}', or set WGPU_LIB_PATH to a libwgpu_native file of that release."
        )
    name = _LIB_NAMES.get(sys.platform, _LIB_NAMES["linux"])
    return str(pathlib.Path(spec.origin).parent / "resources" / name)


def load_library() -> Any:
    """Load wgpu-native once per process (later calls are a flag check). Safe to reenter
    from a signal handler or finalizer on the loading thread (see ``_load_lock``)."""
    global _loaded
    if _loaded:
        return lib
    with _load_lock:
        if not _loaded:
            path = library_path()
            check(lib.vn_library_load(to_path(path, "WGPU_LIB_PATH")))
            # Before the driver's C exit handlers, which crash under a device creation
            # in flight on another thread (csrc/object/layer_object.h, the exit guard).
            atexit.register(lib.vn_process_exiting)
            _log.start()
            _loaded = True
    return lib
