"""Split sequence replays (csrc/replay.c, replay_in_submits) racing other threads, in
child processes (a wgpu-native abort fails one test): wgpu-py destroying or mapping a
buffer the sequence shares with it, Device.destroy() and close(), adds, releases, other
replays and batches of the same sequence, and Ctrl-C. Every outcome is success or a
typed VyreError with a Fix (one after a first part names the steps submitted), and
counting kernels end exactly where the replays that ran put them."""

from __future__ import annotations

import pytest
from childproc import run_child
from wgsl_kernels import COUNTER

SETUP = f"INC = {COUNTER!r}\n" + '''
from vyre_native._lib import lib
import random
lib.vn_test_control(lib.VN_TEST_SPLIT_SUBMITS_EVERYWHERE, 1)
outcomes = {}
def note(e=None):
    if e is None:
        key = "ok"
    else:
        assert isinstance(e, vn.VyreError), repr(e)
        assert "Fix:" in str(e), str(e)
        msg = str(e)
        key = type(e).__name__ + (" after a part" if "steps were submitted (they run)" in msg else "")
        if "steps were submitted" in msg:
            assert msg.startswith("after "), msg
    outcomes[key] = outcomes.get(key, 0) + 1
'''


@pytest.mark.parametrize("action", ["destroy", "destroy_map_read", "map", "device_destroy"])
def test_wgpu_py_acting_on_a_shared_buffer_during_a_split_replay_never_aborts(action: str) -> None:
    pytest.importorskip("wgpu")
    res = run_child(
        SETUP
        + f"""
import wgpu
action = {action!r}
random.seed(1)
for trial in range(25):
    gd = wgpu.gpu.request_adapter_sync().request_device_sync()
    dev = vn.Device.from_wgpu(gd)
    p = dev.compile(INC, preserve=["acc"])
    usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
    theirs = gd.create_buffer(size=256, usage=usage)
    ours = vn.Buffer.from_wgpu(theirs)
    mr = gd.create_buffer(size=256, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
    mro = vn.Buffer.from_wgpu(mr)
    seq = dev.sequence()
    for i in range(200):
        seq.add(p, [], [ours], workgroups=(1, 1, 1))
        if i % 50 == 49:
            seq.copy(ours, mro)
    t0 = time.perf_counter(); seq.replay().wait(); T = time.perf_counter() - t0
    def attack():
        time.sleep(random.random() * T)
        if action == "destroy": theirs.destroy()
        elif action == "destroy_map_read": type(mr).destroy(mr)
        elif action == "map":
            mr.map_sync(wgpu.MapMode.READ); time.sleep(0.005); mr.unmap()
        else: gd.destroy()
    th = threading.Thread(target=attack); th.start()
    try:
        seq.replay().wait()
        note()
        ok = True
    except vn.VyreError as e:
        note(e); ok = False
    th.join()
    if ok and action == "map":
        assert (np.frombuffer(ours.read(), np.uint32) == 400).all()
report(outcomes)
""",
        timeout=300,
    )
    assert sum(res.values()) == 25
    allowed = {"ok", "BindingError", "BindingError after a part", "DeviceLostError", "DeviceLostError after a part"}
    assert set(res) <= allowed, res


