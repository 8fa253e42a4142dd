"""Beyond the seed: replayable recordings, sequences, and readbacks in flight.

- Recording.replay(): re-encode + submit one dispatch from held state (vs wgpu-py and
  raw C encoding + submitting the same commands);
- Recording.replay(64): 64 launches (clear, pass, dispatch each) in one command
  buffer, one submit, per launch;
- a sequence of 1000 dispatches in one pass, one submit, per dispatch: host cost, and
  to completion;
- 64 MiB read back as 16 slices of 4 MiB all in flight at once (vs one 64 MiB
  readback, the target's reference, in test_bench_readback.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from harness import (
    BIG_READ,
    READ_PARTS,
    REPLAY_N,
    SEQUENCE_LEN,
    Drainer,
    bench_floor_encode_submit,
    bench_wgpu_encode_submit,
    record_python,
    run_floor,
    wgpu_wait,
)

# ---- Recording.replay(): encode + submit from held state -------------------------------


@pytest.mark.benchmark(group="recording_replay")
def test_recording_replay_vyre_native(benchmark, vnx, rounds):
    rec = vnx.prog.record([vnx.a], [vnx.o], workgroups=(1, 1, 1))
    benchmark.pedantic(
        rec.replay, setup=Drainer(vnx.dev.wait_idle), rounds=rounds.launch, warmup_rounds=rounds.launch_warmup
    )
    vnx.dev.wait_idle()
    record_python(benchmark, "vyre_native", "recording_replay")


@pytest.mark.benchmark(group="recording_replay")
def test_recording_replay_wgpu_py(benchmark, wgx, rounds):
    # wgpu-py and raw C have no replayable recording: they encode + submit, as below
    bench_wgpu_encode_submit(benchmark, wgx, rounds, "recording_replay")


@pytest.mark.benchmark(group="recording_replay")
def test_recording_replay_raw_c(benchmark, cfloor, rounds):
    bench_floor_encode_submit(benchmark, cfloor, rounds, "recording_replay")


# ---- Recording.replay(64): many launches, one submit ----------------------------------


@pytest.mark.benchmark(group="replay_n")
def test_replay_n_vyre_native(benchmark, vnx, rounds):
    rec = vnx.prog.record([vnx.a], [vnx.o], workgroups=(1, 1, 1))
    benchmark.pedantic(
        lambda: rec.replay(REPLAY_N),
        setup=Drainer(vnx.dev.wait_idle, every=1),
        rounds=rounds.burst,
        warmup_rounds=1,
    )
    vnx.dev.wait_idle()
    record_python(benchmark, "vyre_native", "replay_n", ops_per_round=REPLAY_N)


@pytest.mark.benchmark(group="replay_n")
def test_replay_n_wgpu_py(benchmark, wgx, rounds):
    device, pipeline, group, o, queue = wgx.device, wgx.pipeline, wgx.group, wgx.o, wgx.queue

    def target():
        enc = device.create_command_encoder()
        for _ in range(REPLAY_N):
            enc.clear_buffer(o)
            cpass = enc.begin_compute_pass()
            cpass.set_pipeline(pipeline)
            cpass.set_bind_group(0, group)
            cpass.dispatch_workgroups(1, 1, 1)
            cpass.end()
        queue.submit([enc.finish()])

    benchmark.pedantic(
        target, setup=Drainer(lambda: wgpu_wait(wgx), every=1), rounds=rounds.burst, warmup_rounds=1
    )
    wgpu_wait(wgx)
    record_python(benchmark, "wgpu-py", "replay_n", ops_per_round=REPLAY_N)


@pytest.mark.benchmark(group="replay_n")
def test_replay_n_raw_c(benchmark, cfloor, rounds):
    lib, ctx = cfloor.lib, cfloor.ctx
    run_floor(
        benchmark,
        cfloor,
        "replay_n",
        lambda n, s: lib.floor_encode_n_submit(ctx, REPLAY_N, n, s),
        rounds.burst,
        1,
        per_sample=REPLAY_N,
    )


# ---- a sequence of 1000 dispatches: one pass, one submit --------------------------------


def _vn_sequence(vnx):
    seq = vnx.dev.sequence()
    for _ in range(SEQUENCE_LEN):
        # clear_outputs=False: nothing between the dispatches, so all share one pass
        seq.add(vnx.prog, [vnx.a], [vnx.o], workgroups=(1, 1, 1), clear_outputs=False)
    return seq


def _wgpu_one_pass(wgx):
    device, pipeline, group, queue = wgx.device, wgx.pipeline, wgx.group, wgx.queue

    def submit():
        enc = device.create_command_encoder()
        cpass = enc.begin_compute_pass()
        cpass.set_pipeline(pipeline)
        cpass.set_bind_group(0, group)
        for _ in range(SEQUENCE_LEN):
            cpass.dispatch_workgroups(1, 1, 1)
        cpass.end()
        queue.submit([enc.finish()])

    return submit


@pytest.mark.benchmark(group="sequence_1000")
def test_sequence_1000_vyre_native(benchmark, vnx, rounds):
    seq = _vn_sequence(vnx)
    benchmark.pedantic(
        seq.replay, setup=Drainer(vnx.dev.wait_idle, every=1), rounds=rounds.burst, warmup_rounds=1
    )
    vnx.dev.wait_idle()
    record_python(benchmark, "vyre_native", "sequence_1000", ops_per_round=SEQUENCE_LEN)


@pytest.mark.benchmark(group="sequence_1000")
def test_sequence_1000_wgpu_py(benchmark, wgx, rounds):
    benchmark.pedantic(
        _wgpu_one_pass(wgx),
        setup=Drainer(lambda: wgpu_wait(wgx), every=1),
        rounds=rounds.burst,
        warmup_rounds=1,
    )
    wgpu_wait(wgx)
    record_python(benchmark, "wgpu-py", "sequence_1000", ops_per_round=SEQUENCE_LEN)


@pytest.mark.benchmark(group="sequence_1000")
def test_sequence_1000_raw_c(benchmark, cfloor, rounds):
    lib, ctx = cfloor.lib, cfloor.ctx
    run_floor(
        benchmark,
        cfloor,
        "sequence_1000",
        lambda n, s: lib.floor_one_pass(ctx, SEQUENCE_LEN, 0, n, s),
        rounds.burst,
        1,
        per_sample=SEQUENCE_LEN,
    )


@pytest.mark.benchmark(group="sequence_1000_wait")
def test_sequence_1000_wait_vyre_native(benchmark, vnx, rounds):
    seq = _vn_sequence(vnx)
    benchmark.pedantic(lambda: seq.replay().wait(), rounds=rounds.burst, warmup_rounds=1)
    record_python(benchmark, "vyre_native", "sequence_1000_wait", ops_per_round=SEQUENCE_LEN)


@pytest.mark.benchmark(group="sequence_1000_wait")
def test_sequence_1000_wait_wgpu_py(benchmark, wgx, rounds):
    submit = _wgpu_one_pass(wgx)

    def target():
        submit()
        wgpu_wait(wgx)

    benchmark.pedantic(target, rounds=rounds.burst, warmup_rounds=1)
    record_python(benchmark, "wgpu-py", "sequence_1000_wait", ops_per_round=SEQUENCE_LEN)


@pytest.mark.benchmark(group="sequence_1000_wait")
def test_sequence_1000_wait_raw_c(benchmark, cfloor, rounds):
    lib, ctx = cfloor.lib, cfloor.ctx
    run_floor(
        benchmark,
        cfloor,
        "sequence_1000_wait",
        lambda n, s: lib.floor_one_pass(ctx, SEQUENCE_LEN, 1, n, s),
        rounds.burst,
        1,
        per_sample=SEQUENCE_LEN,
    )


# ---- 16 x 4 MiB readbacks in flight at once ----------------------------------------------

SLICE = BIG_READ // READ_PARTS


@pytest.mark.benchmark(group="async_read_16x4MiB")
def test_async_read_parts_vyre_native(benchmark, vnx, rounds):
    slices = [vnx.dev.alloc(SLICE) for _ in range(READ_PARTS)]
    outs = [np.empty(SLICE, np.uint8) for _ in range(READ_PARTS)]

    def target():
        pending = [s.read_async() for s in slices]
        for p, out in zip(pending, outs):
            p.result_into(out)

    benchmark.pedantic(target, rounds=rounds.big_read, warmup_rounds=1)
    record_python(benchmark, "vyre_native", "async_read_16x4MiB", nbytes=BIG_READ)


@pytest.mark.benchmark(group="async_read_16x4MiB")
def test_async_read_parts_wgpu_py(benchmark, wgx, rounds):
    device, usage = wgx.device, wgx.usage
    slices = [device.create_buffer(size=SLICE, usage=usage) for _ in range(READ_PARTS)]

    def target():
        for s in slices:
            device.queue.read_buffer(s)

    benchmark.pedantic(target, rounds=rounds.big_read, warmup_rounds=1)
    record_python(benchmark, "wgpu-py", "async_read_16x4MiB", nbytes=BIG_READ)


@pytest.mark.benchmark(group="async_read_16x4MiB")
def test_async_read_parts_raw_c(benchmark, cfloor, rounds):
    lib, ctx = cfloor.lib, cfloor.ctx
    run_floor(
        benchmark,
        cfloor,
        "async_read_16x4MiB",
        lambda n, s: lib.floor_read_parts(ctx, READ_PARTS, n, s),
        1,
        rounds.big_read,
        nbytes=BIG_READ,
    )
