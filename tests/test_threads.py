"""Threads sharing one device: each recording is right, and a replay race has one winner."""

from __future__ import annotations

import gc
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from support.kernels import AFFINE

import vyre_native as vn

THREADS = 8


def test_threads_record_replay_and_read_their_own_data_on_one_device(device: vn.Device) -> None:
    prog = device.compile(AFFINE)  # one pipeline (and bind-group cache) shared by every thread
    n, rounds = 512, 20
    start = threading.Barrier(THREADS)

    def worker(t: int) -> int:
        rng = np.random.default_rng(100 + t)
        scale, shift = np.float32(t + 1), np.float32(-t)
        p = device.upload(np.array([scale, shift], np.float32))
        out = np.empty(n, np.float32)
        start.wait()
        for r in range(rounds):
            host = rng.standard_normal(n).astype(np.float32)
            rec = prog.prerecord_persistent_dispatch(
                [device.upload(host)], [device.alloc(host.nbytes)], params=p, workgroups=(n // 64, 1, 1)
            )
            rec.replay()
            rec.read_output_into(0, out)
            # allclose: a GPU may fuse the multiply-add (one rounding, not two) where numpy does not
            np.testing.assert_allclose(
                out, host * scale + shift, rtol=1e-6, atol=1e-6, err_msg=f"thread {t} round {r}"
            )
        return t

    with ThreadPoolExecutor(THREADS) as pool:
        done = list(pool.map(worker, range(THREADS)))  # re-raises any thread's failure
    assert done == list(range(THREADS))


def _race_replay(rec: vn.PrerecordedDispatch, start: threading.Barrier) -> object:
    start.wait()
    try:
        return rec.replay()
    except vn.AlreadySubmittedError as err:
        return err


def test_threads_racing_replay_on_one_recording_have_exactly_one_winner(device: vn.Device) -> None:
    prog = device.compile(AFFINE)
    host = np.arange(256, dtype=np.float32)
    for _ in range(5):  # several races, each on a fresh recording
        rec = prog.prerecord_persistent_dispatch(
            [device.upload(host)],
            [device.alloc(host.nbytes)],
            params=device.upload(np.array([2, 1], np.float32)),
            workgroups=(4, 1, 1),
        )
        start = threading.Barrier(THREADS)
        with ThreadPoolExecutor(THREADS) as pool:
            results = [f.result() for f in [pool.submit(_race_replay, rec, start) for _ in range(THREADS)]]
        winners = [r for r in results if isinstance(r, int)]
        losers = [r for r in results if isinstance(r, vn.AlreadySubmittedError)]
        assert len(winners) == 1
        assert len(losers) == THREADS - 1
        np.testing.assert_array_equal(np.frombuffer(rec.read_output(0), np.float32), host * 2 + 1)


def _threaded_cycles_on_a_fresh_device() -> None:
    dev = vn.Device()  # its own device, so its staging buffers go with it
    prog = dev.compile(AFFINE)
    p = dev.upload(np.array([3, 0], np.float32))
    host = np.arange(256, dtype=np.float32)

    def worker(_: int) -> None:
        for _ in range(10):
            rec = prog.prerecord_persistent_dispatch(
                [dev.upload(host)], [dev.alloc(host.nbytes)], params=p, workgroups=(4, 1, 1)
            )
            rec.replay()
            np.testing.assert_array_equal(np.frombuffer(rec.read_output(0), np.float32), host * 3)

    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(worker, range(THREADS)))
    dev.close()


def test_threaded_cycles_leave_no_native_objects_behind() -> None:
    gc.collect()
    before = vn.debug.live_objects()
    _threaded_cycles_on_a_fresh_device()  # everything it made is unreachable on return
    gc.collect()
    assert vn.debug.live_objects() == before
