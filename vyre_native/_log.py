"""wgpu-native's log, forwarded to ``logging.getLogger("vyre_native")``.

The C layer's log callback only copies each message into a bounded ring (calling
Python from wgpu-native's threads could deadlock or run during shutdown); one daemon
thread, blocked in C with the GIL released, takes them out and logs them. wgpu-native
logs at the level the logger is enabled for (default WARNING), re-read after every
message and at least once a second, so ``logging.getLogger("vyre_native").setLevel``
takes effect on its own.
"""

from __future__ import annotations

import logging
import threading

from ._native import ffi, lib

__all__ = ["logger", "start"]

logger = logging.getLogger("vyre_native")

# wgpu-native's levels: 1 error, 2 warn, 3 info, 4 debug, 5 trace
_PY_LEVEL = {1: logging.ERROR, 2: logging.WARNING, 3: logging.INFO, 4: logging.DEBUG, 5: logging.DEBUG}


def _wgpu_level(py_level: int) -> int:
    # trace (5) is never asked for: it logs every call and slows everything down.
    if py_level <= logging.DEBUG:
        return 4
    if py_level <= logging.INFO:
        return 3
    return 2 if py_level <= logging.WARNING else 1


_started = False


def start() -> None:
    """Route the log once wgpu-native is loaded (called by ``_lib.load_library``, maybe
    again by a load reentered from a signal handler: one forwarding thread either way).
    Logging never fails the load: if the route cannot be set up, nothing is logged."""
    global _started
    if _started:
        return
    _started = True
    try:
        level = _wgpu_level(logger.getEffectiveLevel())
        if lib.vn_log_start(level) == 0:
            threading.Thread(target=_forward, args=(level,), name="vyre_native-log", daemon=True).start()
    except BaseException:
        _started = False  # interrupted before the thread ran: the next load starts it
        raise


def _forward(level: int) -> None:
    got_level = ffi.new("int *")
    text = ffi.new("char[]", lib.VN_LOG_MESSAGE_BYTES)
    dropped = ffi.new("uint64_t *")
    while True:
        got = lib.vn_log_next(1.0, got_level, text, len(text), dropped)
        if dropped[0]:
            logger.warning(
                "wgpu-native: %d log messages dropped (more than %d were waiting)",
                int(dropped[0]),
                lib.VN_LOG_RING_SLOTS,
            )
        if got:
            message = ffi.string(text).decode("utf-8", "replace")
            logger.log(_PY_LEVEL.get(int(got_level[0]), logging.INFO), "wgpu-native: %s", message)
        wanted = _wgpu_level(logger.getEffectiveLevel())
        if wanted != level and lib.vn_log_set_level(wanted) == 0:
            level = wanted
