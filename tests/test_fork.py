"""os.fork() with a live device: the child never touches what it inherited.

wgpu-native's device cannot be used, or destroyed, across fork() (its driver threads
stay in the parent: destroying the copy blocks for ever). In a child every call on an
inherited object raises ForkedError, whose message says to create a vn.Device in the
child, and releasing one (``del``, garbage collection, interpreter exit) only forgets
it. Each test forks inside a child interpreter, and waits for the fork's child with a
time limit (a hang guard, tests/scenarios/fork.py), so a hang fails the test instead of
stalling the run.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from support.child import run_scenario
from support.errors import raised


@functools.cache
def _fork(child: str) -> dict[str, Any]:
    """Fork with every kind of object alive, run `child` (a function of
    tests/scenarios/fork.py) in the fork's child; what both sides reported (once per
    child: several tests read one fork's reports)."""
    return run_scenario("fork", child, timeout=180)  # type: ignore[no-any-return]


def _exited(res: dict[str, Any]) -> None:
    assert res["status"] is not None, f"the forked child hung: it had not exited after {res['hang_s']:.0f} s"
    assert res["status"] == 0, f"the forked child exited with wait status {res['status']}"


def test_forked_child_that_only_exits_exits() -> None:
    res = _fork("only_exits")
    _exited(res)
    assert res["child"] is not None and "pid" in res["child"], res


def test_forked_child_exit_keeps_its_exit_status() -> None:
    # The child's exit skips the exit handlers the parent registered (a GPU driver's
    # teardown of devices it inherited), but not its status or its output.
    res = _fork("exit_status")
    assert res["status"] is not None and os.waitstatus_to_exitcode(res["status"]) == 7, res


def test_parent_is_unaffected_by_a_forked_child() -> None:
    res = _fork("only_exits")
    assert res["parent"]["read"]
    assert res["parent"]["replay"]["ok"], res["parent"]["replay"]
    assert res["parent"]["pending"]


def test_forked_child_using_inherited_objects_gets_forked_error() -> None:
    res = _fork("use_inherited")
    _exited(res)
    child = res["child"]
    assert child is not None, "the forked child reported nothing"
    for op, result in child.items():
        if op in ("dropped", "info", "submission_wait", "submission_wait_timeout", "mappings_after_drop"):
            continue
        try:
            raised(result, "ForkedError", "fork", "vn.Device")
        except AssertionError as err:
            raise AssertionError(f"{op}: {err}") from None


def test_forked_child_waiting_on_an_inherited_submission_gets_forked_error() -> None:
    # Even one the parent saw complete before the fork: a wait is a call on an inherited
    # object, and every such call is refused (the handle check comes first, in C), so
    # the child never learns from one what the parent's GPU did.
    child = _fork("use_inherited")["child"]
    for op in ("submission_wait", "submission_wait_timeout"):
        try:
            raised(child[op], "ForkedError", "fork", "vn.Device")
        except AssertionError as err:
            raise AssertionError(f"{op}: {err}") from None


def test_forked_child_drops_inherited_objects_without_waiting() -> None:
    # A drop that waited would block for ever (the driver's threads are in the parent):
    # the child got past dropping everything, reported, and exited.
    res = _fork("use_inherited")
    _exited(res)
    assert res["child"]["dropped"], res["child"]
    assert res["parent"]["read"] and res["parent"]["pending"]


def test_a_zero_copy_array_alive_at_fork_is_dropped_in_the_child_without_an_unmap() -> None:
    # The child forgets the inherited pin (no unmap, no count change); the parent's array
    # still reads its data, its pin goes when the parent drops it, and a read started
    # before the fork still completes zero-copy in the parent.
    res = _fork("use_inherited")
    parent = res["parent"]
    assert res["child"]["mappings_after_drop"] == parent["mappings_at_fork"] == 1, res
    assert parent["zero_copy_array"] and parent["zero_copy_pin"], parent
    assert parent["sequence"]["ok"], parent["sequence"]
    assert parent["mappings_after"] == 0, parent


def _refused_for_the_fork(result: dict[str, Any], adapter_type: str) -> None:
    """A new Device in a forked child either works, or, where the driver cannot start
    again there (NVIDIA's on the H200: "Parent device is lost"), is a ForkedError that
    says to use spawn. lavapipe (CI's adapter) gives one: there it must work."""
    assert adapter_type != "CPU", f"lavapipe refused a device in a forked child: {result}"
    raised(result, "ForkedError", "fork() child", 'get_context("spawn")')


def test_forked_child_can_create_and_use_its_own_device_and_exit() -> None:
    res = _fork("own_device")
    _exited(res)
    if "refused" in res["child"]:
        _refused_for_the_fork(res["child"]["refused"], res["parent"]["adapter_type"])
    else:
        assert res["child"]["doubled"]
    assert res["parent"]["read"] and res["parent"]["replay"]["ok"]


