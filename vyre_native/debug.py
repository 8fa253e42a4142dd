"""Introspection for tests and leak hunting: counts of live native objects.

Functions only: the cffi library and its types stay private here (``_lib``, ``_ffi``),
so ``vn.debug`` hands no caller the C entry points (test control among them) or raw
pointers; what it imports is private too. No ``from __future__ import annotations``
either: it would leave a public ``annotations`` name behind.
"""

from ._lib import ffi as _ffi
from ._lib import introspect as _introspect
from ._lib import lib as _lib
from ._marshal import to_seconds as _to_seconds
from ._marshal import wrong_type as _wrong_type
from .device import Device as _Device

__all__ = ["fill_wgsl", "free_kept_host_memory", "kept_host_bytes", "live_objects", "queued_write_bytes"]

#: the most seconds ``live_objects`` waits: a test's wait, not a timeout for ever
_MAX_WAIT = 3600.0

_FIELDS = tuple(name for name, _ in _ffi.typeof("vn_live_counts").fields)


def live_objects(wait: float = 10.0) -> dict[str, int]:
    """Native objects alive now, by kind. One C call.

    ``bind_groups`` counts references the C layer holds (a cached group used by a
    live recording counts twice); ``staging_buffers`` the readback buffers, those kept for
    reuse and those in use (pinned by a zero-copy array included); ``mappings`` the
    zero-copy reads (``copy=False``) whose arrays are still alive; ``host_blocks`` the host
    memory of typed reads of 1 MiB or more, held by their arrays or kept for reuse
    (``kept_host_bytes``). All return to their earlier values when what made them is released.
    A device released while its work still ran is freed once that work finishes
    (releases never wait for the GPU); this call waits up to ``wait`` seconds for such
    work first, so that a leak test sees the device go. ``wait`` is a number of seconds
    from 0 to 3600 (an hour); None, no limit elsewhere, is refused here.
    """
    # None, "no limit" elsewhere, is refused: a device lost for good is never freed.
    seconds = _to_seconds(wait, "live_objects wait", most=_MAX_WAIT)
    io = _introspect(_lib.VN_INTROSPECT_LIVE_COUNTS, wait_s=seconds)
    counts = io.live  # a view into io's memory (cffi keeps no reference to io): io stays alive
    return {name: int(getattr(counts, name)) for name in _FIELDS}


def queued_write_bytes(device: _Device) -> int:
    """Bytes of ``Buffer.write`` queued on ``device`` and not yet sent to the GPU by a
    submit; wgpu holds a staging copy of each until that submit's work completes.

    The C layer keeps it bounded: a write that brings it to 64 MiB sends it (an empty
    submit) where the queue can take one at once, and on a CPU adapter whose queue is
    busy a write that would bring it to 128 MiB first waits for the queue. So after any
    write it is under 128 MiB, or that one write's own size. One C call.
    """
    if not isinstance(device, _Device):
        raise _wrong_type("queued_write_bytes device", device, "a vn.Device", "pass the Device the writes went to.")
    return int(_introspect(_lib.VN_INTROSPECT_QUEUED_WRITE_BYTES, device=device._live()).queued_write_bytes)


def kept_host_bytes() -> int:
    """Bytes of host memory kept for the arrays of later copying typed reads: a read's new
    array of 1 MiB or more (``Buffer.read(dtype)``, ``read_output(i, dtype)``,
    ``PendingRead.result(dtype)``) reuses the memory of one that is gone, so its copy
    does not fault in fresh pages. At most 256 MiB (``VN_HOST_BLOCKS_KEPT_BYTES``; the
    oldest is freed first), never memory an array still uses. One C call."""
    return int(_introspect(_lib.VN_INTROSPECT_HOST_BLOCKS_KEPT_BYTES).host_blocks_kept_bytes)


def free_kept_host_memory() -> None:
    """Free the host memory ``kept_host_bytes`` counts (back to the system allocator),
    as after a phase of large reads that will not come again. Later reads work as before
    and keep memory again. One C call."""
    _lib.vn_host_blocks_free_kept()


def fill_wgsl() -> str:
    """The WGSL of the built-in zero fill that clears outputs inside the compute pass.

    Entry points ``fill_words`` (``array<u32>`` at ``@binding(0)``) and ``fill_quads``
    (``array<vec4<u32>>`` at ``@binding(1)``, for sizes that are multiples of 16), both
    ``@workgroup_size(256)``; the benchmarks' raw-C floor dispatches the same kernel.
    """
    return str(_ffi.string(_introspect(_lib.VN_INTROSPECT_FILL_WGSL).fill_wgsl).decode("ascii"))
