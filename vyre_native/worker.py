"""vn.worker: one ``vn.Device`` per worker process, driven with numpy arrays.

Handles are process-local (pickling one raises ``NotPicklableError``), so the way past one
GPU or one host is a ``Worker`` in each process of a distributed engine: it owns the
device and the compiled kernels, takes numpy arrays, replays a cached recording and
returns numpy arrays, all of which pickle. It is a plain class, so it serves as a Ray
actor (``ray.remote(num_gpus=1)(Worker)``) and as the state of a plain process
(``serve``, the target of a ``multiprocessing`` process)::

    Actor = ray.remote(num_gpus=1)(vn.worker.Worker)
    actor = Actor.remote(kernels={"scale": WGSL})        # Device() honours CUDA_VISIBLE_DEVICES
    out, = ray.get(actor.run.remote("scale", [x], [("f4", x.shape)], (len(x) // 64, 1, 1)))

See docs/guide/scaling.md for the pattern and what it costs.
"""

from __future__ import annotations

import inspect
import math
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from multiprocessing.reduction import ForkingPickler
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._marshal import new_array, to_array, to_dtype, to_list, to_little, to_workgroups, wrong_type
from ._turn import Turn
from .buffer import Buffer
from .device import Device
from .errors import InternalError, InvalidArgumentError, VyreError, WrongTypeError, shown
from .pipeline import Pipeline
from .replay import Recording

#: recordings (with their buffers) a worker keeps, least recently used dropped first
MAX_RECORDINGS = 32

#: serve's exit status after Ctrl-C (SIGINT): 128 + 2, as a shell reports it
EXIT_INTERRUPTED = 130

_OutputSpec = tuple[Any, Sequence[int]]


# What a Worker call nested in another on one thread (a signal handler's, a finalizer's)
# is refused with: the outer call has the Worker's turn (see _turn.py).
_INSIDE = "another call of the same Worker (run or compile), whose buffers and kernels that call is using"
_FIX = ", or use another Worker"


def _name(name: Any, what: str) -> str:
    if not isinstance(name, str):
        raise wrong_type(what, name, "a str", "pass the kernel's name (a str), as given to compile().")
    return name


def _input(value: Any, what: str) -> NDArray[Any]:
    """``value`` as a C-contiguous array of plain data in WGSL's byte order (little-endian:
    a big-endian array's numbers are swapped, not its bytes sent as they are)."""
    try:
        a = np.ascontiguousarray(value)
    except (TypeError, ValueError) as err:
        raise wrong_type(what, value, f"an array ({err})", "pass a numpy array, or what numpy.asarray takes.") from None
    little = to_little(to_dtype(a.dtype, what, made=False)[0], what)  # an array's dtype is never a subarray
    return a if little == a.dtype else a.astype(little)


def _output(spec: Any, what: str) -> tuple[np.dtype[Any], np.dtype[Any], tuple[int, ...]]:
    """An output's ``(dtype, little, shape)``: a dtype of plain items, it in WGSL's byte
    order, and the array's whole shape (a subarray dtype's item shape appended:
    ``('(2,)>u4', (8,))`` is ``('>u4', (8, 2))``)."""
    pair = to_list(spec, what, "a (dtype, shape) pair")
    if len(pair) != 2:
        raise WrongTypeError(
            f"{what}={shown(spec)} has {len(pair)} items, not two (dtype, shape). Fix: pass e.g. ('f4', (1024,))."
        )
    dt, shape = to_array(pair[0], pair[1], what)
    return dt, to_little(dt, what), shape


