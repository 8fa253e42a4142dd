"""A hypothesis state machine drives random sequences of the whole API on one device.

Each example makes a fresh vn.Device and then, step by step: uploads and allocates
buffers (valid and invalid sizes and usages), compiles WGSL from a small fixed set
(plus invalid WGSL), records pre-recorded dispatches, replayable recordings and
sequences from random -- often wrong -- handle lists and workgroup counts, replays,
reads outputs back into every kind of destination, writes and reads buffers, starts
and finishes asynchronous reads, submits batches (also while another thread releases
one of the submitted items or a buffer), releases random handles, and near
the end closes or destroys the device.

A model of every buffer's contents (float32 values that are small integers, so GPU
arithmetic is exact) predicts each outcome: the result, or the exception class the
package documents for that misuse, in the order the package checks. Anything else
fails: an undocumented exception, a documented one where none was due (or the wrong
one), a VyreError whose message has no "Fix:", or bytes read back that differ from
the model. After each example every handle is released, and vn.debug.live_objects()
must be back at its count from before the example.

The machine runs in a child interpreter so that an abort inside wgpu-native fails
this test (with the step log printed before the abort) instead of killing pytest.
Budget: derandomized, 60 examples of up to 30 steps, a few seconds on lavapipe.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    precondition,
    rule,
    run_state_machine_as_test,
)
from support import resource_log
from support.child import run
from support.kernels import AFFINE, COUNTER_F32, DOUBLE

import vyre_native as vn

U = vn.BufferUsage

# No shrink phase by default: a failing example is reported as generated (at most 30
# steps, with the step log), at once, rather than after minutes of shrinking on a
# CPU Vulkan driver. VN_STATEFUL_SHRINK=1 turns shrinking on when hunting a bug.
SETTINGS = settings(
    max_examples=60,
    stateful_step_count=30,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.generate]
    + ([Phase.shrink] if os.environ.get("VN_STATEFUL_SHRINK") else []),
)

# ---------------------------------------------------------------- the fixed WGSL set

# name -> (WGSL, compile kwargs, workgroup size x)
SHADERS: dict[str, tuple[str, dict[str, Any], int]] = {
    # out[i] = inp[i] * 2
    "double": (DOUBLE, {}, 64),
    # y[i] = x[i] * p.scale + p.shift; the uniform sits between input and output
    "scale": (AFFINE, {}, 64),
    # state[i] += 1, preserved in/out state: never cleared
    "accumulate": (COUNTER_F32, {"preserve": ["state"]}, 64),
    # fixed-size types: inp needs 64 bytes, out 64 bytes
    "fixed": (
        """
        @group(0) @binding(0) var<storage, read> inp: array<f32, 16>;
        @group(0) @binding(1) var<storage, read_write> out: array<f32, 16>;
        @compute @workgroup_size(16)
        fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
            let i = gid.x;
            if (i < 16u) { out[i] = inp[i] + 1.0; }
        }
        """,
        {},
        16,
    ),
}
BAD_SHADERS = {
    "syntax_error": ("@compute @workgroup_size(1) fn main() { let x = ; }", {}),
    "type_error": ("@compute @workgroup_size(1) fn main() { let x: f32 = 1u; }", {}),
    "missing_entry": (SHADERS["double"][0], {"entry_point": "nope"}),
}

VALID_USAGES = [
    None,
    U.STORAGE | U.COPY_DST,  # no COPY_SRC: cannot be an output, cannot be read back
    U.STORAGE | U.COPY_SRC | U.COPY_DST,
    U.UNIFORM | U.COPY_DST | U.COPY_SRC,
    U.MAP_READ | U.COPY_DST,
    U.COPY_SRC | U.COPY_DST,
]
# invalid combinations (MAP_* only with the opposite COPY_*): refused, never an abort
INVALID_USAGES = [U.MAP_READ | U.STORAGE, U.MAP_WRITE | U.COPY_SRC | U.STORAGE]
USAGE_ERRORS = (vn.InvalidArgumentError, vn.ValidationError)

WORKGROUPS = [
    (1, 1, 1),
    (2, 1, 1),
    (3, 1, 1),
    (1, 2, 1),
    (0, 1, 1),
    (1, 1, 0),
    (65536, 1, 1),  # above lavapipe's max_compute_workgroups_per_dimension (checked against limits)
    (1, 1),
    (1, -1, 1),
    (1.5, 1, 1),
    "abc",
]

DESTS = ["return", "bytearray", "numpy_exact", "numpy_big", "numpy_small", "bytes"]

# ---------------------------------------------------------------- the model


@dataclass(eq=False)
class BufModel:
    handle: vn.Buffer
    byte_len: int
    usage: int
    data: np.ndarray | None  # float32 of allocation_len / 4 elements; None: unknown
    released: bool = False

    @property
    def alloc_len(self) -> int:
        return max(4, (self.byte_len + 3) & ~3)

    def expected_bytes(self) -> bytes | None:
        return None if self.data is None else self.data.tobytes()[: self.byte_len]


@dataclass(eq=False)
class PipeModel:
    handle: vn.Pipeline
    name: str
    released: bool = False


@dataclass(eq=False)
class Bound:
    """A resolved dispatch: pipeline, buffers in binding order, workgroups."""

    pipe: PipeModel
    slots: list[BufModel]  # one per binding, binding order
    outputs: list[BufModel]  # output order (read_write bindings)
    workgroups: tuple[int, int, int]


@dataclass(eq=False)
class DispatchModel:
    handle: vn.PrerecordedDispatch
    bound: Bound
    replayed: bool = False
    released: bool = False


@dataclass(eq=False)
class RecordingModel:
    handle: vn.Recording
    bound: Bound
    released: bool = False


@dataclass(eq=False)
class SequenceModel:
    handle: vn.Sequence
    steps: list[tuple[str, Any]] = field(default_factory=list)
    released: bool = False


@dataclass(eq=False)
class PendingModel:
    handle: vn.PendingRead
    expected: bytes | None
    finished: bool = False
    released: bool = False


def simulate(bound: Bound, clear: bool) -> None:
    """Apply one dispatch to the model's buffers."""
    name = bound.pipe.name
    wg_x, wg_y, wg_z = bound.workgroups
    size_x = SHADERS[name][2]
    runs = wg_x > 0 and wg_y > 0 and wg_z > 0
    invocations = wg_x * size_x if runs else 0
    if name == "accumulate":
        (state,) = bound.slots
        if runs and wg_y * wg_z > 1:
            # workgroups along y or z repeat the same gid.x: racing read-modify-writes
            state.data = None
        elif state.data is not None:
            n = min(invocations, len(state.data))
            state.data = state.data.copy()
            state.data[:n] += 1
        return
    if name == "double":
        src, out = bound.slots
        compute = lambda s, n: s[:n] * 2
        limit = len(out.data) if out.data is not None else out.alloc_len // 4
    elif name == "scale":
        src, par, out = bound.slots
        if par.data is None:
            out.data = None if invocations else out.data
            if clear and not invocations:
                out.data = np.zeros(out.alloc_len // 4, np.float32)
            return
        sc, sh = par.data[0], par.data[1]
        compute = lambda s, n: s[:n] * sc + sh
        limit = out.alloc_len // 4
    else:  # fixed
        src, out = bound.slots
        compute = lambda s, n: s[:n] + 1
        limit = 16
    n = min(invocations, limit, out.alloc_len // 4)
    base = np.zeros(out.alloc_len // 4, np.float32) if clear else out.data
    if base is None or (n > 0 and (src.data is None or n > len(src.data))):
        # unknown old contents, or reads past the input (robust access: implementation-defined)
        out.data = None
        return
    new = base.copy()
    if n > 0:
        new[:n] = compute(src.data, n).astype(np.float32)
    out.data = new


# ---------------------------------------------------------------- the machine


class APIMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        gc.collect()
        self.baseline = vn.debug.live_objects()
        self.dev = vn.Device()
        self.max_wg = self.dev.limits["max_compute_workgroups_per_dimension"]
        self.max_buffer = self.dev.limits["max_buffer_size"]
        self.ended: str | None = None  # "close" or "destroy"
        self.steps = 0
        self.broken = False  # a step failed: the traceback keeps handles alive, so skip the leak check
        self.bufs: list[BufModel] = []
        self.pipes: list[PipeModel] = []
        self.dispatches: list[DispatchModel] = []
        self.recordings: list[RecordingModel] = []
        self.sequences: list[SequenceModel] = []
        self.pending: list[PendingModel] = []
        self.submissions: list[vn.Submission] = []
        self.raced = False  # a submit raced a release (submit_while_another_thread_releases)
        self.rng = np.random.default_rng(0)
        log("---- new example")

    # ---- helpers

    def end_error(self) -> type[vn.VyreError] | None:
        return {"close": vn.ReleasedError, "destroy": vn.DeviceLostError, None: None}[self.ended]

    def call(
        self,
        what: str,
        fn: Any,
        expected: type[BaseException] | tuple[type[BaseException], ...] | None,
        maybe: bool = False,
    ) -> Any:
        """Run fn; it must succeed when expected is None, else raise expected (or, with
        maybe, either). Every exception must be a VyreError whose message has a Fix."""
        self.steps += 1
        log(
            f"{self.steps:3d} {what} -> expect {getattr(expected, '__name__', expected)}{' or ok' if maybe else ''}"
        )
        self.broken = True
        try:
            result = fn()
        except vn.VyreError as err:
            msg = str(err)
            assert "Fix:" in msg, f"{what}: {type(err).__name__} without 'Fix:': {msg!r}"
            if expected is None or not isinstance(err, expected):
                raise AssertionError(
                    f"{what}: expected {getattr(expected, '__name__', expected) or 'success'}, "
                    f"got {type(err).__name__}: {msg}"
                ) from err
            self.broken = False
            return _FAILED
        if expected is not None and not maybe:
            raise AssertionError(
                f"{what}: expected {getattr(expected, '__name__', expected)}, but it succeeded"
            )
        self.broken = False
        return result

    def pick(self, items: list[Any], i: int) -> Any:
        return items[i % len(items)]

    def new_float_data(self, n: int) -> np.ndarray:
        return self.rng.integers(-8, 9, n).astype(np.float32)

    def dest_for(self, kind: str, n: int) -> Any:
        return {
            "bytearray": lambda: bytearray(self.rng.integers(0, 3) * 7),
            "numpy_exact": lambda: np.empty(n, np.uint8),
            "numpy_big": lambda: np.empty(n + 8, np.uint8),
            "numpy_small": lambda: np.empty(max(n - 1, 0), np.uint8),
            "bytes": lambda: bytes(n),
        }[kind]()

    @staticmethod
    def dest_type_error(kind: str) -> type[vn.VyreError] | None:
        """Refused by the marshalling step, before any C call: not a writable buffer."""
        return vn.WrongTypeError if kind == "bytes" else None

    @staticmethod
    def dest_size_error(kind: str, n: int) -> type[vn.VyreError] | None:
        """Refused by C, after its checks of the object's state: too small for n bytes."""
        return vn.InvalidArgumentError if kind == "numpy_small" and n > 0 else None

    def check_read(self, what: str, got: Any, dest: Any, kind: str, expected: bytes | None, n: int) -> None:
        if got is _FAILED:
            return
        data = bytes(got) if kind == "return" else bytes(memoryview(dest).cast("B"))[:n]
        if kind == "bytearray":
            assert len(dest) == n, f"{what}: bytearray left at {len(dest)} bytes, not {n}"
        assert len(data) == n, f"{what}: read {len(data)} bytes, not {n}"
        if expected is not None:
            assert data == expected, (
                f"{what}: read back {np.frombuffer(data[: n & ~3], np.float32)[:16]}, "
                f"model says {np.frombuffer(expected[: n & ~3], np.float32)[:16]}"
            )

    def workgroup_error(self, wg: Any) -> type[vn.VyreError] | None:
        if not isinstance(wg, tuple) or len(wg) != 3 or any(not isinstance(c, int) for c in wg):
            return vn.WrongTypeError
        if any(c < 0 for c in wg):
            return vn.InvalidArgumentError
        return None

    def resolve(
        self, pipe: PipeModel, ins: list[BufModel], outs: list[BufModel], params: BufModel | None, wg: Any
    ) -> tuple[type[vn.VyreError] | None, Bound | None]:
        """The error the C layer reports for these handles (after the Python checks), or the binding."""
        if self.ended:
            return self.end_error(), None
        if any(c > self.max_wg for c in wg):
            return vn.InvalidArgumentError, None
        slots: list[BufModel] = []
        outputs: list[BufModel] = []
        next_in = next_out = 0
        params_used = False
        for b in pipe.handle.bindings:
            if b.kind == "storage_read_write":
                if next_out >= len(outs):
                    return vn.BindingError, None
                h = outs[next_out]
                next_out += 1
                outputs.append(h)
                need = U.STORAGE | U.COPY_SRC | U.COPY_DST
            elif b.kind == "uniform" and params is not None and not params_used:
                h, params_used = params, True
                need = U.UNIFORM | U.COPY_DST
            else:
                if next_in >= len(ins):
                    return vn.BindingError, None
                h = ins[next_in]
                next_in += 1
                need = (U.UNIFORM if b.kind == "uniform" else U.STORAGE) | U.COPY_DST
            if (h.usage & need) != need or h.alloc_len < b.min_size:
                return vn.BindingError, None
            slots.append(h)
        if next_in != len(ins) or next_out != len(outs) or (params is not None and not params_used):
            return vn.BindingError, None
        if self.aliased(slots, outputs):
            return vn.BindingError, None
        return None, Bound(pipe, slots, outputs, tuple(wg))

    @staticmethod
    def aliased(slots: list[BufModel], outputs: list[BufModel]) -> bool:
        """An output buffer also bound in another slot. The model binds whole buffers, so
        that is a read-only use beside the writable one (a usage-scope conflict) or two
        writable bindings of one range (writable aliasing): the C layer refuses both when
        it resolves the handles (disjoint views, which WebGPU allows, are not modelled)."""
        return any(sum(s is o for s in slots) > 1 for o in outputs)

    def python_record_errors(self, pipe: PipeModel | None, wg: Any, handles: list[BufModel]) -> Any:
        if pipe is not None and pipe.released:
            return vn.ReleasedError
        err = self.workgroup_error(wg)
        if err:
            return err
        if any(h.released for h in handles):
            return vn.ReleasedError
        return None

    def apply_sequence(self, seq: SequenceModel, times: int) -> None:
        for _ in range(times):
            for kind, step in seq.steps:
                if kind == "dispatch":
                    bound, clear = step
                    simulate(bound, clear)
                elif kind == "copy":
                    src, dst = step
                    n = min(src.alloc_len, dst.alloc_len) // 4
                    if src.data is None or dst.data is None:
                        dst.data = None
                    else:
                        dst.data = dst.data.copy()
                        dst.data[:n] = src.data[:n]
                elif kind == "clear":
                    step.data = np.zeros(step.alloc_len // 4, np.float32)

    # ---- setup

    @initialize()
    def start(self) -> None:
        for n in (64, 64):
            data = self.new_float_data(n)
            self.bufs.append(BufModel(self.dev.upload(data), data.nbytes, int(U.DEFAULT), data))
        self.bufs.append(BufModel(self.dev.alloc(256), 256, int(U.DEFAULT), np.zeros(64, np.float32)))
        self.pipes.append(PipeModel(self.dev.compile(SHADERS["double"][0]), "double"))

    # ---- buffers

    @rule(n=st.integers(0, 80), usage=st.sampled_from(VALID_USAGES + INVALID_USAGES))
    def upload(self, n: int, usage: Any) -> None:
        data = self.new_float_data(n)
        err: Any = self.end_error()
        if err is None and usage in INVALID_USAGES:
            err = USAGE_ERRORS
        h = self.call(f"upload({n} floats, usage={usage!r})", lambda: self.dev.upload(data, usage=usage), err)
        if h is not _FAILED:
            padded = data if n else np.zeros(1, np.float32)
            self.bufs.append(BufModel(h, data.nbytes, int(usage or U.DEFAULT), padded))

    @rule(
        size=st.one_of(st.integers(0, 400), st.sampled_from([-1, 2**70, "x", "limit+1"])),
        usage=st.sampled_from(VALID_USAGES + INVALID_USAGES),
    )
    def alloc(self, size: Any, usage: Any) -> None:
        if size == "limit+1":
            size = self.max_buffer + 1
        err: Any = None
        if self.ended == "close":
            err = vn.ReleasedError
        elif isinstance(size, str):
            err = (vn.WrongTypeError, vn.InvalidArgumentError)
        elif size < 0 or size >= 1 << 64:
            err = vn.InvalidArgumentError
        elif self.ended:
            err = self.end_error()
        elif usage in INVALID_USAGES:
            err = USAGE_ERRORS
        elif size > self.max_buffer:
            err = vn.OutOfMemoryError
        h = self.call(f"alloc({size!r}, usage={usage!r})", lambda: self.dev.alloc(size, usage=usage), err)
        if h is not _FAILED:
            n = max(4, (size + 3) & ~3) // 4
            self.bufs.append(BufModel(h, size, int(usage or U.DEFAULT), np.zeros(n, np.float32)))

    @precondition(lambda self: self.bufs)
    @rule(i=st.integers(0, 99), n=st.integers(0, 20), offset=st.sampled_from([0, 4, 8, 2, -4, "4", "end"]))
    def write(self, i: int, n: int, offset: Any) -> None:
        b = self.pick(self.bufs, i)
        if offset == "end":
            offset = max(b.byte_len - 4 * n, 0)
        data = self.new_float_data(n)
        err: Any = None
        if b.released:
            err = vn.ReleasedError
        elif isinstance(offset, str):
            err = (vn.WrongTypeError, vn.InvalidArgumentError)
        elif offset < 0:
            err = vn.InvalidArgumentError
        elif self.ended:
            err = self.end_error()
        elif not b.usage & U.COPY_DST or offset > b.byte_len or data.nbytes > b.byte_len - offset:
            err = vn.InvalidArgumentError
        elif offset % 4 and data.nbytes and not b.usage & U.COPY_SRC:
            err = vn.InvalidArgumentError  # its partial first word is read back in: needs COPY_SRC
        r = self.call(
            f"buf[{i % len(self.bufs)}].write({n} floats, offset={offset!r})",
            lambda: b.handle.write(data, offset=offset),
            err,
        )
        if r is not _FAILED and b.data is not None and n:
            b.data = b.data.copy()
            b.data.view(np.uint8)[offset : offset + data.nbytes] = data.view(np.uint8)  # any byte offset

    @precondition(lambda self: self.bufs)
    @rule(i=st.integers(0, 99), dest=st.sampled_from(DESTS))
    def read(self, i: int, dest: str) -> None:
        b = self.pick(self.bufs, i)
        n = b.byte_len
        out = None if dest == "return" else self.dest_for(dest, n)
        err: Any = None
        if b.released:
            err = vn.ReleasedError
        elif dest != "return" and self.dest_type_error(dest):
            err = self.dest_type_error(dest)
        elif self.ended:
            err = self.end_error()
        elif not b.usage & U.COPY_SRC:
            err = vn.InvalidArgumentError
        elif dest != "return":
            err = self.dest_size_error(dest, n)
        what = f"buf[{i % len(self.bufs)}].read({dest})"
        got = self.call(
            what, (lambda: b.handle.read()) if dest == "return" else (lambda: b.handle.read_into(out)), err
        )
        self.check_read(what, got, out, dest, b.expected_bytes(), n)

    @precondition(lambda self: self.bufs)
    @rule(i=st.integers(0, 99))
    def read_async(self, i: int) -> None:
        b = self.pick(self.bufs, i)
        err: Any = None
        if b.released:
            err = vn.ReleasedError
        elif self.ended:
            err = self.end_error()
        elif not b.usage & U.COPY_SRC:
            err = vn.InvalidArgumentError
        h = self.call(f"buf[{i % len(self.bufs)}].read_async()", lambda: b.handle.read_async(), err)
        if h is not _FAILED:
            self.pending.append(PendingModel(h, b.expected_bytes()))

    @precondition(lambda self: self.pending)
    @rule(i=st.integers(0, 99), dest=st.sampled_from(DESTS))
    def finish_read(self, i: int, dest: str) -> None:
        p = self.pick(self.pending, i)
        n = p.handle.byte_len
        out = None if dest == "return" else self.dest_for(dest, n)
        err: Any = None
        maybe = False
        if p.released:
            err = vn.ReleasedError
        elif dest != "return" and self.dest_type_error(dest):
            err = self.dest_type_error(dest)
        elif dest != "return" and self.dest_size_error(dest, n):
            err = self.dest_size_error(dest, n)
        elif p.finished:
            err = None  # its data came back once: the read keeps it for every later waiter
        elif self.ended == "destroy":
            err = vn.DeviceLostError
        elif self.ended == "close":
            err, maybe = vn.ReleasedError, True  # the copy was queued before the close
        what = f"pending[{i % len(self.pending)}].result({dest})"
        got = self.call(
            what,
            (lambda: p.handle.result()) if dest == "return" else (lambda: p.handle.result_into(out)),
            err,
            maybe,
        )
        if got is not _FAILED:
            p.finished = True
        self.check_read(what, got, out, dest, p.expected, n)

    # ---- pipelines

    @rule(name=st.sampled_from(sorted(SHADERS) + sorted(BAD_SHADERS)))
    def compile(self, name: str) -> None:
        src, kwargs = (SHADERS[name][0], SHADERS[name][1]) if name in SHADERS else BAD_SHADERS[name]
        err: Any = None
        if self.ended == "close":
            err = vn.ReleasedError
        elif self.ended:
            err = vn.DeviceLostError
        elif name in BAD_SHADERS:
            err = vn.ShaderError
        h = self.call(f"compile({name})", lambda: self.dev.compile(src, **kwargs), err)
        if h is not _FAILED:
            self.pipes.append(PipeModel(h, name))

    # ---- dispatches

    def handles(self, idx: list[int]) -> list[BufModel]:
        return [self.pick(self.bufs, j) for j in idx]

    def matching_handles(self, pipe: PipeModel, seed: int) -> tuple[list[BufModel], list[BufModel]] | None:
        """Inputs and outputs that satisfy the pipeline's bindings, from live buffers."""
        ins: list[BufModel] = []
        outs: list[BufModel] = []
        for k, b in enumerate(pipe.handle.bindings):
            need = {
                "storage_read_write": U.STORAGE | U.COPY_SRC | U.COPY_DST,
                "uniform": U.UNIFORM | U.COPY_DST,
                "storage_read": U.STORAGE | U.COPY_DST,
            }[b.kind]
            ok = [
                h
                for h in self.bufs
                if not h.released and (h.usage & need) == need and h.alloc_len >= b.min_size
            ]
            if not ok:
                return None
            h = ok[(seed + k) % len(ok)]
            (outs if b.kind == "storage_read_write" else ins).append(h)
        return ins, outs

    def record_any(
        self,
        how: str,
        pipe: PipeModel,
        ins: list[BufModel],
        outs: list[BufModel],
        params: BufModel | None,
        wg: Any,
    ) -> None:
        handles = ins + outs + ([params] if params is not None else [])
        err = self.python_record_errors(pipe, wg, handles)
        bound = None
        if err is None:
            err, bound = self.resolve(pipe, ins, outs, params, wg)
        method = pipe.handle.prerecord_persistent_dispatch if how == "prerecord" else pipe.handle.record
        p_handle = params.handle if params is not None else None
        h = self.call(
            f"{how}({pipe.name}, ins={[self.bufs.index(x) for x in ins]}, outs={[self.bufs.index(x) for x in outs]}, "
            f"params={self.bufs.index(params) if params else None}, wg={wg!r})",
            lambda: method([x.handle for x in ins], [x.handle for x in outs], params=p_handle, workgroups=wg),
            err,
        )
        if h is _FAILED:
            return
        if how == "prerecord":
            assert h.output_count == len(bound.outputs)
            self.dispatches.append(DispatchModel(h, bound))
        else:
            assert len(h.outputs) == len(bound.outputs)
            self.recordings.append(RecordingModel(h, bound))

    @precondition(lambda self: self.pipes and self.bufs)
    @rule(
        how=st.sampled_from(["prerecord", "record"]),
        p=st.integers(0, 99),
        ins=st.lists(st.integers(0, 99), max_size=3),
        outs=st.lists(st.integers(0, 99), max_size=2),
        params=st.one_of(st.none(), st.integers(0, 99)),
        wg=st.sampled_from(WORKGROUPS),
    )
    def record_random(
        self, how: str, p: int, ins: list[int], outs: list[int], params: int | None, wg: Any
    ) -> None:
        pipe = self.pick(self.pipes, p)
        par = self.pick(self.bufs, params) if params is not None else None
        self.record_any(how, pipe, self.handles(ins), self.handles(outs), par, wg)

    @precondition(lambda self: self.pipes and self.bufs)
    @rule(
        how=st.sampled_from(["prerecord", "record"]),
        p=st.integers(0, 99),
        seed=st.integers(0, 99),
        wg=st.sampled_from(WORKGROUPS[:6]),
    )
    def record_matching(self, how: str, p: int, seed: int, wg: Any) -> None:
        pipe = self.pick(self.pipes, p)
        if pipe.released:
            return
        found = self.matching_handles(pipe, seed)
        if found is not None:
            self.record_any(how, pipe, found[0], found[1], None, wg)

    @precondition(lambda self: self.dispatches)
    @rule(i=st.integers(0, 99))
    def replay_dispatch(self, i: int) -> None:
        d = self.pick(self.dispatches, i)
        err: Any = None
        if d.released:
            err = vn.ReleasedError
        elif self.ended:
            err = self.end_error()
        elif d.replayed:
            err = vn.AlreadySubmittedError
        r = self.call(f"dispatch[{i % len(self.dispatches)}].replay()", d.handle.replay, err)
        if r is not _FAILED:
            assert isinstance(r, int) and r > 0, r
            d.replayed = True
            simulate(d.bound, clear=True)

    @precondition(lambda self: self.recordings)
    @rule(i=st.integers(0, 99), n=st.sampled_from([1, 2, 3, 0]), wait=st.booleans())
    def replay_recording(self, i: int, n: int, wait: bool) -> None:
        r = self.pick(self.recordings, i)
        err: Any = None
        if r.released:
            err = vn.ReleasedError
        elif n == 0:
            err = vn.InvalidArgumentError
        elif self.ended:
            err = self.end_error()
        sub = self.call(f"recording[{i % len(self.recordings)}].replay({n})", lambda: r.handle.replay(n), err)
        if sub is _FAILED:
            return
        for _ in range(n):
            simulate(r.bound, clear=True)
        if wait:
            self.call("submission.wait(30)", lambda: sub.wait(30.0), None)
            assert sub.done
        else:
            self.submissions.append(sub)

    @precondition(lambda self: self.dispatches or self.recordings)
    @rule(
        which=st.integers(0, 99),
        index=st.one_of(st.just(0), st.sampled_from([1, -1])),
        dest=st.sampled_from(DESTS),
    )
    def read_output(self, which: int, index: int, dest: str) -> None:
        items: list[Any] = self.dispatches + self.recordings
        m = self.pick(items, which)
        is_dispatch = isinstance(m, DispatchModel)
        outs = m.bound.outputs
        good_index = 0 <= index < len(outs)
        n = outs[index].byte_len if good_index else 0
        out = None if dest == "return" else self.dest_for(dest, n)
        err: Any = None
        if m.released:
            err = vn.ReleasedError
        elif not good_index:
            err = vn.OutputIndexError
        elif dest != "return" and self.dest_type_error(dest):
            err = self.dest_type_error(dest)
        elif self.ended:
            err = self.end_error()
        elif is_dispatch and not m.replayed:
            err = vn.NotSubmittedError
        elif dest != "return":
            err = self.dest_size_error(dest, n)
        kind = "dispatch" if is_dispatch else "recording"
        what = f"{kind}.read_output({index}, {dest})"
        fn = (
            (lambda: m.handle.read_output(index))
            if dest == "return"
            else (lambda: m.handle.read_output_into(index, out))
        )
        got = self.call(what, fn, err)
        self.check_read(what, got, out, dest, outs[index].expected_bytes() if good_index else None, n)

    # ---- sequences and batches

    @precondition(lambda self: len(self.sequences) < 3)
    @rule()
    def new_sequence(self) -> None:
        err = vn.ReleasedError if self.ended == "close" else self.end_error()
        h = self.call("device.sequence()", self.dev.sequence, err)
        if h is not _FAILED:
            self.sequences.append(SequenceModel(h))

    @precondition(lambda self: self.sequences and self.pipes and self.bufs)
    @rule(
        s=st.integers(0, 99),
        p=st.integers(0, 99),
        seed=st.one_of(st.none(), st.integers(0, 99)),
        ins=st.lists(st.integers(0, 99), max_size=3),
        outs=st.lists(st.integers(0, 99), max_size=2),
        wg=st.sampled_from(WORKGROUPS),
        clear=st.booleans(),
    )
    def sequence_add(
        self, s: int, p: int, seed: int | None, ins: list[int], outs: list[int], wg: Any, clear: bool
    ) -> None:
        seq = self.pick(self.sequences, s)
        pipe = self.pick(self.pipes, p)
        hins, houts = self.handles(ins), self.handles(outs)
        if seed is not None and not pipe.released:
            found = self.matching_handles(pipe, seed)
            if found is not None:
                hins, houts = found
        err: Any = vn.ReleasedError if seq.released else None
        if err is None:
            err = self.workgroup_error(wg)
        if err is None and (any(h.released for h in hins + houts) or pipe.released):
            err = vn.ReleasedError
        bound = None
        if err is None:
            err, bound = self.resolve(pipe, hins, houts, None, wg)
        r = self.call(
            f"sequence[{s % len(self.sequences)}].add({pipe.name}, ins={[self.bufs.index(x) for x in hins]}, "
            f"outs={[self.bufs.index(x) for x in houts]}, wg={wg!r}, clear_outputs={clear})",
            lambda: seq.handle.add(
                pipe.handle,
                [x.handle for x in hins],
                [x.handle for x in houts],
                workgroups=wg,
                clear_outputs=clear,
            ),
            err,
        )
        if r is not _FAILED:
            seq.steps.append(("dispatch", (bound, clear)))

    @precondition(lambda self: self.sequences and self.bufs)
    @rule(
        s=st.integers(0, 99),
        a=st.integers(0, 99),
        b=st.integers(0, 99),
        what=st.sampled_from(["copy", "clear"]),
    )
    def sequence_copy_or_clear(self, s: int, a: int, b: int, what: str) -> None:
        seq = self.pick(self.sequences, s)
        src, dst = self.pick(self.bufs, a), self.pick(self.bufs, b)
        err: Any = None
        if what == "copy":
            if seq.released or src.released or dst.released:
                err = vn.ReleasedError
            elif self.ended:
                err = self.end_error()
            elif not src.usage & U.COPY_SRC or not dst.usage & U.COPY_DST:
                err = vn.BindingError
            elif src is dst:
                err = vn.InvalidArgumentError
            r = self.call(
                f"sequence.copy(buf[{a % len(self.bufs)}], buf[{b % len(self.bufs)}])",
                lambda: seq.handle.copy(src.handle, dst.handle),
                err,
            )
            if r is not _FAILED:
                seq.steps.append(("copy", (src, dst)))
        else:
            if seq.released or dst.released:
                err = vn.ReleasedError
            elif self.ended:
                err = self.end_error()
            elif not dst.usage & U.COPY_DST:
                err = vn.BindingError
            r = self.call(
                f"sequence.clear(buf[{b % len(self.bufs)}])", lambda: seq.handle.clear(dst.handle), err
            )
            if r is not _FAILED:
                seq.steps.append(("clear", dst))

    @precondition(lambda self: self.sequences)
    @rule(s=st.integers(0, 99), n=st.sampled_from([1, 2, 0]))
    def sequence_replay(self, s: int, n: int) -> None:
        seq = self.pick(self.sequences, s)
        err: Any = None
        if seq.released:
            err = vn.ReleasedError
        elif n == 0:
            err = vn.InvalidArgumentError
        elif not seq.steps:
            err = vn.InvalidArgumentError  # checked before the device
        elif self.ended:
            err = self.end_error()
        sub = self.call(
            f"sequence[{s % len(self.sequences)}].replay({n}) steps={len(seq.steps)}",
            lambda: seq.handle.replay(n),
            err,
        )
        if sub is not _FAILED:
            self.apply_sequence(seq, n)
            self.submissions.append(sub)

    def apply_submitted(self, work: list[Any], sub: vn.Submission) -> None:
        """The model after device.submit(work) ran: each item's launch, in order."""
        for w in work:
            if isinstance(w, RecordingModel):
                simulate(w.bound, clear=True)
            else:
                self.apply_sequence(w, 1)
        self.submissions.append(sub)

    @precondition(lambda self: self.sequences or self.recordings)
    @rule(picks=st.lists(st.integers(0, 99), min_size=0, max_size=3))
    def submit(self, picks: list[int]) -> None:
        items: list[Any] = self.recordings + self.sequences
        work = [self.pick(items, j) for j in picks]
        err: Any = None
        if self.ended == "close" or any(w.released for w in work):
            err = vn.ReleasedError
        elif self.ended:
            err = self.end_error()
        elif not work:
            err = vn.InvalidArgumentError
        sub = self.call(
            f"device.submit({len(work)} items)", lambda: self.dev.submit([w.handle for w in work]), err
        )
        if sub is _FAILED:
            return
        self.apply_submitted(work, sub)

    @precondition(lambda self: (self.sequences or self.recordings) and self.ended is None)
    @rule(
        picks=st.lists(st.integers(0, 99), min_size=1, max_size=3),
        victim=st.sampled_from(["work", "buffer"]),
        v=st.integers(0, 99),
    )
    def submit_while_another_thread_releases(self, picks: list[int], victim: str, v: int) -> None:
        """A release on another thread races the submit. Releasing one of the submitted
        items: the submit either runs all of them or raises ReleasedError and runs none.
        Releasing a buffer: items that bind it hold it, so the submit runs."""
        items: list[Any] = self.recordings + self.sequences
        work = [self.pick(items, j) for j in picks]
        if any(w.released for w in work):
            return  # the plain submit rule covers released items
        if victim == "buffer" and not self.bufs:
            return
        target = self.pick(work, v) if victim == "work" else self.pick(self.bufs, v)
        start = threading.Barrier(2)

        def release() -> None:
            start.wait()
            target.handle.release()

        self.raced = True
        releaser = threading.Thread(target=release)
        releaser.start()
        start.wait()
        sub = self.call(
            f"device.submit({len(work)} items) racing {victim}.release()",
            lambda: self.dev.submit([w.handle for w in work]),
            vn.ReleasedError if victim == "work" else None,
            maybe=victim == "work",
        )
        releaser.join()
        target.released = True
        assert target.handle.released
        if sub is _FAILED:
            return
        self.apply_submitted(work, sub)

    # ---- lifetime

    @rule(
        kind=st.sampled_from(["buf", "pipe", "dispatch", "recording", "sequence", "pending"]),
        i=st.integers(0, 99),
    )
    def release(self, kind: str, i: int) -> None:
        items = {
            "buf": self.bufs,
            "pipe": self.pipes,
            "dispatch": self.dispatches,
            "recording": self.recordings,
            "sequence": self.sequences,
            "pending": self.pending,
        }[kind]
        if not items:
            return
        m = self.pick(items, i)
        self.call(f"{kind}[{i % len(items)}].release()", m.handle.release, None)
        m.released = True
        assert m.handle.released

    # Also after a race: whether the racing submit ran depends on timing, and a
    # precondition that did would make hypothesis's replays diverge.
    @precondition(lambda self: self.submissions or self.raced)
    @rule()
    def wait_idle(self) -> None:
        err = vn.ReleasedError if self.ended == "close" else self.end_error()
        self.call("device.wait_idle()", self.dev.wait_idle, err)
        if err is None:
            for sub in self.submissions:
                assert sub.done, f"submission {sub.index} not done after wait_idle"

    @precondition(lambda self: self.steps >= 15 and self.ended is None)
    @rule(mode=st.sampled_from(["close", "close", "destroy"]))
    def end_device(self, mode: str) -> None:
        self.call(f"device.{mode}()", getattr(self.dev, mode), None)
        self.ended = mode

    def teardown(self) -> None:
        log("---- teardown")
        if self.broken:
            return  # the failing step is the report; its traceback still holds handles
        if self.ended is None:
            self.dev.wait_idle()
        for items in (self.pending, self.dispatches, self.recordings, self.sequences, self.pipes, self.bufs):
            for m in items:
                m.handle.release()
        self.dev.close()
        self.bufs = self.pipes = self.dispatches = self.recordings = self.sequences = self.pending = []
        self.submissions = []
        self.dev = None  # type: ignore[assignment]
        gc.collect()
        after = vn.debug.live_objects()
        assert after == self.baseline, (
            f"live objects {after} differ from {self.baseline} after releasing everything"
        )
        resource_log.append("stateful example")


class _Failed:
    def __repr__(self) -> str:
        return "<failed as expected>"


_FAILED = _Failed()


def log(line: str) -> None:
    """A step log on stderr: when wgpu-native aborts, its tail shows the steps that led there."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def run_machine() -> None:
    """Entry point of the child interpreter."""
    gc.collect()
    before = vn.debug.live_objects()
    run_state_machine_as_test(APIMachine, settings=SETTINGS)
    gc.collect()
    after = vn.debug.live_objects()
    assert after == before, f"live objects {after} differ from {before} after the machine run"
    print("MACHINE OK", flush=True)


def test_api_state_machine() -> None:
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('vn_test_stateful', {os.path.abspath(__file__)!r})\n"
        "mod = importlib.util.module_from_spec(spec)\n"
        "sys.modules['vn_test_stateful'] = mod\n"
        "spec.loader.exec_module(mod)\n"
        "mod.run_machine()\n"
    )
    proc = run(["-c", code], timeout=600)
    tail = (proc.stdout + proc.stderr)[-12000:]
    assert proc.returncode == 0, f"state machine child exited with {proc.returncode}:\n{tail}"
    assert "MACHINE OK" in proc.stdout, tail
