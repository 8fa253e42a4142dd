"""Per-step scalars in a sequence of 1000 dispatches: immediates against uniform buffers.

Each step of the sequence gives the kernel its own scalar. With ``var<immediate>``
the steps share one pipeline and one bind group, and each sets its bytes with one
``SetImmediates``; with a uniform per step, each step binds a bind group of its own
(1000 uniform buffers, 1000 bind groups, made once before the timing). Timed: the
replay of the whole sequence (one command buffer, one pass, one submit), per dispatch,
on the host; wgpu-py encodes the same commands itself. Where the adapter has no
immediates the immediates rows are skipped.
"""

from __future__ import annotations

import numpy as np
import pytest
from harness import ADD_IMMEDIATE, SEQUENCE_LEN, Drainer, elementwise, record_python, wgpu_wait

N = 64
IMMEDIATE = ADD_IMMEDIATE
UNIFORM = elementwise("acc[i] = acc[i] + k.x;", "read_write acc", "uniform k: vec4<u32>", ty="u32")
#: one 16-byte uniform per step: vec4<u32>(k, 0, 0, 0)
VALUES = [np.array([k, 0, 0, 0], np.uint32) for k in range(SEQUENCE_LEN)]


def expected(replays: int) -> np.uint32:
    """Every element after `replays` replays of the sequence (u32 arithmetic wraps)."""
    return np.uint32(sum(range(SEQUENCE_LEN)) * replays % 2**32)


@pytest.fixture(scope="module")
def wgi():  # type: ignore[no-untyped-def]
    """wgpu-py with the immediates feature (the shared wgx device has no features)."""
    import wgpu

    adapter = wgpu.gpu.request_adapter_sync()
    if "immediates" not in adapter.features:
        pytest.skip("the adapter has no immediates")
    device = adapter.request_device_sync(
        required_features=["immediates"], required_limits={"max-immediate-size": 4}
    )
    usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST
    acc = device.create_buffer(size=4 * N, usage=usage)
    storage = {"binding": 0, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": "storage"}}
    uniform = {"binding": 1, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": {"type": "uniform"}}
    imm_layout = device.create_bind_group_layout(entries=[storage])
    imm = device.create_compute_pipeline(
        layout=device.create_pipeline_layout(bind_group_layouts=[imm_layout], immediate_size=4),
        compute={"module": device.create_shader_module(code=IMMEDIATE), "entry_point": "main"},
    )
    uni_layout = device.create_bind_group_layout(entries=[storage, uniform])
    uni = device.create_compute_pipeline(
        layout=device.create_pipeline_layout(bind_group_layouts=[uni_layout]),
        compute={"module": device.create_shader_module(code=UNIFORM), "entry_point": "main"},
    )
    acc_entry = {"binding": 0, "resource": {"buffer": acc, "offset": 0, "size": 4 * N}}
    imm_group = device.create_bind_group(layout=imm_layout, entries=[acc_entry])
    uni_groups = [
        device.create_bind_group(
            layout=uni_layout,
            entries=[
                acc_entry,
                {
                    "binding": 1,
                    "resource": {
                        "buffer": device.create_buffer_with_data(data=v, usage=wgpu.BufferUsage.UNIFORM),
                        "offset": 0,
                        "size": 16,
                    },
                },
            ],
        )
        for v in VALUES
    ]

    class Ns:
        pass

    ns = Ns()
    ns.device, ns.queue, ns.imm, ns.uni = device, device.queue, imm, uni  # type: ignore[attr-defined]
    ns.imm_group, ns.uni_groups = imm_group, uni_groups  # type: ignore[attr-defined]
    return ns


def _bench_vn(benchmark, vnx, rounds, seq, acc, operation: str) -> None:  # type: ignore[no-untyped-def]
    """Time seq.replay() (the queue drained, untimed, after each), then check the sums."""
    benchmark.pedantic(
        seq.replay, setup=Drainer(vnx.dev.wait_idle, every=1), rounds=rounds.burst, warmup_rounds=1
    )
    vnx.dev.wait_idle()
    assert (acc.read(np.uint32) == expected(rounds.burst + 1)).all()  # warm-up + timed replays
    record_python(benchmark, "vyre_native", operation, ops_per_round=SEQUENCE_LEN)


def _bench_wgpu(benchmark, wgi, rounds, steps, operation: str) -> None:  # type: ignore[no-untyped-def]
    """Time one encoder, one pass holding steps(pass), one submit, as wgpu-py does it."""

    def submit() -> None:
        enc = wgi.device.create_command_encoder()
        cpass = enc.begin_compute_pass()
        steps(cpass)
        cpass.end()
        wgi.queue.submit([enc.finish()])

    benchmark.pedantic(
        submit, setup=Drainer(lambda: wgpu_wait(wgi), every=1), rounds=rounds.burst, warmup_rounds=1
    )
    wgpu_wait(wgi)
    record_python(benchmark, "wgpu-py", operation, ops_per_round=SEQUENCE_LEN)


@pytest.mark.benchmark(group="sequence_1000_immediates")
def test_sequence_1000_immediates_vyre_native(benchmark, vnx, rounds):  # type: ignore[no-untyped-def]
    if "immediates" not in vnx.dev.features:
        pytest.skip("the adapter has no immediates")
    prog = vnx.dev.compile(IMMEDIATE, preserve=["acc"])
    acc = vnx.dev.alloc(4 * N)
    seq = vnx.dev.sequence()
    for v in VALUES:
        seq.add(prog, [], [acc], clear_outputs=False, immediates=v[:1])
    _bench_vn(benchmark, vnx, rounds, seq, acc, "sequence_1000_immediates")


@pytest.mark.benchmark(group="sequence_1000_immediates")
def test_sequence_1000_immediates_wgpu_py(benchmark, wgi, rounds):  # type: ignore[no-untyped-def]
    def steps(cpass) -> None:  # type: ignore[no-untyped-def]
        cpass.set_pipeline(wgi.imm)
        cpass.set_bind_group(0, wgi.imm_group)
        for v in VALUES:
            cpass.set_immediates(0, v, 0, 4)
            cpass.dispatch_workgroups(1, 1, 1)

    _bench_wgpu(benchmark, wgi, rounds, steps, "sequence_1000_immediates")


@pytest.mark.benchmark(group="sequence_1000_uniforms")
def test_sequence_1000_uniforms_vyre_native(benchmark, vnx, rounds):  # type: ignore[no-untyped-def]
    prog = vnx.dev.compile(UNIFORM, preserve=["acc"])
    acc = vnx.dev.alloc(4 * N)
    params = [vnx.dev.upload(v) for v in VALUES]
    seq = vnx.dev.sequence()
    for p in params:
        seq.add(prog, [], [acc], params=p, clear_outputs=False)
    _bench_vn(benchmark, vnx, rounds, seq, acc, "sequence_1000_uniforms")


@pytest.mark.benchmark(group="sequence_1000_uniforms")
def test_sequence_1000_uniforms_wgpu_py(benchmark, wgi, rounds):  # type: ignore[no-untyped-def]
    def steps(cpass) -> None:  # type: ignore[no-untyped-def]
        cpass.set_pipeline(wgi.uni)
        for group in wgi.uni_groups:
            cpass.set_bind_group(0, group)
            cpass.dispatch_workgroups(1, 1, 1)

    _bench_wgpu(benchmark, wgi, rounds, steps, "sequence_1000_uniforms")