class Worker:
    """A ``vn.Device`` and the kernels compiled on it, in this process.

    ``Worker(kernels={name: wgsl}, adapter=None, backend=None)``: ``adapter`` and
    ``backend`` as for ``vn.Device`` (unset: the GPU the scheduler assigned, else the
    default). Creating one costs a device (milliseconds) and a compile per kernel.

    Its methods may be called from several threads at once (a Ray actor with
    ``max_concurrency`` above 1, or an async one): runs take turns, each one whole (its
    inputs written, the replay and the outputs read), since runs of one set of shapes
    share their buffers.
    """

    def __init__(
        self,
        kernels: Mapping[str, str] | None = None,
        adapter: int | str | None = None,
        backend: str | None = None,
    ) -> None:
        self.device = Device(adapter=adapter, backend=backend)
        self._kernels: dict[str, Pipeline] = {}
        self._runs: OrderedDict[tuple[Any, ...], tuple[Recording, list[Buffer], list[Buffer]]] = OrderedDict()
        self._turn = Turn(_INSIDE, _FIX)  # one run or compile at a time: runs of one key share buffers
        if kernels is not None and not isinstance(kernels, Mapping):
            raise wrong_type("Worker kernels", kernels, "a mapping", "pass a dict of names to WGSL, e.g. {'scale': WGSL}.")
        for name, wgsl in (kernels or {}).items():
            self.compile(name, wgsl)

    def info(self) -> dict[str, str]:
        """The device's ``info`` (name, backend, ``uuid``, ``pci_bus``, ...)."""
        return self.device.info

    def compile(self, name: str, wgsl: str, entry_point: str = "main") -> list[str]:
        """Compile ``wgsl`` as kernel ``name`` (replacing one of that name); its binding names."""
        name = _name(name, "Worker.compile name")
        prog = self.device.compile(wgsl, entry_point=entry_point)
        with self._turn("Worker.compile()"):
            self._kernels[name] = prog
            self._runs = OrderedDict((k, v) for k, v in self._runs.items() if k[0] != name)
        return [b.name for b in prog.bindings]

    def run(
        self,
        name: str,
        inputs: Sequence[NDArray[Any]],
        outputs: Sequence[_OutputSpec],
        workgroups: Sequence[int],
        repeat: int = 1,
    ) -> list[NDArray[Any]]:
        """Run kernel ``name`` ``repeat`` times on ``inputs`` and return its outputs.

        ``outputs``: one ``(dtype, shape)`` a ``var<storage, read_write>`` binding. The first
        call with a set of shapes allocates the buffers and records the dispatch; later
        calls with the same shapes write the inputs into those buffers (one copy each),
        replay (one C call for up to 256 launches) and read each output back into a new
        array (one copy each). Arrays are data in WGSL's byte order, little-endian: a
        big-endian input is swapped on the way in, and a big-endian output dtype gets the
        values, not the GPU's bytes reinterpreted (a structured one field by field). A
        subarray output dtype is its items, as numpy makes an array of it: ``('(2,)>u4',
        (8,))`` is shape (8, 2) of '>u4'. An output of no elements is an empty array.
        """
        name = _name(name, "Worker.run name")
        arrays = [_input(a, f"Worker.run inputs[{i}]") for i, a in enumerate(to_list(inputs, "Worker.run inputs"))]
        specs = [_output(o, f"Worker.run outputs[{i}]") for i, o in enumerate(to_list(outputs, "Worker.run outputs"))]
        groups = to_workgroups(workgroups)  # ints: (1.0, 1, 1) or (True, 1, 1) would hit (1, 1, 1)'s recording
        key = (
            name,
            tuple((a.dtype.str, a.shape) for a in arrays),
            tuple((d.str, s) for d, _, s in specs),
            groups,
        )
        with self._turn("Worker.run()"):
            entry = self._runs.get(key)
            if entry is None:
                if name not in self._kernels:
                    raise InvalidArgumentError(
                        f"Worker.run: no kernel named {name!r} (compiled: {sorted(self._kernels)}). Fix: pass it in "
                        "Worker(kernels={name: wgsl}) or call compile(name, wgsl) first."
                    )
                ins = [self.device.alloc(max(a.nbytes, 4)) for a in arrays]
                outs = [self.device.alloc(max(d.itemsize * math.prod(s), 4)) for d, _, s in specs]
                entry = (self._kernels[name].record(inputs=ins, outputs=outs, workgroups=groups), ins, outs)
                self._runs[key] = entry
                while len(self._runs) > MAX_RECORDINGS:
                    self._runs.popitem(last=False)
            self._runs.move_to_end(key)
            rec, ins, outs = entry
            for buf, a in zip(ins, arrays, strict=True):
                buf.write(a)
            rec.replay(repeat)
            return [_read(buf, *spec) for buf, spec in zip(outs, specs, strict=True)]

    def __copy__(self) -> Worker:
        raise WrongTypeError(
            "a vn.worker.Worker cannot be copied: it owns a Device, its kernels and their recordings, and a copy "
            "would share some of them and not others (a kernel compiled on one would leave the other replaying "
            "the old one). Fix: share the same Worker (pass it by reference), or create a new Worker."
        )

    def __deepcopy__(self, memo: Any) -> Worker:
        return self.__copy__()  # one rule for copies; pickling is refused by the Device it holds


