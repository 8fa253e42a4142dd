"""No deadlock from reentry: a Python signal handler runs between bytecodes on the main
thread, in the middle of whatever vyre_native call is there, and may call vyre_native
again. Every lock such a nested call can meet — the loader's, interop's registry lock
and its per-object locks (the C layer's locks are never held across a return to Python)
— lets it through (the nested call works) or refuses it with ``ReentryError`` saying why;
it never waits for ever on its own thread.

Each case runs in a child interpreter with a time limit, so a deadlock fails the test
instead of hanging the suite. The reentry is driven deterministically: a profile hook
raises the signal (``signal.raise_signal``) when the outer call reaches a chosen
function, with its lock held, and the handler runs as that function starts.
"""

from __future__ import annotations

import textwrap
from typing import Any

from support.child import run_child
from support.errors import raised

# reenter(target, fn): at the first call of a Python function named `target` defined in
# a file whose name ends with `where` (the handler runs as it starts), or the return of a
# C function of that name (the handler runs right after it), inside the outer call, raise
# SIGUSR1; its handler runs fn() and keeps its outcome in NESTED.
_REENTER = """
NESTED = []

def reenter(target, fn, where=""):
    def handler(signum, frame):
        NESTED.append(outcome(fn))
    signal.signal(signal.SIGUSR1, handler)
    fired = []
    def hook(frame, event, arg):
        if fired:
            return
        python = event == "call" and frame.f_code.co_name == target and frame.f_code.co_filename.endswith(where)
        if python or (event == "c_return" and getattr(arg, "__name__", None) == target):
            fired.append(True)
            signal.raise_signal(signal.SIGUSR1)
    sys.setprofile(hook)

def done_reentering():
    sys.setprofile(None)
    assert NESTED, "the handler never ran: the hook's target was not reached"
    return NESTED[0]
"""


def _child(code: str, setup: str = "") -> Any:
    return run_child(_REENTER + setup + textwrap.dedent(code), timeout=60)


# ---- the loader: the nested call works --------------------------------------------------


def test_library_version_from_a_handler_during_the_first_device_returns_the_versions() -> None:
    res = _child("""
    reenter("library_path", vn.library_version, where="_lib.py")
    dev = vn.Device()  # the first: it loads wgpu-native, and the handler lands mid-load
    nested = done_reentering()
    report({"nested": nested, "version": list(vn.library_version()), "works": dev.upload(b"abcd").read() == b"abcd",
            "log_threads": sum(t.name == "vyre_native-log" for t in threading.enumerate())})
    """)
    assert res["nested"]["ok"], res["nested"]
    assert res["works"] and res["version"][0] == res["version"][1]
    assert res["log_threads"] == 1  # the load reentered still starts one log forwarder


def test_a_device_made_from_a_handler_while_the_log_starts_works() -> None:
    res = _child("""
    made = []
    reenter("start", lambda: made.append(vn.Device().upload(b"wxyz").read()), where="_log.py")
    vn.library_version()  # loads, and starts the log forwarder, where the handler lands
    nested = done_reentering()
    report({"nested": nested, "made": [m.decode() for m in made],
            "log_threads": sum(t.name == "vyre_native-log" for t in threading.enumerate())})
    """)
    assert res["nested"]["ok"], res["nested"]
    assert res["made"] == ["wxyz"] and res["log_threads"] == 1


# ---- interop: a nested call is refused where it would see half-done state ----------------

_WGPU = """
import wgpu
adapter = wgpu.gpu.request_adapter_sync()
gdev = adapter.request_device_sync()
"""


def test_from_wgpu_from_a_handler_inside_the_first_adoption_raises_reentry_error() -> None:
    res = _child(setup=_WGPU, code="""
    reenter("_second_handle", lambda: vn.Device.from_wgpu(gdev), where="interop.py")
    dev = vn.Device.from_wgpu(gdev)
    nested = done_reentering()
    report({"nested": nested, "same": vn.Device.from_wgpu(gdev) is dev,
            "works": dev.upload(b"abcd").read() == b"abcd"})
    """)
    raised(res["nested"], "ReentryError", "Device.from_wgpu()", "signal handler")
    assert "RuntimeError" in res["nested"]["mro"]
    assert res["same"] and res["works"]  # the outer adoption finished as if alone


