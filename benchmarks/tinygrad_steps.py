"""The tinygrad training steps the tinygrad benchmark times (and scripts/tinygrad_kernels.py
lists kernel by kernel), each defined once so the two cannot drift apart. Each maker takes a
tinygrad device name and returns ``(args, step)``: ``step(*args)`` runs one training step
(not JIT-ed: wrap it in TinyJit to replay it) and returns the realized loss.

- ``mlp_training_step``: the project's own 784-128-10 MLP (weights only, batch 64, SGD,
  sparse categorical cross-entropy, ``opt.step()``);
- ``linear_training_step``: the same shape written as tinygrad's examples write it, with
  ``nn.Linear`` layers (biases) and ``loss.realize(*opt.schedule_step())``;
- ``conv_training_step``: the model and step of tinygrad's ``examples/beautiful_mnist.py``
  (four convolutions, two batch norms, two max pools, a linear layer; Adam; a batch of 512
  drawn on the device each step), on synthetic data of MNIST's shape (no download).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from tinygrad import Tensor, nn
from tinygrad.helpers import Context
from tinygrad.nn.optim import SGD, Adam

Step = tuple[tuple[Tensor, ...], Callable[..., Tensor]]


def mlp_training_step(device: str) -> Step:
    rng = np.random.default_rng(0)
    l1 = Tensor(rng.standard_normal((784, 128), np.float32) / 28, device=device)
    l2 = Tensor(rng.standard_normal((128, 10), np.float32) / 11.3, device=device)
    opt = SGD([l1, l2], lr=0.01)
    x = Tensor(rng.standard_normal((64, 784), np.float32), device=device).realize()
    y = Tensor(rng.integers(0, 10, 64).astype(np.int32), device=device).realize()

    return (x, y), mlp_step(l1, l2, opt)


def mlp_step(l1: Tensor, l2: Tensor, opt: SGD) -> Callable[[Tensor, Tensor], Tensor]:
    """One training step of the MLP ``relu(x @ l1) @ l2`` by ``opt``: ``step(x, y)``
    returns the realized loss (tests/test_tinygrad.py trains it against tinygrad's CPU)."""

    def step(x: Tensor, y: Tensor) -> Tensor:
        with Context(TRAINING=1):
            opt.zero_grad()
            loss = (x @ l1).relu().matmul(l2).sparse_categorical_crossentropy(y).backward()
            opt.step()
            return loss.realize()

    return step


def _on(device: str, layers: list[Any]) -> list[Any]:
    """The layers' parameters moved to ``device`` (tinygrad makes them on its default)."""
    for p in nn.state.get_parameters(layers):
        p.replace(p.to(device).realize())
    return layers


def linear_training_step(device: str) -> Step:
    Tensor.manual_seed(0)
    layers = _on(device, [nn.Linear(784, 128), Tensor.relu, nn.Linear(128, 10)])
    opt = SGD(nn.state.get_parameters(layers), lr=0.01)
    rng = np.random.default_rng(0)
    x = Tensor(rng.standard_normal((64, 784), np.float32), device=device).realize()
    y = Tensor(rng.integers(0, 10, 64).astype(np.int32), device=device).realize()

    def step(x: Tensor, y: Tensor) -> Tensor:
        with Context(TRAINING=1):
            opt.zero_grad()
            loss = x.sequential(layers).sparse_categorical_crossentropy(y).backward()
            return loss.realize(*opt.schedule_step())

    return (x, y), step


def conv_training_step(device: str, samples: int = 4096, batch: int = 512) -> Step:
    Tensor.manual_seed(0)
    layers = _on(device, [
        nn.Conv2d(1, 32, 5), Tensor.relu, nn.Conv2d(32, 32, 5), Tensor.relu,
        nn.BatchNorm(32), Tensor.max_pool2d,
        nn.Conv2d(32, 64, 3), Tensor.relu, nn.Conv2d(64, 64, 3), Tensor.relu,
        nn.BatchNorm(64), Tensor.max_pool2d,
        lambda t: t.flatten(1), nn.Linear(576, 10),
    ])  # fmt: skip
    opt = Adam(nn.state.get_parameters(layers))
    rng = np.random.default_rng(0)
    images = Tensor(rng.random((samples, 1, 28, 28), np.float32), device=device).realize()
    labels = Tensor(rng.integers(0, 10, samples).astype(np.int32), device=device).realize()

    def step(images: Tensor, labels: Tensor) -> Tensor:
        with Context(TRAINING=1):
            opt.zero_grad()
            pick = Tensor.randint(batch, high=samples, device=device)
            loss = images[pick].sequential(layers).sparse_categorical_crossentropy(labels[pick]).backward()
            return loss.realize(*opt.schedule_step())

    return (images, labels), step


STEPS: dict[str, Callable[[str], Step]] = {
    "mlp_step": mlp_training_step,
    "linear_step": linear_training_step,
    "conv_step": conv_training_step,
}
