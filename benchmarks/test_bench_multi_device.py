"""Operation 14: throughput of two Devices driven from two threads against one.

The same compute-bound kernel runs 2 x UNITS times: all on one device from one thread
(``multi_device_one``), or UNITS on each of two devices, one thread each
(``multi_device_two``). Both rows are time per unit of work, so one / two is the
throughput gained. With two adapters (the H200 x2 machine) each device gets its own
GPU; with one adapter both devices share it and about 1.0x is expected.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from harness import record_python

import vyre_native as vn

UNITS = 16
# Each invocation runs a dependent FMA chain: compute-bound, so two GPUs can double it.
KERNEL = """
@group(0) @binding(0) var<storage, read> params: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    var x = f32(gid.x) * 1e-6;
    for (var i = 0u; i < params[0]; i = i + 1u) { x = fma(x, 0.999999, 1e-7); }
    out[gid.x] = x;
}
"""


@pytest.fixture(scope="module")
def devices():
    adapters = vn.enumerate_adapters()
    picks = [0, 1 if len(adapters) > 1 else 0]
    devs = [vn.Device(adapter=i) for i in picks]
    cpu = devs[0].info["adapter_type"] == "CPU"
    # about 5 ms a unit on an H200; much smaller on a CPU adapter
    iters, groups = (200, 64) if cpu else (20_000, 4096)
    recs = []
    for dev in devs:
        prog = dev.compile(KERNEL)
        rec = prog.record(
            [dev.upload(np.array([iters], np.uint32))],
            [dev.alloc(groups * 256 * 4)],
            workgroups=(groups, 1, 1),
        )
        rec.replay().wait()  # warm up: pipeline and bind groups made
        recs.append(rec)
    yield {"recs": recs, "distinct_adapters": picks[0] != picks[1], "names": [d.info["name"] for d in devs]}
    for dev in devs:
        dev.close()


def _drive(rec: vn.Recording, units: int) -> None:
    for _ in range(units):
        rec.replay().wait()


def test_multi_device_one_vyre_native(benchmark, devices):
    benchmark.group = "multi_device"
    rec = devices["recs"][0]
    benchmark.pedantic(lambda: _drive(rec, 2 * UNITS), rounds=3, iterations=1, warmup_rounds=1)
    record_python(
        benchmark, "vyre_native", "multi_device_one", ops_per_round=2 * UNITS, adapters=devices["names"][:1]
    )


def test_multi_device_two_vyre_native(benchmark, devices):
    benchmark.group = "multi_device"

    def both() -> None:
        threads = [threading.Thread(target=_drive, args=(rec, UNITS)) for rec in devices["recs"]]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    benchmark.pedantic(both, rounds=3, iterations=1, warmup_rounds=1)
    record_python(
        benchmark,
        "vyre_native",
        "multi_device_two",
        ops_per_round=2 * UNITS,
        adapters=devices["names"],
        distinct_adapters=devices["distinct_adapters"],
    )
