"""os.fork() with a live device: the child never touches what it inherited.

wgpu-native's device cannot be used, or destroyed, across fork() (its driver threads
stay in the parent: destroying the copy blocks for ever). In a child every call on an
inherited object raises ForkedError, whose message says to create a vn.Device in the
child, and releasing one (``del``, garbage collection, interpreter exit) only forgets
it. Each test forks inside a child interpreter, and waits for the fork's child with a
time limit, so a hang fails the test instead of stalling the run.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from childproc import raised, run_child
from wgsl_kernels import ADD_IMMEDIATE, DOUBLE

# In the child interpreter: fork, run CHILD_CODE in the fork's child (which reports one
# JSON line on a pipe), and wait for it at most `limit` seconds.
_HARNESS = """
DOUBLE = {double!r}
ADD_K = {add_k!r}
dev = vn.Device()
pipeline = dev.compile(DOUBLE)
a = dev.upload(np.arange(64, dtype=np.float32))
o = dev.alloc(256)
rec = pipeline.record([a], [o])
sub = rec.replay()
sub.wait()
pending = a.read_async()
# What main added since: views, clears as fill dispatches, immediates, zero-copy pins.
view = a.view(0, 64)
seq = dev.sequence().add(pipeline, [view], [o]).clear(o)
imm = dev.compile(ADD_K, preserve=["acc"]) if "immediates" in dev.features else None
pin_pending = a.read_async()
pinned = a.read(np.float32, copy=False)  # a live zero-copy array: its pin crosses the fork
mappings_at_fork = vn.debug.live_objects()["mappings"]
import wgpu  # interop: a device adopted from wgpu-py, a buffer shared both ways
gdev = wgpu.gpu.request_adapter_sync().request_device_sync()
wdev = vn.Device.from_wgpu(gdev)
shared = wdev.upload(np.arange(4, dtype=np.float32))
gbuf = gdev.create_buffer(size=64, usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)
read_fd, write_fd = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(read_fd)
    def child_report(value):
        os.write(write_fd, (json.dumps(value) + "\\n").encode())
{child}
    sys.exit(0)
os.close(write_fd)
t0 = time.perf_counter()
status = None
while time.perf_counter() - t0 < {limit}:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    time.sleep(0.02)
else:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    status = None
exit_s = time.perf_counter() - t0
with os.fdopen(read_fd) as f:
    lines = f.read().splitlines()
