"""vn.Pipeline: a compiled compute entry point, its reflected bindings and bind-group cache."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._handles import Handle
from ._lib import check, ffi, lib
from .buffer import Buffer
from .dispatch import PrerecordedDispatch
from .errors import BindingError, InvalidArgumentError, ReleasedError, ShaderError, WrongTypeError
from .reflect import Binding, reflect
from .replay import Recording

if TYPE_CHECKING:
    from .device import Device

_KIND_CODES = {"storage_read": 0, "storage_read_write": 1, "uniform": 2}
_U32_MAX = 0xFFFFFFFF
_BUFFER_ARRAY = ffi.typeof("vn_buffer *[]")
_LINE = re.compile(r"wgsl:(\d+):(\d+)")


def _shader_error(err: ShaderError) -> ShaderError:
    """The compiler's message as a ShaderError, with the first line it names."""
    text = str(err)
    found = _LINE.search(text)
    return ShaderError(text, err.code, line=int(found.group(1)) if found else None)


def check_workgroups(workgroups: Any) -> tuple[int, int, int]:
    """Three ints in [0, 2**32): a dispatch's workgroup counts."""
    if type(workgroups) is tuple and len(workgroups) == 3:
        x, y, z = workgroups
        # The common case in one expression; anything else takes the checks below.
        if (
            type(x) is int
            and type(y) is int
            and type(z) is int
            and 0 <= x <= _U32_MAX
            and 0 <= y <= _U32_MAX
            and 0 <= z <= _U32_MAX
        ):
            return x, y, z
    if type(workgroups) not in (tuple, list) or len(workgroups) != 3:
        raise WrongTypeError(
            f"workgroups={workgroups!r} is not three counts. Fix: pass a tuple (x, y, z) of ints, e.g. (64, 1, 1)."
        )
    for axis, count in zip("xyz", workgroups):
        if type(count) is not int and (isinstance(count, bool) or not isinstance(count, int)):
            raise WrongTypeError(
                f"workgroups {axis}={count!r} is a {type(count).__name__}, not an int. Fix: pass ints, e.g. (64, 1, 1)."
            )
        if not 0 <= count <= _U32_MAX:
            raise InvalidArgumentError(
                f"workgroups {axis}={count} is outside 0..{_U32_MAX}. Fix: pass a non-negative count "
                "no larger than the device's max_compute_workgroups_per_dimension."
            )
    return workgroups[0], workgroups[1], workgroups[2]


def buffer_array(handles: Sequence[Any], role: str) -> Any:
    """A C array of the buffers' pointers (raising for anything that is not a live Buffer).

    On the recording path: exact-type checks first, the ABC check only for other
    sequence types (an ABC isinstance costs about a microsecond).
    """
    if type(handles) not in (list, tuple) and (
        isinstance(handles, (Buffer, bytes, bytearray, str)) or not isinstance(handles, Sequence)
    ):
        raise WrongTypeError(
            f"{role} must be a list of vn.Buffer, got {type(handles).__name__}. Fix: pass a list."
        )
    if not handles:
        return ffi.NULL
    if all(type(h) is Buffer and h._ptr is not None for h in handles):
        return ffi.new(_BUFFER_ARRAY, [h._ptr for h in handles])
    ptrs = []
    for i, h in enumerate(handles):
        if type(h) is not Buffer and not isinstance(h, Buffer):
            raise WrongTypeError(
                f"{role}[{i}] is a {type(h).__name__}, not a vn.Buffer. Fix: upload it with device.upload(...) first."
            )
        if h.released:
            raise ReleasedError(
                f"{role}[{i}] (Buffer {h.allocation_identity}, {h.byte_len} bytes) was released. "
                "Fix: pass a live buffer; a released handle cannot be used."
            )
        ptrs.append(h._ptr)
    return ffi.new(_BUFFER_ARRAY, ptrs)


def dispatch_args(
    inputs: Sequence[Any], outputs: Sequence[Any], params: Any, workgroups: Any
) -> tuple[Any, int, Any, int, Any, int, int, int]:
    """The C arguments of one dispatch: input and output arrays with their counts,
    params (or NULL) and the workgroup counts, each checked for type."""
    x, y, z = check_workgroups(workgroups)
    ins, outs = buffer_array(inputs, "inputs"), buffer_array(outputs, "outputs")
    if params is not None and not isinstance(params, Buffer):
        raise WrongTypeError(f"params is a {type(params).__name__}, not a vn.Buffer. Fix: upload it first.")
    par = params._live() if params is not None else ffi.NULL
    return ins, len(inputs), outs, len(outputs), par, x, y, z


