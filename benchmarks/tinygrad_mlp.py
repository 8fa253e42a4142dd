"""The tinygrad workload the tinygrad benchmark times and scripts/tinygrad_kernels.py
lists kernel by kernel: a 784-128-10 MLP training step (batch 64, SGD, sparse
categorical cross-entropy), defined once so the two cannot drift apart."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from tinygrad import Tensor
from tinygrad.helpers import Context
from tinygrad.nn.optim import SGD


def mlp_training_step(device: str) -> tuple[Tensor, Tensor, Callable[[Tensor, Tensor], Tensor]]:
    """``(x, y, step)`` on tinygrad ``device``: a batch, its labels, and one training step
    (not JIT-ed: wrap it in TinyJit to replay it) that returns the realized loss."""
    rng = np.random.default_rng(0)
    l1 = Tensor(rng.standard_normal((784, 128), np.float32) / 28, device=device)
    l2 = Tensor(rng.standard_normal((128, 10), np.float32) / 11.3, device=device)
    opt = SGD([l1, l2], lr=0.01)
    x = Tensor(rng.standard_normal((64, 784), np.float32), device=device).realize()
    y = Tensor(rng.integers(0, 10, 64).astype(np.int32), device=device).realize()

    def step(x: Tensor, y: Tensor) -> Tensor:
        with Context(TRAINING=1):
            opt.zero_grad()
            loss = (x @ l1).relu().matmul(l2).sparse_categorical_crossentropy(y).backward()
            opt.step()
            return loss.realize()

    return x, y, step
