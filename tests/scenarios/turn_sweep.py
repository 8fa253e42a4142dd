"""Signals and finalizers at every instruction of taking and giving back a turn (see
tests/test_turns.py). argv: a target (``TARGETS``), then a way in (``MODES``).

The window of a turn is every instruction on the line of a ``with`` statement in
vyre_native/worker.py or interop.py (the context expression, the enter, the exit on
both paths) and every instruction of what those instructions call (the turn's own
methods, whichever module they live in). For each point k of that window a step runs
the target's outer call, with a trace function that counts the points and, at the k-th,
turns itself off and then:

- interrupt: trips SIGINT as a signal arriving there would (``_Signum.pending``: C
  code, and no instruction after it checks the eval breaker, so CPython runs the
  handler, whose KeyboardInterrupt is Ctrl-C's, at the first eval-breaker check that
  would have run it had the signal arrived at that moment);
- handler: trips SIGUSR1 the same way; its handler makes the target's nested call;
- finalizer: drops the last reference to an object whose ``__del__`` makes the nested
  call (a finalizer may run at any instruction: any allocation can start a collection).

After each step the turn must be free: the probe call works on this thread and on
another. Each report is {"points", "outcomes": {outer/nested: count}, "failures"}.
A step that waits for ever (a turn held by nobody, a nested call waiting on its own
thread) is reported as {"hang": step} by a guard that ends the child.
"""

from __future__ import annotations

import _thread
import dis
import os
import signal
import sys
import threading
import time
import types
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import wgpu
from support.childlib import report
from support.kernels import DOUBLE

import vyre_native as vn

# A hang guard, not a time the test holds a step to: a step takes milliseconds; one
# that waits on a turn nobody will give back waits for ever, and this ends it.
HANG_S = 60.0
MODES = ("interrupt", "handler", "finalizer")


class _Signum(int):
    # Reading `pending` trips the signal in C (_thread.interrupt_main: what the C-level
    # handler of a real signal does), with no call after it: nothing between here and
    # the traced code checks the eval breaker.
    pending = property(_thread.interrupt_main)


SIGINT, SIGUSR1 = _Signum(signal.SIGINT), _Signum(signal.SIGUSR1)


# ---- the window --------------------------------------------------------------------


def _codes(module: types.ModuleType) -> set[types.CodeType]:
    """Every code object defined in ``module``'s file (functions, methods, nested ones)."""
    found: set[types.CodeType] = set()

    def add(code: types.CodeType) -> None:
        if code.co_filename == module.__file__ and code not in found:
            found.add(code)
            for const in code.co_consts:
                if isinstance(const, types.CodeType):
                    add(const)

    def visit(value: Any) -> None:
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if isinstance(value, property):
            for f in (value.fget, value.fset, value.fdel):
                if f is not None:
                    visit(f)
        if isinstance(value, types.FunctionType):
            add(value.__code__)
        if isinstance(value, type) and value.__module__ == module.__name__:
            for v in vars(value).values():
                visit(v)

    for value in vars(module).values():
        visit(value)
    return found


def with_lines() -> dict[types.CodeType, frozenset[int]]:
    """Each code object of the modules that take turns, and its lines holding a ``with``."""
    lines: dict[types.CodeType, frozenset[int]] = {}
    for module in (vn.worker, vn.interop):
        for code in _codes(module):
            at = {
                i.positions.lineno
                for i in dis.get_instructions(code)
                if i.opname in ("BEFORE_WITH", "LOAD_SPECIAL") and i.positions and i.positions.lineno
            }
            if at:  # a function without one is inside the window of the with that called it, or not
                lines[code] = frozenset(at)
    return lines


