"""Sweep an exception over every step after each creating call's C function returns
(tests/test_interrupted_creation.py); argv: the mode, "interrupt" or "trace"."""

from __future__ import annotations

import gc
import linecache
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any, NoReturn

import numpy as np
import wgpu
from support.childlib import report
from support.kernels import DOUBLE

import vyre_native as vn

MODE = sys.argv[1] if __name__ == "__main__" else "interrupt"

TraceFunction = Callable[[FrameType, str, Any], Any]

HANDLE_KINDS = (
    "devices",
    "buffers",
    "shaders",
    "pipelines",
    "dispatches",
    "recordings",
    "sequences",
    "submissions",
    "pending_reads",
    "mappings",
)


def handles() -> dict[str, int]:
    live = vn.debug.live_objects(wait=10.0)
    return {k: live[k] for k in HANDLE_KINDS}


class Raised(Exception):
    """What a hostile trace hook raises."""


class Interrupt:
    """A profiler that raises KeyboardInterrupt (MODE "interrupt") or Raised ("trace") at
    the k-th event after `target` (a C function of the compiled module) returns; k = 0: as
    it returns. In "trace" mode it also traces every line of every frame from then on."""

    def __init__(self, target: str, k: int) -> None:
        self.target, self.k, self.armed, self.seen, self.fired = target, k, False, 0, False
        self.done = False  # set (an attribute store: no event) once the action returned

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if self.done:
            return
        if not self.armed:
            if event == "c_return" and getattr(arg, "__name__", None) == self.target:
                self.armed = True
                if MODE == "trace":  # every line from here on, in the frames on the stack too
                    sys.settrace(self.trace)
                    f: FrameType | None = frame
                    while f is not None:
                        f.f_trace, f.f_trace_lines = self.trace, True
                        f = f.f_back
                if self.k == 0:
                    self.fire()
            return
        # Where CPython runs a pending signal handler: at a function's start ("call"),
        # and as a call completes ("return", "c_return"). Never before a C call starts
        # ("c_call"): raising there would break `with` blocks in ways no signal can.
        if event not in ("call", "return", "c_return"):
            return
        self.count()

    def trace(self, frame: FrameType, event: str, arg: Any) -> TraceFunction:
        if not self.done and event == "line":
            line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).lstrip()
            if not line.startswith(("with ", "async with ")):
                self.count()
        return self.trace

    def count(self) -> None:
        self.seen += 1
        if self.seen == self.k:
            self.fire()

    def fire(self) -> NoReturn:
        sys.setprofile(None)
        sys.settrace(None)
        self.fired = True
        raise KeyboardInterrupt if MODE == "interrupt" else Raised("a hook raised")


