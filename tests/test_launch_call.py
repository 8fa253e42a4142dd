"""The commonest launches as one call each (csrc/python/launch.c: ``_owner.record_buffers``
for a pre-record, ``_owner.replay_once`` for ``replay()`` of a Recording or a Sequence):
each computes what Python's own path computes, hands every argument it does not take as
it is to that path (whose conversions and messages are the rules' one owner), and no
argument or race reaches C wrongly."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

import vyre_native as vn
from vyre_native._owner import Owner, record_buffers, replay_once


def _doubled(device: vn.Device, double: vn.Pipeline, **kwargs: object) -> np.ndarray:
    a, o = device.upload(np.arange(64, dtype=np.float32)), device.alloc(256)
    d = double.prerecord_persistent_dispatch([a], [o], **kwargs)
    d.replay()
    return np.frombuffer(d.read_output(0), np.float32)


@pytest.mark.parametrize(
    "workgroups", [(1, 1, 1), [1, 1, 1], (np.uint32(1), 1, 1)], ids=["tuple", "list", "numpy"]
)
def test_every_form_of_workgroups_computes_the_same(device: vn.Device, double: vn.Pipeline, workgroups) -> None:
    np.testing.assert_array_equal(_doubled(device, double, workgroups=workgroups), np.arange(64) * 2)


def test_clear_outputs_false_keeps_what_the_output_holds(device: vn.Device, double: vn.Pipeline) -> None:
    # DOUBLE writes every element: the output shows the kernel ran (a kept clear is the
    # C layer's; what this checks is that False reaches it, as np.False_ does)
    for keep in (False, np.False_):
        np.testing.assert_array_equal(_doubled(device, double, clear_outputs=keep), np.arange(64) * 2)


def test_the_one_call_takes_only_what_needs_no_conversion(device: vn.Device, double: vn.Pipeline) -> None:
    a, o = device.upload(np.ones(64, np.float32)), device.alloc(256)
    assert isinstance(record_buffers(double, [a], [o], (1, 1, 1), True), Owner)
    for args in [
        (double, [a], [o], [1, 1, 1], True),  # workgroups a list
        (double, [a], [o], (1, 1), True),
        (double, [a], [o], (1, 1, 2**32), True),  # past uint32_t
        (double, [a], [o], (1, 1, -1), True),
        (double, [a], [o], (True, 1, 1), True),  # a bool is no count: Python's path says so
        (double, [a], [o], (1, 1, 1), 1),  # clear_outputs not a bool
        (double, [a.view(0, 256)], [o], (1, 1, 1), True),  # a view
        (double, iter([a]), [o], (1, 1, 1), True),
        (double, [a] * 17, [o], (1, 1, 1), True),  # more than VN_LAUNCH_MAX_BUFFERS
        (object(), [a], [o], (1, 1, 1), True),
        (a, [a], [o], (1, 1, 1), True),  # a handle, but C refuses its kind
    ]:
        got = record_buffers(*args)
        assert got is None or (type(got) is int and got > 0), (args, got)
    with pytest.raises(TypeError, match="Fix:"):
        record_buffers(double, [a], [o])  # type: ignore[call-arg]


def test_a_released_buffer_or_pipeline_raises_released_error(device: vn.Device) -> None:
    from support.kernels import DOUBLE

    pipe = device.compile(DOUBLE)
    a, o = device.upload(np.ones(64, np.float32)), device.alloc(256)
    a.release()
    with pytest.raises(vn.ReleasedError, match="Fix:"):
        pipe.prerecord_persistent_dispatch([a], [o])
    assert record_buffers(pipe, [a], [o], (1, 1, 1), True) is None
    pipe.release()
    with pytest.raises(vn.ReleasedError, match="Fix:"):
        pipe.prerecord_persistent_dispatch([device.upload(np.ones(64, np.float32))], [o])


def test_a_count_mismatch_is_the_c_layers_binding_error(device: vn.Device, double: vn.Pipeline) -> None:
    a = device.upload(np.ones(64, np.float32))
    with pytest.raises(vn.BindingError, match="Fix:"):
        double.prerecord_persistent_dispatch([a, a], [])


def test_buffers_released_by_another_thread_mid_launch_never_crash(device: vn.Device, double: vn.Pipeline) -> None:
    stop = threading.Event()
    pool = [(device.upload(np.ones(64, np.float32)), device.alloc(256)) for _ in range(8)]
    outcomes = {"made": 0, "released": 0}

    def releaser() -> None:
        while not stop.is_set():
            for a, o in pool:
                a.release()
                o.release()

    t = threading.Thread(target=releaser)
    t.start()
    try:
        for i in range(400):
            a, o = pool[i % len(pool)]
            try:
                double.prerecord_persistent_dispatch([a], [o]).replay()
                outcomes["made"] += 1
            except vn.ReleasedError:
                outcomes["released"] += 1
            if i % 50 == 49:  # fresh buffers, so some launches race the release
                pool[:] = [(device.upload(np.ones(64, np.float32)), device.alloc(256)) for _ in range(8)]
    finally:
        stop.set()
        t.join()
    device.wait_idle()
    assert outcomes["made"] + outcomes["released"] == 400


def test_replay_with_the_defaults_is_one_call_and_computes_right(device: vn.Device, double: vn.Pipeline) -> None:
    a, o = device.upload(np.arange(64, dtype=np.float32)), device.alloc(256)
    rec = double.record([a], [o])
    seq = device.sequence()
    seq.add(double, [a], [o])
    for work, which in ((rec, 0), (seq, 1)):
        made = replay_once(work, which)
        assert isinstance(made, Owner) or made == vn._lib.PENDING  # a CPU adapter's busy queue
        sub = work.replay()
        assert isinstance(sub, vn.Submission) and sub.index > 0
        sub.wait()
        np.testing.assert_array_equal(np.frombuffer(o.read(), np.float32), np.arange(64) * 2)


def test_replay_once_refuses_what_it_is_not_for(device: vn.Device, double: vn.Pipeline) -> None:
    a, o = device.upload(np.ones(64, np.float32)), device.alloc(256)
    rec = double.record([a], [o])
    for which in (2, -1, "0", 0.0, True):
        with pytest.raises(TypeError, match="Fix:"):
            replay_once(rec, which)
    assert replay_once(object(), 0) is None
    got = replay_once(rec, 1)  # a Recording's id where a Sequence's goes: C refuses the kind
    assert type(got) is int and got > 0
    rec.release()
    assert replay_once(rec, 0) is None
    with pytest.raises(vn.ReleasedError, match="Fix:"):
        rec.replay()


def test_a_handle_whose_id_was_tampered_with_is_a_typed_error(device: vn.Device, double: vn.Pipeline) -> None:
    a, o = device.upload(np.ones(64, np.float32)), device.alloc(256)
    rec = double.record([a], [o])
    for bogus in (12345, 2**64 - 1, o._id):
        rec._id = bogus
        with pytest.raises(vn.VyreError, match="Fix:"):
            rec.replay()
        a._id = bogus
        with pytest.raises(vn.VyreError, match="Fix:"):
            double.prerecord_persistent_dispatch([a], [o])


class _KeyLike_id:
    """A key of a buffer's __dict__ that collides with "_id": the one call's lookup of
    ``_id`` runs its ``__eq__``, Python code in the middle of the C pass."""

    action: Any = None

    def __hash__(self) -> int:
        return hash("_id")

    def __eq__(self, other: object) -> bool:
        action, _KeyLike_id.action = _KeyLike_id.action, None
        if action is not None:
            action()
        return NotImplemented


def _collide(buffer: vn.Buffer) -> None:
    saved = dict(buffer.__dict__)
    buffer.__dict__.clear()
    buffer.__dict__[_KeyLike_id()] = 0
    buffer.__dict__.update(saved)


def test_a_list_emptied_by_code_run_mid_call_takes_pythons_path(device: vn.Device, double: vn.Pipeline) -> None:
    a, b, o = device.upload(np.ones(64, np.float32)), device.upload(np.ones(64, np.float32)), device.alloc(256)
    _collide(a)
    outcomes = []
    for workgroups in ((1, 1, 1), [1, 1, 1]):  # the one call, then Python's own path
        inputs = [a, b]
        _KeyLike_id.action = inputs.clear
        with pytest.raises(vn.VyreError) as info:
            double.prerecord_persistent_dispatch(inputs, [o], workgroups=workgroups)
        outcomes.append(type(info.value))
    assert outcomes[0] is outcomes[1]


def test_an_exception_raised_mid_call_propagates(device: vn.Device, double: vn.Pipeline) -> None:
    a, o = device.upload(np.ones(64, np.float32)), device.alloc(256)
    _collide(a)

    def interrupt() -> None:
        raise KeyboardInterrupt

    before = vn.debug.live_objects(wait=5.0)["dispatches"]
    _KeyLike_id.action = interrupt
    with pytest.raises(KeyboardInterrupt):
        double.prerecord_persistent_dispatch([a], [o])
    assert vn.debug.live_objects(wait=5.0)["dispatches"] == before  # C was never called


def test_an_import_in_a_subinterpreter_leaves_this_interpreters_launches_alone() -> None:
    si = pytest.importorskip("_xxsubinterpreters", reason="this Python has no _xxsubinterpreters")
    from support.child import run

    code = (
        "import _xxsubinterpreters as si\n"
        "import numpy as np\n"
        "import vyre_native as vn\n"
        "from vyre_native._owner import Owner, replay_once\n"
        "dev = vn.Device()\n"
        "acc = dev.alloc(256)\n"
        "p = dev.compile('@group(0) @binding(0) var<storage, read_write> a: array<u32>;\\n'\n"
        "                '@compute @workgroup_size(1) fn main() { a[0] = a[0] + 1u; }')\n"
        "rec = p.record([], [acc], clear_outputs=False)\n"
        "i = si.create()\n"
        "try:\n"
        "    si.run_string(i, 'import vyre_native')\n"
        "    print('sub-import ok')\n"
        "except Exception as e:\n"
        "    print('sub-import refused', 'Fix:' in str(e))\n"
        "si.destroy(i)\n"
        "made = replay_once(rec, 0)\n"
        "print(type(made) is Owner or made == vn._lib.PENDING)\n"
        "rec.replay().wait()\n"
        "p.prerecord_persistent_dispatch([], [acc], clear_outputs=False).replay()\n"
        "dev.wait_idle()\n"
        "print(int(np.frombuffer(acc.read(), np.uint32)[0]) >= 2)\n"
    )
    del si
    res = run(["-c", code], timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["sub-import", "refused", "True", "True", "True"], res.stdout

