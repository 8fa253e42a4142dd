"""Each kernel of one tinygrad MLP training step (784-128-10, batch 64, the benchmark's
step) on one tinygrad device, as tinygrad's DEBUG=2 lists it: its name (the launch shape
tinygrad's optimizer chose) and its time, without the JIT so every kernel is timed alone.
Used to compare the kernels tinygrad generates for DEV=VN (WGSL, through naga) with those
it generates for its own devices on the same GPU.

    python scripts/tinygrad_kernels.py VN     # or CUDA, CPU, WEBGPU
"""

from __future__ import annotations

import sys

import numpy as np
from tinygrad import Device, Tensor
from tinygrad.helpers import Context
from tinygrad.nn.optim import SGD

import vyre_native.tinygrad  # noqa: F401 - registers DEV=VN without the .pth hook


def main(device: str) -> None:
    Device[device]
    rng = np.random.default_rng(0)
    l1 = Tensor(rng.standard_normal((784, 128), np.float32) / 28, device=device)
    l2 = Tensor(rng.standard_normal((128, 10), np.float32) / 11.3, device=device)
    opt = SGD([l1, l2], lr=0.01)
    x = Tensor(rng.standard_normal((64, 784), np.float32), device=device).realize()
    y = Tensor(rng.integers(0, 10, 64).astype(np.int32), device=device).realize()

    def step() -> None:
        with Context(TRAINING=1):
            opt.zero_grad()
            (x @ l1).relu().matmul(l2).sparse_categorical_crossentropy(y).backward()
            opt.step()
            Tensor.realize(l1, l2)

    step()  # compiles every kernel
    print(f"--- {device}: one step, each kernel timed alone (DEBUG=2)", flush=True)
    with Context(DEBUG=2):
        step()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "VN")
