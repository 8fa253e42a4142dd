"""A multi-kernel program written once, and the three ways that run it.

A ``Program`` is device-free: WGSL kernels, named buffers with their initial
contents, and a list of steps (kernel, which buffer each binding takes, workgroup
counts). Each way builds the same buffers from the same arrays and dispatches the
same WGSL strings in the same order:

- ``VnWay``: a ``vn.Sequence`` recorded once (every step ``clear_outputs=False``,
  so the whole program is one compute pass) and replayed per iteration;
- ``WgpuWellWay``: wgpu-py with bind groups made once and, per iteration, one
  command encoder, one compute pass (pipeline set only when it changes), one submit;
- ``WgpuSimpleWay``: wgpu-py with the same bind groups, but one encoder, pass and
  submit per kernel, as a straightforward port would do.

Each way offers ``submit()`` (enqueue one iteration: the host-side cost), ``run()``
(one iteration to completion), ``wait()``, ``gpu_ns()`` (one iteration timed with
GPU timestamps), ``read(name)`` and ``close()``.
"""

from __future__ import annotations

import dataclasses
import os
import re
import statistics
from collections.abc import Callable
from typing import Any

import numpy as np

#: which sizes run: "small" (the default; minutes on a CPU adapter) or "full" (the issue's)
SIZE = os.environ.get("VN_WORKLOAD_SIZE", "small")
if SIZE not in ("small", "full"):
    raise ValueError(f"VN_WORKLOAD_SIZE={SIZE!r}. Fix: set it to small or full.")

#: ``@group(0) @binding(N) var<...> name``: the bindings each way binds by name
_BINDING = re.compile(r"@group\((\d+)\)\s*@binding\((\d+)\)\s*var(?:<([^>]*)>)?\s+(\w+)")


@dataclasses.dataclass(frozen=True)
class Kernel:
    """One WGSL compute entry point (``main``) and its bindings, in binding order."""

    name: str
    wgsl: str

    @property
    def bindings(self) -> list[tuple[int, str, str]]:
        """(binding index, variable name, address space and access) of group 0."""
        found = []
        for group, binding, space, name in _BINDING.findall(self.wgsl):
            if int(group) != 0:
                raise ValueError(f"kernel {self.name}: only @group(0) is used by the workloads")
            found.append((int(binding), name, (space or "").replace(" ", "")))
        return sorted(found)


@dataclasses.dataclass(frozen=True)
class Step:
    """One dispatch: ``bind`` maps each binding's variable name to a buffer name."""

    kernel: str
    bind: dict[str, str]
    workgroups: tuple[int, int, int]


@dataclasses.dataclass
class Program:
    """A workload at one size: everything each way needs, and how to check it.

    ``buffers`` maps a name to its initial contents (an array, uploaded as is) or
    to a byte size (zero-filled). ``reference()`` is numpy's answer for the buffer
    ``output``, read back as ``out_dtype`` and shaped like the reference; ``atol``
    None means an exact match, else ``max|out - ref| <= atol``.
    """

    workload: str
    size: str
    output: str
    out_dtype: Any
    reference: Callable[[], np.ndarray]
    atol: float | None = None
    kernels: dict[str, Kernel] = dataclasses.field(default_factory=dict)
    buffers: dict[str, np.ndarray | int] = dataclasses.field(default_factory=dict)
    steps: list[Step] = dataclasses.field(default_factory=list)
    facts: dict[str, Any] = dataclasses.field(default_factory=dict)
    _ref: np.ndarray | None = dataclasses.field(default=None, repr=False)

    def kernel(self, name: str, wgsl: str) -> None:
        self.kernels[name] = Kernel(name, wgsl)

    def add(self, kernel: str, workgroups: tuple[int, int, int], **bind: str) -> None:
        """Append a dispatch of ``kernel``; every binding of the kernel must be named."""
        names = {name for _, name, _ in self.kernels[kernel].bindings}
        if set(bind) != names:
            raise ValueError(f"step {kernel}: binds {sorted(bind)}, the kernel has {sorted(names)}")
        for buf in bind.values():
            if buf not in self.buffers:
                raise ValueError(f"step {kernel}: no buffer named {buf}")
        if max(workgroups) > 65535:
            raise ValueError(f"step {kernel}: {workgroups} workgroups exceeds 65535 per dimension")
        self.steps.append(Step(kernel, bind, workgroups))

    def buffer(self, name: str, contents: np.ndarray | int) -> str:
        if name in self.buffers:
            raise ValueError(f"buffer {name} defined twice")
        if isinstance(contents, np.ndarray):
            contents = np.ascontiguousarray(contents)
        self.buffers[name] = contents
        return name

    def check(self, data: bytes) -> None:
        """Raise AssertionError unless ``data`` (the output buffer) matches numpy."""
        if self._ref is None:  # computed once, for all three ways
            self._ref = self.reference()
        ref = self._ref
        out = np.frombuffer(data, dtype=self.out_dtype)[: ref.size].reshape(ref.shape)
        if self.atol is None:
            bad = np.flatnonzero(out != ref)
            if bad.size:
                i = int(bad[0])
                raise AssertionError(
                    f"{self.workload} {self.size}: {bad.size} of {ref.size} values differ from numpy; "
                    f"first at {i}: got {out.flat[i]}, expected {ref.flat[i]}"
                )
            return
        if not np.all(np.isfinite(out)):
            raise AssertionError(f"{self.workload} {self.size}: non-finite values in the output")
        err = float(np.max(np.abs(out.astype(np.float64) - ref)))
        if err > self.atol:
            raise AssertionError(
                f"{self.workload} {self.size}: max |out - numpy| = {err:.3g} > tolerance {self.atol:.3g}"
            )


