"""Introspection for tests and leak hunting: counts of live native objects."""

from __future__ import annotations

from ._lib import ffi, lib

__all__ = ["live_objects"]

_FIELDS = (
    "devices",
    "buffers",
    "shaders",
    "pipelines",
    "dispatches",
    "bind_groups",
    "staging_buffers",
    "recordings",
    "sequences",
    "submissions",
    "pending_reads",
)


def live_objects(wait: float = 10.0) -> dict[str, int]:
    """Native objects alive now, by kind. One C call.

    ``bind_groups`` counts references the C layer holds (a cached group used by a
    live recording counts twice); ``staging_buffers`` the readback buffers kept for
    reuse. All return to their earlier values when what made them is released. A
    device released while its work still ran is freed once that work finishes
    (releases never wait for the GPU); this call waits up to ``wait`` seconds for such
    work first, so that a leak test sees the device go.
    """
    counts = ffi.new("vn_live_counts *")
    lib.vn_debug_live_counts(counts, float(wait))
    return {name: int(getattr(counts, name)) for name in _FIELDS}