class Pipeline(Handle):
    """A compiled compute entry point. Create with ``Device.compile``.

    ``bindings`` lists the buffer bindings that take handles, in (group, binding)
    order: every ``var<storage>`` and ``var<uniform>`` the entry point uses,
    directly or through functions it calls. Bindings of the module that the entry
    point never touches take no handle (so one module can hold several entry points
    with different bindings); ``var<workgroup>`` memory takes none either.
    """

    _kind = "Pipeline"
    _device: Device
    bindings: list[Binding]
    entry_point: str
    workgroup_size: tuple[int, int, int] | None

    @classmethod
    def _compile(
        cls,
        device: Device,
        wgsl: str,
        entry_point: str,
        preserve: tuple[str, ...],
        indirect: Sequence[Any] | None,
        constants: Mapping[str, float | int | bool] | None,
    ) -> Pipeline:
        dev_ptr = device._live()
        if not isinstance(wgsl, str):
            raise WrongTypeError(
                f"compile() takes WGSL text (str), got {type(wgsl).__name__}. Fix: pass a str."
            )
        if not isinstance(entry_point, str) or not entry_point:
            raise WrongTypeError(f"entry_point={entry_point!r}: Fix: name the @compute function as a str.")
        source = wgsl.encode()
        shader_out = ffi.new("vn_shader **")
        # Compile first: a WGSL error is reported by the compiler, with its line,
        # before reflection has to make sense of the text.
        try:
            check(lib.vn_shader_create(dev_ptr, source, len(source), shader_out))
        except ShaderError as err:
            raise _shader_error(err) from None
        shader = ffi.gc(shader_out[0], lib.vn_shader_release)

        module = reflect(wgsl, entry_point, preserve, constants)
        bindings = module.bindings
        indirect_index, indirect_offset = -1, 0
        if indirect is not None:
            indirect_index, indirect_offset = _indirect_target(bindings, indirect)

        names = [ffi.new("char[]", b.name.encode()) for b in bindings]
        descs = ffi.new("vn_binding_desc[]", max(len(bindings), 1))
        for i, b in enumerate(bindings):
            d = descs[i]
            d.group, d.binding, d.kind = b.group, b.binding, _KIND_CODES[b.kind]
            d.preserve, d.min_size, d.name = int(b.preserve), b.min_size, names[i]
            d.binding_size = module.binding_sizes[i]
        const_items = list((constants or {}).items())
        const_names = [ffi.new("char[]", k.encode()) for k, _ in const_items]
        consts = ffi.new("vn_constant[]", max(len(const_items), 1))
        for i, (_, value) in enumerate(const_items):
            consts[i].name, consts[i].value = const_names[i], float(value)
        entry = ffi.new("char[]", entry_point.encode())
        desc = ffi.new(
            "vn_pipeline_desc *",
            {
                "entry_point": entry,
                "bindings": descs,
                "binding_count": len(bindings),
                "constants": consts,
                "constant_count": len(const_items),
                "indirect_binding": indirect_index,
                "indirect_offset": indirect_offset,
                "cache_capacity": 0,
                "workgroup_size": module.workgroup_size or (0, 0, 0),
            },
        )
        out = ffi.new("vn_pipeline **")
        try:
            check(lib.vn_pipeline_create(dev_ptr, shader, desc, out))
        except ShaderError as err:
            raise _shader_error(err) from None
        finally:
            ffi.release(shader)
        self = cls(ffi.gc(out[0], lib.vn_pipeline_release))
        self._device = device
        self.bindings = list(bindings)
        self.entry_point = entry_point
        self.workgroup_size = module.workgroup_size
        return self

    @property
    def device(self) -> Device:
        return self._device

    def __repr__(self) -> str:
        return f"<vn.Pipeline {self.entry_point} bindings={len(self.bindings)}>"

    def bind_group_cache_stats(self) -> dict[str, int]:
        """Bind-group LRU counters: hits, misses, evictions, entries, capacity."""
        stats = ffi.new("vn_cache_stats *")
        check(lib.vn_pipeline_cache_stats(self._live(), stats))
        return {k: int(getattr(stats, k)) for k in ("hits", "misses", "evictions", "entries", "capacity")}

    def prerecord_persistent_dispatch(
        self,
        inputs: Sequence[Buffer],
        outputs: Sequence[Buffer],
        params: Buffer | None = None,
        workgroups: Sequence[int] = (1, 1, 1),
    ) -> PrerecordedDispatch:
        """Record one dispatch now, to be submitted later by ``replay()`` (once).

        Bindings are taken in (group, binding) order: a read_write binding takes the
        next ``outputs`` handle, the first uniform takes ``params`` when given, and
        every other binding the next ``inputs`` handle. Each handle is checked
        (usage, size, device); bind groups come from this pipeline's cache;
        non-preserved outputs are cleared on the GPU before the dispatch. Costs one
        C call: resolution, bind groups and encoding happen there.
        """
        ptr = self._live()
        args = dispatch_args(inputs, outputs, params, workgroups)
        out = ffi.new("vn_dispatch **")
        check(lib.vn_dispatch_record(ptr, *args, out))
        return PrerecordedDispatch._adopt(self, out[0])

    def record(
        self,
        inputs: Sequence[Buffer],
        outputs: Sequence[Buffer],
        params: Buffer | None = None,
        workgroups: Sequence[int] = (1, 1, 1),
    ) -> Recording:
        """A replayable ``vn.Recording``: same rules and checks as ``prerecord_persistent_dispatch``.

        Resolution, validation and bind groups happen here, once; each
        ``replay(n)`` is then one C call that encodes and submits.
        """
        ptr = self._live()
        args = dispatch_args(inputs, outputs, params, workgroups)
        out = ffi.new("vn_recording **")
        check(lib.vn_recording_create(ptr, *args, out))
        return Recording._adopt(self, out[0])

    def prerecord_borrowed_dispatch(
        self,
        inputs: Sequence[Any],
        workgroups: Sequence[int] = (1, 1, 1),
        output_sizes: Sequence[int] | None = None,
    ) -> PrerecordedDispatch:
        """Upload host buffers, allocate outputs, and record one dispatch over them.

        ``inputs`` are buffer-protocol objects, one per binding that is not a
        cleared output (read-only storage, uniforms, preserved read_write state), in
        (group, binding) order. Outputs are allocated from ``output_sizes`` (bytes,
        in output order) or else from each output's declared ``min_size``.
        """
        device = self._device
        self._live()
        sized = [b for b in self.bindings if b.is_output]
        if output_sizes is not None and len(output_sizes) != len(sized):
            raise BindingError(
                f"output_sizes has {len(output_sizes)} entries, but the pipeline has {len(sized)} output(s) "
                f"({', '.join(b.name for b in sized) or 'none'}). Fix: give one size per output, in order."
            )
        takes_host = [b for b in self.bindings if not b.is_output]
        if isinstance(inputs, (bytes, bytearray, memoryview, str)) or not isinstance(inputs, Sequence):
            raise WrongTypeError(
                f"inputs must be a list of host buffers, got {type(inputs).__name__}. Fix: pass a list."
            )
        if len(inputs) != len(takes_host):
            names = ", ".join(f"`{b.name}`" for b in takes_host) or "none"
            raise BindingError(
                f"{len(inputs)} host buffer(s) were passed, but the pipeline takes {len(takes_host)} "
                f"({names}). Fix: pass one host buffer per non-output binding, in (group, binding) order."
            )
        host = iter(inputs)
        handles_in: list[Buffer] = []
        handles_out: list[Buffer] = []
        out_index = 0
        for b in self.bindings:
            if b.is_output:
                size = output_sizes[out_index] if output_sizes is not None else b.min_size
                if output_sizes is None and size == 0:
                    raise BindingError(
                        f"output @group({b.group}) @binding({b.binding}) `{b.name}` is a runtime-sized array, so "
                        "its size cannot be inferred. Fix: pass output_sizes=[...] with its size in bytes."
                    )
                out_index += 1
                handles_out.append(device.alloc(size))
            elif b.preserve:
                handles_out.append(device.upload(next(host)))
            else:
                handles_in.append(device.upload(next(host)))
        return self.prerecord_persistent_dispatch(handles_in, handles_out, None, workgroups)


def _indirect_target(bindings: list[Binding], indirect: Sequence[Any]) -> tuple[int, int]:
    if isinstance(indirect, (str, bytes)) or not isinstance(indirect, Sequence) or len(indirect) != 2:
        raise WrongTypeError(
            f"indirect={indirect!r} is not a (name, byte_offset) pair. Fix: pass e.g. indirect=('args', 0)."
        )
    name, offset = indirect
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise InvalidArgumentError(f"indirect offset {offset!r}: Fix: pass a non-negative int byte offset.")
    for i, b in enumerate(bindings):
        if b.name == name:
            return i, offset
    known = ", ".join(f"`{b.name}`" for b in bindings) or "none"
    raise BindingError(
        f"indirect buffer `{name}` is not a binding the entry point uses (bindings: {known}). "
        "Fix: name one of those bindings."
    )
