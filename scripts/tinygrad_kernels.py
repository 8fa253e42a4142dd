"""Each kernel of one tinygrad training step (one that benchmarks/test_bench_tinygrad.py
times: benchmarks/tinygrad_steps.py) on one tinygrad device, as tinygrad's DEBUG=2 lists
it: its name (the launch shape tinygrad's optimizer chose) and its time, without the JIT
so every kernel is timed alone. Used to compare the kernels tinygrad generates for
DEV=VN (WGSL, through naga) with those it generates for its own devices on one GPU.

    python scripts/tinygrad_kernels.py VN [mlp_step]   # or CUDA, CPU, WEBGPU; linear_step, conv_step
"""

from __future__ import annotations

import pathlib
import sys

from tinygrad import Device
from tinygrad.helpers import Context

import vyre_native.tinygrad  # noqa: F401 - registers DEV=VN without the .pth hook

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "benchmarks"))
from tinygrad_steps import STEPS  # noqa: E402 - the benchmark's own workloads


def main(device: str, name: str) -> None:
    Device[device]
    args, step = STEPS[name](device)
    step(*args)  # compiles every kernel
    print(f"--- {device}: one {name}, each kernel timed alone (DEBUG=2)", flush=True)
    with Context(DEBUG=2):
        step(*args)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "VN", sys.argv[2] if len(sys.argv) > 2 else "mlp_step")
