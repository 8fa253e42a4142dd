"""Operations 3, 4 and 5: submitting a pre-recorded dispatch (one per round, and
BURST back to back), submitting and waiting for a one-workgroup kernel, and
encode + submit per dispatch.

Recording a dispatch for a replay happens in the untimed setup; the queue is
drained (untimed) every DRAIN_EVERY rounds so that it does not grow through the run.
"""

from __future__ import annotations

import pytest
from harness import (
    BURST,
    Drainer,
    bench_floor_launch,
    bench_floor_one_call,
    bench_vn_launch,
    bench_wgpu_encode_submit,
    record_python,
    run_floor,
    wgpu_wait,
)

# The timed targets call the API directly (no helper between them and the call), so
# that each way's figure holds only its own calls; the helpers below set up around them.


def _bench_submit(benchmark, rounds, way, operation, target, make, wait_idle, wait):
    """``target`` a round on what ``make()`` recorded (untimed); where the target does
    not ``wait`` itself, the queue is drained untimed every DRAIN_EVERY rounds and at
    the end."""
    setup = Drainer(lambda: None, make) if wait else Drainer(wait_idle, make)
    benchmark.pedantic(target, setup=setup, rounds=rounds.launch, warmup_rounds=rounds.launch_warmup)
    if not wait:
        wait_idle()
    record_python(benchmark, way, operation)


def _vn_submit(benchmark, vnx, rounds, operation, wait):
    dev = vnx.dev
    if wait:

        def target(rec):
            rec.replay()
            dev.wait_idle()

    else:

        def target(rec):
            rec.replay()

    _bench_submit(benchmark, rounds, "vyre_native", operation, target, vnx.prerecord, dev.wait_idle, wait)


def _wgpu_submit(benchmark, wgx, rounds, operation, wait):
    encode, group, fill, queue = wgx.encode, wgx.group, wgx.fill, wgx.queue
    if wait:

        def target(cb):
            queue.submit([cb])
            wgpu_wait(wgx)

    else:

        def target(cb):
            queue.submit([cb])

    def make():
        return encode(group, fill)

    _bench_submit(benchmark, rounds, "wgpu-py", operation, target, make, lambda: wgpu_wait(wgx), wait)


def _bench_burst(benchmark, rounds, way, target, make_one, wait_idle):
    """``target`` a round on BURST recordings made (untimed) after a wait."""

    def make():
        wait_idle()
        return [make_one() for _ in range(BURST)]

    benchmark.pedantic(target, setup=lambda: ((make(),), {}), rounds=rounds.burst, warmup_rounds=2)
    wait_idle()
    record_python(benchmark, way, "replay_burst", ops_per_round=BURST)


# ---- 3. replay: submit a pre-recorded command buffer ------------------------------------


@pytest.mark.benchmark(group="replay")
def test_replay_vyre_native(benchmark, vnx, rounds):
    _vn_submit(benchmark, vnx, rounds, "replay", wait=False)


@pytest.mark.benchmark(group="replay")
def test_replay_wgpu_py(benchmark, wgx, rounds):
    _wgpu_submit(benchmark, wgx, rounds, "replay", wait=False)


@pytest.mark.benchmark(group="replay")
def test_replay_raw_c(benchmark, cfloor, rounds):
    bench_floor_launch(benchmark, cfloor, rounds, "replay")


# ---- 3b. replay burst: BURST pre-recorded submits back to back ----------------------------


@pytest.mark.benchmark(group="replay_burst")
def test_replay_burst_vyre_native(benchmark, vnx, rounds):
    def target(recs):
        for rec in recs:
            rec.replay()

    _bench_burst(benchmark, rounds, "vyre_native", target, vnx.prerecord, vnx.dev.wait_idle)


@pytest.mark.benchmark(group="replay_burst")
def test_replay_burst_wgpu_py(benchmark, wgx, rounds):
    encode, group, fill, queue = wgx.encode, wgx.group, wgx.fill, wgx.queue

    def target(cbs):
        for cb in cbs:
            queue.submit([cb])

    _bench_burst(benchmark, rounds, "wgpu-py", target, lambda: encode(group, fill), lambda: wgpu_wait(wgx))


@pytest.mark.benchmark(group="replay_burst")
def test_replay_burst_raw_c(benchmark, cfloor, rounds):
    run_floor(benchmark, cfloor, "replay_burst", cfloor.call("replay_burst"), BURST * 2, rounds.burst // 2)


# ---- 4. replay + wait for completion ------------------------------------------------------


@pytest.mark.benchmark(group="replay_wait")
def test_replay_wait_vyre_native(benchmark, vnx, rounds):
    """No public wait-for-one-submission call yet: Device.wait_idle() after replay()."""
    _vn_submit(benchmark, vnx, rounds, "replay_wait", wait=True)


@pytest.mark.benchmark(group="replay_wait")
def test_replay_wait_wgpu_py(benchmark, wgx, rounds):
    """queue.submit, then a blocking device poll (see harness.wgpu_wait: wgpu-py 0.32's
    public on_submitted_work_done_sync() is broken against its wgpu-native)."""
    _wgpu_submit(benchmark, wgx, rounds, "replay_wait", wait=True)


@pytest.mark.benchmark(group="replay_wait")
def test_replay_wait_raw_c(benchmark, cfloor, rounds):
    bench_floor_launch(benchmark, cfloor, rounds, "replay_wait")


# ---- 5. encode + submit per dispatch ----------------------------------------------------------


@pytest.mark.benchmark(group="encode_submit")
def test_encode_submit_vyre_native(benchmark, vnx, rounds):
    """prerecord_persistent_dispatch + replay, the recording released in the timed part."""
    prog, a, o = vnx.prog, vnx.a, vnx.o

    def target():
        prog.prerecord_persistent_dispatch([a], [o], workgroups=(1, 1, 1)).replay()

    bench_vn_launch(benchmark, vnx, rounds, target, "encode_submit")


@pytest.mark.benchmark(group="encode_submit")
def test_encode_submit_wgpu_py(benchmark, wgx, rounds):
    bench_wgpu_encode_submit(benchmark, wgx, rounds, "encode_submit")


@pytest.mark.benchmark(group="encode_submit")
def test_encode_submit_raw_c(benchmark, cfloor, rounds):
    bench_floor_launch(benchmark, cfloor, rounds, "encode_submit")


@pytest.mark.benchmark(group="encode_submit")
def test_encode_submit_raw_c_one_call(benchmark, cfloor, rounds):
    """The same encode + submit, one cffi call a round (the floor of a launch made from Python)."""
    bench_floor_one_call(benchmark, cfloor, rounds, "encode_submit", "encode_submit")
