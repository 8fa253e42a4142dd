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
    bench_floor_encode_submit,
    bench_wgpu_encode_submit,
    record_python,
    run_floor,
    wgpu_wait,
)

# ---- 3. replay: submit a pre-recorded command buffer ------------------------------------


@pytest.mark.benchmark(group="replay")
def test_replay_vyre_native(benchmark, vnx, rounds):
    prog, a, o, dev = vnx.prog, vnx.a, vnx.o, vnx.dev

    def make():
        return prog.prerecord_persistent_dispatch([a], [o], workgroups=(1, 1, 1))

    def target(rec):
        rec.replay()

    benchmark.pedantic(
        target, setup=Drainer(dev.wait_idle, make), rounds=rounds.launch, warmup_rounds=rounds.launch_warmup
    )
    dev.wait_idle()
    record_python(benchmark, "vyre_native", "replay")


@pytest.mark.benchmark(group="replay")
def test_replay_wgpu_py(benchmark, wgx, rounds):
    encode, group, fill, queue = wgx.encode, wgx.group, wgx.fill, wgx.queue

    def make():
        return encode(group, fill)

    def target(cb):
        queue.submit([cb])

    benchmark.pedantic(
        target,
        setup=Drainer(lambda: wgpu_wait(wgx), make),
        rounds=rounds.launch,
        warmup_rounds=rounds.launch_warmup,
    )
    wgpu_wait(wgx)
    record_python(benchmark, "wgpu-py", "replay")


@pytest.mark.benchmark(group="replay")
def test_replay_raw_c(benchmark, cfloor, rounds):
    lib, ctx = cfloor.lib, cfloor.ctx
    run_floor(
        benchmark,
        cfloor,
        "replay",
        lambda n, s: lib.floor_replay(ctx, n, s),
        rounds.c_launch_ops,
        rounds.c_launch_rounds,
    )


# ---- 3b. replay burst: BURST pre-recorded submits back to back ----------------------------


@pytest.mark.benchmark(group="replay_burst")
def test_replay_burst_vyre_native(benchmark, vnx, rounds):
    prog, a, o, dev = vnx.prog, vnx.a, vnx.o, vnx.dev

    def make():
        dev.wait_idle()
        return [prog.prerecord_persistent_dispatch([a], [o], workgroups=(1, 1, 1)) for _ in range(BURST)]

    def target(recs):
        for rec in recs:
            rec.replay()

    benchmark.pedantic(target, setup=lambda: ((make(),), {}), rounds=rounds.burst, warmup_rounds=2)
    dev.wait_idle()
    record_python(benchmark, "vyre_native", "replay_burst", ops_per_round=BURST)


@pytest.mark.benchmark(group="replay_burst")
def test_replay_burst_wgpu_py(benchmark, wgx, rounds):
    encode, group, fill, queue = wgx.encode, wgx.group, wgx.fill, wgx.queue

    def make():
        wgpu_wait(wgx)
        return [encode(group, fill) for _ in range(BURST)]

    def target(cbs):
        for cb in cbs:
            queue.submit([cb])

    benchmark.pedantic(target, setup=lambda: ((make(),), {}), rounds=rounds.burst, warmup_rounds=2)
    wgpu_wait(wgx)
    record_python(benchmark, "wgpu-py", "replay_burst", ops_per_round=BURST)


@pytest.mark.benchmark(group="replay_burst")
def test_replay_burst_raw_c(benchmark, cfloor, rounds):
    lib, ctx = cfloor.lib, cfloor.ctx
    run_floor(
        benchmark,
        cfloor,
        "replay_burst",
        lambda n, s: lib.floor_replay_burst(ctx, n, s),
        BURST * 2,
        rounds.burst // 2,
    )


# ---- 4. replay + wait for completion ------------------------------------------------------


@pytest.mark.benchmark(group="replay_wait")
def test_replay_wait_vyre_native(benchmark, vnx, rounds):
    """No public wait-for-one-submission call yet: Device.wait_idle() after replay()."""
    prog, a, o, dev = vnx.prog, vnx.a, vnx.o, vnx.dev

    def make():
        return prog.prerecord_persistent_dispatch([a], [o], workgroups=(1, 1, 1))

    def target(rec):
        rec.replay()
        dev.wait_idle()

    benchmark.pedantic(
        target, setup=Drainer(lambda: None, make), rounds=rounds.launch, warmup_rounds=rounds.launch_warmup
    )
    record_python(benchmark, "vyre_native", "replay_wait")


@pytest.mark.benchmark(group="replay_wait")
def test_replay_wait_wgpu_py(benchmark, wgx, rounds):
    """queue.submit, then a blocking device poll (see harness.wgpu_wait: wgpu-py 0.32's
    public on_submitted_work_done_sync() is broken against its wgpu-native)."""
    encode, group, fill, queue = wgx.encode, wgx.group, wgx.fill, wgx.queue

    def make():
        return encode(group, fill)

    def target(cb):
        queue.submit([cb])
        wgpu_wait(wgx)

    benchmark.pedantic(
        target, setup=Drainer(lambda: None, make), rounds=rounds.launch, warmup_rounds=rounds.launch_warmup
    )
    record_python(benchmark, "wgpu-py", "replay_wait")


@pytest.mark.benchmark(group="replay_wait")
def test_replay_wait_raw_c(benchmark, cfloor, rounds):
    lib, ctx = cfloor.lib, cfloor.ctx
    run_floor(
        benchmark,
        cfloor,
        "replay_wait",
        lambda n, s: lib.floor_replay_wait(ctx, n, s),
        rounds.c_launch_ops,
        rounds.c_launch_rounds,
    )


# ---- 5. encode + submit per dispatch ----------------------------------------------------------


@pytest.mark.benchmark(group="encode_submit")
def test_encode_submit_vyre_native(benchmark, vnx, rounds):
    """prerecord_persistent_dispatch + replay, the recording released in the timed part."""
    prog, a, o, dev = vnx.prog, vnx.a, vnx.o, vnx.dev

    def target():
        prog.prerecord_persistent_dispatch([a], [o], workgroups=(1, 1, 1)).replay()

    benchmark.pedantic(
        target, setup=Drainer(dev.wait_idle), rounds=rounds.launch, warmup_rounds=rounds.launch_warmup
    )
    dev.wait_idle()
    record_python(benchmark, "vyre_native", "encode_submit")


@pytest.mark.benchmark(group="encode_submit")
def test_encode_submit_wgpu_py(benchmark, wgx, rounds):
    bench_wgpu_encode_submit(benchmark, wgx, rounds, "encode_submit")


@pytest.mark.benchmark(group="encode_submit")
def test_encode_submit_raw_c(benchmark, cfloor, rounds):
    bench_floor_encode_submit(benchmark, cfloor, rounds, "encode_submit")
