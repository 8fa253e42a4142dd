"""tinygrad's ``VN`` device over vyre_native's public API: renderer, allocator, program, graph.

tinygrad finds this module as ``tinygrad.runtime.ops_vn`` (see the package docstring) and
takes ``VNDevice`` from it.
"""

from __future__ import annotations

import math
import struct
import time
from collections import OrderedDict
from collections.abc import Sequence as SequenceABC
from typing import Any, ClassVar, cast

from tinygrad.device import Buffer, BufferSpec, Compiled, CompileError, LRUAllocator, TinyELF
from tinygrad.dtype import dtypes
from tinygrad.engine.jit import GraphRunner
from tinygrad.helpers import getenv, round_up
from tinygrad.renderer.wgsl import WGSLRenderer
from tinygrad.schedule import rangeify
from tinygrad.uop import Ops
from tinygrad.uop.ops import PatternMatcher, UOp, UPat

import vyre_native as vn

# Bounded caches: recordings per program, sequences per graph, uniforms per device. A
# miss costs one record() (bind groups still come from the pipeline's cache).
_RECORDINGS_PER_PROGRAM = 64
_SEQUENCES_PER_GRAPH = 8
_UNIFORMS_PER_DEVICE = 1024
#: whether kernels are compiled with loop bounding and with bounds checks (see VNProgram);
#: tinygrad's getenv. VN_BOUNDS_CHECKS=0 is memory-unsafe: a wrong index then reads or
#: writes outside its buffer (into another tensor), as on tinygrad's CUDA device.
LOOP_BOUNDING = bool(getenv("VN_LOOP_BOUNDING", 0))
BOUNDS_CHECKS = bool(getenv("VN_BOUNDS_CHECKS", 1))


def _u32(val: int) -> bytes:
    return struct.pack("<I", int(val) & 0xFFFFFFFF)


# ---------------------------------------------------------------- renderer


def _f16_bits(x: str) -> str:
    # naga has no bitcast between u32 and vec2<f16> (Tint has): pack2x16float gives the
    # same bits for every f16 value except NaNs, whose payload the f32 round trip may change.
    return f"pack2x16float(vec2<f32>(f32({x}), 0.0))"


# naga-compatible forms of the f16 bitcasts; everything else is tinygrad's WGSL renderer.
_vn_rewrite = PatternMatcher(
    [
        (
            UPat(
                Ops.BITCAST,
                dtype=dtypes.half,
                name="x",
                src=(UPat(dtype=(dtypes.short, dtypes.ushort, dtypes.uint32)),),
            ),
            lambda ctx, x: f"f16(unpack2x16float(bitcast<u32>({ctx[x.src[0]]}))[0])",
        ),
        (
            UPat(Ops.BITCAST, dtype=dtypes.ushort, name="x", src=(UPat(dtype=dtypes.half),)),
            lambda ctx, x: _f16_bits(ctx[x.src[0]]),
        ),
        (
            UPat(Ops.BITCAST, dtype=dtypes.short, name="x", src=(UPat(dtype=dtypes.half),)),
            lambda ctx, x: f"bitcast<i32>({_f16_bits(ctx[x.src[0]])})",
        ),
    ]
)


class VNRenderer(WGSLRenderer):
    """tinygrad's WGSL renderer, with naga's f16 bitcasts and the adapter's own limits
    (set per device by ``VNDevice``: a subclass whose class attributes are that device's)."""

    string_rewrite = _vn_rewrite + WGSLRenderer.string_rewrite
    limits: ClassVar[dict[str, Any]] = {}

    def __init__(self, target: Any) -> None:
        super().__init__(target)
        for name, value in self.limits.items():
            setattr(self, name, value)

    def __reduce__(self) -> tuple[Any, ...]:
        # tinygrad compiles in worker processes: the limits travel with the renderer
        return _rebuild_renderer, (self.target, dict(self.limits))

    def render_kernel(self, function_name: str, kernel: list[str], bufs: list[Any], uops: list[UOp],
                      prefix: Any = None) -> str:  # fmt: skip
        # tinygrad's WGSL declares every buffer read_write; which ones the kernel writes is
        # known only here (each buf's `mutable`). VNProgram reads this first line (see
        # _WRITES) to tell a buffer it may bind through a snapshot from one it must not.
        source = super().render_kernel(function_name, kernel, bufs, uops, prefix)
        written = " ".join(str(i + 1) for i, (_, (_, mutable)) in enumerate(bufs) if mutable)
        return f"{_WRITES}{written}\n{source}"