def _read(buf: Buffer, dtype: np.dtype[Any], little: np.dtype[Any], shape: tuple[int, ...]) -> NDArray[Any]:
    """The output of ``dtype`` and ``shape`` at the start of ``buf``, where it is ``little``
    (``dtype`` in WGSL's byte order)."""
    nbytes = dtype.itemsize * math.prod(shape)  # Python ints: numpy's product wraps at 2**63
    if nbytes == 0:  # nothing to read back: a view is at least one byte
        return new_array(dtype, shape, 0, "Worker.run")
    arr = buf.view(0, nbytes).read(little, shape)
    return arr if little == dtype else arr.astype(dtype)


# -- a plain process: the Worker as its state -------------------------------------------

#: What a message may call: the Worker's public methods, by the name the message gives.
#: Nothing else of the Worker (its other attributes, ``__setattr__``, ``__init__``, private
#: names) is reachable from a message: no name from the wire is looked up with getattr.
_SERVED: dict[str, Callable[..., Any]] = {"compile": Worker.compile, "info": Worker.info, "run": Worker.run}

#: What a receive or a send raises when the other end has closed or left.
_GONE = (EOFError, OSError)  # BrokenPipeError and ConnectionResetError are OSErrors


def serve(
    connection: Any,
    kernels: Mapping[str, str] | None = None,
    adapter: int | str | None = None,
    backend: str | None = None,
) -> None:
    """Be a worker process: make a ``Worker`` here, then answer each ``(method, args)``
    received on ``connection`` (a ``multiprocessing`` Connection) with ``("ok", result)``,
    or ``("error", exception)``, until ``None`` or the other end closes. The target of a
    ``multiprocessing`` process of the ``spawn`` start method (a forked child cannot use a
    device its parent made)::

        ctx = multiprocessing.get_context("spawn")
        mine, theirs = ctx.Pipe()
        ctx.Process(target=vn.worker.serve, args=(theirs, {"scale": WGSL}), daemon=True).start()
        mine.send(("run", ("scale", [x], [("f4", x.shape)], (len(x) // 64, 1, 1))))
        status, value = mine.recv()

    ``method`` is ``"run"``, ``"compile"`` or ``"info"`` and ``args`` a tuple of that
    method's arguments. Whatever else arrives is answered with a vyre_native error and a
    Fix, and serving goes on: another name (``InvalidArgumentError``), arguments that do
    not fit the method, a message of another shape, bytes that are not a pickle, and a
    result that does not pickle (``WrongTypeError``); an error a call raised is sent as
    it is when it is vyre_native's and pickles, else as an ``InternalError`` naming it.
    A peer gone (closed, or left during a reply) ends the loop quietly. A frame whose
    length prefix cannot be received (Connection's 8-byte form asking for 2**40 bytes or
    more: a MemoryError, or an OverflowError past 2**63) is answered with an
    ``InvalidArgumentError`` where the peer still reads, and ends the loop (returns): the
    rest of that frame is still in the pipe, so no later byte can be told from it.

    Ctrl-C (SIGINT, which a terminal sends its whole foreground process group, this
    worker included) ends serving quietly, with no traceback, by ``SystemExit(130)``
    (128 + SIGINT, as a shell reports a command Ctrl-C stopped): a ``multiprocessing``
    parent sees ``Process.exitcode == 130``, and the call in flight, if any, is not
    answered.

    What it trusts: messages are pickles, and unpickling runs code the sender chose, so
    only the process that made the pipe (the parent) may hold its other end; never hand
    that end to a process you would not let run code here (see docs/guide/scaling.md).
    """
    try:
        _serve(connection, kernels, adapter, backend)
    except KeyboardInterrupt:
        raise SystemExit(EXIT_INTERRUPTED) from None


