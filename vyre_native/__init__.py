"""vyre_native: record, replay and read back WebGPU compute dispatches, hot path in C.

    import numpy as np, vyre_native as vn
    dev = vn.Device()
    prog = dev.compile(WGSL, entry_point="main")
    rec = prog.prerecord_persistent_dispatch(inputs=[a], outputs=[o], workgroups=(16, 1, 1))
    rec.replay(); out = rec.read_output(0)

See the documentation (docs/, built by scripts/docs.sh) for the whole API and the error model.
"""

from __future__ import annotations

from . import debug, interop, worker
from ._version import __version__
from .buffer import Buffer, BufferUsage, BufferView
from .device import Device, enumerate_adapters
from .dispatch import PrerecordedDispatch
from .errors import (
    AlreadySubmittedError,
    BindingError,
    DeviceLostError,
    ForkedError,
    InternalError,
    InvalidArgumentError,
    LibraryError,
    NotPicklableError,
    NotSubmittedError,
    OutOfMemoryError,
    OutputIndexError,
    ReentryError,
    ReleasedError,
    ShaderError,
    UnsupportedError,
    ValidationError,
    VyreError,
    WaitTimeoutError,
    WrongTypeError,
)
from .pipeline import Pipeline
from .readback import MappedStaging, PendingRead
from .reflect import Binding
from .replay import Recording
from .sequence import Sequence
from .submission import Submission

__all__ = [
    "AlreadySubmittedError",
    "Binding",
    "BindingError",
    "Buffer",
    "BufferUsage",
    "BufferView",
    "Device",
    "DeviceLostError",
    "ForkedError",
    "InternalError",
    "InvalidArgumentError",
    "LibraryError",
    "MappedStaging",
    "NotPicklableError",
    "NotSubmittedError",
    "OutOfMemoryError",
    "OutputIndexError",
    "PendingRead",
    "Pipeline",
    "PrerecordedDispatch",
    "Recording",
    "ReentryError",
    "ReleasedError",
    "Sequence",
    "ShaderError",
    "Submission",
    "UnsupportedError",
    "ValidationError",
    "VyreError",
    "WaitTimeoutError",
    "WrongTypeError",
    "__version__",
    "debug",
    "enumerate_adapters",
    "interop",
    "library_version",
    "worker",
]


def library_version() -> tuple[str, str]:
    """(loaded wgpu-native version, version compiled against), as "a.b.c.d" strings.

    Loads wgpu-native if no Device has yet (so it answers before the first Device);
    a missing library or one of another version raises LibraryError with a Fix.
    """
    from ._lib import lib, load_library

    load_library()

    def text(v: int) -> str:
        return ".".join(str((v >> s) & 0xFF) for s in (24, 16, 8, 0))

    return text(lib.vn_library_version()), text(lib.vn_expected_version())
