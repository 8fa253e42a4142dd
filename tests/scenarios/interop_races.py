"""Races between wgpu-py and vyre_native over objects they share
(tests/test_interop_races.py). ``setup()`` makes what every child there starts with: a
wgpu-py device adopted by vyre_native and two buffers made by vyre_native, exported to
wgpu-py and mappable there: ``rb`` (vyre_native copies into it, wgpu-py maps it for
reading) and ``wb`` (vyre_native reads it, wgpu-py maps it for writing); ``seq`` copies
into rb. Run as a module, argv names one of the races below."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import wgpu
from support.childlib import outcome, report

import vyre_native as vn

U = vn.BufferUsage
READ, WRITE = wgpu.MapMode.READ, wgpu.MapMode.WRITE


def setup() -> SimpleNamespace:
    s = SimpleNamespace()
    s.gd = wgpu.gpu.request_adapter_sync().request_device_sync()
    s.d = vn.Device.from_wgpu(s.gd)
    s.src = s.d.upload(np.arange(64, dtype=np.float32))
    s.rb = s.d.alloc(256, usage=U.MAP_READ | U.COPY_DST)
    s.wb = s.d.upload(np.arange(64, dtype=np.float32), usage=U.MAP_WRITE | U.COPY_SRC)
    s.grb, s.gwb = s.rb.to_wgpu(), s.wb.to_wgpu()
    s.seq = s.d.sequence()
    s.seq.copy(s.src, s.rb)
    return s


def mapping_loop(s: SimpleNamespace) -> None:
    """Two threads replaying, submitting and reading while a third maps the buffers."""
    unexpected: list[str] = []
    counts = {"vn_ok": 0, "vn_refused": 0, "maps": 0}
    stop = threading.Event()
    copy_back = s.d.sequence()
    copy_back.copy(s.wb, s.d.alloc(256))
    # and a buffer wgpu-py made, adopted: vyre_native copies into it, wgpu-py maps it
    gab = s.gd.create_buffer(size=256, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
    s.seq.copy(s.src, vn.Buffer.from_wgpu(gab))

    def vn_side() -> None:
        ops: list[Callable[[], object]] = [
            lambda: s.seq.replay().wait(),
            lambda: s.d.submit([s.seq, copy_back]).wait(),
            s.wb.read,
            lambda: s.wb.read_async().result(),
            lambda: copy_back.replay(n=4).wait(),
        ]
        i = 0
        while not stop.is_set():
            try:
                ops[i % len(ops)]()
                counts["vn_ok"] += 1
            except vn.BindingError as e:
                if "mapped" not in str(e):
                    unexpected.append(repr(e))
                counts["vn_refused"] += 1
            except BaseException as e:  # noqa: BLE001 -- anything else is a finding
                unexpected.append(repr(e))
            i += 1

    def wgpu_side() -> None:
        while not stop.is_set():
            try:
                s.grb.map_sync(READ)
                s.grb.read_mapped()
                s.grb.unmap()
                s.gwb.map_sync(WRITE)
                s.gwb.write_mapped(np.zeros(64, np.float32))
                s.gwb.unmap()
                gab.map_sync(READ)
                gab.unmap()
                counts["maps"] += 3
            except BaseException as e:  # noqa: BLE001 -- anything is a finding
                unexpected.append("wgpu-py: " + repr(e))

    threads = [
        threading.Thread(target=vn_side),
        threading.Thread(target=vn_side),
        threading.Thread(target=wgpu_side),
    ]
    for t in threads:
        t.start()
    time.sleep(3.0)  # how long the threads race
    stop.set()
    for t in threads:
        t.join(60)
    report({"unexpected": unexpected[:5], "alive": [t.is_alive() for t in threads], **counts})


def destroy_mid_loop(s: SimpleNamespace) -> None:
    """Two threads at work while wgpu-py destroys a shared buffer, then the device."""
    unexpected: list[str] = []
    seen: set[str] = set()
    stop = threading.Event()

    def vn_side() -> None:
        ops: list[Callable[[], object]] = [
            lambda: s.seq.replay().wait(),
            s.wb.read,
            lambda: s.d.submit([s.seq]).wait(),
            lambda: s.d.upload(b"1234"),
        ]
        i = 0
        while not stop.is_set():
            try:
                ops[i % len(ops)]()
                seen.add("ok")
            except vn.BindingError as e:
                seen.add("destroyed" if "destroyed" in str(e) else "mapped")
            except vn.DeviceLostError:
                seen.add("lost")
            except BaseException as e:  # noqa: BLE001 -- anything else is a finding
                unexpected.append(repr(e))
            i += 1

    threads = [threading.Thread(target=vn_side) for _ in range(2)]
    for t in threads:
        t.start()
    time.sleep(0.5)  # the loops run a while before each destroy
    type(s.grb).destroy(s.grb)
    time.sleep(0.5)
    type(s.gd).destroy(s.gd)
    time.sleep(0.5)
    stop.set()
    for t in threads:
        t.join(60)
    report({"unexpected": unexpected[:5], "seen": sorted(seen)})


def adopt_while_mapping(s: SimpleNamespace) -> None:
    """One thread adopts wgpu-py buffers while another maps each at the same moment."""
    n = 120
    usage = wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST
    theirs = [s.gd.create_buffer(size=256, usage=usage) for _ in range(n)]
    ours: list[Any] = [None] * n
    unexpected: list[str] = []
    barrier = threading.Barrier(2)

    def adopt() -> None:
        for i in range(n):
            barrier.wait()
            try:
                ours[i] = vn.Buffer.from_wgpu(theirs[i])
            except BaseException as e:  # noqa: BLE001 -- anything is a finding
                unexpected.append(repr(e))

    def map_them() -> None:
        for i in range(n):
            barrier.wait()
            theirs[i].map_async(READ)

    threads = [threading.Thread(target=adopt), threading.Thread(target=map_them)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    results = []
    for b in ours:
        seq = s.d.sequence()
        seq.copy(s.src, b)
        results.append(outcome(seq.replay))
    report({"unexpected": unexpected[:5], "results": results})


if __name__ == "__main__":
    {f.__name__: f for f in (mapping_loop, destroy_mid_loop, adopt_while_mapping)}[sys.argv[1]](setup())
