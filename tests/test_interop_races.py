"""What wgpu-py does to objects it shares with vyre_native: never an abort, never two owners.

wgpu-native aborts the process on a submit that uses a mapped or destroyed buffer, or
goes to a destroyed device. Every call of wgpu-py that maps, unmaps or destroys a shared
buffer or device reports to the C layer first (hooks on wgpu-py's one library object,
vyre_native/interop.py), under the lock every submit takes. Whatever could abort runs in
a child interpreter, which must exit 0 with every failure a typed error.
"""

from __future__ import annotations

import gc
import textwrap
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import wgpu
from support.child import run_child, run_scenario
from support.errors import raised

import vyre_native as vn

STORAGE_RW = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST

# Every child starts with tests/scenarios/interop_races.py's setup(): a wgpu-py device
# adopted by vyre_native (`gd`, `d`), and two buffers made by vyre_native, exported to
# wgpu-py and mappable there: `rb` (vyre_native copies into it, wgpu-py maps it for
# reading; `grb` is wgpu-py's) and `wb` (vyre_native reads it, wgpu-py maps it for
# writing; `gwb`); `seq` copies `src` into rb. The races there run whole, as modules.
_SETUP = """
import wgpu
from scenarios.interop_races import READ, WRITE, setup
globals().update(vars(setup()))
"""


def run(code: str) -> Any:
    """The setup plus code in a child interpreter that must exit 0; its report."""
    return run_child(_SETUP + textwrap.dedent(code), timeout=180)


def race(name: str) -> Any:
    """A race of tests/scenarios/interop_races.py in a child interpreter; its report."""
    return run_scenario("interop_races", name, timeout=180)


def finished_or_lost(res: dict[str, Any]) -> None:
    """A read in flight when the device went: it completed, or raised DeviceLostError."""
    if not res.get("ok"):
        raised(res, vn.DeviceLostError)


# ---- exported buffers: watched as adopted ones are


def test_an_exported_buffer_mapped_by_wgpu_py_is_refused_until_unmapped() -> None:
    res = run(
        """
grb.map_sync(READ)
gwb.map_sync(WRITE)
out = {"sequence": outcome(lambda: seq.replay().wait()), "submit": outcome(lambda: d.submit([seq]).wait()),
       "read": outcome(wb.read), "read_async": outcome(lambda: wb.read_async().result()),
       "view_read": outcome(lambda: wb.view(16, 32).read())}
grb.unmap()
gwb.unmap()
out["after_unmap"] = outcome(lambda: (seq.replay().wait(), wb.read()))
report(out)
"""
    )
    for how in ("sequence", "submit", "read", "read_async", "view_read"):
        raised(res[how], vn.BindingError, "mapped", "wgpu-py", "unmap")
    assert res["after_unmap"]["ok"], res["after_unmap"]


def test_a_device_copy_from_or_into_a_buffer_mapped_by_wgpu_py_is_refused_until_unmapped() -> None:
    res = run(
        """
grb.map_sync(READ)
gwb.map_sync(WRITE)
out = {"from_mapped": outcome(lambda: d.copy(wb, src, 7, 1, 2)), "into_mapped": outcome(lambda: d.copy(src, rb, 8))}
grb.unmap()
gwb.unmap()
out["after_unmap"] = outcome(lambda: (d.copy(wb, src, 7, 1, 2), d.copy(src, rb, 8), d.wait_idle()))
report(out)
"""
    )
    for how in ("from_mapped", "into_mapped"):
        raised(res[how], vn.BindingError, "mapped", "wgpu-py", "unmap")
    assert res["after_unmap"]["ok"], res["after_unmap"]


def test_an_exported_buffer_destroyed_by_wgpu_py_is_refused_for_good() -> None:
    res = run(
        """
p = d.compile('''
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read_write> o: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) { if (gid.x < arrayLength(&o)) { o[gid.x] = a[gid.x]; } }
''')
a = d.upload(np.ones(64, np.float32))
ga = a.to_wgpu()
rec = p.record([a], [d.alloc(256)])
pre = p.prerecord_persistent_dispatch([a], [d.alloc(256)])
ga.destroy()
grb.destroy()
out = {"recording": outcome(rec.replay), "prerecorded": outcome(pre.replay), "read": outcome(a.read),
       "sequence": outcome(seq.replay)}
try:
    grb.unmap()  # wgpu-py refuses (not mapped); destroyed stays destroyed either way
except Exception:
    pass
out["after_unmap"] = outcome(seq.replay)
report(out)
"""
    )
    for how in ("recording", "prerecorded", "read", "sequence", "after_unmap"):
        raised(res[how], vn.BindingError, "destroyed", "wgpu-py")


