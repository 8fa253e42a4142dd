"""Soak: record / replay / readback cycles leave process memory and native objects flat.

Each test warms up (staging ring, bind-group cache, allocator high-water marks), takes
a baseline of process RSS (/proc/self/statm) and vn.debug.live_objects(), runs N
cycles, and asserts every live-object count is back at its baseline and RSS grew by
less than RSS_BOUND. Results are spot-checked every cycle and compared in full
periodically, so a soak that stays flat by doing nothing fails too.

N comes from VN_SOAK_CYCLES (default 2000, a second or two on lavapipe, so CI stays
quick). The full soak:

    VN_SOAK_CYCLES=100000 pytest tests/test_soak.py -m soak -s

(-s shows the one-line figures each test prints: cycles, seconds, RSS before/after,
live objects before/after.)
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable

import numpy as np
import pytest
from support.child import run_child
from support.childlib import rss_bytes
from support.kernels import COUNTER_F32, DOUBLE

import vyre_native as vn

pytestmark = pytest.mark.soak

CYCLES = int(os.environ.get("VN_SOAK_CYCLES", "2000"))
WARMUP = 200
RSS_BOUND = 32 * 1024 * 1024  # bytes of RSS growth allowed over the whole run
N = 4096  # floats per buffer




class Flat:
    """Baseline of RSS and live objects; check() asserts both stayed flat and prints the figures."""

    def __init__(self, device: vn.Device, label: str) -> None:
        self.device, self.label = device, label
        self.device.wait_idle()  # every submission's completion seen: its record freed
        gc.collect()
        self.counts = vn.debug.live_objects()
        self.rss = rss_bytes()
        self.t0 = time.perf_counter()

    def poll(self, i: int) -> None:
        """Every 1000 cycles: fail early (before a leak eats the machine) once RSS passes the bound."""
        if i % 1000 == 999:
            grown = rss_bytes() - self.rss
            assert grown < RSS_BOUND, (
                f"RSS grew by {grown / 2**20:.1f} MiB after {i + 1} cycles (bound 32 MiB)"
            )

    def check(self, cycles: int) -> None:
        seconds = time.perf_counter() - self.t0
        self.device.wait_idle()
        gc.collect()
        counts = vn.debug.live_objects()
        rss = rss_bytes()
        grown = rss - self.rss
        print(
            f"\n[soak] {self.label}: {cycles} cycles in {seconds:.1f} s ({seconds / cycles * 1e6:.0f} us/cycle); "
            f"RSS {self.rss / 2**20:.1f} -> {rss / 2**20:.1f} MiB ({grown / 2**20:+.2f} MiB); "
            f"live objects {self.counts} -> {counts}"
        )
        assert counts == self.counts, f"live objects {counts} differ from the baseline {self.counts}"
        assert grown < RSS_BOUND, f"RSS grew by {grown / 2**20:.1f} MiB over {cycles} cycles (bound 32 MiB)"


def soak(
    device: vn.Device, label: str, cycle: Callable[[int], None], settle: Callable[[], None] = lambda: None
) -> None:
    """WARMUP cycles, then CYCLES against a Flat baseline, polled as they run and checked
    at the end; ``settle`` runs before the baseline and before the check (to drop what
    the cycles hold on purpose)."""
    for i in range(WARMUP):
        cycle(i)
    settle()
    flat = Flat(device, label)
    for i in range(CYCLES):
        cycle(i)
        flat.poll(i)
    settle()
    flat.check(CYCLES)


def spot_check(i: int, got: np.ndarray, want: np.ndarray) -> None:
    """Cycle ``i``'s result: one element every cycle (another each time), all of it every 997th."""
    k = (i * 7919) % N
    assert got[k] == want[k], f"cycle {i}: out[{k}] = {got[k]}, want {want[k]}"
    if i % 997 == 0:
        np.testing.assert_array_equal(got, want, err_msg=f"cycle {i}")



@pytest.fixture(scope="module")
def data(device: vn.Device) -> tuple[np.ndarray, vn.Buffer, vn.Pipeline]:
    host = (np.arange(N) % 1000).astype(np.float32)
    return host, device.upload(host), device.compile(DOUBLE)


