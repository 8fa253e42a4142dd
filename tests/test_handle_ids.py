"""Handles are ids, not addresses: a stale or made-up handle never reaches an object.

Every handle the C API hands out is a slot of a process-wide table and that slot's
generation (csrc/object/object.c, docs/LOCKING.md). Releasing it bumps the generation, so a
copy of the value kept past its release names no object, however many objects were
made since and whatever now lives in its slot: it is a ReleasedError. A value that
never was a handle is a typed error too. These tests call the C API directly
(``vyre_native._native.lib``) with raw handle values, as a C caller would; the ones
that could crash the process run in a child interpreter.
"""

from __future__ import annotations

import gc
from typing import Any

import numpy as np
import pytest
from support.child import run_child
from support.errors import raised
from test_fork import _exited, _fork
from test_misuse import check_message

import vyre_native as vn
from vyre_native._lib import check, ffi, introspect, lib


def _raw(handle: Any) -> int:
    """The handle's value as a C caller holds it: a plain integer, owning nothing."""
    return int(ffi.cast("uintptr_t", handle._ptr))


def _describe(raw: int) -> Any:
    desc = ffi.new("vn_buffer_desc *")
    check(lib.vn_buffer_describe(ffi.cast("vn_buffer *", raw), desc))
    return desc


def test_a_released_buffer_handle_stays_released_after_its_slot_is_reused(device: vn.Device) -> None:
    gone = device.upload(np.full(16, 7, dtype=np.uint32))
    stale = _raw(gone)
    gone.release()
    # New buffers take the freed slot again (the low 32 bits are the slot).
    others = [device.upload(np.full(16, i, dtype=np.uint32)) for i in range(64)]
    assert any(_raw(b) & 0xFFFFFFFF == stale & 0xFFFFFFFF for b in others), "the freed slot was not reused"
    dst = ffi.new("uint8_t[64]")
    with pytest.raises(vn.ReleasedError) as info:
        check(lib.vn_buffer_read(ffi.cast("vn_buffer *", stale), dst, 64, ffi.new("vn_pending_read **")))
    check_message(info.value, "vn.Buffer", "released")
    assert bytes(dst) == bytes(64), "the stale handle read another buffer's data"


def test_two_handles_of_one_object_are_different_ids_of_one_allocation_identity(device: vn.Device) -> None:
    buf = device.upload(np.arange(4, dtype=np.float32))
    again = ffi.new("vn_buffer *[1]")
    lib.vn_buffer_retain_for_watch(buf._ptr, again)
    second = int(ffi.cast("uintptr_t", again[0]))
    try:
        assert second != _raw(buf)
        assert _describe(second).allocation_identity == buf.allocation_identity
    finally:
        lib.vn_buffer_release(again[0])
    assert buf.read() == np.arange(4, dtype=np.float32).tobytes(), (
        "releasing the second id released the first"
    )


def _slot(raw: int) -> int:
    return raw & 0xFFFFFFFF


def test_a_released_handle_of_each_kind_raises_released_error_after_its_slot_is_reused(
    device: vn.Device,
) -> None:
    from support.kernels import DOUBLE

    buf = device.upload(np.arange(64, dtype=np.float32))
    out = device.alloc(256)
    prog = device.compile(DOUBLE)
    rec = prog.record([buf], [out])
    make = {
        "Recording": lambda: prog.record([buf], [out]),
        "Submission": lambda: rec.replay(),
        "PendingRead": lambda: buf.read_async(),
    }
    calls = {
        "Recording": lambda raw: lib.vn_recording_replay(
            ffi.cast("vn_recording *", raw), 1, 0, ffi.new("vn_submission **")
        ),
        "Submission": lambda raw: lib.vn_submission_wait(
            ffi.cast("vn_submission *", raw), 0.0, ffi.new("double *")
        ),
        "PendingRead": lambda raw: lib.vn_pending_read_finish(
            ffi.cast("vn_pending_read *", raw), ffi.new("uint8_t[256]"), 256
        ),
    }
    for kind, new in make.items():
        gone = new()
        stale = _raw(gone)
        gone.release()
        again = [new() for _ in range(8)]  # of the same kind, in the freed slot
        assert any(_slot(_raw(h)) == _slot(stale) for h in again), f"no new {kind} took the freed slot"
        with pytest.raises(vn.ReleasedError) as info:
            check(calls[kind](stale))
        check_message(info.value, f"vn.{kind}", "released")
        device.wait_idle()


def test_a_second_release_of_a_handle_leaves_the_object_now_in_its_slot_alone(device: vn.Device) -> None:
    first = device.upload(np.zeros(4, dtype=np.float32))
    stale = _raw(first)
    lib.vn_buffer_release(ffi.cast("vn_buffer *", stale))  # a C caller's own release
    others = [device.upload(np.full(4, i, dtype=np.float32)) for i in range(16)]
    assert any(_slot(_raw(b)) == _slot(stale) for b in others), "no new buffer took the freed slot"
    first.release()  # the owner's release of the same id: stale, ignored
    lib.vn_handle_release(ffi.cast("void *", stale))
    for i, b in enumerate(others):
        assert b.read() == np.full(4, i, dtype=np.float32).tobytes()