def test_wgpu_py_methods_reached_through_the_class_are_watched_too() -> None:
    # A method saved before interop was first used, and type(x).destroy(x): both reach
    # wgpu-native through wgpu-py's library object, where the hooks are.
    res = run(
        """
saved_map = wgpu.backends.wgpu_native.GPUBuffer.map_sync
saved_map(grb, READ)
out = {"saved_map": outcome(lambda: seq.replay().wait())}
type(grb).unmap(grb)
out["class_unmap"] = outcome(lambda: seq.replay().wait())
type(gwb).destroy(gwb)
out["class_destroy"] = outcome(wb.read)
report(out)
"""
    )
    raised(res["saved_map"], vn.BindingError, "mapped")
    assert res["class_unmap"]["ok"], res["class_unmap"]
    raised(res["class_destroy"], vn.BindingError, "destroyed")


def test_a_device_destroyed_through_the_wgpu_py_class_raises_device_lost_error() -> None:
    res = run(
        """
pending = wb.read_async()
type(gd).destroy(gd)
report({"sequence": outcome(seq.replay), "read": outcome(wb.read), "upload": outcome(lambda: d.upload(b"1234")),
        "pending": outcome(pending.result), "readopt": outcome(lambda: vn.Device.from_wgpu(gd).alloc(4))})
"""
    )
    for how in ("sequence", "read", "upload", "readopt"):
        raised(res[how], vn.DeviceLostError, "wgpu-py")
    finished_or_lost(res["pending"])


def test_a_device_destroyed_after_its_vn_handle_was_collected_still_fails_cleanly() -> None:
    # The vn.Device handle is gone, but a pending read still uses its C device: the
    # watch of the wgpu-py device holds that C device, so the destroy reaches it.
    res = run(
        """
pending = wb.read_async()
del d, src, rb, wb, seq
gc.collect()
type(gd).destroy(gd)
report({"pending": outcome(pending.result)})
"""
    )
    finished_or_lost(res["pending"])


def test_what_wgpu_py_destroyed_before_interop_was_first_used_is_refused_at_adoption() -> None:
    # Before the first interop call no hook watches wgpu-py; adoption finds out itself.
    res = run_child(
        """
import wgpu
gd = wgpu.gpu.request_adapter_sync().request_device_sync()
gone = gd.create_buffer(size=64, usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)
gone.destroy()
gd2 = wgpu.gpu.request_adapter_sync().request_device_sync()
gd2.destroy()
report({"buffer": outcome(lambda: vn.Buffer.from_wgpu(gone)), "device": outcome(lambda: vn.Device.from_wgpu(gd2))})
"""
    )
    raised(res["buffer"], vn.BindingError, "destroyed", "before it was adopted")
    raised(res["device"], vn.DeviceLostError, "wgpu-py")


# ---- races: the check and the submit are one step for wgpu-py's map and destroy


def test_wgpu_py_mapping_on_another_thread_never_aborts_a_submit_loop() -> None:
    res = race("mapping_loop")
    assert res["unexpected"] == [], res
    assert res["alive"] == [False, False, False], res
    assert res["vn_ok"] > 0 and res["maps"] > 0, res


def test_wgpu_py_destroying_buffer_and_device_mid_loop_gives_only_typed_errors() -> None:
    res = race("destroy_mid_loop")
    assert res["unexpected"] == [], res
    assert {"ok", "lost"} <= set(res["seen"]) <= {"ok", "destroyed", "lost"}, res


def test_adopting_while_wgpu_py_maps_on_another_thread_never_leaves_a_mapped_buffer_usable() -> None:
    # The watch is registered before wgpu-py's map state is read, so each map either
    # shows in that state or waits for the adoption and reports to it.
    res = race("adopt_while_mapping")
    assert res["unexpected"] == [], res["unexpected"]
    for r in res["results"]:
        raised(r, vn.BindingError, "mapped")


# ---- one owner per wgpu-py object, from any number of threads


@pytest.fixture()
def fresh_gpu_device() -> Any:
    """A wgpu-py device no test has adopted yet."""
    return wgpu.gpu.request_adapter_sync().request_device_sync()


def on_threads(fn: Callable[[], object], n: int = 8) -> list[object]:
    """fn's results, called by n threads released at once."""
    barrier = threading.Barrier(n)
    results: list[object] = [None] * n

    def run(i: int) -> None:
        barrier.wait()
        results[i] = fn()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