def params(*words: float) -> np.ndarray:
    """A uniform buffer's bytes: u32 for ints, f32 for floats, padded to 16 bytes."""
    out = np.zeros(max(4, -(-len(words) // 4) * 4), np.uint32)
    for i, w in enumerate(words):
        out[i] = np.float32(w).view(np.uint32) if isinstance(w, float) else np.uint32(w)
    return out


def blocks(n: int, per: int) -> int:
    return max(1, -(-n // per))


def _median_gpu(timed: Callable[[], int | None], repeats: int) -> int | None:
    times = [t for t in (timed() for _ in range(repeats)) if t is not None]
    return int(statistics.median(times)) if times else None


# ---- vyre_native -------------------------------------------------------------------------


class VnWay:
    """The program as one ``vn.Sequence``: recorded once, replayed per iteration."""

    name = "vyre_native"

    def __init__(self, dev: Any, program: Program) -> None:
        self.dev = dev
        # Every kernel here writes its workgroup memory before reading it, so each opts
        # out of vyre_native's zeroing of it: the GPU does the same work as wgpu-py's
        # ways (wgpu-native zeroes nothing); benchmarks/test_bench_workgroup_zero.py
        # measures what the zeroing costs.
        self.pipes = {
            k.name: dev.compile(k.wgsl, zero_workgroup_memory=False) for k in program.kernels.values()
        }
        self.bufs = {
            name: dev.upload(c) if isinstance(c, np.ndarray) else dev.alloc(c)
            for name, c in program.buffers.items()
        }
        self.seq = self.sequence(program.steps)

    def sequence(self, steps: list[Step]) -> Any:
        """A ``vn.Sequence`` of ``steps`` over this way's pipelines and buffers."""
        seq = self.dev.sequence()
        for st in steps:
            pipe = self.pipes[st.kernel]
            ins, outs, par = [], [], None
            for b in pipe.bindings:  # vn's own reflection, in (group, binding) order
                buf = self.bufs[st.bind[b.name]]
                if b.kind == "storage_read_write":
                    outs.append(buf)
                elif b.kind == "uniform" and par is None:
                    par = buf
                else:
                    ins.append(buf)
            # clears off: every step writes all of what it reads later, so nothing
            # needs zeroing, and the program stays one compute pass
            seq.add(pipe, ins, outs, params=par, workgroups=st.workgroups, clear_outputs=False)
        return seq

    def submit(self) -> None:
        self.seq.replay()

    def run(self) -> None:
        self.seq.replay().wait()

    def wait(self) -> None:
        self.dev.wait_idle()

    def gpu_ns(self, repeats: int) -> dict[str, int | None]:
        if not self.dev.timestamps:
            return {"gpu_ns": None}
        return {"gpu_ns": _median_gpu(lambda: self.seq.replay(timing=True).gpu_time_ns, repeats)}

    def read(self, name: str) -> bytes:
        return bytes(self.bufs[name].read())

    def close(self) -> None:
        self.dev.wait_idle()
        self.seq.release()
        for b in self.bufs.values():
            b.release()
        for p in self.pipes.values():
            p.release()


# ---- wgpu-py -----------------------------------------------------------------------------


class _WgpuProgram:
    """What both wgpu-py ways share: buffers, pipelines and bind groups, made once."""

    def __init__(self, wgpu: Any, device: Any, program: Program) -> None:
        self.wgpu, self.device, self.queue = wgpu, device, device.queue
        usage = (
            wgpu.BufferUsage.STORAGE
            | wgpu.BufferUsage.UNIFORM
            | wgpu.BufferUsage.COPY_SRC
            | wgpu.BufferUsage.COPY_DST
        )
        self.bufs = {
            name: device.create_buffer_with_data(data=c, usage=usage)
            if isinstance(c, np.ndarray)
            else device.create_buffer(size=max(4, -(-c // 4) * 4), usage=usage)
            for name, c in program.buffers.items()
        }
        pipes = {}
        for k in program.kernels.values():
            module = device.create_shader_module(code=k.wgsl)
            pipes[k.name] = device.create_compute_pipeline(
                layout="auto", compute={"module": module, "entry_point": "main"}
            )
        self.pipes = pipes
        self.plan: list[tuple[Any, Any, tuple[int, int, int]]] = []
        for st in program.steps:
            pipe = pipes[st.kernel]
            entries = []
            for index, name, _ in program.kernels[st.kernel].bindings:
                buf = self.bufs[st.bind[name]]
                entries.append({"binding": index, "resource": {"buffer": buf, "offset": 0, "size": buf.size}})
            group = device.create_bind_group(layout=pipe.get_bind_group_layout(0), entries=entries)
            self.plan.append((pipe, group, st.workgroups))
        self.timestamps = "timestamp-query" in device.features
        self.period = 1.0
        if self.timestamps:
            try:
                from wgpu.backends.wgpu_native._api import libf

                self.period = float(libf.wgpuQueueGetTimestampPeriod(self.queue._internal)) or 1.0
            except (ImportError, AttributeError):  # pragma: no cover - another wgpu-py
                pass

    def wait(self) -> None:
        # wgpu-py 0.32's on_submitted_work_done_sync() fails against its own
        # wgpu-native (see benchmarks/harness.py wgpu_wait); poll as wgpu-py does
        poll_wait = getattr(self.device, "_poll_wait", None)
        if poll_wait is not None:
            poll_wait()
        else:  # pragma: no cover - a later wgpu-py
            self.queue.on_submitted_work_done_sync()

    def read(self, name: str) -> bytes:
        return bytes(self.queue.read_buffer(self.bufs[name]))

    def _timestamps(self, count: int) -> tuple[Any, Any]:
        wgpu = self.wgpu
        qs = self.device.create_query_set(type=wgpu.QueryType.timestamp, count=count)
        dst = self.device.create_buffer(
            size=8 * count, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC
        )
        return qs, dst

    def _ticks(self, dst: Any) -> np.ndarray:
        return np.frombuffer(self.queue.read_buffer(dst), np.uint64).astype(np.float64) * self.period

    def close(self) -> None:
        self.wait()
        for b in self.bufs.values():
            b.destroy()


class WgpuWellWay(_WgpuProgram):
    """wgpu-py done well: per iteration one encoder, one pass, one submit."""

    name = "wgpu-py-well"

    def _encode(self, timestamp_writes: Any = None) -> Any:
        enc = self.device.create_command_encoder()
        cpass = enc.begin_compute_pass(timestamp_writes=timestamp_writes)
        last = None
        for pipe, group, wg in self.plan:
            if pipe is not last:
                cpass.set_pipeline(pipe)
                last = pipe
            cpass.set_bind_group(0, group)
            cpass.dispatch_workgroups(*wg)
        cpass.end()
        return enc

    def submit(self) -> None:
        self.queue.submit([self._encode().finish()])

    def run(self) -> None:
        self.submit()
        self.wait()

    def gpu_ns(self, repeats: int) -> dict[str, int | None]:
        if not self.timestamps:
            return {"gpu_ns": None}
        qs, dst = self._timestamps(2)

        def timed() -> int:
            enc = self._encode(
                {"query_set": qs, "beginning_of_pass_write_index": 0, "end_of_pass_write_index": 1}
            )
            enc.resolve_query_set(qs, 0, 2, dst, 0)
            self.queue.submit([enc.finish()])
            t = self._ticks(dst)
            return int(t[1] - t[0])

        return {"gpu_ns": _median_gpu(timed, repeats)}


class WgpuSimpleWay(_WgpuProgram):
    """wgpu-py done simply: one encoder, pass and submit per kernel (bind groups made once)."""

    name = "wgpu-py-simple"

    def submit(self) -> None:
        device, queue = self.device, self.queue
        for pipe, group, wg in self.plan:
            enc = device.create_command_encoder()
            cpass = enc.begin_compute_pass()
            cpass.set_pipeline(pipe)
            cpass.set_bind_group(0, group)
            cpass.dispatch_workgroups(*wg)
            cpass.end()
            queue.submit([enc.finish()])

    def run(self) -> None:
        self.submit()
        self.wait()

    def gpu_ns(self, repeats: int) -> dict[str, int | None]:
        """``gpu_ns``: first pass start to last pass end (idle gaps between submits
        included); ``gpu_busy_ns``: the passes' own times summed."""
        if not self.timestamps:
            return {"gpu_ns": None, "gpu_busy_ns": None}
        k = len(self.plan)
        qs, dst = self._timestamps(2 * k)
        spans: list[int] = []
        busy: list[int] = []
        for _ in range(repeats):
            for i, (pipe, group, wg) in enumerate(self.plan):
                enc = self.device.create_command_encoder()
                cpass = enc.begin_compute_pass(
                    timestamp_writes={
                        "query_set": qs,
                        "beginning_of_pass_write_index": 2 * i,
                        "end_of_pass_write_index": 2 * i + 1,
                    }
                )
                cpass.set_pipeline(pipe)
                cpass.set_bind_group(0, group)
                cpass.dispatch_workgroups(*wg)
                cpass.end()
                if i == k - 1:
                    enc.resolve_query_set(qs, 0, 2 * k, dst, 0)
                self.queue.submit([enc.finish()])
            t = self._ticks(dst)
            spans.append(int(t[-1] - t[0]))
            busy.append(int(np.sum(t[1::2] - t[0::2])))
        return {"gpu_ns": int(statistics.median(spans)), "gpu_busy_ns": int(statistics.median(busy))}


WAYS = ("vyre_native", "wgpu-py-well", "wgpu-py-simple")