#: the first line VNRenderer gives a kernel: the bindings it writes, space-separated
_WRITES = "// vn: writes bindings "


def _written_bindings(source: str) -> set[int] | None:
    """The bindings a kernel from VNRenderer writes; None when the source does not say
    (then every read_write binding counts as written)."""
    first, _, _ = source.partition("\n")
    if not first.startswith(_WRITES):
        return None
    return {int(n) for n in first[len(_WRITES):].split()}


def _rebuild_renderer(target: Any, limits: dict[str, Any]) -> VNRenderer:
    return _renderer_for(limits)(target)


def _limits_of(dev: vn.Device) -> dict[str, Any]:
    limits = dev.limits
    invocations = limits["max_compute_invocations_per_workgroup"]
    return {
        "global_max": (limits["max_compute_workgroups_per_dimension"],) * 3,
        "local_max": tuple(min(limits[f"max_compute_workgroup_size_{d}"], invocations) for d in "xyz"),
        "shared_max": limits["max_compute_workgroup_storage_size"],
    }


def _renderer_for(limits: dict[str, Any]) -> type[VNRenderer]:
    # the same class name, so tinygrad's renderer selection (by class name) sees "VN"
    return type("VNRenderer", (VNRenderer,), {"limits": limits})


# ---------------------------------------------------------------- views

# tinygrad turns a contiguous slice of a realized buffer into a sub-buffer (a view at any
# element offset) on every device but WEBGPU and CL, which get a copy kernel instead. WebGPU
# binds a view only at a multiple of the adapter's storage offset alignment, so on VN a view
# is kept only where its byte offset is one (256, WebGPU's largest, before a device opens);
# elsewhere tinygrad takes the same copy path it takes on WEBGPU.
_ALIGNMENT: dict[str, int] = {}
_contiguous_view = UOp.contiguous_view


def _bindable_contiguous_view(self: UOp) -> tuple[UOp, int] | None:
    view = _contiguous_view(self)
    if view is None:
        return None
    devices = (self.device,) if isinstance(self.device, str) else (self.device or ())
    for name in devices:
        if name.split(":")[0] == "VN" and view[1] * view[0].element_size() % _ALIGNMENT.get(name, 256):
            return None
    return view


UOp.contiguous_view = _bindable_contiguous_view  # type: ignore[method-assign]


# ---------------------------------------------------------------- buffers


class VNBuf:
    """tinygrad's opaque buffer: ``nbytes`` at ``offset`` of one ``vn.Buffer`` (a base
    allocation, or a view into one: the memory planner's arenas, tinygrad's sub-buffers)."""

    __slots__ = ("_bound", "buffer", "data_end", "key", "nbytes", "offset")

    def __init__(self, buffer: vn.Buffer, offset: int, nbytes: int, data_end: int) -> None:
        # data_end: where the allocation's tinygrad bytes end (after it, the rounding to 4)
        self.buffer, self.offset, self.nbytes, self.data_end = buffer, offset, nbytes, data_end
        self.key = (buffer.allocation_identity, offset, nbytes)
        self._bound: vn.Buffer | vn.BufferView | None = None

    def bound(self) -> vn.Buffer | vn.BufferView:
        """What a kernel binds: the whole buffer, or a view padded to whole words (a view's
        offset must be a multiple of the storage offset alignment: vn's BindingError says so)."""
        if self._bound is None:
            whole = self.offset == 0 and round_up(self.nbytes, 4) >= self.buffer.byte_len
            end = min(round_up(self.offset + self.nbytes, 4), self.buffer.byte_len)
            self._bound = self.buffer if whole else self.buffer.view(self.offset, end - self.offset)
        return self._bound

    def bound_span(self) -> tuple[int, int]:
        """(offset, bytes) in ``buffer`` of what ``bound()`` binds."""
        view = self.bound()
        return (self.offset, view.nbytes) if isinstance(view, vn.BufferView) else (0, view.byte_len)

    def __repr__(self) -> str:
        return f"VNBuf({self.buffer!r}, offset={self.offset}, nbytes={self.nbytes})"


