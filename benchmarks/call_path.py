"""Where one launch made from Python spends its time, layer by layer, in one process.

For the pre-record (encode + finish, bind groups cached) and the replay of a Recording
(encode + finish + submit), four ways of the same work, interleaved in blocks so that
the machine's drift falls on all four alike:

- ``raw C loop``: raw C over the same wgpu-native, timed per operation inside one C loop
  (benchmarks/floor, the ``*_raw_c`` rows);
- ``raw C, one call``: the same raw C, one cffi call per operation (``floor_one_*``, the
  ``*_raw_c_one_call`` rows): what the interpreter between calls costs any Python caller;
- ``vn C call``: vyre_native's C entry point called bare through cffi with its arguments
  made once (``vn_dispatch_record_buffers``, ``vn_recording_replay``): its C over raw C's;
- ``vn public``: the public call (``prerecord_persistent_dispatch``, ``Recording.replay``):
  the Python around that C call.

Each figure is the median of every call's own time (perf_counter_ns around it), the
queue drained untimed every 64 calls as the benchmark suite does. It prints a table and,
with ``--json PATH``, writes the figures. Machine figures, not a test:

    python benchmarks/call_path.py [--blocks 8] [--calls 2000] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import harness  # noqa: E402

import vyre_native as vn  # noqa: E402
from vyre_native._native import ffi, lib  # noqa: E402

DRAIN = harness.DRAIN_EVERY


def _timed(call: Callable[[], Any], drain: Callable[[], None], calls: int) -> list[int]:
    """Each call's own ns; ``drain`` (untimed) every DRAIN calls and at the end."""
    clock, out = time.perf_counter_ns, []
    for i in range(calls):
        t0 = clock()
        call()
        out.append(clock() - t0)
        if (i + 1) % DRAIN == 0:
            drain()
    drain()
    return out


def _c_loop(floor: harness.Floor, entry: str, calls: int) -> list[int]:
    samples = floor.ffi.new("int64_t[]", calls)
    floor.check(getattr(floor.lib, "floor_" + entry)(floor.ctx, calls, samples))
    return list(samples)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--blocks", type=int, default=8, help="interleaved blocks of every way")
    ap.add_argument("--calls", type=int, default=2000, help="calls of each way in a block")
    ap.add_argument("--json", type=pathlib.Path, help="write the figures here")
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="vn-call-path-") as work:  # the floor's build, removed after
        return _run(args, harness.build_floor(pathlib.Path(work)))


def _run(args: argparse.Namespace, floor: harness.Floor | harness.FloorUnavailable) -> int:
    if not isinstance(floor, harness.Floor):
        print(f"call_path: the raw-C floor is unavailable: {floor.reason}", file=sys.stderr)
        return 2
    dev = vn.Device()
    prog = dev.compile(harness.WGSL, entry_point="main")
    a = dev.upload(np.arange(harness.IO_FLOATS, dtype=np.float32))
    o = dev.alloc(harness.IO_BYTES)
    rec = prog.record([a], [o], workgroups=(1, 1, 1))
    ptrs, rptr, pptr = [a._ptr, o._ptr], rec._ptr, prog._ptr
    index = ffi.new("uint64_t *")
    kept: list[Any] = []

    def submit_kept() -> None:  # the pre-records of a block, submitted and drained (untimed)
        for d in kept:
            if isinstance(d, vn.PrerecordedDispatch):
                d.replay()
            else:
                while lib.vn_dispatch_replay(d[0], index) == lib.VN_PENDING:  # a CPU adapter's busy queue
                    pass
                lib.vn_handle_release(d[0])
        kept.clear()
        dev.wait_idle()

    def vn_c_prerecord() -> None:
        out = ffi.new("vn_dispatch *[1]")
        if lib.vn_dispatch_record_buffers(pptr, ptrs, 1, 1, 1, 1, 1, 0, out):
            raise RuntimeError(ffi.string(lib.vn_last_error()).decode())
        kept.append(out)

    def vn_public_prerecord() -> None:
        kept.append(prog.prerecord_persistent_dispatch([a], [o], workgroups=(1, 1, 1)))

    def vn_c_replay() -> None:
        out = ffi.new("vn_submission *[1]")
        status = lib.vn_recording_replay(rptr, 1, 0, out)
        while status == lib.VN_PENDING:  # a CPU adapter's queue still runs earlier work
            status = lib.vn_recording_replay(rptr, 1, 0, out)
        if status:
            raise RuntimeError(ffi.string(lib.vn_last_error()).decode())
        lib.vn_handle_release(out[0])

    one_flush = lambda: floor.check(floor.lib.floor_one_flush(floor.ctx))  # noqa: E731

    def one(entry: str) -> Callable[[], None]:
        run, ctx = getattr(floor.lib, "floor_one_" + entry), floor.ctx
        def call() -> None:
            if run(ctx):
                floor.check(-1)

        return call

    ways: dict[str, dict[str, Callable[[int], list[int]]]] = {
        "prerecord_hit": {
            "raw C loop": lambda n: _c_loop(floor, "prerecord_hit", n),
            "raw C, one call": lambda n: _timed(one("prerecord"), one_flush, n),
            "vn C call": lambda n: _timed(vn_c_prerecord, submit_kept, n),
            "vn public": lambda n: _timed(vn_public_prerecord, submit_kept, n),
        },
        "recording_replay": {
            "raw C loop": lambda n: _c_loop(floor, "encode_submit", n),
            "raw C, one call": lambda n: _timed(one("encode_submit"), one_flush, n),
            "vn C call": lambda n: _timed(vn_c_replay, dev.wait_idle, n),
            "vn public": lambda n: _timed(rec.replay, dev.wait_idle, n),
        },
    }
    samples: dict[str, dict[str, list[int]]] = {op: {w: [] for w in ws} for op, ws in ways.items()}
    for _ in range(2):  # warm every way up, untimed
        for op, ws in ways.items():
            for w, run in ws.items():
                run(DRAIN)
    for block in range(args.blocks):
        for op, ws in ways.items():
            order = list(ws.items())
            for w, run in order if block % 2 == 0 else reversed(order):
                samples[op][w] += run(args.calls)
    report: dict[str, Any] = {"adapter": dev.info, "blocks": args.blocks, "calls": args.calls, "rows": {}}
    print(f"adapter: {dev.info['name']} ({dev.info['backend']}); medians per call, µs")
    for op, ws in samples.items():
        med = {w: statistics.median(s) / 1e3 for w, s in ws.items()}
        report["rows"][op] = med
        base = med["raw C loop"]
        print(f"{op}:")
        for w, us in med.items():
            print(f"  {w:16s} {us:8.2f}  {us / base:5.2f}x the C loop")
        print(
            f"  = interpreter between calls {med['raw C, one call'] - base:+.2f}, vyre_native's C "
            f"{med['vn C call'] - med['raw C, one call']:+.2f}, its Python {med['vn public'] - med['vn C call']:+.2f}"
        )
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=str))
    dev.close()
    floor.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
