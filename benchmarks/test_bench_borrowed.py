"""Operation 8: a borrowed dispatch end to end: host bytes uploaded into a new
buffer, a new output, a bind group, record, submit, read the output back, release.
"""

from __future__ import annotations

import numpy as np
import pytest
from harness import IO_BYTES, record_python, run_floor


def _bench_borrowed(benchmark, rounds, way, once, host):
    """``once()`` (one borrowed dispatch, returning the output's bytes) a round, its
    bytes freed inside the timer; then one more, checked against the kernel."""

    def target():
        once()

    benchmark.pedantic(target, rounds=rounds.small_read, warmup_rounds=8)
    np.testing.assert_array_equal(np.frombuffer(once(), dtype=np.float32), host * 2)
    record_python(benchmark, way, "borrowed_dispatch")


@pytest.mark.benchmark(group="borrowed_dispatch")
def test_borrowed_dispatch_vyre_native(benchmark, vnx, rounds):
    prog, host = vnx.prog, vnx.host

    def once():
        rec = prog.prerecord_borrowed_dispatch([host], workgroups=(1, 1, 1), output_sizes=[IO_BYTES])
        rec.replay()
        return rec.read_output(0)

    _bench_borrowed(benchmark, rounds, "vyre_native", once, host)


@pytest.mark.benchmark(group="borrowed_dispatch")
def test_borrowed_dispatch_wgpu_py(benchmark, wgx, rounds):
    """create_buffer_with_data + create_buffer + bind groups + encode + submit + read_buffer."""
    device, queue, usage, host, bind, bind_fill, encode = (
        wgx.device,
        wgx.queue,
        wgx.usage,
        wgx.host,
        wgx.bind,
        wgx.bind_fill,
        wgx.encode,
    )

    def once():
        src = device.create_buffer_with_data(data=host, usage=usage)
        out = device.create_buffer(size=IO_BYTES, usage=usage)
        queue.submit([encode(bind(src, out), bind_fill(out))])
        return queue.read_buffer(out)

    _bench_borrowed(benchmark, rounds, "wgpu-py", once, host)


@pytest.mark.benchmark(group="borrowed_dispatch")
def test_borrowed_dispatch_raw_c(benchmark, cfloor, vnx, rounds):
    lib, ctx = cfloor.lib, cfloor.ctx
    call = cfloor.call("borrowed", cfloor.ffi.from_buffer(vnx.host), IO_BYTES)
    run_floor(benchmark, cfloor, "borrowed_dispatch", call, rounds.c_small_ops, rounds.c_small_rounds)
    out = np.zeros(IO_BYTES // 4, dtype=np.float32)
    assert lib.floor_result(ctx, cfloor.ffi.from_buffer(out), IO_BYTES) == 0
    np.testing.assert_array_equal(out, vnx.host * 2)
