"""Operation 13: writing 64 MiB of host memory into a GPU buffer and waiting until the
queue has it: vyre_native's ``buffer.write`` + ``wait_idle``, wgpu-py's
``queue.write_buffer`` + wait, raw C's ``wgpuQueueWriteBuffer`` + empty submit + poll.
(``dev.upload`` is ``alloc`` + this ``write``.)
"""

from __future__ import annotations

import numpy as np
from harness import BIG_READ, record_python, run_floor, wgpu_wait

HOST = np.full(BIG_READ // 4, 3, dtype=np.uint32)


def test_write_64MiB_vyre_native(benchmark, vnx, rounds):
    benchmark.group = "write_64MiB"
    buf = vnx.dev.alloc(BIG_READ)

    def target():
        buf.write(HOST)
        vnx.dev.wait_idle()

    benchmark.pedantic(target, rounds=rounds.big_read, iterations=1, warmup_rounds=1)
    assert np.array_equal(buf.read(np.uint32)[:4], HOST[:4])
    record_python(benchmark, "vyre_native", "write_64MiB", nbytes=BIG_READ)


def test_write_64MiB_wgpu_py(benchmark, wgx, rounds):
    benchmark.group = "write_64MiB"
    buf = wgx.device.create_buffer(size=BIG_READ, usage=wgx.usage)

    def target():
        wgx.queue.write_buffer(buf, 0, HOST)
        wgx.queue.submit([])
        wgpu_wait(wgx)

    benchmark.pedantic(target, rounds=rounds.big_read, iterations=1, warmup_rounds=1)
    record_python(benchmark, "wgpu-py", "write_64MiB", nbytes=BIG_READ)


def test_write_64MiB_raw_c(benchmark, cfloor, rounds):
    benchmark.group = "write_64MiB"
    call = cfloor.call("write", cfloor.ffi.from_buffer(HOST), BIG_READ)
    run_floor(benchmark, cfloor, "write_64MiB", call, 1, rounds.big_read, nbytes=BIG_READ)