def main() -> None:
    dev = vn.Device()
    src = dev.upload(np.arange(64, dtype=np.float32))
    dst = dev.alloc(256)
    pipe = dev.compile(DOUBLE)
    rec = pipe.record([src], [dst], workgroups=(1, 1, 1))
    seq = dev.sequence()
    seq.add(pipe, [src], [dst], workgroups=(1, 1, 1))
    adapter = wgpu.gpu.request_adapter_sync()
    new_gpu_device = adapter.request_device_sync
    gpu_device = new_gpu_device()
    gpu_buffer = gpu_device.create_buffer(
        size=256, usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC
    )
    shared_buffer = vn.Device.from_wgpu(gpu_device).alloc(64)  # keeps its vn.Device (the C one) alive
    watched_device = new_gpu_device()  # one whose vn.Device is collected after each call

    SCENARIOS: dict[str, tuple[str, Callable[[], object]]] = {
        "Device()": ("vn_device_create", lambda: vn.Device()),
        "alloc": ("vn_buffer_create", lambda: dev.alloc(64)),
        "upload": ("vn_buffer_create", lambda: dev.upload(np.ones(16, np.float32))),
        "sequence": ("vn_sequence_create", lambda: dev.sequence()),
        "compile (shader)": ("vn_shader_create", lambda: dev.compile(DOUBLE)),
        "compile (pipeline)": ("vn_pipeline_create", lambda: dev.compile(DOUBLE)),
        "record": ("vn_recording_create", lambda: pipe.record([src], [dst])),
        "record (its outputs)": ("vn_recording_output", lambda: pipe.record([src], [dst])),
        # csrc/python/launch.c's one call; workgroups given as a list take Python's own path
        "prerecord": ("record_buffers", lambda: pipe.prerecord_persistent_dispatch([src], [dst])),
        "prerecord (converted)": (
            "vn_dispatch_record_buffers",
            lambda: pipe.prerecord_persistent_dispatch([src], [dst], workgroups=[1, 1, 1]),
        ),
        "prerecord borrowed": (
            "vn_dispatch_record_borrowed",
            lambda: pipe.prerecord_borrowed_dispatch([np.ones(64, np.float32)], output_sizes=[256]),
        ),
        # replay(): csrc/python/launch.c's one call; replay(2): Python's road of parts
        "recording replay": ("replay_once", lambda: rec.replay()),
        "recording replay(2)": ("vn_recording_replay", lambda: rec.replay(2)),
        "sequence replay": ("replay_once", lambda: seq.replay()),
        "sequence replay(2)": ("vn_sequence_replay", lambda: seq.replay(2)),
        "submit": ("vn_device_submit", lambda: dev.submit([rec, seq])),
        "read_async": ("vn_buffer_read_async", lambda: dst.read_async()),
        "read (sliced)": ("vn_buffer_read", lambda: dst.read_into(bytearray(256))),
        "read zero-copy (pin)": ("vn_pending_read_pin", lambda: dst.read(np.float32, copy=False)),
        "Device.from_wgpu": ("vn_device_adopt", lambda: vn.Device.from_wgpu(new_gpu_device())),
        # the vn.Device of a wgpu-py device was collected: a new handle on the same C device
        "Device.from_wgpu (second handle)": (
            "vn_device_retain_for_watch",
            lambda: vn.Device.from_wgpu(watched_device),
        ),
        "Buffer.from_wgpu": (
            "vn_buffer_adopt",
            lambda: vn.Buffer.from_wgpu(gpu_device.create_buffer(size=64, usage=wgpu.BufferUsage.STORAGE)),
        ),
        # the vn.Buffer of a wgpu-py buffer was collected: a new handle on the same C buffer
        "Buffer.from_wgpu (second handle)": (
            "vn_buffer_retain_for_watch",
            lambda: vn.Buffer.from_wgpu(gpu_buffer),
        ),
        "Buffer.to_wgpu": ("vn_buffer_retain_for_watch", lambda: shared_buffer.to_wgpu()),
    }

    results: dict[str, Any] = {}
    for name, (target, action) in SCENARIOS.items():
        action()  # warm: caches and pools the call fills once are not what is counted
        gc.collect()
        dev.wait_idle()
        before = handles()
        interrupted, leaks, errors = 0, list[dict[str, Any]](), list[str]()
        for k in range(4000):
            probe = Interrupt(target, k)
            made = None
            sys.setprofile(probe)
            try:
                made = action()
                probe.done = True
            except (KeyboardInterrupt, Raised):
                interrupted += 1
            except BaseException as e:  # noqa: BLE001 -- any other exception is a finding
                errors.append(f"k={k}: {type(e).__name__}: {e}")
            finally:
                sys.setprofile(None)
                sys.settrace(None)
            completed = not probe.fired
            if not probe.armed:
                errors.append(f"k={k}: {target} was never called")
            del made
            gc.collect()
            dev.wait_idle()
            after = handles()
            if after != before:
                leaks.append(
                    {
                        "k": k,
                        "diff": {
                            kind: after[kind] - before[kind]
                            for kind in HANDLE_KINDS
                            if after[kind] != before[kind]
                        },
                    }
                )
                before = after  # report each step that changed the counts once
            if completed or errors:
                break
        results[name] = {"interrupted": interrupted, "completed": completed, "leaks": leaks, "errors": errors}
    report(results)


if __name__ == "__main__":
    main()
