"""multiprocessing pools beside a live device (tests/test_fork.py); argv: the start
method. The workers' functions are this module's: spawned workers import it again by name
(multiprocessing does that for a `python -m` main module; tests/ is on their path)."""

from __future__ import annotations

import multiprocessing
import sys
from typing import Any

import numpy as np
from support.childlib import failure, outcome, report

import vyre_native as vn

inherited: vn.Buffer | None = None  # the parent's buffer, which fork workers inherit


def square(v: int) -> int:
    return v * v


def use_inherited(_: int) -> dict[str, Any]:
    assert inherited is not None
    buf = inherited
    return outcome(lambda: buf.read())


def own_device(v: int) -> Any:
    try:
        mine = vn.Device()
    except vn.ForkedError as err:  # a driver that cannot start again in a forked child
        return failure(err)
    return np.frombuffer(mine.upload(np.full(4, v, np.float32)).read(), np.float32).tolist()


def main(method: str) -> None:
    global inherited
    dev = vn.Device()
    inherited = dev.upload(np.arange(4, dtype=np.float32))
    ctx = multiprocessing.get_context(method)
    out: dict[str, Any] = {"adapter_type": dev.info["adapter_type"]}
    with ctx.Pool(2) as pool:
        out["squares"] = pool.map(square, range(8))
        if method == "fork":
            out["inherited"] = pool.map(use_inherited, range(2))
        out["own"] = pool.map(own_device, range(2))
    out["parent"] = np.frombuffer(inherited.read(), np.float32).tolist()
    report(out)


if __name__ == "__main__":
    main(sys.argv[1])
