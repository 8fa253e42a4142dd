"""vn.Pipeline: a compiled compute entry point, its reflected bindings and bind-group cache."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._handles import Handle, c_address, handle_id, new_slot, owned
from ._lib import check, ffi, lib
from ._marshal import (
    U64_MAX,
    to_bool,
    to_buffer_array,
    to_constants,
    to_indirect,
    to_list,
    to_named,
    to_readable,
    to_str_tuple,
    to_u64,
    to_utf8,
    to_view,
    to_views,
    to_workgroups,
    wrong_type,
)
from ._owner import Owner, bind_launch, record_buffers
from .buffer import Bindable, Buffer, BufferView
from .dispatch import PrerecordedDispatch
from .errors import BindingError, ShaderError
from .reflect import Binding, ModuleReflection, _reflect
from .reflect.entry import _KIND_CODES
from .reflect.tokens import _prepare
from .replay import Recording
from .zero_workgroup import zero_workgroup_source

if TYPE_CHECKING:
    from .device import Device

# The commonest launches' one calls (csrc/python/launch.c) call these C functions and take
# only vn.Buffer itself among the buffers.
bind_launch(
    c_address("vn_dispatch_record_buffers"), c_address("vn_recording_replay"), c_address("vn_sequence_replay"), Buffer
)

_CACHE_FIELDS = tuple(name for name, _ in ffi.typeof("vn_cache_stats").fields)
_POSITIONAL, _NAMED = int(lib.VN_BIND_POSITIONAL), int(lib.VN_BIND_NAMED)
_VIEWS = ffi.typeof("vn_view[]")
_ARGS = ffi.typeof("vn_dispatch_args *")
_CHARS = ffi.typeof("char[]")
_BINDING_DESCS = ffi.typeof("vn_binding_desc[]")
_CONSTANTS = ffi.typeof("vn_constant[]")
_PIPELINE_DESC = ffi.typeof("vn_pipeline_desc *")
_CHECK_BOUNDS, _CHECK_LOOPS, _CHECKS_ALL = int(lib.VN_CHECK_BOUNDS), int(lib.VN_CHECK_LOOPS), int(lib.VN_CHECKS_ALL)

# What reflect() found for sources compiled before, and the source with the workgroup
# zeroing added, keyed by all they read: compiling a source again (with the same entry
# point, preserve, constants and zeroing) skips reading the text; the shader itself is
# compiled again all the same. Bounded (emptied when full);
# only single dict operations, atomic under the GIL, so no lock (none held across a fork).
_REFLECTED: dict[tuple[Any, ...], tuple[ModuleReflection, str | None]] = {}
_REFLECTED_MAX = 64


def _shader_error(err: ShaderError) -> ShaderError:
    """The compiler's error as a ShaderError with the line and column C found in it
    (this thread's last error is still the failed call's)."""
    line, column = ffi.new("uint32_t *"), ffi.new("uint32_t *")
    if not lib.vn_last_error_position(line, column):
        return err
    return ShaderError(str(err), err.code, line=int(line[0]), column=int(column[0]))


class _ShaderSlot:
    """A compiled shader module's owner and out-parameter (``new_slot``): the owner holds
    the module until ``release()`` drops both, its only references."""

    __slots__ = ("_own", "out")

    def __init__(self, own: Any, out: Any) -> None:
        self._own, self.out = own, out

    def release(self) -> None:
        self._own = self.out = None


def _compile_wgsl(dev_ptr: Any, source: bytes, checks: int = _CHECKS_ALL) -> _ShaderSlot:
    """``source`` compiled into a shader module with the runtime checks ``checks``
    (``vn_runtime_checks`` bits); a WGSL error raises ShaderError with the compiler's
    line and column."""
    own, out = new_slot("vn_shader *")
    try:
        check(lib.vn_shader_create(dev_ptr, source, len(source), checks, out))
    except ShaderError as err:
        raise _shader_error(err) from None
    return _ShaderSlot(own, out)


def _compile_zeroed(
    dev_ptr: Any, source: bytes, zeroed: str, entry_point: str, checks: int, reparse: Callable[[], Any]
) -> _ShaderSlot:
    """The zero-initialising rewrite of ``source`` compiled. Should it not compile, the
    user's own text is compiled to report its error at its own line and column; only if
    that compiles is the failure the rewrite's own, placed at the first var<workgroup>
    the entry point uses (``reparse()``: reflect's parse of the module and what it uses)."""
    try:
        return _compile_wgsl(dev_ptr, zeroed.encode(), checks)
    except ShaderError as err:
        _compile_wgsl(dev_ptr, source).release()  # raises the user's error, if it has one
        parsed, used = reparse()
        var = next(v for v in parsed.vars if v.space == "workgroup" and v.name in used)
        raise var.src.error(
            var.at,
            f"vyre_native's zero-initialisation of the var<workgroup> memory of entry point"
            f" `{entry_point}` made WGSL that does not compile, though the module itself"
            f" does (the rewritten text's error: {str(err).partition(' Fix:')[0]})",
            "report this with the module; meanwhile initialise that memory in the kernel and pass"
            " compile(..., zero_workgroup_memory=False).",
        ) from None


def dispatch_args(
    inputs: Any,
    outputs: Any,
    params: Any,
    workgroups: Any,
    immediates: Any = None,
    bind: Any = None,
    indirect: Any = None,
    clear_outputs: Any = True,
) -> tuple[Any, list[Any]]:
    """The C ``vn_dispatch_args`` of one dispatch, and the objects its pointers name,
    which the caller keeps until its C call returns. Which view goes to which binding
    (the positional rule or the names), whether both forms were used, whether each view
    fits, which buffers the bindings may share, and the immediates' size, are C's to
    check: this only converts what was given."""
    keep = 1 - to_bool(clear_outputs, "clear_outputs")
    x, y, z = to_workgroups(workgroups)
    # inputs, outputs and params share one C array (the hot path: one allocation)
    views = to_views(inputs, "inputs", Buffer, BufferView)
    n_in = len(views)
    views += to_views(outputs, "outputs", Buffer, BufferView)
    n_out = len(views) - n_in
    if params is not None:
        views.append(to_view(params, "params", Buffer, BufferView))
    # the positional form is used when it passes anything (the defaults, empty, pass nothing)
    forms = _POSITIONAL if views else 0
    array = ffi.new(_VIEWS, views) if views else ffi.NULL
    ins, outs = (array, array + n_in) if n_in or n_out else (ffi.NULL, ffi.NULL)
    par = array + n_in + n_out if params is not None else ffi.NULL
    pinned: list[Any] = [array, views]
    fields = [forms, x, y, z, ins, n_in, outs, n_out, par]  # the rest of the struct is zero
    if bind is None and indirect is None and immediates is None:
        args = ffi.new(_ARGS, fields)
        args.keep_outputs = keep
        return args, pinned
    imm, n_imm = (ffi.NULL, 0) if immediates is None else to_readable(immediates, "immediates")
    pinned.append(imm)
    names_c = named = ind = ffi.NULL
    n_named = offset = 0
    if bind is not None:
        fields[0] |= _NAMED
        pairs = to_named(bind, "bind")
        keys = [ffi.new("char[]", name) for name, _ in pairs]
        names_c = ffi.new("char *[]", keys or 1)
        given = [to_view(item, f"bind[{name.decode()!r}]", Buffer, BufferView) for name, item in pairs]
        named, n_named = ffi.new(_VIEWS, given or 1), len(given)
        pinned += (keys, names_c, named, given)
    if indirect is not None:
        view, offset = to_indirect(indirect, Buffer, BufferView)
        ind = ffi.new("vn_view *", view)
        pinned.append(ind)
    return ffi.new(_ARGS, [*fields, imm, n_imm, names_c, named, n_named, ind, offset, keep]), pinned


class Pipeline(Handle):
    """A compiled compute entry point. Create with ``Device.compile``.

    ``bindings`` lists the buffer bindings that take handles, in (group, binding)
    order: every ``var<storage>`` and ``var<uniform>`` the entry point uses,
    directly or through functions it calls. Bindings of the module that the entry
    point never touches take no handle (so one module can hold several entry points
    with different bindings); ``var<workgroup>`` memory takes none either, and starts
    at zero in every workgroup unless compiled with ``zero_workgroup_memory=False``.
    """

    _kind = "Pipeline"
    _made_by = "device.compile(wgsl)"
    _device: Device
    _id: int  # the C id (handle_id), for csrc/python/launch.c
    bindings: list[Binding]
    entry_point: str
    workgroup_size: tuple[int, int, int] | None
    #: the runtime checks compiled in, as given to ``Device.compile``: ``bounds_checks``
    #: and ``loop_bounding`` (both True by default)
    runtime_checks: dict[str, bool]
    #: bytes of the entry point's ``var<immediate>`` data (its type's size rounded up to
    #: 4), 0 when it declares none: each dispatch then takes exactly this many bytes
    #: as ``immediates=``
    immediate_size: int

    @classmethod
    def _compile(
        cls,
        device: Device,
        wgsl: Any,
        entry_point: Any,
        preserve: Any,
        indirect: Any,
        constants: Any,
        zero_workgroup_memory: Any = True,
        bounds_checks: Any = True,
        loop_bounding: Any = True,
    ) -> Pipeline:
        dev_ptr = device._live()
        checks = (_CHECK_BOUNDS if to_bool(bounds_checks, "bounds_checks") else 0) | (
            _CHECK_LOOPS if to_bool(loop_bounding, "loop_bounding") else 0
        )
        source = to_utf8(wgsl, "compile() WGSL", sized=True)  # passed with its length
        entry = to_utf8(entry_point, "entry_point")
        names_kept = to_str_tuple(preserve, "preserve")
        values = to_constants(constants)
        target = None if indirect is None else _indirect_pair(indirect)
        zero = bool(to_bool(zero_workgroup_memory, "zero_workgroup_memory"))
        # the key: exact types, and each constant's type and repr (-0.0 is not 0.0)
        key = (wgsl, entry_point, names_kept, tuple((k, type(v), repr(v)) for k, v in values.items()), zero)
        cacheable = type(wgsl) is str and type(entry_point) is str and all(type(n) is str for n in names_kept)
        cached = _REFLECTED.get(key) if cacheable else None
        if cached is None:
            # Nesting deeper than naga's stack can take is refused before naga parses it;
            # _prepare() checks it (and its tokens serve reflection below).
            tokens = _prepare(wgsl)
            try:
                module, parsed, used = _reflect(tokens, entry_point, names_kept, values)
                # the source with WGSL's zeroing of the var<workgroup> memory the entry
                # point uses, which wgpu-native leaves out (see zero_workgroup.py)
                zeroed = None
                if zero:
                    zeroed = zero_workgroup_source(parsed, entry_point, used, module.workgroup_size)
            except ShaderError as err:
                # a WGSL error is the compiler's to report, with its line, before
                # reflection's account of text it could not make sense of
                _compile_wgsl(dev_ptr, source).release()
                raise err from None
            cached = module, zeroed
            if cacheable:
                if len(_REFLECTED) >= _REFLECTED_MAX:
                    _REFLECTED.clear()
                _REFLECTED[key] = cached
        module, zeroed = cached
        if zeroed is None:
            shader_slot = _compile_wgsl(dev_ptr, source, checks)
        else:
            shader_slot = _compile_zeroed(
                dev_ptr, source, zeroed, entry_point, checks,
                lambda: _reflect(_prepare(wgsl), entry_point, names_kept, values)[1:],
            )
        shader_out = shader_slot.out
        shader = shader_out[0]  # the slot's owner holds it (released with it, or by the finally below)

        bindings = module.bindings
        indirect_index, indirect_offset = -1, 0
        if target is not None:
            indirect_index, indirect_offset = _indirect_target(bindings, *target)

        # the descs hold only pointers: these locals own the memory (an empty array is NULL)
        names = [ffi.new(_CHARS, b.name.encode()) for b in bindings]
        descs = ffi.new(
            _BINDING_DESCS,
            [  # in the fields' order: group, binding, kind, preserve, min_size, binding_size, name
                (b.group, b.binding, _KIND_CODES[b.kind], b.preserve, b.min_size, size, name)
                for b, size, name in zip(bindings, module.binding_sizes, names)
            ],
        ) if bindings else ffi.NULL
        # under wgpu-native's keys: an @id(n) override's is "n", any other's its name
        keyed = module.constants
        const_names = [ffi.new(_CHARS, k.encode()) for k in keyed]
        pairs = list(zip(const_names, map(float, keyed.values())))
        consts = ffi.new(_CONSTANTS, pairs) if pairs else ffi.NULL
        entry_c = ffi.new(_CHARS, entry)
        desc = ffi.new(
            _PIPELINE_DESC,
            {
                "entry_point": entry_c,
                "bindings": descs,
                "binding_count": len(bindings),
                "constants": consts,
                "constant_count": len(keyed),
                "indirect_binding": indirect_index,
                "indirect_offset": indirect_offset,
                "cache_capacity": 0,
                # C checks both against the device's limits, overrides applied (a size past
                # 64 bits saturates: it is far past any limit either way)
                "workgroup_size": [min(d, U64_MAX) for d in module.workgroup_size],
                "workgroup_storage_size": min(module.workgroup_storage_size, U64_MAX),
                "immediate_size": module.immediate_size,
            },
        )
        out_own, out = new_slot("vn_pipeline *")
        try:
            check(lib.vn_pipeline_create(dev_ptr, shader, desc, out))
        except ShaderError as err:
            raise _shader_error(err) from None
        finally:
            shader_slot.release()  # the pipeline holds what it needs of the shader
        self = cls._wrap(owned(out_own, "vn_pipeline *"))
        self._id = handle_id(self._ptr)
        self._device = device
        self.bindings = list(bindings)
        self.entry_point = entry_point
        self.workgroup_size = module.workgroup_size
        self.immediate_size = module.immediate_size
        self.runtime_checks = {"bounds_checks": bool(checks & _CHECK_BOUNDS), "loop_bounding": bool(checks & _CHECK_LOOPS)}
        return self

    @property
    def device(self) -> Device:
        return self._device

    @property
    def label(self) -> str:
        """The pipeline's label in wgpu and in every message about it: its entry point."""
        return self.entry_point

    def __repr__(self) -> str:
        return f"<vn.Pipeline {self.entry_point} bindings={len(self.bindings)}>"

    def bind_group_cache_stats(self) -> dict[str, int]:
        """Bind-group LRU counters: hits, misses, evictions, entries, capacity."""
        stats = ffi.new("vn_cache_stats *")
        check(lib.vn_pipeline_cache_stats(self._live(), stats))
        return {k: int(getattr(stats, k)) for k in _CACHE_FIELDS}

    def prerecord_persistent_dispatch(
        self,
        inputs: Sequence[Bindable] = (),
        outputs: Sequence[Bindable] = (),
        params: Bindable | None = None,
        workgroups: Sequence[int] = (1, 1, 1),
        immediates: Any = None,
        *,
        bind: Mapping[str, Bindable] | None = None,
        indirect: tuple[Bindable, int] | None = None,
        clear_outputs: bool = True,
    ) -> PrerecordedDispatch:
        """Record one dispatch now, to be submitted later by ``replay()`` (once).

        Bindings are taken in (group, binding) order: a read_write binding takes the
        next ``outputs`` handle, the first uniform takes ``params`` when given, and
        every other binding the next ``inputs`` handle. Or ``bind={name: buffer}``
        names every binding the entry point uses, once (not both forms). A
        ``vn.BufferView`` binds wherever a buffer does. Each handle is checked (usage,
        size, device, offset alignment), and buffers shared between bindings follow
        WebGPU's rule (disjoint ranges of one buffer may all be read_write; a buffer
        bound read_write has no read-only use in the same dispatch; read-only uses share
        anything); bind groups come from this pipeline's cache. Non-preserved outputs
        are cleared on the GPU before the dispatch, each view over its own range;
        ``clear_outputs=False`` clears none, so every output keeps what it holds.
        ``indirect=(buffer, offset)`` dispatches with the three u32 workgroup counts at
        that offset of any buffer with INDIRECT usage, bound or not. ``immediates``: a
        bytes-like object of exactly ``immediate_size`` bytes, the entry point's
        ``var<immediate>`` data for this dispatch (copied; None when it declares none).
        Costs one C call: resolution, bind groups and encoding happen there.
        """
        ptr = self._live()
        if params is None and immediates is None and bind is None and indirect is None:
            # the commonest launch, whole buffers only: one call (csrc/python/launch.c), or
            # None when an argument needs converting first
            made = record_buffers(self, inputs, outputs, workgroups, clear_outputs)
            if isinstance(made, Owner):
                return PrerecordedDispatch._adopt(self, owned(made, "vn_dispatch *"))
            if made is not None:
                check(made)  # a C status, never VN_OK (which comes as an Owner): raises
            keep = 1 - to_bool(clear_outputs, "clear_outputs")
            x, y, z = to_workgroups(workgroups)
            handles = to_buffer_array(inputs, outputs, Buffer)
            if handles is not None:
                held, n_in, n_out = handles  # the pointers, held until the call returned
                out_own, out = new_slot("vn_dispatch *")
                check(lib.vn_dispatch_record_buffers(ptr, held, n_in, n_out, x, y, z, keep, out))
                del held
                return PrerecordedDispatch._adopt(self, owned(out_own, "vn_dispatch *"))
        args, pinned = dispatch_args(
            inputs, outputs, params, workgroups, immediates, bind, indirect, clear_outputs
        )
        out_own, out = new_slot("vn_dispatch *")
        check(lib.vn_dispatch_record(ptr, args, out))
        del pinned  # held until the call returned
        return PrerecordedDispatch._adopt(self, owned(out_own, "vn_dispatch *"))

    def record(
        self,
        inputs: Sequence[Bindable] = (),
        outputs: Sequence[Bindable] = (),
        params: Bindable | None = None,
        workgroups: Sequence[int] = (1, 1, 1),
        immediates: Any = None,
        *,
        bind: Mapping[str, Bindable] | None = None,
        indirect: tuple[Bindable, int] | None = None,
        clear_outputs: bool = True,
    ) -> Recording:
        """A replayable ``vn.Recording``: same rules and checks as ``prerecord_persistent_dispatch``.

        Resolution, validation and bind groups happen here, once, and ``immediates``
        are copied here; each ``replay(n)`` is then one C call that encodes (setting
        the same immediates for every launch) and submits. With ``clear_outputs=False``
        no launch clears an output: each sees what the previous one left (what a tensor
        library whose kernels write every element, or accumulate, wants).
        """
        ptr = self._live()
        args, pinned = dispatch_args(
            inputs, outputs, params, workgroups, immediates, bind, indirect, clear_outputs
        )
        out_own, out = new_slot("vn_recording *")
        check(lib.vn_recording_create(ptr, args, out))
        del pinned  # held until the call returned
        return Recording._adopt(self, owned(out_own, "vn_recording *"))

    def prerecord_borrowed_dispatch(
        self,
        inputs: Sequence[Any] = (),
        workgroups: Sequence[int] = (1, 1, 1),
        output_sizes: Sequence[int] | None = None,
        *,
        bind: Mapping[str, Any] | None = None,
    ) -> PrerecordedDispatch:
        """Upload host buffers, allocate outputs, and record one dispatch over them.

        ``inputs`` are buffer-protocol objects, one per binding that is not a
        cleared output (read-only storage, uniforms, preserved read_write state), in
        (group, binding) order; or ``bind={name: host_buffer}`` names each of those
        bindings once (not both forms). Outputs are allocated from ``output_sizes``
        (bytes, in output order) or else from each output's declared ``min_size``. One
        C call makes the buffers and records the dispatch. It takes no ``clear_outputs``:
        nothing is cleared, as the outputs are new buffers, zero already (WebGPU
        zero-initialises them), and the preserved bindings hold the host data.
        """
        ptr = self._live()
        host = [to_readable(data, f"inputs[{i}]") for i, data in enumerate(to_list(inputs, "inputs"))]
        forms = _POSITIONAL if host else 0
        names = ffi.NULL
        if bind is not None:  # with inputs too, C refuses the mix before it reads either
            forms |= _NAMED
            pairs = to_named(bind, "bind")
            host = [to_readable(data, f"bind[{name.decode()!r}]") for name, data in pairs]
            keys = [ffi.new("char[]", name) for name, _ in pairs]
            names = ffi.new("char *[]", keys or 1)
        if output_sizes is None:
            sizes, n_sizes = ffi.NULL, 0
        else:
            counts = to_list(output_sizes, "output_sizes", "a list of byte counts")
            sizes = ffi.new(
                "uint64_t[]", [to_u64(n, f"output_sizes[{i}]") for i, n in enumerate(counts)] or 1
            )
            n_sizes = len(counts)
        x, y, z = to_workgroups(workgroups)
        out_own, out = new_slot("vn_dispatch *")
        check(
            lib.vn_dispatch_record_borrowed(
                ptr,
                forms,
                ffi.new("const void *[]", [h[0] for h in host] or 1),
                ffi.new("uint64_t[]", [h[1] for h in host] or 1),
                names,
                len(host),
                sizes,
                n_sizes,
                x,
                y,
                z,
                out,
            )
        )
        return PrerecordedDispatch._adopt(self, owned(out_own, "vn_dispatch *"))


def _indirect_pair(indirect: Any) -> tuple[str, int]:
    """``indirect=(name, byte_offset)``: the name of a binding and a uint64_t offset."""
    if isinstance(indirect, (str, bytes)) or not isinstance(indirect, Sequence) or len(indirect) != 2:
        raise wrong_type(
            "indirect", indirect, "a (name, byte_offset) pair", "pass e.g. indirect=('args', 0)."
        )
    name, offset = indirect
    to_utf8(name, "indirect name")
    return name, to_u64(offset, "indirect offset")


def _indirect_target(bindings: list[Binding], name: str, offset: int) -> tuple[int, int]:
    """The index of the binding named ``name`` (reflection's names), and the offset."""
    for i, b in enumerate(bindings):
        if b.name == name:
            return i, offset
    known = ", ".join(f"`{b.name}`" for b in bindings) or "none"
    raise BindingError(
        f"indirect buffer `{name}` is not a binding the entry point uses (bindings: {known}). "
        "Fix: name one of those bindings."
    )