def test_from_wgpu_of_an_adopted_device_from_a_handler_inside_another_adoption_works() -> None:
    res = _child(setup=_WGPU, code="""
    first = vn.Device.from_wgpu(gdev)
    other = adapter.request_device_sync()
    got = []
    reenter("_second_handle", lambda: got.append(vn.Device.from_wgpu(gdev)), where="interop.py")
    second = vn.Device.from_wgpu(other)
    nested = done_reentering()
    report({"nested": nested, "same": bool(got) and got[0] is first, "distinct": second is not first})
    """)
    assert res["nested"]["ok"], res["nested"]
    assert res["same"] and res["distinct"]


def test_a_shared_buffer_mapped_from_a_handler_inside_its_adoption_raises_reentry_error() -> None:
    res = _child(setup=_WGPU, code="""
    dev = vn.Device.from_wgpu(gdev)
    gbuf = gdev.create_buffer(size=64, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
    # Buffer.from_wgpu reads wgpu-py's map_state holding the buffer's watch lock.
    reenter("map_state", lambda: gbuf.map_sync(wgpu.MapMode.READ))
    buf = vn.Buffer.from_wgpu(gbuf)
    nested = done_reentering()
    report({"nested": nested, "len": buf.byte_len, "same": vn.Buffer.from_wgpu(gbuf).allocation_identity
            == buf.allocation_identity})
    """)
    raised(res["nested"], "ReentryError", "map_async()", "signal handler")
    assert res["len"] == 64 and res["same"]  # the adoption finished as if alone


def test_a_shared_buffer_destroyed_from_a_handler_inside_its_map_raises_reentry_error() -> None:
    res = _child(setup=_WGPU, code="""
    dev = vn.Device.from_wgpu(gdev)
    gbuf = gdev.create_buffer(size=64, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
    buf = vn.Buffer.from_wgpu(gbuf)
    # The map hook holds the buffer's watch lock from its report to C (the handler runs
    # right after it) through wgpu-native's map; a destroy of that buffer needs the lock.
    reenter("vn_buffer_set_foreign_state", lambda: gbuf.destroy())
    gbuf.map_sync(wgpu.MapMode.READ)
    nested = done_reentering()
    gbuf.unmap()
    seq = dev.sequence().copy(dev.upload(np.zeros(16, np.uint32)), buf)
    report({"nested": nested, "copy_into": outcome(lambda: seq.replay().wait())})
    """)
    raised(res["nested"], "ReentryError", "destroy()", "signal handler")
    assert res["copy_into"]["ok"], res["copy_into"]  # unmapped again, not destroyed: usable


def test_interop_from_a_handler_inside_wgpu_pys_own_type_parse_does_not_wait_on_cffis_lock() -> None:
    # A handler that lands while wgpu-py parses a C type (cffi holds its FFI's lock, which
    # is not reentrant) finds that lock held by its own thread: the interop calls it makes
    # must not need it (they cast with types resolved once, when the hooks went in).
    res = _child(setup=_WGPU, code="""
    from wgpu.backends.wgpu_native import _ffi
    dev = vn.Device.from_wgpu(gdev)
    buf = dev.alloc(256)
    gbuf = gdev.create_buffer(size=64, usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)
    with _ffi.ffi._lock:  # where the handler runs: inside wgpu-py's parse of a new type
        exported = outcome(lambda: buf.to_wgpu())
        adopted = outcome(lambda: vn.Buffer.from_wgpu(gbuf))
        again = outcome(lambda: vn.Device.from_wgpu(gdev))
    report({"exported": exported, "adopted": adopted, "again": again})
    """)
    assert res["exported"]["ok"], res["exported"]
    assert res["adopted"]["ok"], res["adopted"]
    assert res["again"]["ok"], res["again"]


# ---- calls that take no turn: the nested call works --------------------------------------


def test_a_copy_from_a_handler_inside_a_copy_works_and_is_no_reentry_error() -> None:
    # Device.copy takes no turn (its C call holds no lock on return): a handler's copy
    # inside another runs as if alone. A ReentryError that spoke of a Worker was seen
    # for it on the H200; a ReentryError names the call that was made, and none comes here.
    res = _child("""
    dev = vn.Device()
    a, b = dev.upload(np.arange(64, dtype=np.uint32)), dev.upload(np.arange(64, 128, dtype=np.uint32))
    x, y = dev.alloc(256), dev.alloc(256)
    reenter("vn_device_copy", lambda: dev.copy(b, y))
    dev.copy(a, x)
    nested = done_reentering()
    report({"nested": nested, "x": x.read(np.uint32).tolist(), "y": y.read(np.uint32).tolist()})
    """)
    assert res["nested"]["ok"], res["nested"]
    assert res["x"] == list(range(64)) and res["y"] == list(range(64, 128))
