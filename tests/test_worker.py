"""vn.worker without Ray: a Worker in this process, and in plain spawned processes.

The same class is Ray's actor (tests/test_ray.py); here it is driven directly and
through ``vn.worker.serve`` over multiprocessing pipes, which pickle as Ray does.
"""

from __future__ import annotations

import multiprocessing
import pickle
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from support.errors import typed
from support.kernels import DOUBLE

import vyre_native as vn

N = 1024
SPEC = [("f4", (N,))]
GROUPS = (N // 64, 1, 1)


def test_a_worker_runs_a_kernel_on_numpy_arrays() -> None:
    w = vn.worker.Worker(kernels={"double": DOUBLE})
    x = np.arange(N, dtype=np.float32)
    (out,) = w.run("double", [x], SPEC, GROUPS)
    np.testing.assert_array_equal(out, 2 * x)
    assert w.compile("again", DOUBLE) == ["inp", "out"]


def test_a_worker_records_once_per_set_of_shapes_and_replays_with_new_data() -> None:
    w = vn.worker.Worker(kernels={"double": DOUBLE})
    for k in range(3):
        x = np.full(N, k, np.float32)
        (out,) = w.run("double", [x], SPEC, GROUPS, 3)
        np.testing.assert_array_equal(out, 2 * x)
    assert len(w._runs) == 1


def test_a_worker_keeps_a_bounded_number_of_recordings() -> None:
    w = vn.worker.Worker(kernels={"double": DOUBLE})
    for n in range(64, 64 * (vn.worker.MAX_RECORDINGS + 3), 64):
        (out,) = w.run("double", [np.ones(n, np.float32)], [("f4", (n,))], (1, 1, 1))
        assert out.shape == (n,)
    assert len(w._runs) == vn.worker.MAX_RECORDINGS


def test_an_unknown_kernel_is_a_typed_error_naming_the_compiled_ones() -> None:
    w = vn.worker.Worker(kernels={"double": DOUBLE})
    typed(
        lambda: w.run("triple", [np.ones(N, np.float32)], SPEC, GROUPS),
        vn.InvalidArgumentError,
        "'triple'",
        "['double']",
        "Fix:",
    )


BAD_RUNS: dict[str, tuple[tuple[Any, ...], type[vn.VyreError], str]] = {
    # each was an untyped TypeError or ValueError, or silently ran something else
    "workgroups an int": (("double", [np.ones(N, np.float32)], SPEC, 16), vn.WrongTypeError, "workgroups=16"),
    # equal as a key to (16, 1, 1), so it replayed that recording where record() refuses it
    "workgroups of floats": (("double", [np.ones(N, np.float32)], SPEC, (16.0, 1, 1)), vn.WrongTypeError, "16.0"),
    "workgroups of bools": (("double", [np.ones(N, np.float32)], SPEC, (16, True, 1)), vn.WrongTypeError, "bool"),
    # unpacked as dtype 'f', shape ('4',)
    "an output spec of text": (("double", [np.ones(N, np.float32)], ["f4"], GROUPS), vn.WrongTypeError, "'f4'"),
    "an output spec of three": (
        ("double", [np.ones(N, np.float32)], [("f4", (N,), 1)], GROUPS), vn.WrongTypeError, "3 items"
    ),
    "an output dtype numpy lacks": (("double", [np.ones(N, np.float32)], [("zz", (N,))], GROUPS), vn.WrongTypeError, "'zz'"),
    # int(4.5) was 4
    "an output shape of floats": (
        ("double", [np.ones(N, np.float32)], [("f4", (N + 0.5,))], GROUPS), vn.WrongTypeError, "float"
    ),
    "a negative output shape": (
        ("double", [np.ones(N, np.float32)], [("f4", (-N,))], GROUPS), vn.InvalidArgumentError, "outputs[0]"
    ),
    "inputs of None": (("double", None, SPEC, GROUPS), vn.WrongTypeError, "inputs=None"),
    "a ragged input": (("double", [[[1.0], [1.0, 2.0]]], SPEC, GROUPS), vn.WrongTypeError, "inputs[0]"),
    "a name not text": ((["double"], [np.ones(N, np.float32)], SPEC, GROUPS), vn.WrongTypeError, "name=['double']"),
}


@pytest.mark.parametrize("case", BAD_RUNS)
def test_a_malformed_run_is_a_typed_error_naming_the_argument(case: str) -> None:
    w = vn.worker.Worker(kernels={"double": DOUBLE})
    args, cls, shown = BAD_RUNS[case]
    w.run("double", [np.ones(N, np.float32)], SPEC, (16, 1, 1))  # its recording, cached
    typed(lambda: w.run(*args), cls, shown, "Fix:")


def test_kernels_not_a_mapping_are_a_typed_error() -> None:
    typed(lambda: vn.worker.Worker(kernels=[("double", DOUBLE)]), vn.WrongTypeError, "a mapping", "Fix:")


def test_big_endian_arrays_are_their_values_not_their_bytes() -> None:
    # WGSL's memory is little-endian: the bytes of '>f4' were sent as they are
    w = vn.worker.Worker(kernels={"double": DOUBLE})
    x = np.arange(N, dtype=">f4")
    (out,) = w.run("double", [x], [(">f4", (N,))], GROUPS)
    assert out.dtype == np.dtype(">f4")
    np.testing.assert_array_equal(out, 2 * x)


def test_an_output_of_no_elements_is_an_empty_array() -> None:
    w = vn.worker.Worker(kernels={"double": DOUBLE})
    (out,) = w.run("double", [np.ones(N, np.float32)], [("f4", (0, 3))], GROUPS)
    assert out.shape == (0, 3) and out.dtype == np.float32


def test_threads_running_one_worker_each_get_their_own_results() -> None:
    # a Ray actor with max_concurrency > 1 runs methods in threads: runs of one set of
    # shapes share their buffers, so one thread's inputs landed in another's replay
    w = vn.worker.Worker(kernels={"double": DOUBLE})
    wrong: list[tuple[int, int]] = []

    def runs(k: int) -> None:
        x = np.full(N, k, np.float32)
        for i in range(40):
            (out,) = w.run("double", [x], SPEC, GROUPS)
            if not (out == 2 * k).all():
                wrong.append((k, i))
                return

    threads = [threading.Thread(target=runs, args=(k,)) for k in (1, 2, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


def test_a_worker_call_nested_in_one_on_the_same_thread_is_refused() -> None:
    # what a signal handler or a finalizer would make: waiting for the outer call's turn
    # would wait for ever
    w = vn.worker.Worker(kernels={"double": DOUBLE})
    with w._turn("Worker.run()"):
        typed(lambda: w.run("double", [np.ones(N, np.float32)], SPEC, GROUPS), vn.ReentryError, "Worker.run()", "Fix:")
    (out,) = w.run("double", [np.ones(N, np.float32)], SPEC, GROUPS)
    np.testing.assert_array_equal(out, 2)


@pytest.fixture(scope="module")
def processes() -> Iterator[list[Any]]:
    ctx = multiprocessing.get_context("spawn")
    pipes, procs = [], []
    for _ in range(2):
        mine, theirs = ctx.Pipe()
        proc = ctx.Process(target=vn.worker.serve, args=(theirs, {"double": DOUBLE}), daemon=True)
        proc.start()
        assert mine.poll(120), "a worker process did not start"
        status, info = mine.recv()
        assert status == "ok", info
        pipes.append(mine)
        procs.append(proc)
    yield pipes
    for pipe, proc in zip(pipes, procs, strict=True):
        pipe.send(None)
        proc.join(60)
        assert proc.exitcode == 0


def ask(pipe: Any, method: str, *args: Any) -> Any:
    pipe.send((method, args))
    assert pipe.poll(120), "a worker process did not answer"
    status, value = pipe.recv()
    if status == "error":
        raise value
    return value


def test_two_worker_processes_run_the_same_kernel_on_their_own_data(processes: list[Any]) -> None:
    data = [np.arange(N, dtype=np.float32) + 10_000 * k for k in range(len(processes))]
    for pipe, x in zip(processes, data, strict=True):
        pipe.send(("run", ("double", [x], SPEC, GROUPS)))
    for pipe, x in zip(processes, data, strict=True):
        status, (out,) = pipe.recv()
        assert status == "ok"
        np.testing.assert_array_equal(out, 2 * x)


def test_a_worker_process_sends_back_the_error_a_call_raised(processes: list[Any]) -> None:
    typed(lambda: ask(processes[0], "run", "nope", [], [], (1, 1, 1)), vn.InvalidArgumentError, "'nope'")
    assert ask(processes[0], "info")["name"] == vn.enumerate_adapters()[0]["name"]  # and keeps serving


@pytest.mark.parametrize("message", ["run", ("run",), ("run", (), "extra"), (5, ())])
def test_a_worker_process_answers_a_malformed_message_and_keeps_serving(processes: list[Any], message: Any) -> None:
    # `method, args = message` ran outside the try: the process died with a traceback
    processes[1].send(message)
    assert processes[1].poll(120), "the worker process did not answer"
    status, err = processes[1].recv()
    assert status == "error" and isinstance(err, vn.WrongTypeError) and "Fix:" in str(err), err
    assert ask(processes[1], "info")["name"] == vn.enumerate_adapters()[0]["name"]


def test_a_handle_sent_to_a_worker_process_is_vyre_natives_own_error(processes: list[Any]) -> None:
    with vn.Device() as dev:
        buf = dev.upload(np.zeros(N, np.float32))
        typed(
            lambda: processes[0].send(("run", ("double", [buf], SPEC, GROUPS))),
            vn.NotPicklableError,
            "vn.Buffer",
            "one vn.Device per worker",
        )


def _still_serves(pipe: Any) -> None:
    """The worker process answers, and its kernel computes what it did before."""
    x = np.arange(N, dtype=np.float32)
    (out,) = ask(pipe, "run", "double", [x], SPEC, GROUPS)
    np.testing.assert_array_equal(out, 2 * x)
    assert ask(pipe, "info")["name"] == vn.enumerate_adapters()[0]["name"]


def _answer_to(pipe: Any, send: Any) -> Any:
    send()
    assert pipe.poll(120), "the worker process did not answer"
    status, err = pipe.recv()
    assert status == "error", err
    return err


@pytest.mark.parametrize(
    "message",
    [
        ("__setattr__", ("_kernels", {})),  # answered ok: the worker's kernels were gone after it
        ("__init__", ({},)),
        ("__delattr__", ("device",)),
        ("_runs", ()),
        ("_turn", ("Worker.run()",)),
        ("device", ()),  # a non-callable attribute: a raw TypeError came back
        ("__class__", ()),
        ("nope", ()),  # a raw AttributeError came back
    ],
)
def test_a_worker_process_calls_only_the_workers_public_methods(processes: list[Any], message: Any) -> None:
    err = _answer_to(processes[1], lambda: processes[1].send(message))
    assert isinstance(err, vn.InvalidArgumentError), err
    said = str(err)
    assert f"no method {message[0]!r}" in said and "compile, info, run" in said and "Fix:" in said, said
    _still_serves(processes[1])


@pytest.mark.parametrize(
    ("message", "shown"),
    [
        (("run", ("double",)), "Worker.run(name, inputs, outputs, workgroups, repeat=1)"),
        (("run", ("double", [], [], (1, 1, 1), 1, "extra")), "6 arguments"),
        (("compile", ()), "Worker.compile(name, wgsl, entry_point='main')"),
        (("info", (1,)), "Worker.info()"),
        (("run", "double"), "not a tuple"),
        (("run", {"name": "double"}), "are dict, not a tuple"),
    ],
)
def test_a_worker_process_answers_arguments_that_do_not_fit_with_a_typed_error(
    processes: list[Any], message: Any, shown: str
) -> None:
    # a raw TypeError came back
    err = _answer_to(processes[1], lambda: processes[1].send(message))
    assert isinstance(err, vn.WrongTypeError), err
    assert shown in str(err) and "Fix:" in str(err), str(err)
    _still_serves(processes[1])


@pytest.mark.parametrize(
    "data",
    [b"not a pickle", b"", b"cno_such_module_of_vn\nthing\n.", pickle.dumps(("run", ()))[:-3]],
    ids=["garbage", "empty", "unknown-module", "truncated"],
)
def test_a_worker_process_answers_bytes_that_are_not_a_message(processes: list[Any], data: bytes) -> None:
    # the receive was outside the loop's try: the worker process died with a traceback
    err = _answer_to(processes[1], lambda: processes[1].send_bytes(data))
    assert isinstance(err, vn.WrongTypeError), err
    assert f"{len(data)} bytes received are not a message" in str(err) and "Fix:" in str(err), str(err)
    _still_serves(processes[1])


def test_a_worker_process_answers_a_message_too_deep_to_show_with_a_typed_error(processes: list[Any]) -> None:
    # a 200,000-deep list pickles (protocol 4 builds it without recursion) and unpickles,
    # but its repr recursed past the limit: the answer was an InternalError
    depth = 200_000
    data = b"\x80\x04" + b"]" * depth + b"a" * (depth - 1) + b"."
    err = _answer_to(processes[1], lambda: processes[1].send_bytes(data))
    assert isinstance(err, vn.WrongTypeError), err
    assert "is not a (method name, args) pair" in str(err) and "Fix:" in str(err), str(err)
    _still_serves(processes[1])


def _served() -> tuple[Any, Any]:
    """A worker process of its own (its end of the pipe, the process), ready."""
    ctx = multiprocessing.get_context("spawn")
    mine, theirs = ctx.Pipe()
    proc = ctx.Process(target=vn.worker.serve, args=(theirs, {"double": DOUBLE}), daemon=True)
    proc.start()
    theirs.close()
    assert mine.poll(120), "the worker process did not start"
    assert mine.recv()[0] == "ok"
    return mine, proc


def test_a_worker_process_whose_peer_leaves_during_a_reply_ends_quietly(capfd: pytest.CaptureFixture[str]) -> None:
    # The reply (4 MiB) cannot be sent whole before the peer closes, since the peer never
    # reads it: the send fails with a broken pipe, and the error sent after it failed too,
    # the process dying of a double BrokenPipeError traceback.
    mine, proc = _served()
    big = 1 << 20
    mine.send(("run", ("double", [np.ones(big, np.float32)], [("f4", (big,))], (big // 64, 1, 1))))
    mine.close()
    proc.join(120)
    assert proc.exitcode == 0
    assert "Traceback" not in capfd.readouterr().err


def test_a_reply_that_does_not_pickle_is_answered_with_a_typed_error() -> None:
    mine, theirs = multiprocessing.Pipe()
    assert vn.worker._answer(theirs, "ok", lambda: None)
    status, err = mine.recv()
    assert status == "error" and isinstance(err, vn.WrongTypeError), err
    assert "a function, does not pickle" in str(err) and "Fix:" in str(err)
    mine.close()
    assert not vn.worker._answer(theirs, "ok", 1)  # the peer gone: False, nothing raised


def test_an_error_that_is_not_vyre_natives_is_sent_as_an_internal_error_naming_it() -> None:
    sent = vn.worker._sendable(MemoryError("numpy could not allocate 8 EiB"), "Worker.run")
    assert isinstance(sent, vn.InternalError)
    assert "Worker.run raised MemoryError: numpy could not allocate 8 EiB" in str(sent) and "Fix:" in str(sent)
    same = vn.InvalidArgumentError("x. Fix: y")
    assert vn.worker._sendable(same, "Worker.run") is same


def test_a_worker_s_inputs_past_the_list_bound_are_refused_before_they_are_walked() -> None:
    worker = vn.worker.Worker(kernels={"double": DOUBLE})
    with pytest.raises(vn.InvalidArgumentError, match=r"1000000000000 items.*Fix:"):
        worker.run("double", range(10**12), [("f4", (64,))], (1, 1, 1))  # type: ignore[arg-type]


@pytest.mark.parametrize("length", [2**40, 2**64 - 1], ids=["memory", "overflow"])
def test_a_frame_whose_length_cannot_be_received_is_answered_and_ends_the_worker(
    capfd: pytest.CaptureFixture[str], length: int
) -> None:
    # Connection's 8-byte length form: recv_bytes raised MemoryError (2**40) or OverflowError
    # (past 2**63), which the loop did not catch: the worker died with a traceback, exit 1
    import os
    import struct

    mine, proc = _served()
    os.write(mine.fileno(), struct.pack("!i", -1) + struct.pack("!Q", length))
    assert mine.poll(120), "the worker process did not answer"
    status, err = mine.recv()
    assert status == "error" and isinstance(err, vn.InvalidArgumentError), err
    assert "length prefix" in str(err) and "Fix:" in str(err), str(err)
    proc.join(120)
    assert proc.exitcode == 0
    assert "Traceback" not in capfd.readouterr().err


def test_ctrl_c_ends_a_worker_process_quietly_with_status_130(capfd: pytest.CaptureFixture[str]) -> None:
    # a terminal's Ctrl-C reaches the whole process group: serve died of a KeyboardInterrupt traceback, exit 1
    import os
    import signal

    mine, proc = _served()
    os.kill(proc.pid, signal.SIGINT)
    proc.join(120)
    assert proc.exitcode == vn.worker.EXIT_INTERRUPTED == 130
    assert "Traceback" not in capfd.readouterr().err
    mine.close()


@pytest.mark.parametrize("how", ["copy", "deepcopy"])
def test_a_worker_cannot_be_copied(how: str) -> None:
    # copy.copy shared _kernels but not _runs: a compile on one left the other replaying the old kernel
    import copy

    w = vn.worker.Worker(kernels={"double": DOUBLE})
    typed(lambda: getattr(copy, how)(w), vn.WrongTypeError, "cannot be copied", "Fix:")
    with pytest.raises(vn.NotPicklableError):
        pickle.dumps(w)
