"""Instructions per dispatch of a sequence replay's encode, by library, under callgrind.

Two 1000-step sequences of one pipeline, clear_outputs=False, replayed many times:

- ``graph``: shaped as tinygrad's JIT replays (vyre_native/tinygrad/ops_vn.py, VNGraph):
  a dependent chain, step k reads view k and writes view k+1 of one buffer, so every
  step has a bind group of its own (``--shape pingpong``: two buffers alternating, two
  bind groups);
- ``bench``: benchmarks/test_bench_replay.py's sequence_1000, every step the same input
  and output (one bind group, set once).

Each replay is waited for outside the counted call. Under callgrind only
``vn_sequence_replay`` (and what it calls) is counted, and the report sums the
instructions by object file: vyre_native's C (_native*.so), wgpu-native
(libwgpu_native), the Vulkan driver (lavapipe's libvulkan_lvp and the loader), and the
rest (libc: malloc, locks); and by the boundary: what runs inside the wgpu* calls
(wgpu-native with its mallocs and the driver) against what runs outside them
(vyre_native's own code with the libc it calls). Each figure is a steady state: a run
of a few replays subtracted from a longer one, so what the first replays do once (the
whole one, which also indexes the sequence's buffers) drops out. Instruction counts do
not depend on the machine's load.

    python benchmarks/encode_count.py --callgrind            # every shape, both replay roads
    python benchmarks/encode_count.py --callgrind --split    # the H200's road only: parts
    python benchmarks/encode_count.py --shape graph --replays 5   # run it, no counting

``--split`` turns on the split-submit road on a CPU adapter too (vn_test_control), as
a GPU replays a long sequence (csrc/work/sequence.c, replay_in_submits); without it lavapipe
encodes each replay as one command buffer (vn_encode_and_submit, csrc/work/submit.c).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict

from harness import elementwise

STEPS = 1000
N = 64  # f32 elements a step

# Bound as tinygrad's renderer binds an elementwise kernel: a read-only constant at 0,
# then every buffer read_write (the output first), so the input is among the outputs.
WGSL = elementwise("b[i] = min(a[i] + 1.0, inf[0]);", "read inf", "read_write b", "read_write a")


def build(dev, shape: str):
    import numpy as np

    prog = dev.compile(WGSL)
    seq = dev.sequence()
    keep = []
    inf = dev.upload(np.full(1, np.inf, np.float32))
    keep.append(inf)
    if shape == "bench":
        a = dev.upload(np.zeros(N, np.float32))
        o = dev.alloc(4 * N)
        keep += [a, o]
        for _ in range(STEPS):
            seq.add(prog, [inf], [o, a], workgroups=(1, 1, 1), clear_outputs=False)
    elif shape == "pingpong":
        bufs = [dev.upload(np.zeros(N, np.float32)) for _ in range(2)]
        keep += bufs
        for k in range(STEPS):
            seq.add(prog, [inf], [bufs[(k + 1) % 2], bufs[k % 2]], workgroups=(1, 1, 1), clear_outputs=False)
    elif shape == "graph":
        # step k reads view k of one buffer and writes view k + 1 of the other: a
        # dependent chain with a bind group of its own at every step
        stride = 256  # minStorageBufferOffsetAlignment
        bigs = [dev.upload(np.zeros((STEPS + 1) * stride // 4, np.float32)) for _ in range(2)]
        keep += bigs
        views = [bigs[k % 2].view(k * stride, 4 * N) for k in range(STEPS + 1)]
        keep += views
        for k in range(STEPS):
            seq.add(prog, [inf], [views[k + 1], views[k]], workgroups=(1, 1, 1), clear_outputs=False)
    else:
        raise SystemExit(f"unknown shape {shape!r}")
    return prog, seq, keep


def run(shape: str, replays: int, split: bool) -> None:
    import vyre_native as vn
    from vyre_native._lib import lib

    if split:
        lib.vn_test_control(lib.VN_TEST_SPLIT_SUBMITS_EVERYWHERE, 1)
    dev = vn.Device()
    prog, seq, keep = build(dev, shape)
    seq.replay().wait()  # the first replay is whole; later ones may split
    for _ in range(replays):
        seq.replay().wait()
    print(f"{shape}: {replays} replays of {len(seq)} steps, split={split}", file=sys.stderr)


def group_of(obj: str) -> str:
    base = os.path.basename(obj)
    if base.startswith("_native"):
        return "vyre_native"
    if "wgpu_native" in base:
        return "wgpu-native"
    if "vulkan" in base or "lvp" in base:
        return "vulkan"
    return "other"


LINE = re.compile(r"\s*([\d,]+)\s+(?:\(\s*[\d.]+%\)\s+)?(\S.*?)\s+\[(.+)\]\s*$")
WARM = 2  # replays after the first that the steady state leaves out


def annotate(path: str, inclusive: bool) -> list[tuple[int, str, str]]:
    """(instructions, function, object file) of every function in one callgrind file."""
    text = subprocess.run(
        ["callgrind_annotate", "--threshold=100", f"--inclusive={'yes' if inclusive else 'no'}", path],
        check=True, capture_output=True, text=True,
    ).stdout
    rows = []
    for line in text.splitlines():
        m = LINE.match(line)
        if m:
            rows.append((int(m.group(1).replace(",", "")), m.group(2), m.group(3)))
    return rows


def profile(shape: str, replays: int, split: bool, out: str) -> tuple[dict[str, int], int]:
    """Own instructions by "group: function", and the instructions inside wgpu* calls
    (inclusive: everything wgpu-native does, its mallocs and the driver too), of a run
    of 1 + replays replays under callgrind, counting inside vn_sequence_replay only."""
    cmd = [
        "valgrind", "--tool=callgrind", "--toggle-collect=vn_sequence_replay", f"--callgrind-out-file={out}",
        sys.executable, __file__, "--shape", shape, "--replays", str(replays),
    ] + (["--split"] if split else [])
    env = dict(os.environ)
    env.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    funcs: dict[str, int] = defaultdict(int)
    for ir, fn, obj in annotate(out, inclusive=False):
        funcs[f"{group_of(obj)}: {fn}"] += ir
    boundary = sum(ir for ir, fn, obj in annotate(out, inclusive=True)
                   if group_of(obj) == "wgpu-native" and re.search(r"(^|:)wgpu[A-Z]\w*$", fn))
    return funcs, boundary


def count(shape: str, replays: int, split: bool, out_dir: str) -> dict[str, float]:
    """Instructions per dispatch of `replays` replays in steady state: a run of 1 + WARM
    replays subtracted from one of 1 + WARM + replays, so what the first replays do
    once (the whole one, which also indexes the sequence's buffers) drops out."""
    base = os.path.join(out_dir, f"callgrind.{shape}.{'split' if split else 'whole'}")
    f0, b0 = profile(shape, WARM, split, base + ".warm.out")
    f1, b1 = profile(shape, WARM + replays, split, base + ".out")
    dispatches = replays * STEPS
    funcs = {k: f1.get(k, 0) - f0.get(k, 0) for k in set(f0) | set(f1)}
    per: dict[str, float] = defaultdict(float)
    for name, ir in funcs.items():
        per[name.split(":", 1)[0]] += ir / dispatches
    per["total"] = sum(per.values())
    per["in wgpu calls"] = (b1 - b0) / dispatches
    per["outside them"] = per["total"] - per["in wgpu calls"]
    print(f"\n{shape} ({'split submits' if split else 'one submit'}), instructions per dispatch "
          f"(steady state, {replays} replays of {STEPS}):")
    for k in ("vyre_native", "wgpu-native", "vulkan", "other", "total", "in wgpu calls", "outside them"):
        print(f"  {k:14s} {per.get(k, 0):10.0f}")
    print("  top functions, own instructions per dispatch:")
    for name, ir in sorted(funcs.items(), key=lambda kv: -kv[1])[:14]:
        print(f"    {ir / dispatches:8.0f}  {name[:110]}")
    print("  vyre_native's functions:")
    for name, ir in sorted(funcs.items(), key=lambda kv: -kv[1]):
        if name.startswith("vyre_native") and abs(ir) / dispatches >= 0.5:
            print(f"    {ir / dispatches:8.1f}  {name[:110]}")
    return per


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", choices=("graph", "pingpong", "bench"))
    ap.add_argument("--replays", type=int, default=8, help="after the first (default: 8)")
    ap.add_argument("--split", action="store_true", help="the split-submit road (a GPU's) only")
    ap.add_argument("--callgrind", action="store_true", help="count under callgrind and report")
    ap.add_argument("--out-dir", default=None, help="where callgrind's files go (default: a temporary folder)")
    args = ap.parse_args()
    if not args.callgrind:
        run(args.shape or "graph", args.replays, args.split)
        return
    out_dir = args.out_dir or tempfile.mkdtemp(prefix="vn-encode-")
    os.makedirs(out_dir, exist_ok=True)
    shapes = [args.shape] if args.shape else ["graph", "pingpong", "bench"]
    roads = [True] if args.split else [False, True]
    rows = {(s, r): count(s, args.replays, r, out_dir) for s in shapes for r in roads}
    keys = ("vyre_native", "wgpu-native", "vulkan", "other", "total", "in wgpu calls", "outside them")
    print("\nsummary, instructions per dispatch (" + " / ".join(keys) + "):")
    for (s, r), per in rows.items():
        cells = " / ".join(f"{per.get(k, 0):.0f}" for k in keys)
        print(f"  {s:9s} {'split' if r else 'whole':5s}  {cells}")
    print(f"(callgrind files in {out_dir})")


if __name__ == "__main__":
    main()
