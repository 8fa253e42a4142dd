"""Device churn probe: many vn.Device lifecycles in one process, with what each leaves.

Written for a failure seen only on NVIDIA (H200, Vulkan): after some tens of state-machine
examples (tests/test_stateful.py, a Device each), vn.Device() raised LibraryError "no GPU
adapter found ... vulkan drivers/libraries could not be loaded", i.e. wgpu-native could
not create a Vulkan instance any more. On lavapipe every figure below stays flat for
hundreds of cycles (tests/test_device_lifecycle.py). Each vn.Device has its own
WGPUInstance, so every cycle loads the Vulkan loader and driver (vkCreateInstance) and
unloads them when the Device goes; the modes tell which part a driver does not survive:

  plain      Device(), upload, record, replay, read back, a pre-recorded dispatch never
             replayed, close: what a state-machine example does
  anchor     plain, while one more WGPUInstance (wgpu-py's) stays alive: the loader and
             the driver's libraries stay loaded between devices, but each Device still
             creates and destroys its own VkInstance and VkDevice
  instances  vn.enumerate_adapters() alone: a WGPUInstance created, its adapters listed,
             released; instance churn without any device

Run from a neutral folder (the checkout's vyre_native/ has no compiled module):

    cd /tmp && python3 $ROOT/scripts/device_churn.py --mode plain --cycles 400

It stops at the first failure and prints its cycle and message. VK_LOADER_DEBUG
(default "error", set before the loader is loaded) makes the Vulkan loader say why
an instance failed; wgpu-native's warnings are logged too. Every --every cycles it
prints open files (by target: /dev/nvidia*, anon_inode:..., sockets, files), threads,
memory maps, RSS, unused pthread keys and which Vulkan / NVIDIA libraries are mapped;
--json writes all of it.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import logging
import os
import sys
import time
from collections import Counter
from typing import Any

os.environ.setdefault("VK_LOADER_DEBUG", "error")
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import numpy as np  # noqa: E402

import vyre_native as vn  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from support.kernels import DOUBLE  # type: ignore[import-not-found]  # noqa: E402  (out = inp * 2)

HOST = np.arange(1024, dtype=np.float32)


def device_cycle() -> None:
    dev = vn.Device()
    a, o = dev.upload(HOST), dev.alloc(HOST.nbytes)
    prog = dev.compile(DOUBLE)
    rec = prog.record([a], [o], workgroups=(16, 1, 1))
    rec.replay()
    got = np.frombuffer(rec.read_output(0), np.float32)
    assert np.array_equal(got, HOST * 2), "wrong result"
    unreplayed = prog.prerecord_persistent_dispatch([a], [o], workgroups=(16, 1, 1))
    dev.close()
    del dev, a, o, prog, rec, unreplayed


def instance_cycle() -> None:
    if not vn.enumerate_adapters():
        raise RuntimeError("enumerate_adapters() found no adapter")


def fd_kinds() -> Counter[str]:
    kinds: Counter[str] = Counter()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("/dev/"):
            kinds[target] += 1
        elif target.startswith("/"):
            kinds["file"] += 1
        else:
            kinds[target.split("[")[0].rstrip(":")] += 1
    return kinds


def free_pthread_keys() -> int:
    """How many more pthread keys this process could create (a driver that creates keys
    at load and never deletes them runs this out after enough loads)."""
    libc = ctypes.CDLL(None)
    keys: list[int] = []
    key = ctypes.c_uint()
    while len(keys) < 2048 and libc.pthread_key_create(ctypes.byref(key), None) == 0:
        keys.append(key.value)
    for k in keys:
        libc.pthread_key_delete(k)
    return len(keys)


def libraries() -> list[str]:
    found = set()
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) > 5 and any(s in parts[5] for s in ("vulkan", "nvidia", "GLX", "EGL")):
                found.add(os.path.basename(parts[5]))
    return sorted(found)


def snapshot(cycle: int, t0: float) -> dict[str, Any]:
    gc.collect()
    with open("/proc/self/statm") as f:
        rss = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    with open("/proc/self/maps") as f:
        maps = sum(1 for _ in f)
    return {
        "cycle": cycle,
        "seconds": round(time.perf_counter() - t0, 2),
        "fds": dict(fd_kinds()),
        "threads": len(os.listdir("/proc/self/task")),
        "maps": maps,
        "rss_mib": round(rss / 2**20, 1),
        "free_pthread_keys": free_pthread_keys(),
        "libraries": libraries(),
        "live": {k: v for k, v in vn.debug.live_objects().items() if v},
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mode", choices=["plain", "anchor", "instances"], default="plain")
    parser.add_argument("--cycles", type=int, default=400)
    parser.add_argument("--every", type=int, default=25)
    parser.add_argument("--json", help="write every snapshot and the outcome here")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(name)s %(levelname)s: %(message)s")

    anchor = None
    if args.mode == "anchor":
        from wgpu.backends.wgpu_native import _api

        anchor = _api.get_wgpu_instance()  # held until exit
    cycle_fn = instance_cycle if args.mode == "instances" else device_cycle
    print(f"device_churn: mode {args.mode}, {args.cycles} cycles, anchor {anchor}", flush=True)
    print(f"adapters: {vn.enumerate_adapters()}", flush=True)

    t0 = time.perf_counter()
    snaps = [snapshot(0, t0)]
    print(json.dumps(snaps[-1]), flush=True)
    outcome: dict[str, Any] = {"mode": args.mode, "ok": True}
    for i in range(1, args.cycles + 1):
        try:
            cycle_fn()
        except Exception as exc:  # the point is to see what fails, and when
            outcome = {"mode": args.mode, "ok": False, "cycle": i, "error": f"{type(exc).__name__}: {exc}"}
            print(f"FAILED at cycle {i}: {outcome['error']}", flush=True)
            snaps.append(snapshot(i, t0))
            print(json.dumps(snaps[-1]), flush=True)
            break
        if i % args.every == 0 or i == args.cycles:
            snaps.append(snapshot(i, t0))
            print(json.dumps(snaps[-1]), flush=True)
    if outcome["ok"]:
        print(f"OK: {args.cycles} cycles", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"outcome": outcome, "snapshots": snaps}, f, indent=1)
    return 0 if outcome["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