# The parent carries on with everything it made before the fork.
parent = {{
    "read": np.frombuffer(o.read(), np.float32).tolist() == (np.arange(64) * 2.0).tolist(),
    "replay": outcome(lambda: rec.replay().wait()),
    "pending": pending.result() == a.read(),
    "zero_copy_array": pinned.tolist() == np.arange(64, dtype=np.float32).tolist(),
    "zero_copy_pin": np.asarray(pin_pending.result(np.float32, copy=False)).tolist() == pinned.tolist(),
    "sequence": outcome(lambda: seq.replay().wait()),
    "mappings_at_fork": mappings_at_fork,
    "adapter_type": dev.info["adapter_type"],
}}
del pinned, pending, pin_pending  # a completed read keeps its pin until it goes too
gc.collect()
parent["mappings_after"] = vn.debug.live_objects()["mappings"]
report({{"status": status, "exit_s": exit_s, "child": json.loads(lines[-1]) if lines else None, "parent": parent}})
"""


def _fork(child: str, limit: float = 20.0) -> dict[str, Any]:
    indented = "\n".join("    " + line for line in child.strip().splitlines())
    return run_child(
        _HARNESS.format(double=DOUBLE, add_k=ADD_IMMEDIATE, child=indented, limit=limit), timeout=120
    )  # type: ignore[no-any-return]


def _exited_promptly(res: dict[str, Any]) -> None:
    assert res["status"] is not None, (
        f"the forked child did not exit within the limit ({res['exit_s']:.1f} s)"
    )
    assert res["status"] == 0, f"the forked child exited with wait status {res['status']}"


@functools.cache
def _only_exits() -> dict[str, Any]:
    return _fork("child_report({'pid': os.getpid()})")


def test_forked_child_that_only_exits_exits_promptly() -> None:
    res = _only_exits()
    _exited_promptly(res)
    assert res["exit_s"] < 10.0


def test_forked_child_exit_keeps_its_exit_status() -> None:
    # The child's exit skips the exit handlers the parent registered (a GPU driver's
    # teardown of devices it inherited), but not its status or its output.
    res = _fork("print('from the child', flush=False)\nchild_report({})\nsys.exit(7)")
    assert res["status"] is not None and os.waitstatus_to_exitcode(res["status"]) == 7, res


def test_parent_is_unaffected_by_a_forked_child() -> None:
    res = _only_exits()
    assert res["parent"]["read"]
    assert res["parent"]["replay"]["ok"], res["parent"]["replay"]
    assert res["parent"]["pending"]


_USE_INHERITED = """
ops = {
    "upload": lambda: dev.upload(b"1234"),
    "alloc": lambda: dev.alloc(16),
    "compile": lambda: dev.compile(DOUBLE),
    "record": lambda: pipeline.record([a], [o]),
    "prerecord": lambda: pipeline.prerecord_persistent_dispatch([a], [o]),
    "replay": lambda: rec.replay(),
    "replay_many": lambda: rec.replay(1000),
    "sequence": lambda: dev.sequence(),
    "submit": lambda: dev.submit([rec]),
    "buffer_read": lambda: a.read(),
    "buffer_read_into": lambda: a.read_into(bytearray()),
    "buffer_write": lambda: a.write(b"1234"),
    "read_async": lambda: a.read_async(),
    "read_output": lambda: rec.read_output(0),
    "pending_result": lambda: pending.result(),
    "submission_wait": lambda: sub.wait(),
    "submission_wait_timeout": lambda: sub.wait(1.0),
    "wait_idle": lambda: dev.wait_idle(),
    "destroy": lambda: dev.destroy(),
    "info": lambda: dev.info,
    # entry points main added after waits branched
    "view_make": lambda: a.view(0, 16),
    "view_read": lambda: view.read(),
    "view_read_into": lambda: view.read_into(bytearray()),
    "view_read_async": lambda: view.read_async(),
    "view_read_zero_copy": lambda: view.read(np.float32, copy=False),
    "view_write": lambda: view.write(b"1234"),
    "record_view": lambda: pipeline.record([view], [o]),
    "read_typed": lambda: a.read(np.float32),
    "read_zero_copy": lambda: a.read(copy=False),
    "read_output_zero_copy": lambda: rec.read_output(0, copy=False),
    "pending_pin": lambda: pin_pending.result(copy=False),
    "pending_pin_typed": lambda: pin_pending.result(np.float32, copy=False),
    "pending_done": lambda: pin_pending.done,
    "sequence_add_view": lambda: seq.add(pipeline, [view], [o]),
    "sequence_clear": lambda: seq.clear(o),
    "sequence_clear_view": lambda: seq.clear(o.view(0, 64)),
    "sequence_replay_with_fills": lambda: seq.replay(),
    "sequence_replay_many": lambda: seq.replay(1000),
    "immediates": (lambda: imm.record([], [o], immediates=np.uint32(3).tobytes())) if imm else (lambda: dev.alloc(4)),
    "to_wgpu": lambda: shared.to_wgpu(),
    "from_wgpu_buffer": lambda: vn.Buffer.from_wgpu(gbuf),
    "from_wgpu_device_use": lambda: vn.Device.from_wgpu(gdev).alloc(16),
    "adopted_read": lambda: shared.read(),
}
out = {name: outcome(fn) for name, fn in ops.items()}
# Dropping every inherited object only forgets it (no wgpu call, no wait): a zero-copy
# array's pin is not unmapped (the live count, the parent's copy, stays as it was).
t0 = time.perf_counter()
del pinned
gc.collect()
out["mappings_after_drop"] = vn.debug.live_objects(wait=0.0)["mappings"]
del ops, rec, sub, pending, pin_pending, view, seq, imm, pipeline, a, o, dev, shared, wdev, gbuf
gc.collect()
out["drop_s"] = time.perf_counter() - t0
child_report(out)
"""


@functools.cache
def _use_inherited() -> dict[str, Any]:
    return _fork(_USE_INHERITED)


def test_forked_child_using_inherited_objects_gets_forked_error() -> None:
    res = _use_inherited()
    _exited_promptly(res)
    child = res["child"]
    assert child is not None, "the forked child reported nothing"
    for op, result in child.items():
        if op in ("drop_s", "info", "submission_wait", "submission_wait_timeout", "mappings_after_drop"):
            continue
        try:
            raised(result, "ForkedError", "fork", "vn.Device")
        except AssertionError as err:
            raise AssertionError(f"{op}: {err}") from None


def test_forked_child_waiting_on_an_inherited_submission_gets_forked_error_or_returns() -> None:
    # A submission the parent saw complete is complete in the child too (a flag, no
    # wgpu call); any other wait is a ForkedError.
    child = _use_inherited()["child"]
    for op in ("submission_wait", "submission_wait_timeout"):
        if not child[op]["ok"]:
            raised(child[op], "ForkedError", "fork")


def test_forked_child_drops_inherited_objects_without_waiting() -> None:
    res = _use_inherited()
    assert res["child"]["drop_s"] < 1.0
    assert res["parent"]["read"] and res["parent"]["pending"]


def test_a_zero_copy_array_alive_at_fork_is_dropped_in_the_child_without_an_unmap() -> None:
    # The child forgets the inherited pin (no unmap, no count change); the parent's array
    # still reads its data, its pin goes when the parent drops it, and a read started
    # before the fork still completes zero-copy in the parent.
    res = _use_inherited()
    parent = res["parent"]
    assert res["child"]["mappings_after_drop"] == parent["mappings_at_fork"] == 1, res
    assert parent["zero_copy_array"] and parent["zero_copy_pin"], parent
    assert parent["sequence"]["ok"], parent["sequence"]
    assert parent["mappings_after"] == 0, parent


_OWN_DEVICE = """
try:
    mine = vn.Device()
