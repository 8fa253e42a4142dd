"""vn.worker without Ray: a Worker in this process, and in plain spawned processes.

The same class is Ray's actor (tests/test_ray.py); here it is driven directly and
through ``vn.worker.serve`` over multiprocessing pipes, which pickle as Ray does.
"""

from __future__ import annotations

import multiprocessing
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


def test_a_handle_sent_to_a_worker_process_is_vyre_natives_own_error(processes: list[Any]) -> None:
    with vn.Device() as dev:
        buf = dev.upload(np.zeros(N, np.float32))
        typed(
            lambda: processes[0].send(("run", ("double", [buf], SPEC, GROUPS))),
            vn.NotPicklableError,
            "vn.Buffer",
            "one vn.Device per worker",
        )