class VNAllocator(LRUAllocator["VNDevice"]):
    """Buffers of whole words (tinygrad's sizes rounded up to 4); views by offset; transfers
    of any byte range (partial words read, merged and written back)."""

    def _alloc(self, size: int, options: BufferSpec) -> VNBuf:
        if options.external_ptr is not None:
            raise RuntimeError("the VN device cannot wrap host memory (external_ptr)")
        return VNBuf(self.dev.vn.alloc(round_up(size, 4)), 0, size, size)

    def _free(self, opaque: VNBuf, options: BufferSpec) -> None:
        opaque.buffer.release()

    def _offset(self, buf: VNBuf, size: int, offset: int) -> VNBuf:
        return VNBuf(buf.buffer, buf.offset + offset, size, buf.data_end)

    def _words(self, buf: VNBuf) -> tuple[int, int]:
        start = buf.offset & ~3
        return start, min(round_up(buf.offset + buf.nbytes, 4), buf.buffer.byte_len)

    def _copyin(self, dest: VNBuf, src: memoryview) -> None:
        src = src.cast("B") if src.format != "B" or src.ndim != 1 else src
        start, end = self._words(dest)
        if start == dest.offset and end == dest.offset + dest.nbytes:
            dest.buffer.write(src, dest.offset)
            return
        if start == dest.offset and dest.offset + dest.nbytes == dest.data_end:
            # the rest of the last word is the allocation's rounding: nobody's bytes
            dest.buffer.write(bytes(src) + bytes(end - dest.offset - dest.nbytes), start)
            return
        # a partial word at either end: keep its other bytes (the read orders after the queue)
        words = bytearray(dest.buffer.view(start, end - start).read())
        head = dest.offset - start
        words[head : head + dest.nbytes] = src
        dest.buffer.write(words, start)

    def _copyout(self, dest: memoryview, src: VNBuf) -> None:
        dest = dest.cast("B") if dest.format != "B" or dest.ndim != 1 else dest
        start, end = self._words(src)
        if start == src.offset and end == src.offset + src.nbytes:
            (
                src.buffer
                if src.offset == 0 and end == src.buffer.byte_len
                else src.buffer.view(start, end - start)
            ).read_into(dest)
            return
        words = bytearray(end - start)
        src.buffer.view(start, end - start).read_into(words)
        dest[:] = words[src.offset - start : src.offset - start + src.nbytes]


# ---------------------------------------------------------------- programs


