"""The GPU cost of zero-initialising var<workgroup> memory (WGSL's promise, which
vyre_native keeps by adding the zeroing to the kernel: vyre_native/zero_workgroup.py).

One kernel that writes all of its workgroup memory before reading it, so it is right
either way, compiled twice: as ``compile()`` makes it (zeroed first) and with
``zero_workgroup_memory=False``. Each is one dispatch of ``WORKGROUPS`` workgroups of
256, timed on the GPU with timestamps; per size, the two rows' difference is what the
zeroing costs (``extra_info``: ``no_zero_ns_median`` beside the zeroed row).
"""

from __future__ import annotations

import statistics

import pytest
from harness import _per_operation

WORKGROUPS = 1024
#: workgroup memory sizes in bytes: a small tile and WebGPU's default limit, 16 KiB
SIZES = {"1KiB": 1024, "16KiB": 16384}

WGSL = """
override words: u32;
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
var<workgroup> tile: array<u32, words>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) i: u32, @builtin(workgroup_id) wg: vec3<u32>) {
    for (var k = i; k < words; k += 256u) { tile[k] = k ^ wg.x; }
    workgroupBarrier();
    var acc = 0u;
    for (var k = i; k < words; k += 256u) { acc += tile[(k + 1u) % words]; }
    out[wg.x * 256u + i] = acc;
}
"""


_MEASURED: dict[int, tuple[list[int], list[int]]] = {}


def _gpu_times(vnx, rounds, size: int) -> tuple[list[int], list[int]]:
    """GPU times (ns) of one dispatch, zeroed and not, measured alternately (so both see
    the GPU in the same state), once per size for both rows."""
    if size not in _MEASURED:
        dev = vnx.dev
        recs = []
        for zero in (True, False):
            prog = dev.compile(WGSL, constants={"words": size // 4}, zero_workgroup_memory=zero)
            recs.append(prog.record([], [dev.alloc(4 * 256 * WORKGROUPS)], workgroups=(WORKGROUPS, 1, 1)))
        times: tuple[list[int], list[int]] = ([], [])
        for _ in range(max(rounds.big_read, 5) + 3):
            for rec, out in zip(recs, times):
                sub = rec.replay(timing=True)
                dev.wait_idle()  # a blocking wait: a polling thread would take a CPU adapter's cores
                out.append(sub.gpu_time_ns)
        _MEASURED[size] = times[0][3:], times[1][3:]
    return _MEASURED[size]


def _record(benchmark, operation: str, times_ns: list[int], size: int) -> None:
    """The GPU times as the row's samples (pytest-benchmark's table then shows them) and
    extra_info."""
    benchmark.pedantic(lambda: None, rounds=1)
    if getattr(benchmark, "stats", None) is not None:  # None under --benchmark-disable
        _per_operation(benchmark, [t / 1e9 for t in times_ns])
    info = benchmark.extra_info
    info.update(way="vyre_native", operation=operation, ops_per_round=1, statistic_of="gpu_time")
    info["per_op_ns"] = statistics.fmean(times_ns)
    info["per_op_ns_median"] = float(statistics.median(times_ns))
    info["per_op_ns_min"] = float(min(times_ns))
    q1, _, q3 = statistics.quantiles(times_ns, n=4)
    info["per_op_ns_q1"], info["per_op_ns_q3"] = float(q1), float(q3)
    info["workgroup_bytes"], info["workgroups"] = size, WORKGROUPS


@pytest.mark.parametrize("label", list(SIZES))
def test_workgroup_memory_zeroed_gpu(benchmark, vnx, rounds, label):
    """The kernel as compile() makes it: its 1 or 16 KiB zeroed first in each workgroup;
    extra_info also holds the zeroing's cost, the two rows' medians apart."""
    if not vnx.dev.timestamps:
        pytest.skip("the adapter has no timestamp queries")
    benchmark.group = f"workgroup_{label}_gpu"
    zeroed, plain = _gpu_times(vnx, rounds, SIZES[label])
    _record(benchmark, f"workgroup_{label}_zeroed_gpu", zeroed, SIZES[label])
    benchmark.extra_info["zeroing_ns_median"] = float(statistics.median(zeroed) - statistics.median(plain))


@pytest.mark.parametrize("label", list(SIZES))
def test_workgroup_memory_not_zeroed_gpu(benchmark, vnx, rounds, label):
    """The same kernel compiled with zero_workgroup_memory=False."""
    if not vnx.dev.timestamps:
        pytest.skip("the adapter has no timestamp queries")
    benchmark.group = f"workgroup_{label}_gpu"
    _, plain = _gpu_times(vnx, rounds, SIZES[label])
    _record(benchmark, f"workgroup_{label}_not_zeroed_gpu", plain, SIZES[label])