class Sweep:
    """The trace function: counts the window's points, acts at point ``at``."""

    def __init__(self, lines: dict[types.CodeType, frozenset[int]], at: int, act: Callable[[], None] | None) -> None:
        self.lines, self.at, self.act = lines, at, act
        self.points = 0
        self.done = False

    def inside(self, frame: types.FrameType | None) -> bool:
        while frame is not None:
            lines = self.lines.get(frame.f_code)
            if lines is not None:
                return frame.f_lineno in lines
            frame = frame.f_back
        return False

    def call(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        root = frame.f_code in self.lines
        if not root and not self.inside(frame):
            return None
        frame.f_trace_opcodes = True
        if not root:
            return self.local(frame, event, arg)  # its start is a point
        return self.local

    def local(self, frame: types.FrameType, event: str, arg: Any) -> Any:
        if self.done:
            return None
        if event in ("call", "opcode", "return") and self.inside(frame):
            n = self.points
            self.points = n + 1
            if n == self.at:
                sys.settrace(None)
                self.done = True
                act = self.act
                if act is None:
                    return None
                if act is _trip_sigint:
                    SIGINT.pending  # noqa: B018 - the last thing: the handler runs where CPython puts it
                    return None
                if act is _trip_sigusr1:
                    SIGUSR1.pending  # noqa: B018
                    return None
                act()
                return None
        return self.local


def _trip_sigint() -> None: ...  # markers: the trip itself is inline in Sweep.local


def _trip_sigusr1() -> None: ...


# ---- targets ------------------------------------------------------------------------


class Target(ABC):
    """A call swept, and the call made inside it. ``expect``: the class the outer call
    raises, if it is one that raises in its turn."""

    expect: type[BaseException] | None = None
    nested_name = ""

    def fresh(self) -> None:
        """Per step state, made outside the trace."""

    @abstractmethod
    def outer(self) -> Any:
        """The call swept; a value ``check`` accepts."""

    @abstractmethod
    def nested(self) -> Any:
        """The call a handler or finalizer makes inside it; a value ``check`` accepts."""

    @abstractmethod
    def check(self, value: Any) -> bool:
        """Whether `value` is what outer() or nested() should return."""


N = 256
SPEC = [("f4", (N,))]
GROUPS = (N // 64, 1, 1)


class WorkerRun(Target):
    nested_name = "Worker.run()"

    def __init__(self) -> None:
        self.w = vn.worker.Worker(kernels={"double": DOUBLE})
        self.x = np.arange(N, dtype=np.float32)
        self.y = np.full(N, 7, np.float32)
        assert self.check(WorkerRun.outer(self))  # records once: the swept runs replay

    def outer(self) -> Any:
        return ("x", self.w.run("double", [self.x], SPEC, GROUPS))

    def nested(self) -> Any:
        return ("y", self.w.run("double", [self.y], SPEC, GROUPS))

    def check(self, value: Any) -> bool:
        which, (out,) = value
        return bool((out == 2 * (self.x if which == "x" else self.y)).all())


class WorkerRunRaising(WorkerRun):
    """A run that raises inside its turn (no kernel of that name): the turn it abandons
    must be given back."""

    expect = vn.InvalidArgumentError

    def outer(self) -> Any:
        return self.w.run("missing", [self.x], SPEC, GROUPS)


class WorkerCompile(WorkerRun):
    def outer(self) -> Any:
        return ("names", self.w.compile("again", DOUBLE))

    def check(self, value: Any) -> bool:
        if value[0] == "names":
            return bool(value[1] == ["inp", "out"])
        return super().check(value)


class InteropMap(Target):
    """wgpu-py's map and unmap of a shared buffer (the hooks take the buffer's watch turn);
    nested: ``Buffer.from_wgpu`` of that buffer (the registry's turn, then the watch's)."""

    nested_name = "Buffer.from_wgpu()"

    def __init__(self) -> None:
        self.gdev = wgpu.gpu.request_adapter_sync().request_device_sync()
        self.dev = vn.Device.from_wgpu(self.gdev)
        self.fresh()
        assert self.check(self.outer())  # once untraced: cffi parses wgpu-py's types the first time, slowly when traced

    def fresh(self) -> None:
        usage = wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST
        self.gbuf = self.gdev.create_buffer(size=64, usage=usage)
        self.buf = vn.Buffer.from_wgpu(self.gbuf)

    def outer(self) -> Any:
        self.gbuf.map_sync(wgpu.MapMode.READ)
        self.gbuf.unmap()
        return "mapped and unmapped"

    def nested(self) -> Any:
        return vn.Buffer.from_wgpu(self.gbuf)

    def check(self, value: Any) -> bool:
        if isinstance(value, vn.Buffer):
            return bool(value.allocation_identity == self.buf.allocation_identity)
        return bool(value == "mapped and unmapped")


class InteropAdopt(InteropMap):
    """``Buffer.from_wgpu`` of a new buffer: the registry's turn, the device watch's and
    the buffer watch's, one inside another."""

    def fresh(self) -> None:
        super().fresh()
        self.new = self.gdev.create_buffer(size=64, usage=wgpu.BufferUsage.STORAGE)

    def outer(self) -> Any:
        return ("adopted", vn.Buffer.from_wgpu(self.new).byte_len)

    def check(self, value: Any) -> bool:
        if isinstance(value, tuple):
            return value == ("adopted", 64)
        return super().check(value)


TARGETS: dict[str, Callable[[], Target]] = {
    "worker_run": WorkerRun,
    "worker_run_raising": WorkerRunRaising,
    "worker_compile": WorkerCompile,
    "interop_map": InteropMap,
    "interop_adopt": InteropAdopt,
}


# ---- the sweep ----------------------------------------------------------------------


class Guard(threading.Thread):
    """Ends the child with a report when one step runs past HANG_S."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.step: Any = None
        self.since = time.monotonic()
        self.partial: dict[str, Any] = {}

    def at(self, step: Any) -> None:
        self.step, self.since = step, time.monotonic()

    def run(self) -> None:
        while True:
            time.sleep(0.5)
            if time.monotonic() - self.since > HANG_S:
                report({"hang": self.step, **self.partial})
                os._exit(0)


def name_of(value: BaseException) -> str:
    return type(value).__name__


def describe(target: Target, fn: Callable[[], Any], expect: type[BaseException] | None = None) -> str:
    """What fn() did, as one word: ok, wrong (a value check refuses), the class it raised
    (``expected`` for ``expect``)."""
    try:
        value = fn()
    except BaseException as e:  # noqa: BLE001 -- what it raised is the outcome
        if expect is not None and isinstance(e, expect):
            return "expected"
        if isinstance(e, vn.ReentryError):
            said = str(e)
            named = said.startswith(target.nested_name) and "Fix:" in said
            return "refused" if named else f"ReentryError naming another call: {said[:200]}"
        return f"{name_of(e)}: {str(e)[:200]}"
    return "ok" if target.check(value) else "wrong"


def probe_elsewhere(target: Target) -> str:
    box: list[str] = []
    t = threading.Thread(target=lambda: box.append(describe(target, target.nested)), daemon=True)
    t.start()
    t.join()  # the Guard ends the child if this waits for ever
    return box[0]


def sweep(target: Target, mode: str, guard: Guard) -> dict[str, Any]:
    lines = with_lines()
    counting = Sweep(lines, -1, None)
    target.fresh()
    sys.settrace(counting.call)
    try:
        target.outer()
    except BaseException:  # noqa: BLE001, S110 -- the raising target raises
        pass
    finally:
        sys.settrace(None)
    points = counting.points
    outcomes: Counter[str] = Counter()
    failures: list[dict[str, Any]] = []
    nested: list[str] = []

    def on_usr1(signum: int, frame: Any) -> None:
        nested.append(describe(target, target.nested))

    class Doomed:
        def __del__(self) -> None:
            nested.append(describe(target, target.nested))

    signal.signal(signal.SIGUSR1, on_usr1)
    for k in range(points):
        guard.at({"mode": mode, "point": k, "of": points})
        target.fresh()
        if mode == "interrupt":
            act: Callable[[], None] = _trip_sigint
        elif mode == "handler":
            act = _trip_sigusr1
        else:
            act = [Doomed()].clear  # drops the last reference: __del__ runs right there
        nested.clear()
        tracer = Sweep(lines, k, act)
        outer = "not run"
        try:
            try:
                sys.settrace(tracer.call)
                outer = describe(target, target.outer, target.expect)
            finally:
                sys.settrace(None)
            for _ in range(3):  # eval-breaker checks: a signal tripped at the last point lands here at the latest
                pass
        except KeyboardInterrupt:
            outer = f"{outer} then KeyboardInterrupt" if outer != "not run" else "KeyboardInterrupt"
        if outer.startswith("KeyboardInterrupt"):
            outer = "KeyboardInterrupt"
        here = describe(target, target.nested)
        there = probe_elsewhere(target)
        inner = nested[0] if nested else "none"
        outcomes[f"{outer} / {inner}"] += 1
        # In interrupt mode the outer call may still end well: a KeyboardInterrupt that lands
        # in a cffi callback of wgpu-py's map is printed there and goes no further.
        allowed_outer = {"ok", "expected"} | ({"KeyboardInterrupt", "ok then KeyboardInterrupt",
                                                "expected then KeyboardInterrupt"} if mode == "interrupt" else set())
        allowed_inner = {"none"} if mode == "interrupt" else {"ok", "refused"}
        ok = (
            tracer.done
            and outer in allowed_outer
            and inner in allowed_inner
            and len(nested) == (0 if mode == "interrupt" else 1)
            and here == "ok"
            and there == "ok"
        )
        if not ok:
            failures.append({"point": k, "outer": outer, "nested": nested[:], "here": here, "there": there,
                             "tripped": tracer.done})
    signal.signal(signal.SIGUSR1, signal.SIG_DFL)
    return {"points": points, "outcomes": dict(outcomes), "failures": failures[:5], "failed": len(failures)}


def main() -> None:
    target_name = sys.argv[1]
    modes = sys.argv[2:] or list(MODES)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # a shell's background job starts with it ignored
    guard = Guard()
    guard.start()
    target = TARGETS[target_name]()
    results: dict[str, Any] = {}
    for mode in modes:
        guard.partial = {"results": results}
        results[mode] = sweep(target, mode, guard)
    report({"results": results})


if __name__ == "__main__":
    main()
