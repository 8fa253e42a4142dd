"""Operations 6 and 7: reading a GPU buffer back, 4 KiB and 64 MiB, into new host
memory (read_output) and into a reused numpy array (read_output_into).

The source is a dispatch's output (vyre_native) or a plain storage buffer with
COPY_SRC (wgpu-py, raw C); nothing runs on the GPU in the timed part but the copy.
Each target returns None, so the bytes it made are freed inside the timer, as
the raw-C floor frees its fresh destination.
"""

from __future__ import annotations

import numpy as np
import pytest
from harness import BIG_READ, SMALL_READ, record_python, run_floor

SIZES = {"4KiB": SMALL_READ, "64MiB": BIG_READ}
WHICH = {"4KiB": 0, "64MiB": 1}


@pytest.fixture(scope="module")
def vn_sources(vnx):
    """A replayed recording per size whose output 0 is the buffer read back."""
    recs = {}
    for name, nbytes in SIZES.items():
        out = vnx.dev.alloc(nbytes)
        rec = vnx.prog.prerecord_persistent_dispatch([vnx.a], [out], workgroups=(1, 1, 1))
        rec.replay()
        recs[name] = rec
    vnx.dev.wait_idle()
    return recs


@pytest.fixture(scope="module")
def wg_sources(wgx):
    return {name: wgx.device.create_buffer(size=nbytes, usage=wgx.usage) for name, nbytes in SIZES.items()}


def _rounds(rounds, size):
    return rounds.big_read if size == "64MiB" else rounds.small_read


def _c_rounds(rounds, size):
    # (rounds, ops per round): 64 MiB reads are long enough to time one per round
    return (rounds.big_read, 1) if size == "64MiB" else (rounds.c_small_rounds, rounds.c_small_ops)


def _warmup(size):
    return 1 if size == "64MiB" else 8


def _bench_read(benchmark, rounds, size, way, operation, target):
    """``target`` (one read of ``size``) a round, in the row's group."""
    benchmark.group = operation
    benchmark.pedantic(target, rounds=_rounds(rounds, size), warmup_rounds=_warmup(size))
    record_python(benchmark, way, operation, nbytes=SIZES[size])


def _floor_read(benchmark, cfloor, rounds, size, operation, mode):
    """The raw-C floor_read of ``size`` in ``mode`` (see floor.c), in the row's group."""
    benchmark.group = operation
    lib, ctx, which = cfloor.lib, cfloor.ctx, WHICH[size]
    r, ops = _c_rounds(rounds, size)

    def read(n, samples):  # floor_read's mode comes after n
        return lib.floor_read(ctx, which, n, mode, samples)

    run_floor(benchmark, cfloor, operation, read, ops, r, nbytes=SIZES[size])


# ---- 6. read_output: into new host memory ------------------------------------------------


@pytest.mark.parametrize("size", list(SIZES))
def test_read_output_vyre_native(benchmark, vnx, vn_sources, rounds, size):
    rec = vn_sources[size]

    def target():
        rec.read_output(0)

    _bench_read(benchmark, rounds, size, "vyre_native", f"read_output_{size}", target)


@pytest.mark.parametrize("size", list(SIZES))
def test_read_output_wgpu_py(benchmark, wgx, wg_sources, rounds, size):
    """queue.read_buffer: a new MAP_READ buffer, copy, submit, map, copy out."""
    buf, queue = wg_sources[size], wgx.queue

    def target():
        queue.read_buffer(buf)

    _bench_read(benchmark, rounds, size, "wgpu-py", f"read_output_{size}", target)


@pytest.mark.parametrize("size", list(SIZES))
def test_read_output_raw_c(benchmark, cfloor, rounds, size):
    """Reused staging buffer, a fresh malloc'ed destination freed after each copy."""
    _floor_read(benchmark, cfloor, rounds, size, f"read_output_{size}", 0)


# ---- 7. read_output_into: into a reused numpy array ------------------------------------------