class VNProgram:
    """One kernel: its vn pipeline, and its recordings by what they bind (recorded once with
    ``clear_outputs=False``, replayed at every call with the same buffers, values and size)."""

    def __init__(self, dev: VNDevice, obj: TinyELF) -> None:
        self.dev, self.name = dev, obj.name
        source = obj.lib.decode()
        try:
            # tinygrad's renderer writes counted loops only (`for` over a range whose end is
            # a constant or a JIT variable), so they end, and loop bounding is only cost: it
            # halves the matmul's speed on an H200. Bounds checks stay: they cost nothing
            # measurable there, and an index tinygrad gets wrong stays a wrong value, not a
            # write into another tensor. VN_LOOP_BOUNDING=1 turns loop bounding back on;
            # VN_BOUNDS_CHECKS=0 turns bounds checks off (memory-unsafe, for measuring).
            self.pipeline = dev.vn.compile(
                source, entry_point=obj.name, loop_bounding=LOOP_BOUNDING, bounds_checks=BOUNDS_CHECKS
            )
        except vn.ShaderError as err:
            raise CompileError(str(err)) from err
        # tinygrad's WGSL binds INFINITY at 0, then the buffers, then one uniform per
        # variable; the entry point takes a handle only for the bindings it uses.
        self.slots = [(b.binding, b.is_output) for b in self.pipeline.bindings]
        written = _written_bindings(source)
        self.read_only = set() if written is None else {b for b, out in self.slots if out and b not in written}
        # a Recording, or a Sequence where a binding goes through a snapshot (which
        # holds its scratch buffers, as every step holds what it binds)
        self.recordings: OrderedDict[tuple[Any, ...], vn.Recording | vn.Sequence] = OrderedDict()

    def handles(
        self, bufs: tuple[VNBuf, ...], uniforms: SequenceABC[vn.Buffer | vn.BufferView]
    ) -> tuple[list[Any], list[Any], list[tuple[Any, vn.Buffer]]]:
        """(inputs, outputs, snapshots) in vn's positional order for these buffers and
        variable uniforms. tinygrad declares every buffer read_write, and WebGPU forbids
        writable bindings whose ranges overlap (``buf[4:8].assign(buf[0:4].contiguous())``
        binds the whole buffer and a view of it). A buffer the kernel only reads that
        overlaps another binding is bound as a snapshot instead: ``(view, scratch)`` pairs,
        each copied before the dispatch. Two overlapping buffers the kernel writes stay as
        they are: that is a race, and vn's BindingError says so."""
        inputs: list[Any] = []
        outputs: list[Any] = []
        snapshots: list[tuple[Any, vn.Buffer]] = []
        shared = self._overlapping(bufs)
        for binding, is_output in self.slots:
            if binding == 0:
                inputs.append(self.dev.infinity)
            elif binding <= len(bufs):
                view = bufs[binding - 1].bound()
                if binding in shared:
                    scratch = self.dev.vn.alloc(bufs[binding - 1].bound_span()[1])
                    snapshots.append((view, scratch))
                    view = scratch
                (outputs if is_output else inputs).append(view)
            else:
                inputs.append(uniforms[binding - 1 - len(bufs)])
        return inputs, outputs, snapshots

    def _overlapping(self, bufs: tuple[VNBuf, ...]) -> set[int]:
        """The read-only buffer bindings whose bytes overlap another binding's (the common
        case, no two bindings of one allocation, costs one set per call)."""
        if not self.read_only or len({b.buffer.allocation_identity for b in bufs}) == len(bufs):
            return set()
        spans = {}
        for binding, _ in self.slots:
            if 1 <= binding <= len(bufs):
                b = bufs[binding - 1]
                start, size = b.bound_span()
                spans[binding] = (b.buffer.allocation_identity, start, start + size)
        return {
            b for b in self.read_only if b in spans and any(
                o != b and spans[o][0] == spans[b][0] and spans[o][1] < spans[b][2] and spans[b][1] < spans[o][2]
                for o in spans
            )
        }  # fmt: skip

    def __call__(
        self,
        *bufs: VNBuf,
        global_size: tuple[int, int, int] = (1, 1, 1),
        local_size: tuple[int, int, int] = (1, 1, 1),
        vals: tuple[int, ...] = (),
        wait: bool = False,
        **kw: Any,
    ) -> float | None:
        uniforms = [self.dev.uniform(v) for v in vals]
        workgroups = tuple(int(g) for g in global_size)
        key = (tuple(b.key for b in bufs), tuple(u.allocation_identity for u in uniforms), workgroups)
        work = self.recordings.get(key)
        if work is None:
            inputs, outputs, snapshots = self.handles(bufs, uniforms)
            if snapshots:  # the copies and the dispatch in one submit
                work = self.dev.vn.sequence()
                for view, scratch in snapshots:
                    work.copy(view, scratch)
                work.add(self.pipeline, inputs, outputs, workgroups=workgroups, clear_outputs=False)
            else:
                work = self.pipeline.record(inputs, outputs, workgroups=workgroups, clear_outputs=False)
            self.recordings[key] = work
            if len(self.recordings) > _RECORDINGS_PER_PROGRAM:
                self.recordings.popitem(last=False)
        else:
            self.recordings.move_to_end(key)
        return self.dev.run(work, wait)


# ---------------------------------------------------------------- the JIT as one replay


