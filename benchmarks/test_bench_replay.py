"""Beyond the seed: replayable recordings, sequences, and readbacks in flight.

- Recording.replay(): re-encode + submit one dispatch from held state (vs wgpu-py and
  raw C encoding + submitting the same commands);
- Recording.replay(64): 64 launches (each its output's fill and its dispatch) in one
  compute pass, one submit, per launch;
- a sequence of 1000 dispatches in one pass, one submit, per dispatch: host cost, and
  to completion; without clears, and with every step clearing its output (a fill
  dispatch in the pass);
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
    bench_floor_launch,
    bench_floor_one_call,
    bench_floor_sequence,
    bench_vn_launch,
    bench_vn_sequence,
    bench_wgpu_encode_submit,
    bench_wgpu_sequence,
    record_python,
    run_floor,
    wgpu_wait,
)

# ---- Recording.replay(): encode + submit from held state -------------------------------


@pytest.mark.benchmark(group="recording_replay")
def test_recording_replay_vyre_native(benchmark, vnx, rounds):
    rec = vnx.prog.record([vnx.a], [vnx.o], workgroups=(1, 1, 1))
    bench_vn_launch(benchmark, vnx, rounds, rec.replay, "recording_replay")


@pytest.mark.benchmark(group="recording_replay")
def test_recording_replay_wgpu_py(benchmark, wgx, rounds):
    # wgpu-py and raw C have no replayable recording: they encode + submit, as below
    bench_wgpu_encode_submit(benchmark, wgx, rounds, "recording_replay")


@pytest.mark.benchmark(group="recording_replay")
def test_recording_replay_raw_c(benchmark, cfloor, rounds):
    bench_floor_launch(benchmark, cfloor, rounds, "recording_replay", "encode_submit")


@pytest.mark.benchmark(group="recording_replay")
def test_recording_replay_raw_c_one_call(benchmark, cfloor, rounds):
    """The same encode + submit, one cffi call a round (the floor of a launch made from Python)."""
    bench_floor_one_call(benchmark, cfloor, rounds, "recording_replay", "encode_submit")


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
    # what Recording.replay(64) encodes: one pass, each launch its output's fill + dispatch
    target = _wgpu_one_pass(wgx, REPLAY_N, clear=True)
    benchmark.pedantic(
        target, setup=Drainer(lambda: wgpu_wait(wgx), every=1), rounds=rounds.burst, warmup_rounds=1
    )
    wgpu_wait(wgx)
    record_python(benchmark, "wgpu-py", "replay_n", ops_per_round=REPLAY_N)


@pytest.mark.benchmark(group="replay_n")
def test_replay_n_raw_c(benchmark, cfloor, rounds):
    call = cfloor.call("fill_in_pass", REPLAY_N, 0)
    run_floor(benchmark, cfloor, "replay_n", call, rounds.burst, 1, per_sample=REPLAY_N)


# ---- a sequence of 1000 dispatches: one pass, one submit --------------------------------
#
# Each way twice: with nothing cleared (sequence_1000: pipeline and bind group set
# once), and with every step clearing its output (sequence_1000_clear, the default
# clear_outputs=True: per step the fill pipeline and its bind group, the fill
# dispatch, the kernel's pipeline and bind group, its dispatch); each for the host
# cost and, as ..._wait, to completion.

SEQUENCES = pytest.mark.parametrize(
    "operation, wait",
    [(op, wait) for op in ("sequence_1000", "sequence_1000_clear") for wait in (False, True)],
    ids=["host", "done", "clear-host", "clear-done"],
)


def _vn_sequence(vnx, clear: bool):
    seq = vnx.dev.sequence()
    for _ in range(SEQUENCE_LEN):
        # without clears nothing sits between the dispatches; with them, fills in the pass
        seq.add(vnx.prog, [vnx.a], [vnx.o], workgroups=(1, 1, 1), clear_outputs=clear)
    return seq


def _wgpu_one_pass(wgx, steps: int, clear: bool):
    """``steps`` dispatches in one pass, one submit: with ``clear`` each step its output's
    fill, then the kernel's pipeline and bind group again (as floor.c's STEPS_FILL),
    else those set once."""
    device, pipeline, group, queue = wgx.device, wgx.pipeline, wgx.group, wgx.queue
    fill_in_pass, fill = wgx.fill_in_pass, wgx.fill

    def submit():
        enc = device.create_command_encoder()
        cpass = enc.begin_compute_pass()
        if not clear:
            cpass.set_pipeline(pipeline)
            cpass.set_bind_group(0, group)
        for _ in range(steps):
            if clear:
                fill_in_pass(cpass, fill)
                cpass.set_pipeline(pipeline)
                cpass.set_bind_group(0, group)
            cpass.dispatch_workgroups(1, 1, 1)
        cpass.end()
        queue.submit([enc.finish()])

    return submit


@SEQUENCES
def test_sequence_1000_vyre_native(benchmark, vnx, rounds, operation, wait):
    seq = _vn_sequence(vnx, operation.endswith("clear"))
    bench_vn_sequence(benchmark, vnx, rounds, seq, operation, wait)


@SEQUENCES
def test_sequence_1000_wgpu_py(benchmark, wgx, rounds, operation, wait):
    submit = _wgpu_one_pass(wgx, SEQUENCE_LEN, operation.endswith("clear"))
    bench_wgpu_sequence(benchmark, wgx, rounds, submit, operation, wait)


@SEQUENCES
def test_sequence_1000_raw_c(benchmark, cfloor, rounds, operation, wait):
    entry = "fill_in_pass" if operation.endswith("clear") else "one_pass"
    call = cfloor.call(entry, SEQUENCE_LEN, int(wait))
    bench_floor_sequence(benchmark, cfloor, rounds, operation, wait, call)


# ---- a dependent chain of 1000 dispatches: each reads the one before's output ------------
#
# The shape of a tinygrad JIT of dependent kernels: the same kernel, its buffers swapped
# every step, so the bind group changes at each dispatch and wgpu puts a barrier between
# every two. Raw C's floor_chain is what any wgpu-native client pays for it.

CHAINS = pytest.mark.parametrize("wait", [False, True], ids=["host", "done"])


@CHAINS
def test_sequence_chain_vyre_native(benchmark, vnx, rounds, wait):
    seq = vnx.dev.sequence()
    for k in range(SEQUENCE_LEN):
        src, dst = (vnx.a, vnx.o) if k % 2 == 0 else (vnx.o, vnx.a)
        seq.add(vnx.prog, [src], [dst], workgroups=(1, 1, 1), clear_outputs=False)
    bench_vn_sequence(benchmark, vnx, rounds, seq, "sequence_1000_chain", wait)


@CHAINS
def test_sequence_chain_wgpu_py(benchmark, wgx, rounds, wait):
    device, pipeline, queue = wgx.device, wgx.pipeline, wgx.queue
    groups = (wgx.bind(wgx.a, wgx.o), wgx.bind(wgx.o, wgx.a))

    def submit():
        enc = device.create_command_encoder()
        cpass = enc.begin_compute_pass()
        cpass.set_pipeline(pipeline)
        for k in range(SEQUENCE_LEN):
            cpass.set_bind_group(0, groups[k % 2])
            cpass.dispatch_workgroups(1, 1, 1)
        cpass.end()
        queue.submit([enc.finish()])

    bench_wgpu_sequence(benchmark, wgx, rounds, submit, "sequence_1000_chain", wait)


@CHAINS
def test_sequence_chain_raw_c(benchmark, cfloor, rounds, wait):
    call = cfloor.call("chain", SEQUENCE_LEN, int(wait))
    bench_floor_sequence(benchmark, cfloor, rounds, "sequence_1000_chain", wait, call)


# ---- a graph of 1000 dependent dispatches: pipeline and bindings change every step -----
#
# The shape of a tinygrad JIT of many kernels: each step its own buffers (a ring of 1001,
# step k reading buffer k and writing k + 1) and, every other step, another pipeline (the
# same kernel compiled twice: two pipelines, as two kernels are). Raw C's floor_graph
# encodes the same steps setting pipeline and bind group at each; vyre_native's Sequence
# is built once, untimed, as the JIT's graph is.


@pytest.fixture(scope="module")
def vn_graph(vnx):
    from harness import IO_BYTES, WGSL

    second = vnx.dev.compile(WGSL + "\n// the graph's second kernel: a pipeline of its own\n", entry_point="main")
    buffers = [vnx.dev.alloc(IO_BYTES) for _ in range(SEQUENCE_LEN + 1)]
    seq = vnx.dev.sequence()
    for k in range(SEQUENCE_LEN):
        seq.add(second if k % 2 else vnx.prog, [buffers[k]], [buffers[k + 1]], workgroups=(1, 1, 1), clear_outputs=False)
    return seq


@CHAINS
def test_sequence_graph_vyre_native(benchmark, vnx, vn_graph, rounds, wait):
    bench_vn_sequence(benchmark, vnx, rounds, vn_graph, "sequence_1000_graph", wait)


@CHAINS
def test_sequence_graph_raw_c(benchmark, cfloor, rounds, wait):
    call = cfloor.call("graph", SEQUENCE_LEN, int(wait))
    bench_floor_sequence(benchmark, cfloor, rounds, "sequence_1000_graph", wait, call)


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
    call = cfloor.call("read_parts", READ_PARTS)
    run_floor(benchmark, cfloor, "async_read_16x4MiB", call, 1, rounds.big_read, nbytes=BIG_READ)