@pytest.mark.parametrize("size", list(SIZES))
def test_read_output_into_vyre_native(benchmark, vnx, vn_sources, rounds, size):
    rec = vn_sources[size]
    arr = np.ones(SIZES[size] // 4, dtype=np.float32)  # pages touched before timing

    def target():
        rec.read_output_into(0, arr)

    _bench_read(benchmark, rounds, size, "vyre_native", f"read_output_into_{size}", target)


@pytest.mark.parametrize("size", list(SIZES))
def test_read_output_into_wgpu_py(benchmark, wgx, wg_sources, rounds, size):
    """wgpu-py has no read-into: read_buffer, then one copy into the reused array."""
    buf, queue = wg_sources[size], wgx.queue
    arr = np.ones(SIZES[size] // 4, dtype=np.float32)
    dst = memoryview(arr).cast("B")

    def target():
        dst[:] = queue.read_buffer(buf)

    _bench_read(benchmark, rounds, size, "wgpu-py", f"read_output_into_{size}", target)


@pytest.mark.parametrize("size", list(SIZES))
def test_read_output_into_raw_c(benchmark, cfloor, rounds, size):
    """Reused staging buffer and reused destination."""
    _floor_read(benchmark, cfloor, rounds, size, f"read_output_into_{size}", 1)


# ---- 6b. typed 64 MiB reads: copy=False (the mapped staging memory) vs copy=True ---------
#
# Time from the call to a usable float32 array, and to its sum (reading every byte once).
# The zero-copy array is dropped inside the timer, which unpins and unmaps its staging
# buffer, as the floor unmaps. Every row's raw-C way is the same floor: staging copy +
# map + memcpy into a reused host buffer (+ unmap), and in the _sum rows then the float32
# sum of the copy in C (eight partial sums), so each floor does the row's work;
# typed_map_64MiB is the floor's staging copy + map alone, with no host copy (what a
# zero-copy read cannot go below).

TYPED = {
    "zero_copy_64MiB": (False, False),
    "zero_copy_sum_64MiB": (False, True),
    "typed_copy_64MiB": (True, False),
    "typed_copy_sum_64MiB": (True, True),
}


@pytest.mark.parametrize("op", list(TYPED))
def test_typed_read_vyre_native(benchmark, vnx, vn_sources, rounds, op):
    rec = vn_sources["64MiB"]
    copy, then_sum = TYPED[op]

    def target():
        arr = rec.read_output(0, np.float32, copy=copy)
        if then_sum:
            arr.sum()

    _bench_read(benchmark, rounds, "64MiB", "vyre_native", f"read_{op}", target)


@pytest.fixture(scope="module")
def wg_staging(wgx):
    import wgpu

    return wgx.device.create_buffer(
        size=BIG_READ, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST
    )


@pytest.mark.parametrize("op", list(TYPED))
def test_typed_read_wgpu_py(benchmark, wgx, wg_sources, wg_staging, rounds, op):
    """copy=False: a copy into a reused MAP_READ buffer, map_sync, read_mapped(copy=False),
    unmap after; copy=True: queue.read_buffer (a copy of its own) as a numpy array."""
    src, device, queue = wg_sources["64MiB"], wgx.device, wgx.queue
    copy, then_sum = TYPED[op]

    def target():
        if copy:
            arr = np.frombuffer(queue.read_buffer(src), np.float32)
            if then_sum:
                arr.sum()
            return
        enc = device.create_command_encoder()
        enc.copy_buffer_to_buffer(src, 0, wg_staging, 0, BIG_READ)
        queue.submit([enc.finish()])
        wg_staging.map_sync("READ")
        view = wg_staging.read_mapped(copy=False)
        arr = np.frombuffer(view, np.float32)
        if then_sum:
            arr.sum()
        del arr
        view.release()
        wg_staging.unmap()

    _bench_read(benchmark, rounds, "64MiB", "wgpu-py", f"read_{op}", target)


@pytest.mark.parametrize("op", [*TYPED, "typed_map_64MiB"])
def test_typed_read_raw_c(benchmark, cfloor, rounds, op):
    """Reused staging buffer; memcpy into a reused destination (mode 1), or none (mode 2);
    + 4: then the float32 sum of what was read (the _sum rows)."""
    mode = (2 if op == "typed_map_64MiB" else 1) + (4 if op.endswith("_sum_64MiB") else 0)
    _floor_read(benchmark, cfloor, rounds, "64MiB", f"read_{op}", mode)
