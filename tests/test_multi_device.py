"""More than one Device in a process, driven from several threads at once.

Where the machine has two adapters the devices sit on different ones; otherwise both
are on the one adapter (a CPU-only CI machine), which still exercises two wgpu
devices, two queues and their locks side by side.
"""

from __future__ import annotations

import threading

import numpy as np
from support.kernels import DOUBLE

import vyre_native as vn


def _adapters_for(count: int) -> list[int]:
    found = len(vn.enumerate_adapters())
    return [i % found for i in range(count)]


def test_two_devices_on_two_threads_each_compute_their_own_results() -> None:
    errors: list[BaseException] = []
    results: dict[int, np.ndarray] = {}

    def work(slot: int, adapter: int) -> None:
        try:
            with vn.Device(adapter=adapter) as dev:
                data = np.arange(4096, dtype=np.float32) + slot * 10_000
                prog = dev.compile(DOUBLE)
                rec = prog.record([dev.upload(data)], [dev.alloc(data.nbytes)], workgroups=(64, 1, 1))
                for _ in range(50):
                    rec.replay(4)
                results[slot] = rec.read_output(0, np.float32)
        except BaseException as err:  # noqa: BLE001 - reported to the main thread
            errors.append(err)

    threads = [threading.Thread(target=work, args=(slot, a)) for slot, a in enumerate(_adapters_for(2))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    assert not any(t.is_alive() for t in threads), "a device thread hung"
    for slot in range(2):
        assert np.array_equal(results[slot], 2 * (np.arange(4096, dtype=np.float32) + slot * 10_000))


def test_a_buffer_of_one_device_cannot_bind_to_another_devices_pipeline() -> None:
    a, b = _adapters_for(2)
    with vn.Device(adapter=a) as one, vn.Device(adapter=b) as two:
        prog = one.compile(DOUBLE)
        foreign = two.upload(np.zeros(64, np.float32))
        try:
            prog.record([foreign], [one.alloc(256)])
        except vn.BindingError as err:
            assert "Fix:" in str(err)
        else:
            raise AssertionError("a buffer of another device was bound")