def test_prerecorded_record_replay_read_into_cycles_stay_flat(device: vn.Device, data) -> None:
    """PrerecordedDispatch: record + replay + read_output_into a reused numpy array."""
    host, inp, prog = data
    want = host * 2
    out = device.alloc(host.nbytes)
    dst = np.empty(N, np.float32)

    def cycle(i: int) -> None:
        rec = prog.prerecord_persistent_dispatch([inp], [out], workgroups=(N // 64, 1, 1))
        rec.replay()
        rec.read_output_into(0, dst)
        spot_check(i, dst, want)

    soak(device, "prerecorded record+replay+read_output_into", cycle)


def test_recording_replay_read_cycles_stay_flat(device: vn.Device, data) -> None:
    """Recording: one record, then replay + read (into a reused array; bytes every 16th)."""
    host, inp, prog = data
    want = host * 2
    rec = prog.record([inp], [device.alloc(host.nbytes)], workgroups=(N // 64, 1, 1))
    dst = np.empty(N, np.float32)

    def cycle(i: int) -> None:
        rec.replay()
        if i % 16 == 0:
            got = np.frombuffer(rec.read_output(0), np.float32)
        else:
            rec.read_output_into(0, dst)
            got = dst
        spot_check(i, got, want)

    soak(device, "Recording.replay+read", cycle)


def test_zero_copy_read_cycles_stay_flat(device: vn.Device, data) -> None:
    """Zero-copy reads: replay, read_output(copy=False), keep a few arrays alive at a time
    (so pins overlap and the ring grows and shrinks), release them in turn."""
    host, inp, prog = data
    want = host * 2
    rec = prog.record([inp], [device.alloc(host.nbytes)], workgroups=(N // 64, 1, 1))
    held: list[np.ndarray] = []

    def cycle(i: int) -> None:
        rec.replay()
        got = rec.read_output(0, np.float32, copy=False)
        spot_check(i, got, want)
        held.append(got[i % 7 :])  # a view: it alone keeps the pin
        if len(held) > 1 + i % 6:
            del held[: len(held) // 2]

    soak(device, "Recording.replay+read_output(copy=False)", cycle, settle=held.clear)


def test_sequence_submit_and_async_read_cycles_stay_flat(device: vn.Device, data) -> None:
    """Sequence.replay / device.submit of a preserved accumulator, read back asynchronously."""
    host, inp, prog = data
    acc = device.compile(COUNTER_F32, preserve=["state"])
    state = device.alloc(N * 4)
    mid = device.alloc(N * 4)
    seq = (
        device.sequence()
        .add(prog, [inp], [mid], workgroups=(N // 64, 1, 1))
        .add(acc, [], [state], workgroups=(N // 64, 1, 1))
    )
    rec = acc.record([], [state], workgroups=(N // 64, 1, 1))
    dst = np.empty(N, np.float32)
    count = 0

    def cycle(i: int) -> None:
        nonlocal count
        if i % 2:
            seq.replay()
        else:
            device.submit([seq, rec])
            count += 1
        count += 1
        pending = state.read_async()
        pending.result_into(dst)
        k = (i * 7919) % N
        assert dst[k] == count, f"cycle {i}: state[{k}] = {dst[k]}, want {count}"
        if i % 997 == 0:
            np.testing.assert_array_equal(dst, np.full(N, count, np.float32), err_msg=f"cycle {i}")
            np.testing.assert_array_equal(np.frombuffer(mid.read(), np.float32), host * 2)

    # f32 counts stay exact below 2**24; the full soak (100000 cycles) stays far below.
    soak(device, "Sequence.replay/device.submit+read_async", cycle)


# wgpu-native 29 keeps what a finished command buffer holds when it is released
# without a submit (measured: about 95 KiB each on lavapipe and 451 KiB on an H200's
# driver; raw C over the same library does the same; an unfinished encoder dropped
# keeps nothing). A PrerecordedDispatch is finished at recording, as the seed's design
# asks, so one released unreplayed costs that much inside wgpu-native, an amount that
# depends on the driver: the README says so, and this test asserts only what
# vyre_native owns (its live objects) and prints the RSS figure.


def test_prerecorded_dispatches_released_without_replay_free_all_of_ours(device: vn.Device, data) -> None:
    """A PrerecordedDispatch recorded and then released unreplayed frees every object of
    vyre_native's (live counts flat); what wgpu-native keeps of the unsubmitted command
    buffer (see above) is printed, not asserted."""
    host, inp, prog = data
    out = device.alloc(host.nbytes)
    # The upstream retention is linear (94.7 KiB a cycle, measured over 100000 cycles:
    # +9244 MiB), so more cycles prove nothing more and only exhaust the machine.
    cycles = min(CYCLES, 10000)

    def cycle(i: int) -> None:
        rec = prog.prerecord_persistent_dispatch([inp], [out], workgroups=(N // 64, 1, 1))
        assert rec.output_count == 1
        rec.release()

    for i in range(WARMUP):
        cycle(i)
    device.wait_idle()
    gc.collect()
    counts, rss = vn.debug.live_objects(), rss_bytes()
    for i in range(cycles):
        cycle(i)
    device.wait_idle()
    gc.collect()
    grown = rss_bytes() - rss
    print(
        f"\n[soak] prerecorded record+release, never replayed: {cycles} cycles, RSS {grown / 2**20:+.1f} MiB "
        f"({grown / cycles / 1024:.1f} KiB each, all inside wgpu-native)"
    )
    assert vn.debug.live_objects() == counts


def test_rejected_calls_stay_flat(device: vn.Device, data) -> None:
    """Calls refused with a typed error -- WGSL that does not compile or whose pipeline
    wgpu rejects, handles that do not fit the bindings, a forbidden usage -- free
    everything they made on the way."""
    host, inp, prog = data
    both = device.alloc(host.nbytes)
    bad_wgsl = [
        "@compute @workgroup_size(1) fn main() { let x = ; }",  # the compiler rejects it
        "@compute @workgroup_size(2048) fn main() {}",  # the pipeline rejects it
    ]

    def cycle(i: int) -> None:
        with pytest.raises(vn.ShaderError):
            device.compile(bad_wgsl[i % 2])
        with pytest.raises(vn.BindingError):
            prog.prerecord_persistent_dispatch([both], [both], workgroups=(N // 64, 1, 1))
        with pytest.raises(vn.BindingError):
            prog.record([inp], [], workgroups=(N // 64, 1, 1))
        with pytest.raises(ValueError):
            device.alloc(64, usage=vn.BufferUsage.MAP_READ | vn.BufferUsage.STORAGE)

    soak(device, "rejected calls (compile, record, alloc)", cycle)


def test_device_churn_stays_flat() -> None:
    """Devices made, used and closed one after another free everything they made."""
    rounds = max(10, CYCLES // 200)

    def one_device() -> None:
        with vn.Device() as dev:
            host = np.arange(256, dtype=np.float32)
            rec = dev.compile(DOUBLE).record(
                [dev.upload(host)], [dev.alloc(host.nbytes)], workgroups=(4, 1, 1)
            )
            rec.replay()
            np.testing.assert_array_equal(np.frombuffer(rec.read_output(0), np.float32), host * 2)
            dev.wait_idle()

    for _ in range(3):
        one_device()
    gc.collect()
    before_counts, before_rss, t0 = vn.debug.live_objects(), rss_bytes(), time.perf_counter()
    for _ in range(rounds):
        one_device()
    gc.collect()
    counts, rss = vn.debug.live_objects(), rss_bytes()
    print(
        f"\n[soak] device churn: {rounds} devices in {time.perf_counter() - t0:.1f} s; RSS "
        f"{before_rss / 2**20:.1f} -> {rss / 2**20:.1f} MiB; live objects {before_counts} -> {counts}"
    )
    assert counts == before_counts
    assert rss - before_rss < RSS_BOUND


@pytest.mark.parametrize("end", ["drop", "close", "destroy"])
def test_device_dropped_with_an_unobserved_submission_frees_everything(end: str) -> None:
    """A replay's Submission dropped unobserved, then the device dropped (after close() or
    destroy(), or neither): nothing may stay alive, the device included.

    Runs in a child so a leaked device cannot skew the counts of the tests above.
    """
    live = run_child(
        f"""
        dev = vn.Device()
        prog = dev.compile({DOUBLE!r})
        rec = prog.record([dev.upload(np.ones(64, np.float32))], [dev.alloc(256)])
        rec.replay()                      # its Submission is dropped at once, never waited on
        if {end!r} != "drop":
            getattr(dev, {end!r})()
        del rec, prog, dev
        gc.collect()
        report(vn.debug.live_objects())
        """,
        timeout=120,
    )
    assert all(v == 0 for v in live.values()), f"left alive after dropping everything: {live}"
