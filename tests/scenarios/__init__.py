"""Scenarios a child interpreter runs whole (``support.child.run_scenario``): each module
reports one JSON value with ``support.childlib.report``; its test file asserts on it.
They are modules, not strings, so that ruff and mypy read them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from support.kernels import DOUBLE


def made_before_the_end(dev: Any) -> tuple[Any, Any, Any, Any, Any, Any, Any]:
    """What the scenarios that end a device make first, to try after the end:
    (pipeline, input, output, a dispatch recorded and never replayed, one replayed, a
    recording replayed and waited for, a sequence of one step)."""
    p = dev.compile(DOUBLE)
    a = dev.upload(np.arange(64, dtype=np.float32))
    o = dev.alloc(256)
    fresh = p.prerecord_persistent_dispatch([a], [o])
    done = p.prerecord_persistent_dispatch([a], [o])
    done.replay()
    rc = p.record([a], [o])
    rc.replay().wait()
    seq = dev.sequence().add(p, [a], [o])
    return p, a, o, fresh, done, rc, seq


def calls_after_the_end(
    dev: Any, p: Any, a: Any, o: Any, fresh: Any, done: Any, rc: Any, seq: Any
) -> dict[str, Callable[[], object]]:
    """The calls every such scenario tries after the end, on what made_before_the_end made."""
    return {
        "upload": lambda: dev.upload(b"1234"),
        "alloc": lambda: dev.alloc(16),
        "compile": lambda: dev.compile(DOUBLE),
        "prerecord": lambda: p.prerecord_persistent_dispatch([a], [o]),
        "record": lambda: p.record([a], [o]),
        "replay": lambda: fresh.replay(),
        "recording_replay": lambda: rc.replay(),
        "sequence": lambda: dev.sequence(),
        "sequence_add": lambda: seq.add(p, [a], [o]),
        "sequence_replay": lambda: seq.replay(),
        "read_output": lambda: done.read_output(0),
        "read_output_into": lambda: done.read_output_into(0, np.empty(64, np.float32)),
        "recording_read_output": lambda: rc.read_output(0),
        "buffer_read": lambda: a.read(),
        "buffer_write": lambda: a.write(b"1234"),
        "read_async": lambda: a.read_async(),
        "wait_idle": lambda: dev.wait_idle(),
    }
