"""os.fork() with a live device (see tests/test_fork.py): this child interpreter makes
objects of every kind, forks, runs one of the CHILDREN in the fork's child (which
reports one JSON line on a pipe), waits for it, and checks that the parent carries on.
argv: the child's name."""

from __future__ import annotations

import gc
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import wgpu
from support.childlib import failure, outcome, report
from support.kernels import ADD_IMMEDIATE, DOUBLE

import vyre_native as vn

# A hang guard, not a time the test holds the child to: a fork's child that touches
# what it inherited blocks for ever; this ends it, and the test fails.
HANG_S = 60.0

Report = Callable[[Any], None]


def make() -> SimpleNamespace:
    """Objects of every kind, the one reference to each held here (a child drops them)."""
    ns = SimpleNamespace()
    ns.dev = dev = vn.Device()
    ns.pipeline = dev.compile(DOUBLE)
    ns.a = dev.upload(np.arange(64, dtype=np.float32))
    ns.o = dev.alloc(256)
    ns.rec = ns.pipeline.record([ns.a], [ns.o])
    ns.sub = ns.rec.replay()
    ns.sub.wait()
    ns.pending = ns.a.read_async()
    # What main added since: views, clears as fill dispatches, immediates, zero-copy pins.
    ns.view = ns.a.view(0, 64)
    ns.seq = dev.sequence().add(ns.pipeline, [ns.view], [ns.o]).clear(ns.o)
    ns.imm = dev.compile(ADD_IMMEDIATE, preserve=["acc"]) if "immediates" in dev.features else None
    ns.pin_pending = ns.a.read_async()
    ns.pinned = ns.a.read(np.float32, copy=False)  # a live zero-copy array: its pin crosses the fork
    # interop: a device adopted from wgpu-py, a buffer shared both ways
    ns.gdev = wgpu.gpu.request_adapter_sync().request_device_sync()
    ns.wdev = vn.Device.from_wgpu(ns.gdev)
    ns.shared = ns.wdev.upload(np.arange(4, dtype=np.float32))
    ns.gbuf = ns.gdev.create_buffer(size=64, usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)
    # a Worker's turn and interop's registry turn, which another thread has across the
    # fork (that thread is not in the child)
    ns.worker = vn.worker.Worker({"double": DOUBLE})
    ns.worker_held, ns.worker_release = threading.Event(), threading.Event()

    def hold() -> None:
        with ns.worker._turn("Worker.run() on a thread"), vn.interop._registry("Buffer.from_wgpu() on a thread"):
            ns.worker_held.set()
            ns.worker_release.wait()

    threading.Thread(target=hold, daemon=True).start()
    ns.worker_held.wait()
    return ns


def only_exits(ns: SimpleNamespace, child_report: Report) -> None:
    child_report({"pid": os.getpid()})


def exit_status(ns: SimpleNamespace, child_report: Report) -> None:
    print("from the child", flush=False)
    child_report({})
    sys.exit(7)


def use_inherited(ns: SimpleNamespace, child_report: Report) -> None:
    ops: dict[str, Callable[[], object]] = {
        "upload": lambda: ns.dev.upload(b"1234"),
        "alloc": lambda: ns.dev.alloc(16),
        # its turn held at the fork by a thread the child lacks: this waited for ever
        "worker_run": lambda: ns.worker.run("double", [np.ones(64, np.float32)], [("f4", (64,))], (1, 1, 1)),
        "compile": lambda: ns.dev.compile(DOUBLE),
        "record": lambda: ns.pipeline.record([ns.a], [ns.o]),
        "prerecord": lambda: ns.pipeline.prerecord_persistent_dispatch([ns.a], [ns.o]),
        "replay": lambda: ns.rec.replay(),
        "replay_many": lambda: ns.rec.replay(1000),
        "sequence": lambda: ns.dev.sequence(),
        "submit": lambda: ns.dev.submit([ns.rec]),
        "buffer_read": lambda: ns.a.read(),
        "buffer_read_into": lambda: ns.a.read_into(bytearray()),
        "buffer_write": lambda: ns.a.write(b"1234"),
        "read_async": lambda: ns.a.read_async(),
        "read_output": lambda: ns.rec.read_output(0),
        "pending_result": lambda: ns.pending.result(),
        "submission_wait": lambda: ns.sub.wait(),
        "submission_wait_timeout": lambda: ns.sub.wait(1.0),
        "wait_idle": lambda: ns.dev.wait_idle(),
        "destroy": lambda: ns.dev.destroy(),
        "info": lambda: ns.dev.info,
        # entry points main added after waits branched
        "view_make": lambda: ns.a.view(0, 16),
        "view_read": lambda: ns.view.read(),
        "view_read_into": lambda: ns.view.read_into(bytearray()),
        "view_read_async": lambda: ns.view.read_async(),
        "view_read_zero_copy": lambda: ns.view.read(np.float32, copy=False),
        "view_write": lambda: ns.view.write(b"1234"),
        "record_view": lambda: ns.pipeline.record([ns.view], [ns.o]),
        "read_typed": lambda: ns.a.read(np.float32),
        "read_zero_copy": lambda: ns.a.read(copy=False),
        "read_output_zero_copy": lambda: ns.rec.read_output(0, copy=False),
        "pending_pin": lambda: ns.pin_pending.result(copy=False),
        "pending_pin_typed": lambda: ns.pin_pending.result(np.float32, copy=False),
        "pending_done": lambda: ns.pin_pending.done,
        "sequence_add_view": lambda: ns.seq.add(ns.pipeline, [ns.view], [ns.o]),
        "sequence_clear": lambda: ns.seq.clear(ns.o),
        "sequence_clear_view": lambda: ns.seq.clear(ns.o.view(0, 64)),
        "sequence_replay_with_fills": lambda: ns.seq.replay(),
        "sequence_replay_many": lambda: ns.seq.replay(1000),
        "immediates": (lambda: ns.imm.record([], [ns.o], immediates=np.uint32(3).tobytes()))
        if ns.imm
        else (lambda: ns.dev.alloc(4)),
        # interop's registry turn held at the fork as well: these waited for ever
        "to_wgpu": lambda: ns.shared.to_wgpu(),
        "from_wgpu_buffer": lambda: vn.Buffer.from_wgpu(ns.gbuf),
        "from_wgpu_device_use": lambda: vn.Device.from_wgpu(ns.gdev).alloc(16),
        "adopted_read": lambda: ns.shared.read(),
    }
    out: dict[str, Any] = {name: outcome(fn) for name, fn in ops.items()}
    del ops
    # Dropping every inherited object only forgets it (no wgpu call, no wait: one would
    # block for ever, the driver's threads being in the parent): a zero-copy array's pin
    # is not unmapped (the live count, the parent's copy, stays as it was).
    del ns.pinned
    gc.collect()
    out["mappings_after_drop"] = vn.debug.live_objects(wait=0.0)["mappings"]
    vars(ns).clear()
    gc.collect()
    out["dropped"] = True  # reached: no drop blocked
    child_report(out)