def test_multiprocessing_fork_pool_works_beside_a_live_device() -> None:
    # Pool workers inherit the parent's device: plain work runs, inherited objects raise
    # ForkedError, and a worker's own Device works; the pool shuts down (no hang).
    res = run_scenario("fork_pool", "fork", timeout=120)
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
    res = run_scenario("fork_pool", "spawn", timeout=180)
    assert res["squares"] == [v * v for v in range(8)]
    assert res["own"] == [[0.0] * 4, [1.0] * 4]
    assert res["parent"] == [0.0, 1.0, 2.0, 3.0]


# Six forks at random moments while the threads the script started run; each child
# (after `inherited`, its use of what it inherited) makes its own device and exits; the
# parent prints "exit <status>" per child, or "hang" for one killed after 30 s.
FORK_SIX_TIMES = """
rng = random.Random({seed})
for i in range(6):
    time.sleep(rng.random() * 0.2)
    pid = os.fork()
    if pid == 0:{inherited}
        try:
            vn.Device().close()     # its own device: lavapipe gives one, NVIDIA refuses it
        except vn.ForkedError:
            pass
        os._exit(0)
    for _ in range(300):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            print("exit", status, flush=True)
            break
        time.sleep(0.1)
    else:
        os.kill(pid, 9); os.waitpid(pid, 0)
        print("hang", flush=True)
stop = True
os._exit(0)
"""


def _six_children_exit_cleanly(script: str) -> None:
    from support.child import run

    res = run(["-c", script], timeout=240)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split("\n")[:6] == ["exit 0"] * 6, res.stdout


FORK_DURING_DRIVER_CALLS = """
import os, random, sys, threading, time
import vyre_native as vn

stop = False
def busy(make):
    while not stop:
        try:
            vn.Device().close() if make else vn.enumerate_adapters()
        except vn.VyreError:
            pass
for make in (True, False):
    threading.Thread(target=busy, args=(make,), daemon=True).start()
""" + FORK_SIX_TIMES.format(seed=1, inherited="")


def test_a_fork_while_other_threads_make_devices_and_list_adapters_leaves_the_child_working() -> None:
    """fork() copies the locks other threads hold inside the driver and the Vulkan loader:
    a child forked while another thread was inside vn.Device() or vn.enumerate_adapters()
    waited for ever on the loader's mutex in its own vn.Device() (lavapipe: 2-4 of 6 forks
    during devices, 6 of 6 during listings; the H200 inside vkCreateDevice). The fork now
    waits for the calls in flight (layer_object.h, the call guard)."""
    _six_children_exit_cleanly(FORK_DURING_DRIVER_CALLS)


FORK_DURING_CROSS_DEVICE_COPIES = """
import os, random, threading, time
import vyre_native as vn

a, b = vn.Device(), vn.Device()
src, dst = a.alloc(1 << 20), b.alloc(1 << 20)
stop = False
def busy():
    while not stop:
        b.copy(src, dst)   # a readback from a, a write into b: both devices in the driver
threading.Thread(target=busy, daemon=True).start()
""" + FORK_SIX_TIMES.format(seed=2, inherited="""
        try:
            dst.read()              # inherited: ForkedError, never the driver
            os._exit(3)
        except vn.ForkedError:
            pass""")


def test_a_fork_while_a_thread_copies_between_two_devices_leaves_the_child_working() -> None:
    """The H200's child forked while another thread copied between two devices never
    came back from vkCreateDevice (3 of 3): NVIDIA's driver gives no device in a fork()
    child, so vn.Device() there is refused before the driver is asked (device.c), and the
    inherited buffer raises ForkedError; lavapipe gives the child its device."""
    _six_children_exit_cleanly(FORK_DURING_CROSS_DEVICE_COPIES)


FORK_AFTER_A_DRIVER_THAT_CANNOT_FORK = """
import os, sys
import vyre_native as vn
from vyre_native._lib import lib

lib.vn_test_control(lib.VN_TEST_DRIVER_CANNOT_FORK, 1)  # as NVIDIA's: described below
dev = vn.Device()
pid = os.fork()
if pid == 0:
    for call in (vn.Device, vn.enumerate_adapters):
        try:
            call()
            os._exit(3)
        except vn.ForkedError as err:
            if "fork() child" not in str(err) or 'get_context("spawn")' not in str(err):
                os._exit(4)
    os._exit(0)
_, status = os.waitpid(pid, 0)
print("child", status, "parent", vn.Device().info["name"] == dev.info["name"], len(vn.enumerate_adapters()) > 0)
"""


def test_a_fork_child_of_a_process_that_started_nvidias_driver_is_refused_before_any_driver_call() -> None:
    """NVIDIA's driver never starts again in a fork() child of a process that had started
    it (it refuses, or never returns: the H200's children hung in vkCreateDevice and
    earlier). Once such an adapter was described, a fork child's vn.Device() and
    enumerate_adapters() are ForkedError before any instance is made; the parent carries on.
    A test switch makes lavapipe's adapter count as one."""
    from support.child import run

    res = run(["-c", FORK_AFTER_A_DRIVER_THAT_CANNOT_FORK], timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip() == "child 0 parent True True", res.stdout
