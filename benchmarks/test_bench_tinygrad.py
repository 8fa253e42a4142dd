"""tinygrad on vyre_native (DEV=VN) against tinygrad's own devices, in one run.

Rows (each skipped with its reason where tinygrad, or that device, is missing):
- ``tinygrad_mlp_step``: a TinyJit training step of a 784-128-10 MLP (batch 64, SGD,
  sparse categorical cross-entropy), from the call to the loss on the host: the VN device
  replays the JIT's kernels as one vn.Sequence; tinygrad's CPU device runs them as
  compiled C; CUDA (where present) replays a CUDA graph.
- ``tinygrad_jit_1000_kernels``: one JIT call of 1000 dependent elementwise kernels, to
  the device being idle: tinygrad's own Python per call plus the device's launch cost.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from harness import record_python

tinygrad = pytest.importorskip(
    "tinygrad", reason='tinygrad is not installed: pip install "vyre_native[tinygrad]"'
)

from tinygrad import Device, Tensor, TinyJit
from tinygrad.helpers import Context
from tinygrad.nn.optim import SGD

import vyre_native.tinygrad  # noqa: F401  (registers DEV=VN without the .pth hook)

DEVICES = ["VN", "CPU", "CUDA"]


def _open(name: str) -> Any:
    try:
        dev = Device[name]
        (Tensor([1.0], device=name) + 1).realize()
    except Exception as err:  # noqa: BLE001 - any reason a device cannot run is a skip
        pytest.skip(f"tinygrad device {name} is unavailable here: {type(err).__name__}: {err}"[:300])
    return dev


def _rounds(rounds: Any) -> int:
    return max(10, rounds.burst * 5)


@pytest.mark.benchmark(group="tinygrad_mlp_step")
@pytest.mark.parametrize("device", DEVICES)
def test_tinygrad_mlp_step(benchmark, rounds, device):  # type: ignore[no-untyped-def]
    dev = _open(device)
    rng = np.random.default_rng(0)
    l1 = Tensor(rng.standard_normal((784, 128), np.float32) / 28, device=device)
    l2 = Tensor(rng.standard_normal((128, 10), np.float32) / 11.3, device=device)
    opt = SGD([l1, l2], lr=0.01)
    x = Tensor(rng.standard_normal((64, 784), np.float32), device=device).realize()
    y = Tensor(rng.integers(0, 10, 64).astype(np.int32), device=device).realize()

    @TinyJit
    def step(x: Tensor, y: Tensor) -> Tensor:
        with Context(TRAINING=1):
            opt.zero_grad()
            loss = (x @ l1).relu().matmul(l2).sparse_categorical_crossentropy(y).backward()
            opt.step()
            return loss.realize()

    for _ in range(4):  # run, capture, then replays
        step(x, y)
    dev.synchronize()

    def target() -> None:
        step(x, y)
        dev.synchronize()

    benchmark.pedantic(target, rounds=_rounds(rounds), warmup_rounds=2)
    record_python(benchmark, f"tinygrad {device}", "tinygrad_mlp_step")


@pytest.mark.benchmark(group="tinygrad_jit_1000_kernels")
@pytest.mark.parametrize("device", DEVICES)
def test_tinygrad_jit_1000_kernels(benchmark, rounds, device):  # type: ignore[no-untyped-def]
    dev = _open(device)
    x = Tensor(np.zeros(256, np.float32), device=device).realize()

    @TinyJit
    def chain(x: Tensor) -> Tensor:
        for _ in range(1000):
            x = (x + 1).contiguous()
        return x.realize()

    for _ in range(3):
        out = chain(x)
    assert out.numpy()[0] == 1000
    dev.synchronize()

    def target() -> None:
        chain(x)
        dev.synchronize()

    benchmark.pedantic(target, rounds=_rounds(rounds), warmup_rounds=1)
    record_python(benchmark, f"tinygrad {device}", "tinygrad_jit_1000_kernels")
