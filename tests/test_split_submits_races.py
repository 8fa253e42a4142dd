"""Split sequence replays (csrc/work/sequence.c, replay_in_submits) racing other threads, in
child processes (a wgpu-native abort fails one test): wgpu-py destroying or mapping a
buffer the sequence shares with it, Device.destroy() and close(), adds, releases, other
replays and batches of the same sequence, and Ctrl-C. Every outcome is success or a
typed VyreError with a Fix (one after a first part names the steps submitted), and
counting kernels end exactly where the replays that ran put them. The scenarios are
tests/scenarios/split_submits_races.py."""

from __future__ import annotations

import pytest
from support.child import run_scenario


@pytest.mark.parametrize("action", ["destroy", "destroy_map_read", "map", "device_destroy"])
def test_wgpu_py_acting_on_a_shared_buffer_during_a_split_replay_never_aborts(action: str) -> None:
    pytest.importorskip("wgpu")
    res = run_scenario("split_submits_races", "wgpu_py_attack", action, timeout=300)
    assert sum(res.values()) == 25
    allowed = {"ok", "BindingError", "BindingError after a part", "DeviceLostError", "DeviceLostError after a part"}
    assert set(res) <= allowed, res


@pytest.mark.parametrize("action", ["add", "release", "release_buffer", "close", "destroy", "replay", "submit"])
def test_another_thread_acting_on_a_sequence_during_its_split_replay(action: str) -> None:
    res = run_scenario("split_submits_races", "sequence_attack", action, timeout=300)
    assert res["wrong"] == []
    assert res["live"] == {}, res["live"]
    allowed = {"ok", "ReleasedError", "ReleasedError after a part", "DeviceLostError", "DeviceLostError after a part"}
    assert set(res["outcomes"]) <= allowed, res["outcomes"]


def test_many_threads_split_replaying_sequences_over_shared_counters_count_exactly() -> None:
    res = run_scenario("split_submits_races", "many_threads", timeout=300)
    assert res["got"] == res["expect"]


def test_ctrl_c_during_the_wait_of_a_split_replay_leaves_its_steps_running() -> None:
    res = run_scenario("split_submits_races", "ctrl_c", timeout=300)
    assert res["got"] == ["KeyboardInterrupt"] * 3
    assert res["acc"] == 800