class VNGraph(GraphRunner):
    """A TinyJit batch as one ``vn.Sequence``: one step per kernel, one ``replay()`` (one C
    call) per JIT call. Variables live in one uniform buffer the graph owns, one aligned
    slot per (kernel, variable), rewritten by one ``write`` when their values change. A
    sequence's steps cannot be rebound, so new input buffers or launch sizes pick another
    sequence from a small cache, built once per combination (its unchanged steps' bind
    groups come from the pipelines' caches)."""

    def __init__(self, linear: UOp, input_uops: tuple[UOp, ...] = ()) -> None:
        super().__init__(linear, input_uops)
        # the batch's own device: tinygrad's self.device drops the index ("VN" for VN:1)
        self.dev = cast(VNProgram, self.runtimes[0]).dev
        align = self.dev.vn.limits["min_uniform_buffer_offset_alignment"]
        slots = [(j, i) for j, (_, ast, _, _) in enumerate(self.calls) for i in range(len(ast.arg.vars))]
        self.slot_of = {s: k * align for k, s in enumerate(slots)}
        self.var_bytes = bytearray(max(1, len(slots)) * align)
        for j, (_, ast, _, dvars) in enumerate(self.calls):
            for i, v in enumerate(ast.arg.vars):
                self.var_bytes[self.slot_of[(j, i)] : self.slot_of[(j, i)] + 4] = _u32(dvars.get(v.expr, 0))
        self.var_buf = self.dev.vn.upload(bytes(self.var_bytes))
        self.steps: list[tuple[VNProgram, list[VNBuf], list[Any], tuple[int, ...]]] = []
        for j, ((_, ast, bufs, _), runtime) in enumerate(zip(self.calls, self.runtimes)):
            uniforms = [self.var_buf.view(self.slot_of[(j, i)], 4) for i in range(len(ast.arg.vars))]
            global_size, _ = ast.arg.launch_dims({v: 0 for v in self.vars})
            self.steps.append(
                (
                    cast(VNProgram, runtime),
                    [b._buf for b in bufs],
                    uniforms,
                    tuple(int(g) for g in global_size),
                )
            )
        self.sequences: OrderedDict[tuple[Any, ...], vn.Sequence] = OrderedDict()
        # the JIT inputs any step binds, each looked up once a call (tinygrad's UOp.buffer
        # is a property that walks the UOp), and where each one goes
        self.inputs = sorted({i for replace in self.uop_replace for _, i in replace})
        self.placed = [(j, pos, i) for j, replace in enumerate(self.uop_replace) for pos, i in replace]

    def _sequence(self, bufs: dict[int, VNBuf], dims: dict[int, tuple[int, ...]]) -> vn.Sequence:
        placed = {(j, pos): bufs[i] for j, pos, i in self.placed}
        seq = self.dev.vn.sequence()
        for j, (prog, step_bufs, uniforms, workgroups) in enumerate(self.steps):
            these = tuple(placed.get((j, p), b) for p, b in enumerate(step_bufs))
            inputs, outputs, snapshots = prog.handles(these, uniforms)
            for view, scratch in snapshots:  # the sequence holds its scratch buffers
                seq.copy(view, scratch)
            seq.add(prog.pipeline, inputs, outputs, workgroups=dims.get(j, workgroups), clear_outputs=False)
        return seq

    def __call__(
        self, input_uops: tuple[UOp, ...], var_vals: dict[str, int], wait: bool = False
    ) -> float | None:
        bufs = {i: cast(Buffer, input_uops[i].buffer)._buf for i in self.inputs}
        dims = (
            {j: tuple(int(g) for g in gl) for j, gl, _ in self.updated_launch_dims(var_vals)}
            if self.launch_dims_replace
            else {}
        )
        key = (tuple(b.key for b in bufs.values()), tuple(dims.values()))
        seq = self.sequences.get(key)
        if seq is None:
            seq = self.sequences[key] = self._sequence(bufs, dims)
            if len(self.sequences) > _SEQUENCES_PER_GRAPH:
                self.sequences.popitem(last=False)
        elif len(self.sequences) > 1:
            self.sequences.move_to_end(key)
        if self.var_vals_replace:
            new = bytearray(self.var_bytes)
            for j, i, v in self.updated_vars(var_vals):
                new[self.slot_of[(j, i)] : self.slot_of[(j, i)] + 4] = _u32(v)
            if new != self.var_bytes:
                self.var_buf.write(bytes(new))
                self.var_bytes = new
        return self.dev.run(seq, wait)


# ---------------------------------------------------------------- the device


def _device(name: str) -> Compiled:
    from tinygrad.device import Device

    return Device[name]


