"""Byte-exact transfers: what a partial 4-byte word costs against whole words, each to
completion (the call, then ``wait_idle``). vyre_native only: wgpu-py and raw C have no
unaligned write or copy to compare with (WebGPU's need whole words), so each partial row
has its whole-word row beside it in the same group.

- write: 4 bytes at offset 4 (one ``wgpuQueueWriteBuffer``) against 3 bytes at offset 5
  (a merge: one submit of two word copies and a one-word dispatch); 1 MiB at offset 0
  against 1 MiB at offset 1 (whole words plus a merged head and tail).
- copy: 1 MiB between buffers at offsets 0 -> 0 (one GPU copy), 1 -> 1 (the same plus a
  merged head and tail) and 1 -> 2 (every word through the temporary buffer, shifted);
  64 MiB at 0 -> 0 and 1 -> 2.
- read: 4 bytes at offset 4 against 3 bytes at offset 5 (the enclosing word, 2 skipped).

The 64 MiB copies have raw-C floors in their group: one CopyBufferToBuffer (aligned),
and for the shifted copy, which no CopyBufferToBuffer does, the best kernel of the same
shape (floor.c's SHIFT_FLOOR_WGSL: one vec4 of words an invocation, made once, nothing
per call but the dispatch), each with its submit and wait.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from harness import BIG_READ, record_python, run_floor

MIB = 1 << 20
MIB_SIZES = {"1MiB": MIB, "64MiB": BIG_READ}


@pytest.fixture(scope="module")
def bufs(vnx: Any) -> Any:
    dev = vnx.dev
    return {
        "small": dev.alloc(64),
        "src": dev.upload(np.arange(MIB + 8, dtype=np.uint8)),
        "dst": dev.alloc(MIB + 8),
        "big_src": dev.alloc(BIG_READ + 8),
        "big_dst": dev.alloc(BIG_READ + 8),
    }


@pytest.mark.parametrize(("offset", "nbytes"), [(4, 4), (5, 3)], ids=["word", "partial"])
def test_write_small(benchmark: Any, vnx: Any, rounds: Any, bufs: Any, offset: int, nbytes: int) -> None:
    benchmark.group = "write_small_bytes"
    data, buf = bytes(range(nbytes)), bufs["small"]

    def target() -> None:
        buf.write(data, offset=offset)
        vnx.dev.wait_idle()

    benchmark.pedantic(target, rounds=rounds.small_read, iterations=1, warmup_rounds=8)
    assert buf.view(offset, nbytes).read() == data
    record_python(benchmark, "vyre_native", f"write_{nbytes}B_at_{offset}", nbytes=nbytes)


@pytest.mark.parametrize("offset", [0, 1], ids=["aligned", "unaligned"])
def test_write_1MiB(benchmark: Any, vnx: Any, rounds: Any, bufs: Any, offset: int) -> None:
    benchmark.group = "write_1MiB"
    data, buf = np.full(MIB, 7, np.uint8), bufs["dst"]

    def target() -> None:
        buf.write(data, offset=offset)
        vnx.dev.wait_idle()

    benchmark.pedantic(target, rounds=max(rounds.big_read, 20), iterations=1, warmup_rounds=2)
    record_python(benchmark, "vyre_native", f"write_1MiB_at_{offset}", nbytes=MIB)


def _bench_copy(
    benchmark: Any,
    vnx: Any,
    bufs: tuple[Any, Any],
    size: str,
    offsets: tuple[int, int],
    rounds: int,
    warmup: int,
) -> None:
    """Device.copy of ``size`` (its name in MIB_SIZES) between ``bufs`` at ``offsets``
    (source, destination), then wait_idle, a round."""
    benchmark.group = f"copy_{size}"
    nbytes, (src, dst), (src_offset, dst_offset) = MIB_SIZES[size], bufs, offsets

    def target() -> None:
        vnx.dev.copy(src, dst, nbytes, src_offset, dst_offset)
        vnx.dev.wait_idle()

    benchmark.pedantic(target, rounds=rounds, iterations=1, warmup_rounds=warmup)
    record_python(benchmark, "vyre_native", f"copy_{size}_{src_offset}_to_{dst_offset}", nbytes=nbytes)


@pytest.mark.parametrize(
    ("src_offset", "dst_offset"), [(0, 0), (1, 1), (1, 2)], ids=["aligned", "same_shift", "shifted"]
)
def test_copy_1MiB(
    benchmark: Any, vnx: Any, rounds: Any, bufs: Any, src_offset: int, dst_offset: int
) -> None:
    src, dst = bufs["src"], bufs["dst"]
    _bench_copy(benchmark, vnx, (src, dst), "1MiB", (src_offset, dst_offset), max(rounds.big_read, 20), 2)
    want = np.arange(MIB + 8, dtype=np.uint8)[src_offset : src_offset + MIB]
    assert np.array_equal(dst.view(dst_offset, MIB).read(np.uint8), want)


@pytest.mark.parametrize(("src_offset", "dst_offset"), [(0, 0), (1, 2)], ids=["aligned", "shifted"])
def test_copy_64MiB(
    benchmark: Any, vnx: Any, rounds: Any, bufs: Any, src_offset: int, dst_offset: int
) -> None:
    big = bufs["big_src"], bufs["big_dst"]
    _bench_copy(benchmark, vnx, big, "64MiB", (src_offset, dst_offset), rounds.big_read, 1)


@pytest.mark.parametrize("shifted", [0, 1], ids=["aligned", "shifted"])
def test_copy_64MiB_raw_c(benchmark: Any, cfloor: Any, rounds: Any, shifted: int) -> None:
    benchmark.group = "copy_64MiB"
    operation = f"copy_64MiB_{'1_to_2' if shifted else '0_to_0'}"
    call = cfloor.call("copy", shifted, BIG_READ)
    run_floor(benchmark, cfloor, operation, call, max(rounds.big_read // 2, 2), 2, nbytes=BIG_READ)


@pytest.mark.parametrize(("offset", "nbytes"), [(4, 4), (5, 3)], ids=["word", "partial"])
def test_read_small(benchmark: Any, rounds: Any, bufs: Any, offset: int, nbytes: int) -> None:
    benchmark.group = "read_small_bytes"
    view = bufs["small"].view(offset, nbytes)
    benchmark.pedantic(view.read, rounds=rounds.small_read, iterations=1, warmup_rounds=8)
    record_python(benchmark, "vyre_native", f"read_{nbytes}B_at_{offset}", nbytes=nbytes)
