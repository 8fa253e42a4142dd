"""The benchmark report: run the suite in this folder and print, save and chart it.

Runs this folder's suite (pytest-benchmark) in a subprocess with ``--benchmark-json``,
then prints one row per operation: vyre_native | wgpu-py | raw C per operation,
and the ratios vn/C (how far above the raw-C floor; 1.0 is the floor) and
wgpu-py/vn (how much faster than wgpu-py; above 1.0 is faster). Writes the report
as JSON (``--json PATH``, default ``benchmarks/results/latest.json``) and, when
matplotlib is importable, a bar chart beside it (same name, ``.png``).

    python benchmarks/report.py                  # full run (a few minutes on a CPU adapter)
    python -m vyre_native bench                  # the same, from wherever the suite is found
    python benchmarks/report.py --quick          # smoke run: few rounds
    python benchmarks/report.py --json out.json  # where the report goes
    python benchmarks/report.py --from raw.json  # re-render a saved run, no benchmarking
    python benchmarks/report.py --from r.json --md r.md  # also the run's table as Markdown
    python benchmarks/report.py -- -k replay     # arguments after -- go to pytest

It belongs to the source checkout, not to the installed package, whose
``python -m vyre_native bench`` only finds this file and calls ``main``. pytest and
pytest-benchmark are needed only to run the suite; importing this module needs neither.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import pathlib
import platform
import site
import subprocess
import sys
import tempfile
from typing import Any

__all__ = ["build_report", "draw_chart", "format_markdown", "format_table", "main"]

WAYS = ("vyre_native", "wgpu-py", "raw-C")

#: operation id -> table label, in table order (benchmarks/harness.py OPERATIONS)
OPERATIONS: dict[str, str] = {
    "prerecord_hit": "pre-record, bind-group cache hit",
    "prerecord_hit_one_call": "raw C's pre-record, one cffi call each",
    "prerecord_miss": "pre-record, bind-group cache miss",
    "replay": "replay (submit pre-recorded)",
    "replay_burst": "replay, 64 back to back",
    "replay_wait": "replay + wait (1 workgroup)",
    "encode_submit": "record + replay per dispatch",
    "encode_submit_one_call": "raw C's encode + submit, one cffi call each",
    "read_output_4KiB": "read_output 4 KiB",
    "read_output_64MiB": "read_output 64 MiB",
    "read_output_into_4KiB": "read_output_into 4 KiB",
    "read_output_into_64MiB": "read_output_into 64 MiB",
    "read_zero_copy_64MiB": "read copy=False 64 MiB",
    "read_zero_copy_sum_64MiB": "read copy=False 64 MiB + sum",
    "read_typed_copy_64MiB": "read copy=True 64 MiB",
    "read_typed_copy_sum_64MiB": "read copy=True 64 MiB + sum",
    "read_typed_map_64MiB": "staging copy + map 64 MiB (no host copy)",
    "borrowed_dispatch": "borrowed dispatch end to end",
    "recording_replay": "Recording.replay() (re-encode + submit)",
    "recording_replay_one_call": "raw C's encode + submit, one cffi call each",
    "replay_n": "Recording.replay(64), per launch",
    "sequence_1000": "sequence of 1000, per dispatch (host)",
    "sequence_1000_wait": "sequence of 1000, per dispatch (done)",
    "sequence_1000_immediates": "sequence of 1000, per-step immediates",
    "sequence_1000_uniforms": "sequence of 1000, per-step uniform buffers",
    "sequence_1000_clear": "sequence of 1000 clearing, per step (host)",
    "sequence_1000_clear_wait": "sequence of 1000 clearing, per step (done)",
    "sequence_1000_clear_naive": "1000 clearing steps, clear_buffer + pass each (host)",
    "clear_64MiB_gpu": "clear 64 MiB between two dispatches (GPU time)",
    "async_read_16x4MiB": "16 x 4 MiB readbacks in flight",
    "workgroup_1KiB_zeroed_gpu": "1024 workgroups, 1 KiB var<workgroup> zeroed (GPU time)",
    "workgroup_1KiB_not_zeroed_gpu": "1024 workgroups, 1 KiB var<workgroup>, zeroing off (GPU time)",
    "workgroup_16KiB_zeroed_gpu": "1024 workgroups, 16 KiB var<workgroup> zeroed (GPU time)",
    "workgroup_16KiB_not_zeroed_gpu": "1024 workgroups, 16 KiB var<workgroup>, zeroing off (GPU time)",
    "interrupt_wait": "Ctrl-C during wait(), to KeyboardInterrupt",
    "write_64MiB": "write 64 MiB + wait",
    "compile": "compile WGSL into a pipeline",
    "compile_seen": "compile WGSL seen before",
    "multi_device_one": "compute unit, one device",
    "multi_device_two": "compute unit, two devices / two threads",
    "scaling_one_process": "compute unit, one process (vn.worker.Worker)",
    **{f"scaling_processes_{n}": f"compute unit, {n} worker process(es)" for n in (1, 2, 4)},
    **{f"scaling_ray_{n}": f"compute unit, {n} Ray actor(s)" for n in (1, 2, 4)},
    "write_4B_at_4": "write 4 B at offset 4 + wait",
    "write_3B_at_5": "write 3 B at offset 5 (a merged word) + wait",
    "write_1MiB_at_0": "write 1 MiB at offset 0 + wait",
    "write_1MiB_at_1": "write 1 MiB at offset 1 (merged head and tail) + wait",
    "copy_1MiB_0_to_0": "copy 1 MiB 0 -> 0 + wait",
    "copy_1MiB_1_to_1": "copy 1 MiB 1 -> 1 (merged head and tail) + wait",
    "copy_1MiB_1_to_2": "copy 1 MiB 1 -> 2 (shifted within words) + wait",
    "copy_64MiB_0_to_0": "copy 64 MiB 0 -> 0 + wait",
    "copy_64MiB_1_to_2": "copy 64 MiB 1 -> 2 (shifted within words) + wait",
}

#: what each row's raw-C floor does, for rows held to the raw-C way of their own operation
#: (the default: a row not named here or in FLOOR_ROWS reads "raw C, same operation")
FLOOR_NAMES: dict[str, str] = {
    "prerecord_miss": "raw C: two bind groups + encode + finish",
    "compile_seen": "raw C: module + pipeline of the same source",
    "read_typed_copy_64MiB": "raw C: copy + map + memcpy, reused host buffer",
    "read_typed_copy_sum_64MiB": "raw C: copy + map + memcpy, reused host buffer + sum",
    "read_zero_copy_sum_64MiB": "raw C: copy + map + memcpy + sum",
    "clear_64MiB_gpu": "raw C: clearBuffer between the passes (GPU time)",
    "copy_64MiB_0_to_0": "raw C: one CopyBufferToBuffer",
    "copy_64MiB_1_to_2": "raw C: a shift kernel, made once (floor.c)",
    "sequence_1000": "raw C: the same 1000 dispatches, one pass",
}
#: rows held to another row: (its operation, its way, what it is); these have no raw C
#: (WebGPU moves whole words only), so their floor is the whole-word operation
FLOOR_ROWS: dict[str, tuple[str, str, str]] = {
    # a launch made from Python: the raw-C operation one cffi call at a time (its vn / C
    # column still reads against the same operation in one C loop)
    "prerecord_hit": ("prerecord_hit_one_call", "raw-C", "raw C: encode + finish, one cffi call each"),
    "encode_submit": ("encode_submit_one_call", "raw-C", "raw C: encode + finish + submit, one cffi call each"),
    "recording_replay": (
        "recording_replay_one_call",
        "raw-C",
        "raw C: encode + finish + submit, one cffi call each",
    ),
    "write_1MiB_at_1": ("write_1MiB_at_0", "vyre_native", "the aligned write (vyre_native)"),
    "write_3B_at_5": ("write_4B_at_4", "vyre_native", "a whole-word write (vyre_native)"),
    "copy_1MiB_1_to_1": ("copy_1MiB_0_to_0", "vyre_native", "the aligned copy (vyre_native)"),
    "copy_1MiB_1_to_2": ("copy_1MiB_0_to_0", "vyre_native", "the aligned copy (vyre_native)"),
}


def floor_of(op: str) -> tuple[str, str, str]:
    """(operation, way, name) of the row ``op`` is held to."""
    return FLOOR_ROWS.get(op) or (op, "raw-C", FLOOR_NAMES.get(op, "raw C, same operation"))


_STAT_KEYS = {"mean": "per_op_ns", "median": "per_op_ns_median", "min": "per_op_ns_min"}
#: extra_info figures a row carries into the report (the 64 MiB clear's raw-C fill and
#: its two dispatches alone, in ns)
_EXTRA_KEYS = ("fill_ns_median", "no_clear_ns_median")


# ---- running the suite ----------------------------------------------------------------------

HERE = pathlib.Path(__file__).resolve().parent


def _pythonpath_for_the_package(env: dict[str, str]) -> None:
    """Make the subprocess import the very vyre_native this process would import."""
    spec = importlib.util.find_spec("vyre_native")
    if spec is None or spec.origin is None:
        return
    pkg_parent = pathlib.Path(spec.origin).resolve().parent.parent
    standard = {pathlib.Path(p).resolve() for p in site.getsitepackages() + [site.getusersitepackages()]}
    if pkg_parent in standard:
        return
    old = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = str(pkg_parent) + (os.pathsep + old if old else "")


def run_suite(suite: pathlib.Path, raw_json: pathlib.Path, quick: bool, pytest_args: list[str]) -> int:
    cmd = [sys.executable, "-m", "pytest", str(suite), "-q", f"--benchmark-json={raw_json}"]
    if quick:
        cmd.append("--vn-quick")
    cmd += pytest_args
    env = dict(os.environ)
    env.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())
    _pythonpath_for_the_package(env)
    print("running:", " ".join(cmd), flush=True)
    # cwd = the suite: `python -m` puts the cwd on sys.path, and the repository root
    # holds an uncompiled vyre_native/ that must not shadow the installed one.
    return subprocess.call(cmd, cwd=str(suite), env=env)


# ---- the report ----------------------------------------------------------------------------------


def _machine(raw: dict[str, Any]) -> dict[str, Any]:
    mi = raw.get("machine_info", {})
    vn = dict(mi.get("vyre_native") or {})
    wgpy = vn.get("wgpu_py") or {}
    cpu = mi.get("cpu") or {}
    host_cpu = vn.get("host_cpu") or cpu.get("brand_raw") or mi.get("processor") or mi.get("machine")
    return {
        "adapter": vn.get("adapter") or wgpy.get("adapter"),
        "backend": vn.get("backend") or wgpy.get("backend"),
        "adapter_type": vn.get("adapter_type"),
        "driver": vn.get("driver") or wgpy.get("driver"),
        "wgpu_native_version": vn.get("wgpu_native_version"),
        "vyre_native_version": vn.get("vyre_native_version"),
        "wgpu_py_version": wgpy.get("wgpu_py_version"),
        "wgpu_py_adapter": wgpy.get("adapter"),
        "python_version": vn.get("python_version") or mi.get("python_version"),
        "date": vn.get("date") or (raw.get("datetime") or "")[:10],
        "datetime": vn.get("datetime_utc") or raw.get("datetime"),
        "host_cpu": host_cpu,
        "host": f"{mi.get('system', '')} {mi.get('release', '')} {mi.get('machine', '')}".strip(),
        "quick": vn.get("quick"),
        "raw_c": vn.get("raw_c") or {"available": None, "reason": "unknown (no raw_c facts in the run)"},
        "env": vn.get("env", {}),
        "pytest_benchmark_version": raw.get("version"),
    }


def _without_samples(raw: dict[str, Any]) -> dict[str, Any]:
    """pytest-benchmark's JSON without each benchmark's per-round list (stats.data)."""
    out = dict(raw)
    out["benchmarks"] = []
    for b in raw.get("benchmarks", []):
        b = dict(b)
        stats = dict(b.get("stats") or {})
        if "data" in stats:
            stats["data"] = f"<{len(stats['data'])} samples dropped; bench --keep-samples keeps them>"
        b["stats"] = stats
        out["benchmarks"].append(b)
    return out


def raw_info(raw: dict[str, Any], operation: str) -> dict[str, Any] | None:
    """The extra_info of the vyre_native benchmark of an operation, if it ran."""
    for b in raw.get("benchmarks", []):
        info = b.get("extra_info") or {}
        if info.get("operation") == operation and info.get("way") == "vyre_native":
            return dict(info)
    return None


def build_report(raw: dict[str, Any], stat: str = "mean", keep_samples: bool = False) -> dict[str, Any]:
    """The report (what --json writes) from pytest-benchmark's JSON."""
    key = _STAT_KEYS[stat]
    cells: dict[str, dict[str, dict[str, Any]]] = {}
    others: list[dict[str, Any]] = []
    for b in raw.get("benchmarks", []):
        info = b.get("extra_info") or {}
        op, way = info.get("operation"), info.get("way")
        per_op = info.get(key)
        if per_op is None and stat == "mean" and info.get("ops_per_round", 1) == 1:
            per_op = b["stats"]["mean"] * 1e9
        if not op or way not in WAYS:
            # Not one of the three ways (tinygrad's devices, a test without extra_info): a row
            # of its own, so a summary of such a run is not an empty table.
            if per_op is None and b["stats"].get(stat) is not None:
                per_op = b["stats"][stat] * 1e9
            others.append(
                {
                    "test": b.get("fullname") or b.get("name"),
                    "way": way,
                    "per_op_us": None if per_op is None else per_op / 1e3,
                    "rounds": b["stats"].get("rounds"),
                }
            )
            continue
        cells.setdefault(op, {})[way] = {
            "per_op_us": None if per_op is None else per_op / 1e3,
            "mean_us": None if info.get("per_op_ns") is None else info["per_op_ns"] / 1e3,
            "median_us": None if info.get("per_op_ns_median") is None else info["per_op_ns_median"] / 1e3,
            "min_us": None if info.get("per_op_ns_min") is None else info["per_op_ns_min"] / 1e3,
            "q1_us": None if info.get("per_op_ns_q1") is None else info["per_op_ns_q1"] / 1e3,
            "q3_us": None if info.get("per_op_ns_q3") is None else info["per_op_ns_q3"] / 1e3,
            "gb_per_s": None if per_op is None or not info.get("bytes") else info["bytes"] / per_op,
            "test": b.get("fullname") or b.get("name"),
            "rounds": b["stats"].get("rounds"),
            "ops_per_round": info.get("ops_per_round", 1),
            "extra": {k: info[k] for k in _EXTRA_KEYS if k in info},
        }
    machine = _machine(raw)
    order = [op for op in OPERATIONS if op in cells] + sorted(op for op in cells if op not in OPERATIONS)
    rows: list[dict[str, Any]] = []
    for op in order:
        ways = cells[op]
        us = {w: (ways.get(w) or {}).get("per_op_us") for w in WAYS}
        vn_, wg, c = us["vyre_native"], us["wgpu-py"], us["raw-C"]
        rows.append(
            {
                "id": op,
                "label": OPERATIONS.get(op, op),
                "per_op_us": us,
                "gb_per_s": {w: (ways.get(w) or {}).get("gb_per_s") for w in WAYS},
                "vn_over_c": vn_ / c if vn_ and c else None,
                "wgpu_py_over_vn": wg / vn_ if wg and vn_ else None,
                "detail": ways,
            }
        )
    by_id = {r["id"]: r for r in rows}
    for r in rows:
        floor_op, floor_way, floor_name = floor_of(r["id"])
        floor_row = by_id.get(floor_op)
        floor_us = None if floor_row is None else floor_row["per_op_us"].get(floor_way)
        if floor_op == r["id"] and floor_way == "vyre_native":
            floor_us = None
        vn_us = r["per_op_us"]["vyre_native"]
        r["floor"] = {
            "operation": floor_op,
            "way": floor_way,
            "name": floor_name,
            "per_op_us": floor_us,
            "ratio": vn_us / floor_us if vn_us and floor_us else None,
        }

    def pick(op: str, way: str, field: str = "per_op_us") -> float | None:
        r = by_id.get(op)
        if r is None:
            return None
        value = r[field].get(way)
        return None if value is None else float(value)

    def ratio(a: float | None, b: float | None) -> float | None:
        return a / b if a and b else None

    def vs(
        op: str, way: str, other: str | None = None, other_way: str = "raw-C", field: str = "per_op_us"
    ) -> float | None:
        """``op``'s ``way`` over ``other``'s (default: the same op) ``other_way``."""
        return ratio(pick(op, way, field), pick(other or op, other_way, field))

    def vn_and_raw_c(op: str) -> dict[str, float | None]:
        return {
            "vyre_native_us": pick(op, "vyre_native"),
            "raw_c_us": pick(op, "raw-C"),
            "ratio": vs(op, "vyre_native"),
        }

    raw_c = machine["raw_c"]
    targets = {
        "replay_vs_raw_c_submit": {
            "what": "vyre_native replay() host cost / raw-C submit of a pre-recorded command buffer (1.0 = the floor)",
            **vn_and_raw_c("replay"),
            "burst_ratio": vs("replay_burst", "vyre_native"),
        },
        "read_output_into_64MiB": {
            "what": "read_output_into of 64 MiB: throughput vs raw-C staging copy and vs wgpu-py read_buffer",
            "vyre_native_gb_per_s": pick("read_output_into_64MiB", "vyre_native", "gb_per_s"),
            "raw_c_gb_per_s": pick("read_output_into_64MiB", "raw-C", "gb_per_s"),
            "wgpu_py_gb_per_s": pick("read_output_into_64MiB", "wgpu-py", "gb_per_s"),
            "host_memcpy_gb_per_s": raw_c.get("host_memcpy_64MiB_gb_per_s"),
            "vn_over_raw_c_throughput": vs(
                "read_output_into_64MiB", "vyre_native", "read_output_into_64MiB", "raw-C", "gb_per_s"
            ),
            "vn_over_wgpu_py_throughput": vs(
                "read_output_into_64MiB", "vyre_native", "read_output_into_64MiB", "wgpu-py", "gb_per_s"
            ),
        },
        "read_zero_copy_64MiB": {
            "what": "64 MiB read(dtype, copy=False), time to a usable array / raw-C staging + memcpy (target "
            "<= 0.35); then the sum that reads it all, against the same for copy=True",
            **vn_and_raw_c("read_zero_copy_64MiB"),
            "raw_c_map_only_us": pick("read_typed_map_64MiB", "raw-C"),
            "vs_map_only": vs("read_zero_copy_64MiB", "vyre_native", "read_typed_map_64MiB"),
            "copy_true_us": pick("read_typed_copy_64MiB", "vyre_native"),
            "vs_copy_true": vs("read_zero_copy_64MiB", "vyre_native", "read_typed_copy_64MiB", "vyre_native"),
            "with_sum_us": pick("read_zero_copy_sum_64MiB", "vyre_native"),
            "copy_true_with_sum_us": pick("read_typed_copy_sum_64MiB", "vyre_native"),
            "with_sum_vs_copy_true": vs(
                "read_zero_copy_sum_64MiB", "vyre_native", "read_typed_copy_sum_64MiB", "vyre_native"
            ),
        },
        "record_replay_vs_wgpu_py": {
            "what": "wgpu-py encode + submit / vyre_native record + replay (above 1.0: vyre_native is faster)",
            "vyre_native_us": pick("encode_submit", "vyre_native"),
            "wgpu_py_us": pick("encode_submit", "wgpu-py"),
            "speedup": vs("encode_submit", "wgpu-py", "encode_submit", "vyre_native"),
            "vn_over_raw_c": vs("encode_submit", "vyre_native"),
        },
        "recording_replay_vs_raw_c": {
            "what": "Recording.replay() host cost / raw-C encode + submit of the same dispatch (target <= 1.15)",
            "ratio": vs("recording_replay", "vyre_native"),
            "replay_n_ratio": vs("replay_n", "vyre_native"),
        },
        "sequence_1000": {
            "what": "per dispatch in a 1000-dispatch sequence: vs raw C one pass (target <= 1.25), "
            "and wgpu-py encode + submit per dispatch / it (target >= 20)",
            **vn_and_raw_c("sequence_1000"),
            "done_us": pick("sequence_1000_wait", "vyre_native"),
            "raw_c_done_us": pick("sequence_1000_wait", "raw-C"),
            "vs_wgpu_py_encode_submit": vs("encode_submit", "wgpu-py", "sequence_1000", "vyre_native"),
        },
        "sequence_1000_clear": {
            "what": "per step in a 1000-step sequence that clears its outputs (the default): host and to "
            "completion vs raw C's fill-in-pass floor (targets <= 1.25), and vs the same sequence with "
            "clear_outputs=False and the naive raw-C clear_buffer + pass per step",
            **vn_and_raw_c("sequence_1000_clear"),
            "done_us": pick("sequence_1000_clear_wait", "vyre_native"),
            "raw_c_done_us": pick("sequence_1000_clear_wait", "raw-C"),
            "done_ratio": vs("sequence_1000_clear_wait", "vyre_native"),
            "no_clear_us": pick("sequence_1000", "vyre_native"),
            "raw_c_naive_us": pick("sequence_1000_clear_naive", "raw-C"),
        },
        "clear_64MiB_gpu": {
            "what": "GPU time of clearing 64 MiB between two dispatches: vyre_native's clear (a fill in the "
            "pass, or clear_buffer where the fill loses) / raw-C clear_buffer (target <= 1.2)",
            "vyre_native_us": pick("clear_64MiB_gpu", "vyre_native"),
            "raw_c_clear_buffer_us": pick("clear_64MiB_gpu", "raw-C"),
            "ratio": vs("clear_64MiB_gpu", "vyre_native"),
            "raw_c_fill_us": _extra_us(by_id, "clear_64MiB_gpu", "fill_ns_median"),
            "raw_c_no_clear_us": _extra_us(by_id, "clear_64MiB_gpu", "no_clear_ns_median"),
        },
        "async_read_16x4MiB": {
            "what": "16 x 4 MiB readbacks in flight, total / one 64 MiB read_output_into (target <= 1.2)",
            "total_us": pick("async_read_16x4MiB", "vyre_native"),
            "one_64MiB_us": pick("read_output_into_64MiB", "vyre_native"),
            "ratio": vs("async_read_16x4MiB", "vyre_native", "read_output_into_64MiB", "vyre_native"),
        },
    }
    two = by_id.get("multi_device_two", {}).get("detail", {}).get("vyre_native", {})
    targets["multi_device"] = {
        "what": "throughput of two devices from two threads / one device (target >= 1.8 with two adapters)",
        "speedup": vs("multi_device_one", "vyre_native", "multi_device_two", "vyre_native"),
        "distinct_adapters": (raw_info(raw, "multi_device_two") or {}).get("distinct_adapters"),
        "detail": two.get("test"),
    }
    return {
        "format": "vyre_native.bench/1",
        "statistic": stat,
        "unit": "microseconds per operation",
        "machine": machine,
        "operations": rows,
        "targets": targets,
        "other_benchmarks": others,
        "pytest_benchmark": raw if keep_samples else _without_samples(raw),
    }