@pytest.mark.parametrize("action", ["add", "release", "release_buffer", "close", "destroy", "replay", "submit"])
def test_another_thread_acting_on_a_sequence_during_its_split_replay(action: str) -> None:
    res = run_child(
        SETUP
        + f"""
action = {action!r}
random.seed(2)
wrong = []
for trial in range(12):
    dev = vn.Device()
    p = dev.compile(INC, preserve=["acc"])
    acc, other = dev.alloc(256), dev.alloc(256)
    seq = dev.sequence()
    for i in range(100):
        seq.add(p, [], [acc], workgroups=(1, 1, 1))
    seq.replay().wait()
    t0 = time.perf_counter(); seq.replay().wait(); T = time.perf_counter() - t0
    def attack():
        time.sleep(random.random() * 2 * T)
        try:
            if action == "add":
                for _ in range(5): seq.add(p, [], [other], workgroups=(1, 1, 1))
            elif action == "release": seq.release()
            elif action == "release_buffer": acc.release()
            elif action == "close": dev.close()
            elif action == "destroy": dev.destroy()
            elif action == "replay": seq.replay().wait()
            else: dev.submit([seq, p.record([], [other], workgroups=(1, 1, 1))]).wait()
        except vn.VyreError as e:
            note(e)
    th = threading.Thread(target=attack); th.start()
    try:
        seq.replay(2).wait()
        note()
    except vn.VyreError as e:
        note(e)
    th.join()
    if action in ("add", "replay", "submit"):
        dev.wait_idle()
        got = int(np.frombuffer(acc.read(), np.uint32)[0])
        want = 400 + (100 if action in ("replay", "submit") else 0)
        if got != want: wrong.append((got, want))
    del seq, p, acc, other, dev
gc.collect()
live = {{k: v for k, v in vn.debug.live_objects().items() if v}}
report({{"outcomes": outcomes, "wrong": wrong, "live": live}})
""",
        timeout=300,
    )
    assert res["wrong"] == []
    assert res["live"] == {}, res["live"]
    allowed = {"ok", "ReleasedError", "ReleasedError after a part", "DeviceLostError", "DeviceLostError after a part"}
    assert set(res["outcomes"]) <= allowed, res["outcomes"]


def test_many_threads_split_replaying_sequences_over_shared_counters_count_exactly() -> None:
    res = run_child(
        SETUP
        + """
dev = vn.Device()
p = dev.compile(INC, preserve=["acc"])
bufs = [dev.alloc(256) for _ in range(3)]
expect = np.zeros(3, np.int64)
lock = threading.Lock()
def worker(seed):
    rng = random.Random(seed)
    seq = dev.sequence(); counts = np.zeros(3, np.int64)
    for i in range(rng.randint(8, 60)):
        b = rng.randrange(3); seq.add(p, [], [bufs[b]], workgroups=(1, 1, 1)); counts[b] += 1
    local = np.zeros(3, np.int64)
    for r in range(20):
        op = rng.random()
        if op < 0.6:
            n = rng.choice([1, 2, 3]) if len(seq) * 3 <= 256 else 1
            s = seq.replay(n); local += counts * n
            if rng.random() < 0.3: s.wait()
        elif op < 0.8:
            dev.submit([seq, p.record([], [bufs[0]], workgroups=(1, 1, 1))]); local += counts; local[0] += 1
        else:
            b = rng.randrange(3); seq.add(p, [], [bufs[b]], workgroups=(1, 1, 1)); counts[b] += 1
    with lock:
        expect[:] += local
ts = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
[t.start() for t in ts]; [t.join() for t in ts]
dev.wait_idle()
got = [int(np.frombuffer(b.read(), np.uint32)[0]) for b in bufs]
report({"got": got, "expect": expect.tolist()})
""",
        timeout=300,
    )
    assert res["got"] == res["expect"]


def test_ctrl_c_during_the_wait_of_a_split_replay_leaves_its_steps_running() -> None:
    res = run_child(
        SETUP
        + '''
dev = vn.Device()
SLOW = """
@group(0) @binding(0) var<storage, read_write> acc: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    var x = 0u;
    for (var i = 0u; i < 2000u; i = i + 1u) { x = x * 1664525u + 1013904223u; }
    if (g.x < arrayLength(&acc) && x != 7u) { acc[g.x] = acc[g.x] + 1u; }
}
"""
p = dev.compile(SLOW, preserve=["acc"])
acc = dev.alloc(256)
seq = dev.sequence()
for i in range(200):
    seq.add(p, [], [acc], workgroups=(8, 1, 1))
t0 = time.time(); seq.replay().wait(); T = time.time() - t0
got = []
for frac in (0.1, 0.5, 0.9):
    threading.Timer(T * frac, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    try:
        seq.replay().wait(); time.sleep(T)
        got.append("ok")
    except KeyboardInterrupt:
        got.append("KeyboardInterrupt")
dev.wait_idle()
report({"got": got, "acc": int(np.frombuffer(acc.read(), np.uint32)[0])})
''',
        timeout=300,
    )
    assert res["got"] == ["KeyboardInterrupt"] * 3
    assert res["acc"] == 800
