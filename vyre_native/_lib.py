"""Loading: the compiled cffi module, and wgpu-native behind it.

wgpu-native is loaded on first use (the first ``Device``), not at import, so that
``import vyre_native`` always works and a missing or mismatched library surfaces as
a catchable ``vn.LibraryError`` with a Fix. The file is the one the installed
``wgpu`` package ships (the same copy wgpu-py loads), or ``WGPU_LIB_PATH`` when set,
as wgpu-py honours it.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import sys
import threading
from typing import Any

from . import _log
from ._marshal import to_path
from ._native import ffi, lib
from .errors import LibraryError, raise_for

__all__ = ["check", "ffi", "lib", "library_path", "load_library"]

_LIB_NAMES = {
    "linux": "libwgpu_native-release.so",
    "darwin": "libwgpu_native-release.dylib",
    "win32": "wgpu_native-release.dll",
}
_load_lock = threading.Lock()
_loaded = False


def check(status: int) -> None:
    """Return on VN_OK, else raise the exception mapped to the status code."""
    if status:
        raise_for(status, ffi.string(lib.vn_last_error()).decode("utf-8", "replace"))


def library_path() -> str:
    """The wgpu-native file to load: ``WGPU_LIB_PATH``, else the ``wgpu`` package's own."""
    override = os.environ.get("WGPU_LIB_PATH")
    if override:
        return override
    spec = importlib.util.find_spec("wgpu")
    if spec is None or spec.origin is None:
        raise LibraryError(
            "the wgpu package is not installed, and it carries the wgpu-native library vyre_native runs on. "
            "Fix: pip install 'wgpu==0.32.*', or set WGPU_LIB_PATH to a libwgpu_native file of that release."
        )
    name = _LIB_NAMES.get(sys.platform, _LIB_NAMES["linux"])
    return str(pathlib.Path(spec.origin).parent / "resources" / name)


def load_library() -> Any:
    """Load wgpu-native once per process (later calls are a flag check)."""
    global _loaded
    if _loaded:
        return lib
    with _load_lock:
        if not _loaded:
            path = library_path()
            check(lib.vn_library_load(to_path(path, "WGPU_LIB_PATH")))
            _log.start()
            _loaded = True
    return lib