def _extra_us(by_id: dict[str, Any], op: str, key: str) -> float | None:
    """A raw-C row's extra_info figure (ns) in µs, or None."""
    row = by_id.get(op)
    if row is None:
        return None
    test = (row["detail"].get("raw-C") or {}).get("extra") or {}
    value = test.get(key)
    return None if value is None else float(value) / 1e3


def _us(v: float | None) -> str:
    if v is None:
        return "n/a"
    if v >= 1000:
        return f"{v:,.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def _x(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.2f}x"


def _gb(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.2f} GB/s"


def format_table(report: dict[str, Any]) -> str:
    m = report["machine"]
    raw_c = m["raw_c"]
    if raw_c.get("available"):
        c_note = f"raw C: compiled with {raw_c.get('compiler')}"
    else:
        c_note = f"raw C: n/a ({raw_c.get('reason')})"
    lines = [
        f"vyre_native benchmarks ({report['statistic']} per operation, µs){'  [QUICK RUN]' if m.get('quick') else ''}",
        f"adapter: {m['adapter']} | backend: {m['backend']} | driver: {m['driver']}",
        (
            f"wgpu-native {m['wgpu_native_version']} | vyre_native {m['vyre_native_version']} | "
            f"wgpu-py {m['wgpu_py_version']} | Python {m['python_version']} | {m['date']}"
        ),
        f"host CPU: {m['host_cpu']} | {m['host']}" + (f" | env {m['env']}" if m.get("env") else ""),
        c_note,
    ]
    others = {"wgpu-py": m.get("wgpu_py_adapter"), "raw C": raw_c.get("adapter")}
    differ = [f"{k} ran on '{v}'" for k, v in others.items() if v and m["adapter"] and v != m["adapter"]]
    if differ:
        lines.append(
            f"WARNING: the ways ran on different adapters ({'; '.join(differ)}): ratios compare different GPUs."
        )
    lines.append("")
    header = ["operation", "vyre_native", "wgpu-py", "raw C", "vn/C", "wgpu-py/vn", "vn/floor", "floor"]
    body = []
    for r in report["operations"]:
        us = r["per_op_us"]
        floor = r.get("floor") or {}
        body.append(
            [
                r["label"],
                _us(us["vyre_native"]),
                _us(us["wgpu-py"]),
                _us(us["raw-C"]),
                _x(r["vn_over_c"]),
                _x(r["wgpu_py_over_vn"]),
                _x(floor.get("ratio")),
                floor.get("name", "") if floor.get("ratio") else "",
            ]
        )
    widths = [max(len(row[i]) for row in [header] + body) for i in range(len(header))]

    def fmt(row: list[str]) -> str:
        return (
            " | ".join(
                row[i].ljust(widths[i]) if i in (0, len(row) - 1) else row[i].rjust(widths[i])
                for i in range(len(row))
            )
            if row
            else ""
        )

    lines.append(fmt(header))
    lines.append("-+-".join("-" * w for w in widths))
    lines += [fmt(row) for row in body]
    lines.append("")
    lines.append(
        "vn/C: vyre_native over the raw-C floor (1.00x = the floor; lower is better). "
        "wgpu-py/vn: above 1.00x, vyre_native is that much faster than wgpu-py. "
        "vn/floor: vyre_native over the row's floor, named beside it (report.py FLOOR_NAMES, FLOOR_ROWS)."
    )
    t = report["targets"]
    rep, rd, rr = t["replay_vs_raw_c_submit"], t["read_output_into_64MiB"], t["record_replay_vs_wgpu_py"]
    rc, sq, ar = t["recording_replay_vs_raw_c"], t["sequence_1000"], t["async_read_16x4MiB"]
    sc, cg = t["sequence_1000_clear"], t["clear_64MiB_gpu"]
    zc = t["read_zero_copy_64MiB"]
    lines += [
        "",
        "targets:",
        (
            f"  replay host cost vs raw-C submit of a pre-recorded command buffer: {_us(rep['vyre_native_us'])} vs "
            f"{_us(rep['raw_c_us'])} µs = {_x(rep['ratio'])} (64 back to back: {_x(rep['burst_ratio'])})"
        ),
        (
            f"  read_output_into 64 MiB: vyre_native {_gb(rd['vyre_native_gb_per_s'])}, raw-C staging copy "
            f"{_gb(rd['raw_c_gb_per_s'])} ({_x(rd['vn_over_raw_c_throughput'])} of it), wgpu-py read_buffer "
            f"{_gb(rd['wgpu_py_gb_per_s'])} ({_x(rd['vn_over_wgpu_py_throughput'])} of it); "
            f"host memcpy {_gb(rd['host_memcpy_gb_per_s'])}"
        ),
        (
            f"  read copy=False 64 MiB, to a usable array: {_us(zc['vyre_native_us'])} µs vs raw-C staging + memcpy "
            f"{_us(zc['raw_c_us'])} µs = {_x(zc['ratio'])} (target <= 0.35x); vs raw-C staging + map alone "
            f"{_x(zc['vs_map_only'])}; vs copy=True {_x(zc['vs_copy_true'])}; with a sum of every float "
            f"{_us(zc['with_sum_us'])} µs vs copy=True + sum {_us(zc['copy_true_with_sum_us'])} µs "
            f"({_x(zc['with_sum_vs_copy_true'])})"
        ),
        (
            f"  record + replay vs wgpu-py encode + submit: {_us(rr['vyre_native_us'])} vs "
            f"{_us(rr['wgpu_py_us'])} µs: wgpu-py/vn {_x(rr['speedup'])} (vn/C {_x(rr['vn_over_raw_c'])})"
        ),
        (
            f"  Recording.replay() vs raw-C encode + submit: {_x(rc['ratio'])}; replay(64) per launch vs the raw-C "
            f"loop: {_x(rc['replay_n_ratio'])}"
        ),
        (
            f"  sequence of 1000: {_us(sq['vyre_native_us'])} µs a dispatch (raw C {_us(sq['raw_c_us'])}: "
            f"{_x(sq['ratio'])}); to completion {_us(sq['done_us'])} (raw C {_us(sq['raw_c_done_us'])}); "
            f"wgpu-py encode + submit per dispatch / it: {_x(sq['vs_wgpu_py_encode_submit'])}"
        ),
        (
            f"  sequence of 1000 clearing steps: {_us(sc['vyre_native_us'])} µs a step (raw C fill in the pass "
            f"{_us(sc['raw_c_us'])}: {_x(sc['ratio'])}); to completion {_us(sc['done_us'])} (raw C "
            f"{_us(sc['raw_c_done_us'])}: {_x(sc['done_ratio'])}); clear_outputs=False {_us(sc['no_clear_us'])}, "
            f"raw C clear_buffer + pass per step {_us(sc['raw_c_naive_us'])}"
        ),
        (
            f"  clearing 64 MiB, GPU time: vyre_native {_us(cg['vyre_native_us'])} µs vs raw-C clear_buffer "
            f"{_us(cg['raw_c_clear_buffer_us'])} = {_x(cg['ratio'])} (raw C fill {_us(cg['raw_c_fill_us'])}, "
            f"the two dispatches alone {_us(cg['raw_c_no_clear_us'])})"
        ),
        (
            f"  16 x 4 MiB in flight: {_us(ar['total_us'])} µs vs one 64 MiB read_output_into "
            f"{_us(ar['one_64MiB_us'])} µs = {_x(ar['ratio'])}"
        ),
        (
            f"  two devices from two threads vs one: {_x(t['multi_device']['speedup'])} the throughput "
            f"({'two adapters' if t['multi_device']['distinct_adapters'] else 'one adapter shared'})"
        ),
    ]
    return "\n".join(lines)