def _adapter_of(index: int) -> int | None:
    """The ``vn.Device(adapter=...)`` index of ``VN:index`` (None: vn's default).

    ``VN`` (``VN:0``) is vn's default adapter (the GPU a scheduler assigned, else the
    default). ``VN:n`` is the n-th after it, cycling, among the adapters of its type
    (``adapter_type``: discrete GPUs on a GPU host, the CPU adapter on lavapipe): on a host
    of two GPUs ``VN:1`` is the other GPU, on a host of one it is a second device on the
    same one, as ``CPU:1`` and ``WEBGPU:1`` are second devices of one adapter. So tinygrad's
    multi-device code (sharding, ``needs_second_gpu`` tests) runs on any host."""
    if index == 0:
        return None
    first = cast(VNDevice, _device("VN")).vn.info
    listing = vn.enumerate_adapters()
    same = [i for i, a in enumerate(listing) if a["adapter_type"] == first["adapter_type"]]
    here = next((k for k, i in enumerate(same) if first["uuid"] and listing[i]["uuid"] == first["uuid"]), None)
    if here is None:  # no identity to match: the first of its name
        here = next((k for k, i in enumerate(same) if listing[i]["name"] == first["name"]), 0)
    return same[(here + index) % len(same)] if same else None


class VNDevice(Compiled):
    """tinygrad's ``VN`` device: ``VN`` is vn's default adapter, ``VN:n`` the n-th adapter
    after it of its type, cycling (``_adapter_of``)."""

    def __init__(self, device: str) -> None:
        index = int(device.split(":")[1]) if ":" in device else 0
        adapter = _adapter_of(index)
        self.vn = vn.Device() if adapter is None else vn.Device(adapter=adapter)
        limits = self.vn.limits
        # tinygrad keys its buffers-per-kernel limit by device name; register ours
        rangeify.DEVICE_MAX_BUFS["VN"] = min(
            limits["max_storage_buffers_per_shader_stage"], limits["max_bindings_per_bind_group"] - 1
        )
        _ALIGNMENT[device] = limits["min_storage_buffer_offset_alignment"]
        self.infinity = self.vn.upload(struct.pack("<f", math.inf))
        self.uniforms: OrderedDict[int, vn.Buffer] = OrderedDict()
        f16 = "shader-f16" in self.vn.features
        super().__init__(
            device,
            VNAllocator(self),
            [_renderer_for(_limits_of(self.vn))],
            cast(Any, VNProgram),
            graph=VNGraph,
            arch="shader-f16" if f16 else None,
        )

    def uniform(self, val: int) -> vn.Buffer:
        """A uniform holding one 32-bit value: one buffer per value, kept (bounded)."""
        key = int(val) & 0xFFFFFFFF
        buf = self.uniforms.get(key)
        if buf is None:
            buf = self.uniforms[key] = self.vn.upload(_u32(key))
            if len(self.uniforms) > _UNIFORMS_PER_DEVICE:
                self.uniforms.popitem(last=False)  # recordings that bound it are keyed by its identity
        else:
            self.uniforms.move_to_end(key)
        return buf

    def run(self, work: vn.Recording | vn.Sequence, wait: bool) -> float | None:
        if not wait:
            work.replay()
            return None
        if self.vn.timestamps:
            ns = work.replay(timing=True).gpu_time_ns
            return None if ns is None else ns / 1e9
        start = time.perf_counter()
        work.replay().wait()
        return time.perf_counter() - start

    def synchronize(self) -> None:
        self.vn.wait_idle()


def _list_the_device() -> None:
    """``VN`` in tinygrad's lists of devices: ``Device._devices`` (read off the files of
    tinygrad/runtime, where this module is not) and ``ALL_DEVICES``, which
    ``Device.get_available_devices()`` walks. Appended last, so tinygrad's choice of a
    default device with no ``DEV`` set is VN only where no device of its own opens."""
    import tinygrad.device as tinygrad_device

    if "VN" not in tinygrad_device.Device._devices:
        tinygrad_device.Device._devices.append("VN")
    if "VN" not in tinygrad_device.ALL_DEVICES:
        tinygrad_device.ALL_DEVICES.append("VN")


_list_the_device()