except vn.ForkedError as err:  # a driver that cannot start again in a forked child
    child_report({"refused": outcome(lambda: (_ for _ in ()).throw(err))})
    sys.exit(0)
p = mine.compile(DOUBLE)
x = mine.upload(np.arange(64, dtype=np.float32))
y = mine.alloc(256)
r = p.record([x], [y])
r.replay().wait()
child_report({"doubled": np.frombuffer(y.read(), np.float32).tolist() == (np.arange(64) * 2.0).tolist(),
              "adapter_type": mine.info["adapter_type"]})
# sys.exit: Mesa 22.3's lavapipe crashed (SIGSEGV) here, in its exit handler, joining
# the parent's queue threads; the child's exit now ends before the parent's handlers.
"""


def _refused_for_the_fork(result: dict[str, Any], adapter_type: str) -> None:
    """A new Device in a forked child either works, or, where the driver cannot start
    again there (NVIDIA's on the H200: "Parent device is lost"), is a ForkedError that
    says to use spawn. lavapipe (CI's adapter) gives one: there it must work."""
    assert adapter_type != "CPU", f"lavapipe refused a device in a forked child: {result}"
    raised(result, "ForkedError", "fork() child", 'get_context("spawn")')


def test_forked_child_can_create_and_use_its_own_device_and_exit() -> None:
    res = _fork(_OWN_DEVICE)
    _exited_promptly(res)
    if "refused" in res["child"]:
        _refused_for_the_fork(res["child"]["refused"], res["parent"]["adapter_type"])
    else:
        assert res["child"]["doubled"]
    assert res["parent"]["read"] and res["parent"]["replay"]["ok"]


_POOL_WORKERS = """
import numpy as np
import vyre_native as vn

inherited = None  # the parent's buffer, which fork workers inherit


def outcome_of(err):
    return {"ok": False, "cls": type(err).__name__, "mro": [c.__name__ for c in type(err).__mro__], "msg": str(err)}


def square(v):
    return v * v


def use_inherited(_):
    try:
        inherited.read()
        return {"ok": True}
    except BaseException as err:
        return outcome_of(err)


def own_device(v):
    try:
        mine = vn.Device()
    except vn.ForkedError as err:  # a driver that cannot start again in a forked child
        return outcome_of(err)
    return np.frombuffer(mine.upload(np.full(4, v, np.float32)).read(), np.float32).tolist()
"""

# Workers' functions live in a module file: spawned workers import them by name (a
# `python -c` main module has nothing they could import).
_POOL = """
import multiprocessing, tempfile
folder = tempfile.mkdtemp()
with open(os.path.join(folder, "vn_pool_workers.py"), "w") as f:
    f.write({workers!r})
sys.path.insert(0, folder)  # spawned workers get the parent's sys.path
import vn_pool_workers as w

dev = vn.Device()
w.inherited = dev.upload(np.arange(4, dtype=np.float32))
ctx = multiprocessing.get_context({method!r})
out = {{"adapter_type": dev.info["adapter_type"]}}
with ctx.Pool(2) as pool:
    out["squares"] = pool.map(w.square, range(8))
    if {method!r} == "fork":
        out["inherited"] = pool.map(w.use_inherited, range(2))
    out["own"] = pool.map(w.own_device, range(2))
out["parent"] = np.frombuffer(w.inherited.read(), np.float32).tolist()
report(out)
"""


def test_multiprocessing_fork_pool_works_beside_a_live_device() -> None:
    # Pool workers inherit the parent's device: plain work runs, inherited objects raise
    # ForkedError, and a worker's own Device works; the pool shuts down (no hang).
    res = run_child(_POOL.format(workers=_POOL_WORKERS, method="fork"), timeout=120)
    assert res["squares"] == [v * v for v in range(8)]
    for r in res["inherited"]:
        raised(r, "ForkedError", "fork")
    for v, own in enumerate(res["own"]):
        if isinstance(own, dict):
            _refused_for_the_fork(own, res["adapter_type"])
        else:
            assert own == [float(v)] * 4
    assert res["parent"] == [0.0, 1.0, 2.0, 3.0]


def test_multiprocessing_spawn_pool_workers_get_their_own_devices_beside_a_live_device() -> None:
    # What ForkedError's Fix says to do: spawned workers start fresh interpreters, so
    # their own Devices work on every driver.
    res = run_child(_POOL.format(workers=_POOL_WORKERS, method="spawn"), timeout=180)
    assert res["squares"] == [v * v for v in range(8)]
    assert res["own"] == [[0.0] * 4, [1.0] * 4]
    assert res["parent"] == [0.0, 1.0, 2.0, 3.0]