def _serve(
    connection: Any, kernels: Mapping[str, str] | None, adapter: int | str | None, backend: str | None
) -> None:
    try:
        worker = Worker(kernels, adapter, backend)
    except Exception as err:  # noqa: BLE001 - sent to the parent, which raises it
        _answer(connection, "error", _sendable(err, "Worker()"))
        return
    if not _answer(connection, "ok", worker.info()):  # ready: the device exists
        return
    while True:
        try:
            data = connection.recv_bytes()
        except _GONE:
            return
        except (MemoryError, OverflowError) as err:  # a length prefix this process cannot hold
            _answer(connection, "error", InvalidArgumentError(
                f"serve: a message could not be received: its length prefix asks for more bytes than this process "
                f"can hold ({type(err).__name__}), so the rest of it cannot be told from what follows, and the "
                "worker ends. Fix: send messages with Connection.send, each of a size this host's memory holds."
            ))
            return
        try:
            message = ForkingPickler.loads(data)
        except Exception as err:  # noqa: BLE001 - what a peer sends never ends the loop
            refused = WrongTypeError(
                f"serve: {len(data)} bytes received are not a message: unpickling them raised "
                f"{type(err).__name__}: {str(err)[:200]}. Fix: send a (method name, args) pair with "
                "Connection.send, or None to end the worker."
            )
            reply: tuple[str, Any] = ("error", refused)
        else:
            if message is None:
                return
            reply = _carry_out(worker, message)
        if not _answer(connection, *reply):
            return


def _carry_out(worker: Worker, message: Any) -> tuple[str, Any]:
    """``message`` called on ``worker`` through ``_SERVED``: ("ok", result) or ("error", a
    vyre_native error)."""
    method = "?"
    try:
        if not isinstance(message, tuple) or len(message) != 2 or not isinstance(message[0], str):
            raise WrongTypeError(
                f"serve: the message {shown(message)} is not a (method name, args) pair. Fix: send e.g. "
                '("run", (name, inputs, outputs, workgroups)), or None to end the worker.'
            )
        method, args = message
        fn = _SERVED.get(method)
        if fn is None:
            raise InvalidArgumentError(
                f"serve: no method {shown(method)} (served: {', '.join(sorted(_SERVED))}); nothing else of the "
                "Worker is reachable from a message. Fix: send one of those names."
            )
        if not isinstance(args, (tuple, list)):
            raise WrongTypeError(
                f"serve: the arguments of {method!r} are {type(args).__name__}, not a tuple. Fix: send "
                f"({method!r}, (argument, ...)): the arguments of Worker.{method}{_params(fn)} in order."
            )
        try:
            inspect.signature(fn).bind(worker, *args)
        except TypeError as err:
            raise WrongTypeError(
                f"serve: {len(args)} arguments do not fit Worker.{method}{_params(fn)} ({err}). Fix: send "
                f"({method!r}, (argument, ...)) with its arguments in that order."
            ) from None
        return "ok", fn(worker, *args)
    except Exception as err:  # noqa: BLE001 - sent to the parent, which raises it
        return "error", _sendable(err, f"Worker.{method}")


def _params(fn: Callable[..., Any]) -> str:
    """``fn``'s parameters after ``self``, as a signature: "(name, wgsl, entry_point='main')"."""
    sig = inspect.signature(fn)
    params = [q.replace(annotation=q.empty) for q in list(sig.parameters.values())[1:]]
    return str(sig.replace(parameters=params, return_annotation=sig.empty))


def _sendable(err: Exception, call: str) -> VyreError:
    """``err`` as the error to send: itself when it is vyre_native's and pickles, else an
    InternalError that names it (its class and message survive; the object may not)."""
    if isinstance(err, VyreError):
        try:
            ForkingPickler.dumps(err)
            return err
        except Exception:  # noqa: BLE001, S110 - replaced below
            pass
    return InternalError(
        f"serve: {call} raised {type(err).__name__}: {str(err)[:300]}. Fix: this is a vyre_native bug "
        "when the call's arguments were right: report it with the message and the arguments."
    )


def _answer(connection: Any, status: str, value: Any) -> bool:
    """Send ``(status, value)``; False when the peer is gone. A value that does not pickle
    (a result of a type pickle refuses) is answered with a WrongTypeError saying so."""
    try:
        data = ForkingPickler.dumps((status, value))
    except Exception as err:  # noqa: BLE001 - the reply is replaced, not lost
        refused = WrongTypeError(
            f"serve: the {'result' if status == 'ok' else 'error'} of the call, a {type(value).__name__}, "
            f"does not pickle ({type(err).__name__}: {str(err)[:200]}). Fix: return numpy arrays, "
            "lists, numbers and strings from what the worker runs."
        )
        data = ForkingPickler.dumps(("error", refused))
    try:
        connection.send_bytes(data)
    except _GONE:
        return False
    return True