def own_device(ns: SimpleNamespace, child_report: Report) -> None:
    try:
        mine = vn.Device()
    except vn.ForkedError as err:  # a driver that cannot start again in a forked child
        child_report({"refused": failure(err)})
        sys.exit(0)
    p = mine.compile(DOUBLE)
    x = mine.upload(np.arange(64, dtype=np.float32))
    y = mine.alloc(256)
    r = p.record([x], [y])
    r.replay().wait()
    child_report(
        {
            "doubled": np.frombuffer(y.read(), np.float32).tolist() == (np.arange(64) * 2.0).tolist(),
            "adapter_type": mine.info["adapter_type"],
        }
    )
    # sys.exit: Mesa 22.3's lavapipe crashed (SIGSEGV) here, in its exit handler, joining
    # the parent's queue threads; the child's exit now ends before the parent's handlers.


def release_inherited_id(ns: SimpleNamespace, child_report: Report) -> None:
    """Release an inherited buffer's id through the C API: it is stale from then on (the
    object itself is only forgotten in a child)."""
    from vyre_native._native import ffi, lib

    raw = ffi.cast("vn_buffer *", int(ffi.cast("uintptr_t", ns.a._ptr)))
    before = outcome(lambda: ns.a.read())
    lib.vn_buffer_release(raw)
    after = outcome(lambda: ns.a.read())
    child_report({"before": before, "after": after, "device": outcome(lambda: ns.dev.alloc(4))})


CHILDREN = {
    f.__name__: f for f in (only_exits, exit_status, use_inherited, own_device, release_inherited_id)
}


def main(child: Callable[[SimpleNamespace, Report], None]) -> None:
    ns = make()
    mappings_at_fork = vn.debug.live_objects()["mappings"]
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)

        def child_report(value: Any) -> None:
            os.write(write_fd, (json.dumps(value) + "\n").encode())

        child(ns, child_report)
        sys.exit(0)
    os.close(write_fd)
    ns.worker_release.set()
    t0 = time.perf_counter()
    status = None
    while time.perf_counter() - t0 < HANG_S:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.02)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        status = None
    with os.fdopen(read_fd) as f:
        lines = f.read().splitlines()
    # The parent carries on with everything it made before the fork.
    parent = {
        "read": np.frombuffer(ns.o.read(), np.float32).tolist() == (np.arange(64) * 2.0).tolist(),
        "replay": outcome(lambda: ns.rec.replay().wait()),
        "pending": ns.pending.result() == ns.a.read(),
        "zero_copy_array": ns.pinned.tolist() == np.arange(64, dtype=np.float32).tolist(),
        "zero_copy_pin": np.asarray(ns.pin_pending.result(np.float32, copy=False)).tolist()
        == ns.pinned.tolist(),
        "sequence": outcome(lambda: ns.seq.replay().wait()),
        "mappings_at_fork": mappings_at_fork,
        "adapter_type": ns.dev.info["adapter_type"],
    }
    del ns.pinned, ns.pending, ns.pin_pending  # a completed read keeps its pin until it goes too
    gc.collect()
    parent["mappings_after"] = vn.debug.live_objects()["mappings"]
    report(
        {
            "status": status,
            "hang_s": HANG_S,
            "child": json.loads(lines[-1]) if lines else None,
            "parent": parent,
        }
    )


if __name__ == "__main__":
    main(CHILDREN[sys.argv[1]])
