"""Shared fixtures: one device for the session, one of a test's own, and a record-replay-read helper.

What several files share besides (kernels, the child-process runner, the typed-error
assertion) is the tests/support/ package (tests/ is on sys.path: pyproject's pytest
options).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pytest

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")  # silences a harmless lavapipe warning

from support import resource_log
from support.kernels import DOUBLE

import vyre_native as vn


def pytest_report_header() -> str:
    """Which vyre_native the run tests (the checkout's editable install, or a wheel)."""
    return f"vyre_native {vn.__version__} from {os.path.dirname(vn.__file__)}"


if resource_log.PATH:

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logfinish(nodeid: str, location: object) -> None:
        resource_log.append(nodeid)


@pytest.fixture(scope="session")
def device() -> vn.Device:
    dev = vn.Device()
    yield dev
    dev.close()


@pytest.fixture(scope="module")
def double(device: vn.Device) -> vn.Pipeline:
    """support.kernels.DOUBLE (out[i] = inp[i] * 2) compiled on the session device, once
    per test module (so one module's bind-group cache counts are its own)."""
    return device.compile(DOUBLE)


@pytest.fixture()
def dev() -> Iterator[vn.Device]:
    """A device of the test's own (closed after it), so counts read on it (live objects,
    staging buffers) are the test's alone."""
    d = vn.Device()
    yield d
    d.close()


RunFn = Callable[..., list[np.ndarray]]


@pytest.fixture(scope="session")
def run() -> RunFn:
    """run(pipeline, inputs, outputs, params=None, workgroups=(1,1,1), dtype=np.float32)
    records, replays once, and returns every output read back as a numpy array."""

    def _run(
        pipeline: vn.Pipeline,
        inputs: Sequence[vn.Buffer],
        outputs: Sequence[vn.Buffer],
        params: vn.Buffer | None = None,
        workgroups: tuple[int, int, int] = (1, 1, 1),
        dtype: type = np.float32,
    ) -> list[np.ndarray]:
        rec = pipeline.prerecord_persistent_dispatch(inputs, outputs, params=params, workgroups=workgroups)
        rec.replay()
        return [np.frombuffer(rec.read_output(i), dtype=dtype) for i in range(rec.output_count)]

    return _run
