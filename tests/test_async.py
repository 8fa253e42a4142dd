"""Awaitable submissions and reads: the wait runs off the event loop's thread."""

from __future__ import annotations

import asyncio

import numpy as np
from support.kernels import DOUBLE

import vyre_native as vn

# Long enough that the event loop visibly keeps running meanwhile: a dependent chain
# whose length comes from a buffer, so the compiler cannot fold it away.
SLOW = """
@group(0) @binding(0) var<storage, read> count: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(1)
fn main() {
    var acc = count[1];
    for (var i = 0u; i < count[0]; i = i + 1u) { acc = acc * 1664525u + (acc >> 7u) + i; }
    out[0] = acc;
}
"""
SLOW_COUNT = np.array([30_000_000, 7], dtype=np.uint32)


def test_awaiting_a_replay_completes_its_submission(device: vn.Device) -> None:
    data = np.arange(64, dtype=np.float32)
    rec = device.compile(DOUBLE).record([device.upload(data)], [device.alloc(data.nbytes)])

    async def main() -> vn.Submission:
        return await rec.replay()

    sub = asyncio.run(main())
    assert isinstance(sub, vn.Submission) and sub.done
    assert np.array_equal(rec.read_output(0, np.float32), 2 * data)


def test_awaiting_a_pending_read_gives_its_bytes(device: vn.Device) -> None:
    buf = device.upload(b"vyre_native-async")

    async def main() -> bytes:
        return await buf.read_async()

    assert asyncio.run(main()) == b"vyre_native-async"


def test_the_event_loop_keeps_running_while_a_long_kernel_is_awaited(device: vn.Device) -> None:
    rec = device.compile(SLOW).record([device.upload(SLOW_COUNT)], [device.alloc(4)])
    ticks = 0

    async def ticker(stop: asyncio.Event) -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0.001)

    async def main() -> tuple[int, bool]:
        stop = asyncio.Event()
        task = asyncio.create_task(ticker(stop))
        sub = rec.replay()
        before = ticks
        await sub
        stop.set()
        await task
        return ticks - before, sub.done

    advanced, done = asyncio.run(main())
    assert done
    assert advanced > 0, "the loop was blocked for the whole wait"


def test_pending_read_done_turns_true_once_the_data_is_back(device: vn.Device) -> None:
    pending = device.upload(np.zeros(16, np.uint8)).read_async()
    device.wait_idle()
    pending.result()
    assert pending.done is True


def test_many_reads_awaited_together_each_give_their_own_bytes(device: vn.Device) -> None:
    bufs = [device.upload(bytes([i]) * 64) for i in range(8)]

    async def main() -> list[bytes]:
        return list(await asyncio.gather(*(b.read_async() for b in bufs)))

    assert asyncio.run(main()) == [bytes([i]) * 64 for i in range(8)]
