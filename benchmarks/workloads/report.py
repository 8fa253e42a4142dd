"""The workloads' ratio table (and a bar chart of ratios) from pytest-benchmark's JSON.

    pytest benchmarks/workloads --benchmark-json results.json
    python benchmarks/workloads/report.py results.json              # table; chart as results.png
    python benchmarks/workloads/report.py results.json --png c.png --md table.md
    python benchmarks/workloads/report.py results.json --no-chart

Per workload and size: vyre_native's time over wgpu-py's, done well (one encoder
and pass per iteration) and done simply (one submit per kernel), host-side and to
completion. A ratio is of medians; its spread, in brackets, pairs the quartiles
(vn's first over the other's third, vn's third over the other's first). Then the
targets: where the GPU work is small (GPU time under half of vyre_native's time to
completion) to completion <= 0.45x and host <= 0.30x wgpu-py done well; where the
GPU dominates, to completion <= 1.05x (GPU time + one submit round trip), with
GPU time from vyre_native's timestamps and the round trip from the ``round_trip``
group (one one-workgroup dispatch submitted and waited for). The chart needs
matplotlib and is skipped, with a note, without it.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
from typing import Any

VN, WELL, SIMPLE = "vyre_native", "wgpu-py-well", "wgpu-py-simple"
TARGET_DONE, TARGET_HOST, TARGET_GPU = 0.45, 0.30, 1.05


def _stats(bench: dict[str, Any]) -> dict[str, float]:
    s = bench["stats"]
    return {k: float(s[k]) for k in ("median", "q1", "q3", "min", "mean")}


def collect(raw: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Rows per (workload, size) with each way's host and done statistics, and the round trips."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    round_trip: dict[str, float] = {}
    for bench in raw.get("benchmarks", []):
        info = bench.get("extra_info", {})
        workload = info.get("workload")
        if workload is None:
            continue
        if workload == "round_trip":
            round_trip[info["way"]] = _stats(bench)["median"]
            continue
        key = (workload, info["size"])
        row = rows.setdefault(
            key,
            {"workload": workload, "size": info["size"], "dispatches": info.get("dispatches"), "gpu_ns": {}},
        )
        row.setdefault(info["metric"], {})[info["way"]] = _stats(bench)
        if info.get("gpu_ns") is not None:
            row["gpu_ns"][info["way"]] = info["gpu_ns"]
    return list(rows.values()), round_trip


def ratio(a: dict[str, float] | None, b: dict[str, float] | None) -> tuple[float, float, float] | None:
    """a / b of medians, and the spread (a.q1 / b.q3, a.q3 / b.q1)."""
    if not a or not b or b["median"] <= 0 or b["q1"] <= 0 or b["q3"] <= 0:
        return None
    return a["median"] / b["median"], a["q1"] / b["q3"], a["q3"] / b["q1"]


def analyse(rows: list[dict[str, Any]], round_trip: dict[str, float]) -> list[dict[str, Any]]:
    rtt = round_trip.get(VN)
    for row in rows:
        host, done = row.get("host", {}), row.get("done", {})
        row["ratios"] = {
            "host_well": ratio(host.get(VN), host.get(WELL)),
            "host_simple": ratio(host.get(VN), host.get(SIMPLE)),
            "done_well": ratio(done.get(VN), done.get(WELL)),
            "done_simple": ratio(done.get(VN), done.get(SIMPLE)),
        }
        gpu = row["gpu_ns"].get(VN)
        vn_done = done.get(VN)
        row["gpu_s"] = gpu / 1e9 if gpu is not None else None
        row["done_over_gpu_rtt"] = (
            vn_done["median"] / (gpu / 1e9 + rtt) if vn_done and gpu is not None and rtt is not None else None
        )
        if vn_done and gpu is not None:
            row["regime"] = "GPU-bound" if gpu / 1e9 >= 0.5 * vn_done["median"] else "small GPU work"
        else:
            row["regime"] = "unknown (no GPU time)"
        met: list[bool] = []
        if row["regime"] == "small GPU work":
            r_done, r_host = row["ratios"]["done_well"], row["ratios"]["host_well"]
            if r_done and r_host:
                met = [r_done[0] <= TARGET_DONE, r_host[0] <= TARGET_HOST]
        elif row["regime"] == "GPU-bound" and row["done_over_gpu_rtt"] is not None:
            met = [row["done_over_gpu_rtt"] <= TARGET_GPU]
        row["target_met"] = all(met) if met else None
    return rows


def _r(r: tuple[float, float, float] | None) -> str:
    return "n/a" if r is None else f"{r[0]:.2f} ({r[1]:.2f}–{r[2]:.2f})"


def _us(s: dict[str, float] | None) -> str:
    return "n/a" if not s else f"{s['median'] * 1e6:,.0f}"


def table(rows: list[dict[str, Any]], round_trip: dict[str, float], machine: dict[str, Any]) -> str:
    vn = machine.get("vyre_native", {}) or {}
    head = (
        f"Workloads on {vn.get('adapter', '?')} ({vn.get('backend', '?')}, {vn.get('driver', '?')}), "
        f"sizes: {(machine.get('workloads') or {}).get('size', '?')}"
        f"{', QUICK RUN' if vn.get('quick') else ''}; medians, µs; ratios vn / wgpu-py "
        "(spread from the quartiles)"
    )
    columns = (
        "| workload | size | dispatches | GPU µs (vn / well) | vn host | vn done | host / well | host / simple "
        "| done / well | done / simple | done / (GPU + RTT) | regime | target |"
    )
    lines = [head, "", columns, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for row in rows:
        r = row["ratios"]
        target = {True: "met", False: "not met", None: "n/a"}[row["target_met"]]
        gpu = " / ".join(
            "n/a" if row["gpu_ns"].get(w) is None else f"{row['gpu_ns'][w] / 1e3:,.0f}" for w in (VN, WELL)
        )
        dg = "n/a" if row["done_over_gpu_rtt"] is None else f"{row['done_over_gpu_rtt']:.2f}"
        lines.append(
            f"| {row['workload']} | {row['size']} | {row['dispatches']} | {gpu} "
            f"| {_us(row.get('host', {}).get(VN))} | {_us(row.get('done', {}).get(VN))} "
            f"| {_r(r['host_well'])} | {_r(r['host_simple'])} | {_r(r['done_well'])} | {_r(r['done_simple'])} "
            f"| {dg} | {row['regime']} | {target} |"
        )
    rtt = ", ".join(f"{way} {t * 1e6:.1f} µs" for way, t in sorted(round_trip.items())) or "not measured"
    targets = (
        f"Targets: small GPU work: done / well <= {TARGET_DONE}, host / well <= {TARGET_HOST}; "
        f"GPU-bound: done / (GPU + RTT) <= {TARGET_GPU}."
    )
    lines += ["", f"Submit round trip (one one-workgroup dispatch, submit + wait, median): {rtt}.", targets]
    return "\n".join(lines)


def chart(rows: list[dict[str, Any]], path: pathlib.Path, title: str) -> str:
    """Grouped bars of the four ratios with their spread, and done / (GPU + RTT); linear scales."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "chart skipped: matplotlib is not installed (pip install matplotlib)"
    labels = [f"{r['workload']}\n{r['size']}" for r in rows]
    series = [
        ("host_well", "host, vs wgpu-py well"),
        ("host_simple", "host, vs wgpu-py simple"),
        ("done_well", "to completion, vs wgpu-py well"),
        ("done_simple", "to completion, vs wgpu-py simple"),
    ]
    fig, (ax, ax2) = plt.subplots(
        1, 2, figsize=(max(8.0, 1.6 * len(rows) + 5.0), 4.8), gridspec_kw={"width_ratios": [3, 1.4]}
    )
    width = 0.8 / len(series)
    for i, (key, name) in enumerate(series):
        xs, ys, lo, hi = [], [], [], []
        for j, row in enumerate(rows):
            r = row["ratios"][key]
            if r is None:
                continue
            xs.append(j + (i - (len(series) - 1) / 2) * width)
            ys.append(r[0])
            lo.append(max(0.0, r[0] - r[1]))
            hi.append(max(0.0, r[2] - r[0]))
        ax.bar(xs, ys, width, yerr=[lo, hi], capsize=2, label=name)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.axhline(
        TARGET_DONE, color="tab:red", linestyle="--", linewidth=0.8, label=f"target, done ({TARGET_DONE})"
    )
    ax.axhline(
        TARGET_HOST, color="tab:purple", linestyle=":", linewidth=0.8, label=f"target, host ({TARGET_HOST})"
    )
    ax.set_xticks(range(len(rows)), labels, fontsize=8)
    ax.set_ylabel("vyre_native / wgpu-py (median; lower is better)")
    ax.set_title("vyre_native over wgpu-py", fontsize=10)
    ax.legend(fontsize=7)
    vals = [(j, r["done_over_gpu_rtt"]) for j, r in enumerate(rows) if r["done_over_gpu_rtt"] is not None]
    ax2.bar([j for j, _ in vals], [v for _, v in vals], 0.6, color="tab:gray")
    ax2.axhline(TARGET_GPU, color="tab:red", linestyle="--", linewidth=0.8, label=f"target ({TARGET_GPU})")
    ax2.axhline(1.0, color="black", linewidth=0.8)
    ax2.set_xticks(range(len(rows)), labels, fontsize=8)
    ax2.set_title("vyre_native done / (GPU time + round trip)", fontsize=10)
    ax2.legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return f"chart: {path}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", type=pathlib.Path, help="pytest-benchmark JSON (--benchmark-json)")
    ap.add_argument("--png", type=pathlib.Path, help="chart path (default: the JSON's path with .png)")
    ap.add_argument("--md", type=pathlib.Path, help="also write the table to this Markdown file")
    ap.add_argument("--no-chart", action="store_true", help="print the table only")
    args = ap.parse_args(argv)
    try:
        raw = json.loads(args.json.read_text())
    except (OSError, ValueError) as err:
        print(f"report: cannot read {args.json}: {err}. Fix: pass a pytest-benchmark JSON.", file=sys.stderr)
        return 2
    raw = raw.get("pytest_benchmark", raw)  # a `python -m vyre_native bench` report holds it
    rows, round_trip = collect(raw)
    if not rows:
        print(
            f"report: {args.json} has no workload benchmarks. Fix: run pytest benchmarks/workloads "
            "--benchmark-json PATH.",
            file=sys.stderr,
        )
        return 1
    rows = analyse(rows, round_trip)
    machine = raw.get("machine_info", {})
    text = table(rows, round_trip, machine)
    print(text)
    if args.md:
        args.md.write_text(text + "\n")
    if not args.no_chart:
        vn = machine.get("vyre_native", {}) or {}
        title = (
            f"workloads, {vn.get('adapter', '?')} ({(machine.get('workloads') or {}).get('size', '?')} sizes)"
        )
        print(chart(rows, args.png or args.json.with_suffix(".png"), title))
    return 0


if __name__ == "__main__":
    sys.exit(main())