def test_released_handles_return_their_slots(device: vn.Device) -> None:
    gc.collect()  # earlier tests' garbage would be released mid-count
    gc.disable()
    try:
        def live_ids() -> int:
            return int(introspect(lib.VN_INTROSPECT_LIVE_IDS).live_ids)

        before = live_ids()
        for _ in range(3):
            bufs = [device.alloc(16) for _ in range(200)]
            assert live_ids() == before + 200
            del bufs
        assert live_ids() == before
    finally:
        gc.enable()


_MADE_UP = """
import random
from vyre_native._lib import check
from vyre_native._native import ffi, lib
dev = vn.Device()
buf = dev.upload(np.arange(16, dtype=np.float32))
live = [buf, dev.alloc(64), dev.sequence()]
rng = random.Random(17)
# Small integers, pointer-like values, and ids of live slots with generations never issued
# (a value equal to a live id is that id: (1 << 32) | 0, the first id ever issued, is not
# made up).
values = [0, 1, 2, 3, 4, 7, 8, 16, 4096, 2**31, 2**32 - 1, 2**32 + 2**30, 2**33, 2**63, 2**64 - 1]
values += [rng.getrandbits(64) for _ in range(2000)] + [rng.getrandbits(32) for _ in range(500)]
values += [int(ffi.cast("uintptr_t", buf._ptr)) + k for k in (4096, 2**20, 2**31)]  # past every slot issued
values += [(rng.getrandbits(20) << 44) | (1 << 32) | rng.getrandbits(6) for _ in range(500)]
before = vn.debug.live_objects()
kinds = {}
desc = ffi.new("vn_buffer_desc *")
for v in values:
    p = ffi.cast("vn_buffer *", v)
    st = lib.vn_buffer_describe(p, desc)
    name = "ok" if st == 0 else vn.errors.error_class(st).__name__
    kinds[name] = kinds.get(name, 0) + 1
    lib.vn_buffer_release(p)
    lib.vn_handle_release(ffi.cast("void *", v))
    lib.vn_submission_index(ffi.cast("vn_submission *", v))
report({"kinds": kinds, "same": vn.debug.live_objects() == before,
        "works": buf.read() == np.arange(16, dtype=np.float32).tobytes()})
"""


def test_made_up_integers_as_handles_raise_typed_errors_and_release_nothing() -> None:
    res = run_child(_MADE_UP)
    assert "ok" not in res["kinds"], f"a made-up value was taken for a buffer: {res['kinds']}"
    assert set(res["kinds"]) <= {"InvalidArgumentError", "ReleasedError"}, res["kinds"]
    assert res["same"], "a made-up handle released or made something"
    assert res["works"]


_RACE = """
import random
from vyre_native._lib import check
from vyre_native._native import ffi, lib
dev = vn.Device()
rng = random.Random(5)
bad = set()
reused = 0
for round in range(200):
    buf = dev.upload(np.zeros(round % 7 + 1, dtype=np.float32))
    raw = ffi.cast("vn_buffer *", int(ffi.cast("uintptr_t", buf._ptr)))
    expected = 4 * (round % 7 + 1)
    outcomes = []
    def use():
        desc = ffi.new("vn_buffer_desc *")
        for _ in range(rng.randrange(1, 200)):
            st = lib.vn_buffer_describe(raw, desc)
            outcomes.append("ok" if st == 0 and desc.byte_len == expected else st)
            if st != 0:
                break
    def release():
        time.sleep(rng.random() * 1e-4)
        lib.vn_buffer_release(raw)
    threads = [threading.Thread(target=use), threading.Thread(target=use), threading.Thread(target=release)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    bad.update(o for o in outcomes if o not in ("ok", lib.VN_ERROR_RELEASED))
    del buf
    # Once released it stays released, with its slot holding the next buffer.
    successor = dev.alloc(64)
    reused += int(ffi.cast("uintptr_t", successor._ptr)) & 0xFFFFFFFF == int(ffi.cast("uintptr_t", raw)) & 0xFFFFFFFF
    if lib.vn_buffer_describe(raw, ffi.new("vn_buffer_desc *")) != lib.VN_ERROR_RELEASED:
        bad.add("stale handle taken for its successor")
    del successor
report({"bad": sorted(map(str, bad)), "reused": reused, "buffers": vn.debug.live_objects()["buffers"]})
"""


def test_a_release_racing_calls_on_the_same_handle_lets_each_call_complete_or_raise_released_error() -> None:
    res = run_child(_RACE, timeout=300)
    assert res["bad"] == [], f"calls racing the release got {res['bad']}"
    assert res["reused"] > 100, f"the released slot was taken again in only {res['reused']} of 200 rounds"
    assert res["buffers"] == 0


def test_a_forked_child_that_releases_an_inherited_handle_then_finds_it_released() -> None:
    res = _fork("release_inherited_id")
    _exited(res)
    child = res["child"]
    raised(child["before"], "ForkedError", "fork")
    raised(child["after"], "ReleasedError", "released")
    raised(child["device"], "ForkedError", "fork")
    assert res["parent"]["read"], "the parent's buffer changed"