def test_eight_threads_adopting_one_wgpu_device_get_one_vn_device(fresh_gpu_device: Any) -> None:
    devices = on_threads(lambda: vn.Device.from_wgpu(fresh_gpu_device))
    assert len({id(dev) for dev in devices}) == 1
    assert isinstance(devices[0], vn.Device)


def test_eight_threads_adopting_one_wgpu_buffer_get_one_native_buffer(fresh_gpu_device: Any) -> None:
    gb = fresh_gpu_device.create_buffer(size=64, usage=STORAGE_RW)
    buffers = on_threads(lambda: vn.Buffer.from_wgpu(gb))
    assert len({b.allocation_identity for b in buffers if isinstance(b, vn.Buffer)}) == 1


def test_eight_threads_exporting_one_buffer_get_one_wgpu_buffer(fresh_gpu_device: Any) -> None:
    vb = vn.Device.from_wgpu(fresh_gpu_device).upload(np.arange(16, dtype=np.float32))
    exported = on_threads(vb.to_wgpu)
    assert len({id(gb) for gb in exported}) == 1


def test_adopting_an_exported_buffer_gives_back_the_same_buffer(fresh_gpu_device: Any) -> None:
    vb = vn.Device.from_wgpu(fresh_gpu_device).alloc(64)
    gb = vb.to_wgpu()
    assert vn.Buffer.from_wgpu(gb).allocation_identity == vb.allocation_identity
    assert vn.Buffer.from_wgpu(gb).to_wgpu() is gb


def test_a_closed_vn_device_is_replaced_by_a_working_one(fresh_gpu_device: Any) -> None:
    gb = fresh_gpu_device.create_buffer_with_data(data=np.arange(16, dtype=np.float32), usage=STORAGE_RW)
    with vn.Device.from_wgpu(fresh_gpu_device) as first:
        vn.Buffer.from_wgpu(gb)
    second = vn.Device.from_wgpu(fresh_gpu_device)
    assert second is not first and not second.released
    again = vn.Buffer.from_wgpu(gb)
    assert again.device is second
    np.testing.assert_array_equal(np.frombuffer(again.read(), np.float32), np.arange(16, dtype=np.float32))


def test_watches_go_with_the_wgpu_py_objects(fresh_gpu_device: Any) -> None:
    dev = vn.Device.from_wgpu(fresh_gpu_device)
    gc.collect()
    before = vn.debug.live_objects()["buffers"]
    for _ in range(10):
        dev.upload(b"abcd" * 4).to_wgpu()
        vn.Buffer.from_wgpu(fresh_gpu_device.create_buffer(size=16, usage=STORAGE_RW))
    gc.collect()
    assert vn.debug.live_objects()["buffers"] == before


# ---- what the hooks leave alone


def test_a_map_wgpu_native_refuses_leaves_the_buffer_usable(fresh_gpu_device: Any) -> None:
    vb = vn.Device.from_wgpu(fresh_gpu_device).upload(np.arange(16, dtype=np.float32))
    gb = vb.to_wgpu()  # storage usage: no MAP_READ, so wgpu-native refuses the map at once
    with pytest.raises(wgpu.GPUValidationError, match="MAP_READ"):
        gb.map_sync(wgpu.MapMode.READ)
    np.testing.assert_array_equal(np.frombuffer(vb.read(), np.float32), np.arange(16, dtype=np.float32))


def test_wgpu_py_buffers_vyre_native_never_saw_map_and_destroy_as_before(fresh_gpu_device: Any) -> None:
    vn.Device.from_wgpu(fresh_gpu_device)  # hooks installed
    usage = wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST
    gb = fresh_gpu_device.create_buffer(size=16, usage=usage)
    fresh_gpu_device.queue.write_buffer(gb, 0, np.arange(4, dtype=np.float32))
    gb.map_sync(wgpu.MapMode.READ)
    np.testing.assert_array_equal(np.frombuffer(gb.read_mapped(), np.float32), np.arange(4, dtype=np.float32))
    gb.unmap()
    gb.destroy()


def test_an_adopted_device_goes_with_its_wgpu_py_device() -> None:
    gc.collect()
    before = vn.debug.live_objects()["devices"]
    gpu_device = wgpu.gpu.request_adapter_sync().request_device_sync()
    dev = vn.Device.from_wgpu(gpu_device)
    dev.upload(b"abcd").to_wgpu()
    del dev, gpu_device
    gc.collect()
    assert vn.debug.live_objects()["devices"] == before
