"""Two questions the H200 workload table raised, answered on the machine itself.

    python benchmarks/workloads/probe.py cold  [--workload transformer] [--size w768] [--idle 3]
                                               [--rounds 30]
    python benchmarks/workloads/probe.py split [--workload radix_sort] [--size 1M] [--plans "4 8 4,12"]
                                               [--rounds 200]

``cold``: builds one workload-size's vyre_native and wgpu-py-well ways, idles ``--idle``
seconds (as building a way and computing numpy's answer does), then alternates round by
round: vyre_native untimed (to completion, wall), vyre_native ``replay(timing=True)``
(GPU), wgpu-py-well with a pass ``timestamp_writes`` (GPU), wgpu-py-well untimed (wall);
with the GPU's SM clock and P-state from nvidia-smi where it is present (read after the
round, outside the timing). A GPU that idled shows as slow first rounds in every column,
timed and untimed, both ways; an artefact of vyre_native's timing would show as its GPU
column alone being off.

``split``: vyre_native's time to completion for the whole program as one sequence, and
for the same steps cut into several sequences replayed one after another (each plan a
comma list of cut points: ``4,12`` replays steps 0-3, then 4-11, then the rest), so the
GPU runs the first steps while the host encodes the next: what submitting early chunks
inside ``Sequence.replay`` would gain (medians of ``--rounds``, µs). A replay cannot
start on the GPU before it is encoded and submitted; the host encodes a dispatch in
about 2.5 µs on the H200's host, so a 40-dispatch program's ~100 µs of encoding is
otherwise paid before its first dispatch runs.

Sizes are looked up in both size sets (``small`` and ``full``). Nothing here is a test.
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from workload import Program, VnWay, WgpuWellWay  # noqa: E402


def build(workload: str, size: str) -> Program:
    module = importlib.import_module(workload)
    for sizes in module.SIZES.values():
        if size in sizes:
            program: Program = module.build(size, sizes[size])
            return program
    known = sorted(s for sizes in module.SIZES.values() for s in sizes)
    raise SystemExit(f"{workload} has no size {size!r}; it has {known}")


def wgpu_device() -> tuple[Any, Any]:
    import wgpu

    adapter = wgpu.gpu.request_adapter_sync()
    features = ["timestamp-query"] if "timestamp-query" in adapter.features else []
    return wgpu, adapter.request_device_sync(required_features=features, required_limits=dict(adapter.limits))


def clocks() -> str:
    if shutil.which("nvidia-smi") is None:
        return ""
    res = subprocess.run(
        ["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,pstate", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        check=False,
    )
    return res.stdout.strip().splitlines()[0] if res.returncode == 0 and res.stdout.strip() else ""


def wall_us(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e6


def cold(args: argparse.Namespace) -> None:
    import vyre_native as vn

    program = build(args.workload, args.size)
    dev = vn.Device()
    if not dev.timestamps:
        raise SystemExit(f"{dev.info['name']} has no timestamp queries")
    vnw = VnWay(dev, program)
    well = WgpuWellWay(*wgpu_device(), program)
    for way in (vnw, well):
        way.run()
        program.check(way.read(program.output))
    print(f"{program.workload} {program.size}: {len(program.steps)} dispatches on {dev.info['name']}")
    columns = "vn done | vn GPU (timed) | well GPU (timed) | well done | clocks"
    print(f"idle {args.idle} s, then per round (µs): {columns}")
    time.sleep(args.idle)
    for r in range(args.rounds):
        vn_done = wall_us(vnw.run)
        vn_gpu = vnw.seq.replay(timing=True).gpu_time_ns
        well_gpu = well.gpu_ns(1)["gpu_ns"]
        well_done = wall_us(well.run)
        print(
            f"{r:3d} {vn_done:10,.0f} | {(vn_gpu or 0) / 1e3:10,.0f} | {(well_gpu or 0) / 1e3:10,.0f} | "
            f"{well_done:10,.0f} | {clocks()}",
            flush=True,
        )
    well.close()
    vnw.close()


def split(args: argparse.Namespace) -> None:
    import vyre_native as vn

    program = build(args.workload, args.size)
    dev = vn.Device()
    vnw = VnWay(dev, program)
    vnw.run()
    program.check(vnw.read(program.output))
    print(f"{program.workload} {program.size}: {len(program.steps)} dispatches on {dev.info['name']}")
    plans: list[tuple[str, Any]] = [("whole", lambda: vnw.seq.replay().wait())]
    for cuts in args.plans:
        bounds = [0, *sorted(c for c in cuts if 0 < c < len(program.steps)), len(program.steps)]
        seqs = [vnw.sequence(program.steps[a:b]) for a, b in zip(bounds, bounds[1:]) if b > a]

        def run(seqs: list[Any] = seqs) -> None:
            for s in seqs[:-1]:
                s.replay()
            seqs[-1].replay().wait()

        run()
        program.check(vnw.read(program.output))
        plans.append(("cut at " + ",".join(map(str, bounds[1:-1])), run))
    for _ in range(max(20, args.rounds // 10)):  # warm up (see conftest.Budget.warmup_s)
        plans[0][1]()
    times: dict[str, list[float]] = {name: [] for name, _ in plans}
    for _ in range(args.rounds):  # interleaved, so a drifting clock touches every plan alike
        for name, run in plans:
            times[name].append(wall_us(run))
    for name, ts in times.items():
        q = statistics.quantiles(ts, n=4)
        median = statistics.median(ts)
        print(f"{name:>16}: done median {median:10,.1f} µs (quartiles {q[0]:,.1f}–{q[2]:,.1f})")
    vnw.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    c = sub.add_parser("cold")
    c.add_argument("--workload", default="transformer")
    c.add_argument("--size", default="w768")
    c.add_argument("--idle", type=float, default=3.0)
    c.add_argument("--rounds", type=int, default=30)
    s = sub.add_parser("split")
    s.add_argument("--workload", default="radix_sort")
    s.add_argument("--size", default="1M")
    s.add_argument(
        "--plans",
        type=lambda v: [[int(x) for x in plan.split(",")] for plan in v.split()],
        default=[[4], [8], [12], [16], [4, 12], [2, 8, 20]],
    )
    s.add_argument("--rounds", type=int, default=200)
    args = ap.parse_args()
    cold(args) if args.what == "cold" else split(args)


if __name__ == "__main__":
    main()
