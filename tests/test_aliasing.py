"""WebGPU's rule for one buffer used twice by one dispatch, exactly (csrc/resources/bind_checks.c,
check_aliasing).

- Read-only uses (``var<storage, read>``, ``var<uniform>``, the indirect counts) share
  anything, overlapping or not.
- A buffer bound writable (``var<storage, read_write>``) has no read-only use in the same
  dispatch, whatever the ranges: the dispatch is a usage scope, holding each buffer (one
  subresource) in one state. wgpu-native 29 refuses these at Finish.
- Two writable bindings of one buffer are valid when their ranges are disjoint (the
  spec's "usage scope storage exception": what a tensor library's memory planner binds)
  and invalid when they overlap ("encoder bind groups alias a writable resource", which
  wgpu-native 29 does not check: it runs them and the invocations race).

Each valid case is compared with a numpy model of the whole arena (what each binding
writes, and that nothing outside its range changed); each invalid case is a
``BindingError`` naming both bindings and their byte ranges, refused by every call that
records a dispatch. Offsets are multiples of 256, valid on every adapter.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from support.kernels import INC_U32, elementwise

import vyre_native as vn

SLOT = 256
SENTINEL = 7

# Two writable bindings: a[i] += 1 + i, b[i] += 1000 + i over each binding's length.
TWO_WRITABLE = """
@group(0) @binding(0) var<storage, read_write> a: array<u32>;
@group({gb}) @binding(1) var<storage, read_write> b: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {{
    let i = g.x;
    if (i < arrayLength(&a)) {{ a[i] = a[i] + 1u + i; }}
    if (i < arrayLength(&b)) {{ b[i] = b[i] + 1000u + i; }}
}}
"""

# Two read-only bindings, out[i] = x[i] + 2 * y[i].
TWO_READ = elementwise("out[i] = x[i] + 2u * y[i];", "read x", "read y", "read_write out", ty="u32")

# A uniform and a read-only storage binding, out[i] = s[i] + 10 * u[i].
UNIFORM_AND_READ = """
@group(0) @binding(0) var<uniform> u: array<vec4<u32>, 16>;
@group(0) @binding(1) var<storage, read> s: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32, 64>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let i = g.x;
    out[i] = s[i] + 10u * u[i / 4u][i % 4u];
}
"""

# A read-only binding and a writable one: out[i] = inp[i] + 1.
READ_AND_WRITABLE = INC_U32

# A uniform and a writable binding: out[i] = u[0].x + i.
UNIFORM_AND_WRITABLE = """
@group(0) @binding(0) var<uniform> u: array<vec4<u32>, 16>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let i = g.x;
    if (i < arrayLength(&out)) { out[i] = u[0].x + i; }
}
"""

# Indirect: every workgroup w marks hits[w] = src[0] + w (src read-only).
MARK = """
@group(0) @binding(0) var<storage, read> src: array<u32>;
@group(0) @binding(1) var<storage, read_write> hits: array<u32>;
@compute @workgroup_size(1)
fn main(@builtin(workgroup_id) w: vec3<u32>) { hits[w.x] = src[0] + w.x; }
"""


def arena(device: vn.Device, slots: int, slot_bytes: int = SLOT) -> tuple[vn.Buffer, np.ndarray]:
    """A buffer of `slots` slots whose u32 word k holds SENTINEL + k, and its model."""
    host = (SENTINEL + np.arange(slots * slot_bytes // 4)).astype(np.uint32)
    return device.upload(host), host.copy()


def words(offset: int, nbytes: int) -> slice:
    return slice(offset // 4, (offset + nbytes) // 4)


def groups(nbytes: int) -> tuple[int, int, int]:
    return ((nbytes // 4 + 63) // 64, 1, 1)


# ---------------------------------------------------------------- valid: two writable bindings


@pytest.fixture(scope="module")
def two_writable(device: vn.Device) -> vn.Pipeline:
    return device.compile(TWO_WRITABLE.format(gb=0))


# 256-byte views are cleared by fill dispatches inside the pass; 32 KiB ones by
# clear_buffer on a CPU adapter (lavapipe), by fills on a GPU: both paths clear only
# their own range.
@pytest.mark.parametrize("slot_bytes", [SLOT, 32 << 10], ids=["256B", "32KiB"])
@pytest.mark.parametrize("gap", [0, 1], ids=["touching", "apart"])
def test_two_writable_disjoint_views_of_one_buffer_are_cleared_and_written_as_numpy_models(
    device: vn.Device, two_writable: vn.Pipeline, slot_bytes: int, gap: int
) -> None:
    buf, model = arena(device, 4, slot_bytes)
    a_at, b_at = slot_bytes, (2 + gap) * slot_bytes
    rec = two_writable.record(
        [], [buf.view(a_at, slot_bytes), buf.view(b_at, slot_bytes)], workgroups=groups(slot_bytes)
    )
    rec.replay().wait()
    n = np.arange(slot_bytes // 4, dtype=np.uint32)
    model[words(a_at, slot_bytes)] = 1 + n  # cleared, then written
    model[words(b_at, slot_bytes)] = 1000 + n
    np.testing.assert_array_equal(buf.read(np.uint32), model)


def test_two_writable_disjoint_views_cleared_outside_a_timed_pass_compute_as_numpy(
    device: vn.Device, two_writable: vn.Pipeline
) -> None:
    # timing="dispatch" moves every clear out of the pass (clear_buffer of each view's range).
    if not device.timestamps:
        pytest.skip("the adapter has no timestamp queries")
    buf, model = arena(device, 2)
    rec = two_writable.record([], [buf.view(0, SLOT), buf.view(SLOT, SLOT)])
    rec.replay(2, timing="dispatch").wait()
    n = np.arange(SLOT // 4, dtype=np.uint32)
    model[words(0, SLOT)] = 1 + n
    model[words(SLOT, SLOT)] = 1000 + n
    np.testing.assert_array_equal(buf.read(np.uint32), model)


def test_two_writable_disjoint_views_kept_uncleared_each_add_to_what_they_held(
    device: vn.Device, two_writable: vn.Pipeline
) -> None:
    buf, model = arena(device, 2)
    rec = two_writable.record([], [buf.view(0, SLOT), buf.view(SLOT, SLOT)], clear_outputs=False)
    rec.replay(3).wait()
    n = np.arange(SLOT // 4, dtype=np.uint32)
    model[words(0, SLOT)] += 3 * (1 + n)
    model[words(SLOT, SLOT)] += 3 * (1000 + n)
    np.testing.assert_array_equal(buf.read(np.uint32), model)


def test_a_preserved_writable_view_beside_a_cleared_one_of_the_same_buffer_keeps_its_data(
    device: vn.Device,
) -> None:
    prog = device.compile(TWO_WRITABLE.format(gb=0), preserve=["a"])
    buf, model = arena(device, 3)
    prog.prerecord_persistent_dispatch([], [buf.view(0, SLOT), buf.view(2 * SLOT, SLOT)]).replay()
    n = np.arange(SLOT // 4, dtype=np.uint32)
    model[words(0, SLOT)] += 1 + n  # preserved: in/out state
    model[words(2 * SLOT, SLOT)] = 1000 + n  # cleared first
    np.testing.assert_array_equal(buf.read(np.uint32), model)


def test_two_writable_disjoint_views_in_different_bind_groups_compute_as_numpy(device: vn.Device) -> None:
    prog = device.compile(TWO_WRITABLE.format(gb=1))
    buf, model = arena(device, 2)
    prog.record(bind={"a": buf.view(SLOT, SLOT), "b": buf.view(0, SLOT)}).replay().wait()
    n = np.arange(SLOT // 4, dtype=np.uint32)
    model[words(SLOT, SLOT)] = 1 + n
    model[words(0, SLOT)] = 1000 + n
    np.testing.assert_array_equal(buf.read(np.uint32), model)


def test_sequence_steps_over_disjoint_writable_views_of_one_arena_compute_as_numpy(
    device: vn.Device, two_writable: vn.Pipeline
) -> None:
    # Several dispatches in one pass, each a usage scope of its own: step 2 writes the
    # slot step 1 wrote as `b`, now as `a`.
    buf, model = arena(device, 3)
    seq = device.sequence()
    seq.add(two_writable, [], [buf.view(0, SLOT), buf.view(SLOT, SLOT)], clear_outputs=False)
    seq.add(two_writable, [], [buf.view(SLOT, SLOT), buf.view(2 * SLOT, SLOT)], clear_outputs=False)
    seq.add(two_writable, [], [buf.view(2 * SLOT, SLOT), buf.view(0, SLOT)])
    seq.replay().wait()
    n = np.arange(SLOT // 4, dtype=np.uint32)
    s0, s1, s2 = words(0, SLOT), words(SLOT, SLOT), words(2 * SLOT, SLOT)
    model[s0] += 1 + n
    model[s1] += 1000 + n
    model[s1] += 1 + n
    model[s2] += 1000 + n
    model[s2] = 1 + n  # the last step clears both of its outputs
    model[s0] = 1000 + n
    np.testing.assert_array_equal(buf.read(np.uint32), model)


# ---------------------------------------------------------------- valid: read-only uses share anything


def test_two_read_only_bindings_of_overlapping_ranges_compute_as_numpy(device: vn.Device) -> None:
    prog = device.compile(TWO_READ)
    buf, model = arena(device, 3)
    out = device.alloc(SLOT)
    x, y = buf.view(0, 2 * SLOT), buf.view(SLOT, 2 * SLOT)
    prog.record([x, y], [out]).replay().wait()
    expect = model[words(0, SLOT)] + 2 * model[words(SLOT, SLOT)]
    np.testing.assert_array_equal(out.read(np.uint32), expect)
    np.testing.assert_array_equal(buf.read(np.uint32), model)


def test_the_same_view_bound_read_only_twice_computes_as_numpy(device: vn.Device) -> None:
    prog = device.compile(TWO_READ)
    buf, model = arena(device, 1)
    out = device.alloc(SLOT)
    prog.record([buf, buf], [out]).replay().wait()
    np.testing.assert_array_equal(out.read(np.uint32), 3 * model)


def test_a_uniform_and_a_read_only_binding_of_one_range_compute_as_numpy(device: vn.Device) -> None:
    prog = device.compile(UNIFORM_AND_READ)
    buf, model = arena(device, 1)
    out = device.alloc(SLOT)
    prog.record([buf, buf], [out]).replay().wait()
    np.testing.assert_array_equal(out.read(np.uint32), 11 * model)


def test_indirect_counts_inside_a_read_only_binding_of_the_same_buffer_dispatch_as_numpy(
    device: vn.Device,
) -> None:
    prog = device.compile(MARK)
    src = device.upload(np.array([5, 1, 1, 40], np.uint32))  # counts (5, 1, 1) at byte 0
    hits = device.alloc(SLOT)
    prog.record([src], [hits], indirect=(src, 0)).replay().wait()
    model = np.zeros(SLOT // 4, np.uint32)
    model[:5] = 5 + np.arange(5)
    np.testing.assert_array_equal(hits.read(np.uint32), model)


# ---------------------------------------------------------------- invalid: refused by every way to record


def _record(prog: vn.Pipeline, how: str, **kw: Any) -> Any:
    if how == "record":
        return prog.record(**kw)
    if how == "prerecord":
        return prog.prerecord_persistent_dispatch(**kw)
    seq = prog.device.sequence()
    return seq.add(prog, **kw)


HOWS = ["record", "prerecord", "sequence_add"]


def refused(fn: Callable[[], Any], *named: str) -> str:
    """fn() raises BindingError whose message contains every one of `named` and a Fix."""
    with pytest.raises(vn.BindingError) as info:
        fn()
    msg = str(info.value)
    for text in named:
        assert text in msg, f"{text!r} not in {msg!r}"
    assert "Fix:" in msg
    return msg


# (a's range, b's range) in bytes; each overlaps the other
OVERLAPS = {
    "partly": ((0, 2 * SLOT), (SLOT, 2 * SLOT)),
    "the_same_range": ((SLOT, SLOT), (SLOT, SLOT)),
    "one_inside_the_other": ((0, 3 * SLOT), (SLOT, SLOT)),
    "the_whole_buffer_and_a_view": ((0, 4 * SLOT), (2 * SLOT, SLOT)),
}


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("case", list(OVERLAPS))
def test_two_writable_bindings_of_overlapping_ranges_raise_binding_error_naming_both_ranges(
    device: vn.Device, two_writable: vn.Pipeline, case: str, how: str
) -> None:
    (ao, an), (bo, bn) = OVERLAPS[case]
    buf, model = arena(device, 4)
    a = buf if an == 4 * SLOT else buf.view(ao, an)
    lo, hi = max(ao, bo), min(ao + an, bo + bn)
    refused(
        lambda: _record(two_writable, how, outputs=[a, buf.view(bo, bn)]),
        f"buffer {buf.allocation_identity}",
        f"`a` (var<storage, read_write>, bytes [{ao}, {ao + an}))",
        f"`b` (var<storage, read_write>, bytes [{bo}, {bo + bn}))",
        f"overlap in bytes [{lo}, {hi})",
    )
    np.testing.assert_array_equal(buf.read(np.uint32), model)  # nothing ran


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("overlapping", [False, True], ids=["disjoint", "overlapping"])
def test_a_read_only_and_a_writable_binding_of_one_buffer_raise_binding_error_whatever_the_ranges(
    device: vn.Device, how: str, overlapping: bool
) -> None:
    prog = device.compile(READ_AND_WRITABLE)
    buf, _ = arena(device, 4)
    out_at = SLOT if overlapping else 2 * SLOT
    refused(
        lambda: _record(prog, how, inputs=[buf.view(0, 2 * SLOT)], outputs=[buf.view(out_at, SLOT)]),
        f"buffer {buf.allocation_identity}",
        f"`inp` (var<storage, read>, bytes [0, {2 * SLOT}))",
        f"`out` (var<storage, read_write>, bytes [{out_at}, {out_at + SLOT}))",
        "usage scope",
    )


@pytest.mark.parametrize("how", HOWS)
def test_a_uniform_and_a_disjoint_writable_binding_of_one_buffer_raise_binding_error(
    device: vn.Device, how: str
) -> None:
    prog = device.compile(UNIFORM_AND_WRITABLE)
    buf, _ = arena(device, 4)
    refused(
        lambda: _record(prog, how, params=buf.view(0, SLOT), outputs=[buf.view(2 * SLOT, SLOT)]),
        f"`u` (var<uniform>, bytes [0, {SLOT}))",
        f"`out` (var<storage, read_write>, bytes [{2 * SLOT}, {3 * SLOT}))",
        "usage scope",
    )


@pytest.mark.parametrize("how", HOWS)
def test_indirect_counts_in_a_buffer_the_dispatch_writes_elsewhere_raise_binding_error(
    device: vn.Device, how: str
) -> None:
    prog = device.compile(MARK)
    buf, _ = arena(device, 4)
    refused(
        lambda: _record(
            prog, how, inputs=[device.alloc(16)], outputs=[buf.view(2 * SLOT, SLOT)], indirect=(buf, 16)
        ),
        "the indirect workgroup counts (bytes [16, 28))",
        f"`hits` (var<storage, read_write>, bytes [{2 * SLOT}, {3 * SLOT}))",
    )


def test_indirect_counts_through_a_view_name_their_bytes_in_the_buffer(device: vn.Device) -> None:
    prog = device.compile(MARK)
    buf, _ = arena(device, 4)
    refused(
        lambda: prog.record([device.alloc(16)], [buf.view(0, SLOT)], indirect=(buf.view(SLOT, SLOT), 8)),
        f"the indirect workgroup counts (bytes [{SLOT + 8}, {SLOT + 20}))",
        f"`hits` (var<storage, read_write>, bytes [0, {SLOT}))",
    )


def test_an_overlap_named_by_bind_is_refused_as_a_positional_one(
    device: vn.Device, two_writable: vn.Pipeline
) -> None:
    buf, _ = arena(device, 2)
    refused(
        lambda: two_writable.record(bind={"b": buf.view(0, 2 * SLOT), "a": buf.view(SLOT, SLOT)}),
        f"`a` (var<storage, read_write>, bytes [{SLOT}, {2 * SLOT}))",
        f"`b` (var<storage, read_write>, bytes [0, {2 * SLOT}))",
    )


def test_an_overlap_across_bind_groups_raises_binding_error(device: vn.Device) -> None:
    prog = device.compile(TWO_WRITABLE.format(gb=1))
    buf, _ = arena(device, 2)
    refused(
        lambda: prog.record([], [buf, buf.view(SLOT, SLOT)]),
        "@group(0) @binding(0) `a`",
        "@group(1) @binding(1) `b`",
        f"overlap in bytes [{SLOT}, {2 * SLOT})",
    )