def format_markdown(report: dict[str, Any], source: str | None = None) -> str:
    """One run as a Markdown page (benchmarks/results/*.md): the machine, then the table.
    ``source`` names the JSON the page was rendered from, so every figure is traceable."""
    m = report["machine"]
    raw_c = m["raw_c"]
    lines = [
        f"# {m['adapter']}, {m['date']}" + (" (quick run)" if m.get("quick") else ""),
        "",
        "Generated by `benchmarks/report.py`"
        + (f" from `{source}`" if source else "")
        + f"; {report['statistic']} µs per operation.",
        "",
        f"- adapter: {m['adapter']} ({m['backend']}, {m.get('adapter_type') or '-'}), driver {m['driver']}",
        (
            f"- wgpu-native {m['wgpu_native_version']}, vyre_native {m['vyre_native_version']}, "
            f"wgpu-py {m['wgpu_py_version']}, Python {m['python_version']}"
        ),
        f"- host: {m['host_cpu']}, {m['host']}" + (f", env {m['env']}" if m.get("env") else ""),
        "- raw C: "
        + (
            f"compiled with {raw_c.get('compiler')}"
            if raw_c.get("available")
            else f"n/a ({raw_c.get('reason')})"
        ),
        "",
        "| operation | vyre_native | wgpu-py | raw C | vn / C | wgpu-py / vn | vn / floor | floor |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in report["operations"]:
        us = r["per_op_us"]
        floor = r.get("floor") or {}
        cells = [_us(us["vyre_native"]), _us(us["wgpu-py"]), _us(us["raw-C"])]
        cells += [_x(r["vn_over_c"]), _x(r["wgpu_py_over_vn"]), _x(floor.get("ratio"))]
        cells.append(floor.get("name", "") if floor.get("ratio") else "")
        lines.append("| " + " | ".join([r["label"], *("" if c == "n/a" else c for c in cells)]) + " |")
    others = report.get("other_benchmarks") or []
    if others:
        lines += ["", "Benchmarks outside the three ways:", ""]
        lines += [f"| benchmark | way | {report['statistic']} µs | rounds |", "|---|---|---:|---:|"]
        for o in others:
            cell = _us(o["per_op_us"])
            cell = "" if cell == "n/a" else cell
            lines.append(f"| `{o['test']}` | {o['way'] or '-'} | {cell} | {o['rounds']} |")
    lines += [
        "",
        (
            "vn / C: vyre_native over the raw-C floor (1.00x = the floor). wgpu-py / vn above 1.00x: "
            "vyre_native is that much cheaper than wgpu-py. vn / floor: vyre_native over the row's "
            "floor, named in the last column (report.py FLOOR_NAMES, FLOOR_ROWS)."
        ),
        "",
    ]
    return "\n".join(lines)


def _ratio_bars(row: dict[str, Any], way: str) -> tuple[float, float, float] | None:
    """(ratio, low, high) of a way's per-operation time to raw C's: the statistic's ratio,
    and its spread over rounds (the way's interquartile range over raw C's statistic)."""
    c = row["per_op_us"]["raw-C"]
    cell = row["detail"].get(way) or {}
    v = row["per_op_us"][way]
    if not c or not v:
        return None
    q1, q3 = cell.get("q1_us"), cell.get("q3_us")
    return v / c, (q1 / c if q1 else v / c), (q3 / c if q3 else v / c)


def draw_chart(report: dict[str, Any], path: pathlib.Path) -> str:
    """Per operation, each way's time as a ratio to raw C's (1.0 = the floor), on a
    linear scale with the spread over rounds; returns a one-line note."""
    try:
        import matplotlib  # type: ignore[import-not-found, unused-ignore]

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return "chart: skipped (matplotlib is not installed; pip install matplotlib to get one)"
    rows = [r for r in report["operations"] if r["per_op_us"]["raw-C"]]
    if not rows:
        return "chart: skipped (no operation has a raw-C row)"
    colors = {"vyre_native": "#1f77b4", "wgpu-py": "#ff7f0e"}
    bars = {way: [_ratio_bars(r, way) for r in rows] for way in colors}
    vn_high = max((b[2] for b in bars["vyre_native"] if b), default=1.0)
    limit = max(4.0, 1.25 * vn_high)  # wgpu-py runs to tens of x: clip it and print its value
    fig, ax = plt.subplots(figsize=(10, 0.5 * len(rows) + 2.2))
    height = 0.38
    for k, (way, color) in enumerate(colors.items()):
        for i, b in enumerate(bars[way]):
            if b is None:
                continue
            y = i + (k - 0.5) * height
            ratio, low, high = b
            ax.barh(y, min(ratio, limit), height=height, color=color, label=way if i == 0 else None)
            if ratio <= limit:
                ax.errorbar(
                    ratio,
                    y,
                    # a skewed row's mean can sit below its first quartile
                    xerr=[[max(0.0, ratio - low)], [max(0.0, min(high, limit) - ratio)]],
                    fmt="none",
                    ecolor="black",
                    elinewidth=0.8,
                    capsize=2,
                )
            else:
                ax.text(limit, y, f" {ratio:.0f}x", va="center", ha="right", fontsize=8, color="white")
    ax.axvline(1.0, color="#2ca02c", linewidth=1.5, label="raw C (the floor)")
    ax.set_xlim(0, limit)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([r["label"] for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel(
        f"time per operation / raw C's ({report['statistic']}); whiskers: interquartile range over rounds"
    )
    m = report["machine"]
    ax.set_title(
        f"vyre_native and wgpu-py against raw C: {m['adapter']} ({m['backend']}), {m['date']}", fontsize=10
    )
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, frameon=False)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return f"chart: {path}"


# ---- the command ----------------------------------------------------------------------------------


def _parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog,
        description="Run the benchmark suite (vyre_native vs wgpu-py vs raw C) and report it.",
        epilog="Arguments after `--` go to pytest (e.g. -- -k replay).",
    )
    p.add_argument(
        "--quick", action="store_true", help="few rounds per benchmark: a smoke run, not numbers to report"
    )
    p.add_argument(
        "--json", metavar="PATH", help="where the report goes (default: <suite>/results/latest.json)"
    )
    p.add_argument("--no-chart", action="store_true", help="do not draw the PNG chart")
    p.add_argument("--md", metavar="PATH", help="also write the run's table as a Markdown page to PATH")
    p.add_argument("--suite", metavar="DIR", help="the benchmarks/ folder (default: the folder of this file)")
    p.add_argument(
        "--from",
        dest="from_json",
        metavar="RAW.json",
        help="re-render a saved run (pytest-benchmark JSON or a report) instead of running",
    )
    p.add_argument(
        "--keep-samples",
        action="store_true",
        help="keep pytest-benchmark's per-round timings in the report (large)",
    )
    p.add_argument(
        "--stat",
        choices=sorted(_STAT_KEYS),
        default="mean",
        help="per-operation statistic in the table (default: mean)",
    )
    return p


def main(argv: list[str], prog: str = "python benchmarks/report.py") -> int:
    """The ``bench`` subcommand; returns the process exit status. ``prog`` is the command
    as the user typed it, for the usage and the messages."""
    argv = list(argv)
    pytest_args: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, pytest_args = argv[:cut], argv[cut + 1 :]
    args = _parser(prog).parse_args(argv)
    suite = pathlib.Path(args.suite).resolve() if args.suite else HERE
    status = 0
    source: dict[str, Any] = {}

    if args.from_json:
        try:
            loaded = json.loads(pathlib.Path(args.from_json).read_text())
        except (OSError, ValueError) as err:
            print(
                f"{prog}: cannot read {args.from_json}: {err}. Fix: pass a pytest-benchmark JSON or a report.",
                file=sys.stderr,
            )
            return 2
        raw = loaded.get("pytest_benchmark", loaded)
        source = {"rendered_from": str(args.from_json), "original": loaded.get("generated")}
    else:
        missing = [m for m in ("pytest", "pytest_benchmark") if _find_spec(m) is None]
        if missing:
            print(
                f"{prog}: {', '.join(missing)} not installed. Fix: pip install pytest pytest-benchmark "
                "(or pip install 'vyre_native[test]').",
                file=sys.stderr,
            )
            return 2
        with tempfile.TemporaryDirectory(prefix="vn-bench-") as tmp:
            raw_path = pathlib.Path(tmp) / "pytest-benchmark.json"
            rc = run_suite(suite, raw_path, args.quick, pytest_args)
            if not raw_path.exists():
                print(f"{prog}: pytest exited with status {rc} and wrote no results.", file=sys.stderr)
                return rc or 1
            raw = json.loads(raw_path.read_text())
        if rc != 0:
            print(
                f"{prog}: pytest exited with status {rc}: some benchmarks failed; their cells read n/a.",
                file=sys.stderr,
            )
            status = 1

    report = build_report(raw, args.stat, args.keep_samples)
    out = pathlib.Path(args.json) if args.json else suite / "results" / "latest.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    report["generated"] = {
        "by": "benchmarks/report.py",
        "at_utc": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "argv": argv + (["--"] + pytest_args if pytest_args else []),
        "python": platform.python_version(),
        **source,
    }
    out.write_text(json.dumps(report, indent=1) + "\n")
    print()
    print(format_table(report))
    print()
    print(f"report: {out}")
    if args.md:
        pathlib.Path(args.md).write_text(format_markdown(report, args.from_json))
        print(f"table: {args.md}")
    if not args.no_chart:
        print(draw_chart(report, out.with_suffix(".png")))
    return status


def _find_spec(name: str) -> Any:
    try:
        return importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
