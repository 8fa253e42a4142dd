"""vyre_native inside Ray: one Device per actor, numpy arrays between them.

A local Ray cluster (two CPUs, no dashboard) started once for the module; two actors of
``vn.worker.Worker`` each own a device on this machine's adapter and run the same kernel
on different data; a handle sent to an actor is refused with vyre_native's own error.
Skipped, saying why, where Ray is not installed (it is the ``ray`` extra).
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from support.errors import typed
from support.kernels import DOUBLE

import vyre_native as vn

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'vyre_native[ray]')")

N = 4096


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a local cluster of this test only
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        yield ray
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def actors(cluster: Any) -> list[Any]:
    actor = cluster.remote(num_cpus=1)(vn.worker.Worker)
    return [actor.remote(kernels={"double": DOUBLE}) for _ in range(2)]


def test_two_actors_run_the_same_kernel_on_their_own_data(actors: list[Any]) -> None:
    data = [np.arange(N, dtype=np.float32) + 10_000 * k for k in range(len(actors))]
    refs = [
        a.run.remote("double", [d], [("f4", (N,))], (N // 64, 1, 1))
        for a, d in zip(actors, data, strict=True)
    ]
    for (out,), d in zip(ray.get(refs), data, strict=True):
        np.testing.assert_array_equal(out, 2 * d)


def test_each_actor_owns_a_device_of_its_own_process(actors: list[Any]) -> None:
    infos = ray.get([a.info.remote() for a in actors])
    assert all(i["name"] == vn.enumerate_adapters()[0]["name"] for i in infos)
    pids = ray.get([a.__ray_call__.remote(lambda _self: os.getpid()) for a in actors])
    assert len(set(pids)) == len(actors) and os.getpid() not in pids


def test_a_replayed_recording_serves_each_call_with_new_data(actors: list[Any]) -> None:
    a = actors[0]
    for k in range(3):
        d = np.full(N, k, np.float32)
        (out,) = ray.get(a.run.remote("double", [d], [("f4", (N,))], (N // 64, 1, 1), 2))
        np.testing.assert_array_equal(out, 2 * d)


def test_a_handle_sent_to_an_actor_is_vyre_natives_own_error(actors: list[Any]) -> None:
    with vn.Device() as dev:
        buf = dev.upload(np.zeros(16, np.float32))
        msg = typed(
            lambda: actors[0].run.remote("double", [buf], [("f4", (16,))], (1, 1, 1)),
            vn.NotPicklableError,
            "vn.Buffer",
            "cannot be pickled",
            "Fix:",
            "one vn.Device per worker",
        )
        assert "Could not serialize" not in msg  # Ray's wrapper of a TypeError, with its own traceback


def test_a_handle_put_in_the_object_store_is_vyre_natives_own_error(cluster: Any) -> None:
    with vn.Device() as dev:
        typed(lambda: cluster.put(dev), vn.NotPicklableError, "vn.Device", "one vn.Device per worker")


def test_the_refusal_is_a_pickling_error_not_a_type_error() -> None:
    # Ray wraps a TypeError raised while pickling an argument, and nothing else.
    assert issubclass(vn.NotPicklableError, pickle.PicklingError)
    assert not issubclass(vn.NotPicklableError, TypeError)
