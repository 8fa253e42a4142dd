"""WGSL binding reflection for compute pipelines, done in Python: a module per concern.

wgpu-native has no reflection API, yet before it builds a pipeline vyre_native must
know which buffers an entry point binds, how many bytes each needs, which are outputs,
and the workgroup size. This package reads just enough WGSL to tell, a module per
concern, each using only those before it:

- ``tokens.py``: the text into tokens (line breaks, nested block comments, names of any
  XID characters, numbers), C's nesting check first, and where a token is (errors);
- ``parser.py``: the module-scope declarations (function bodies kept only as the names
  they mention);
- ``constants.py``: integer constant expressions and overrides, resolved on demand;
- ``layout.py``: sizes and alignments by WGSL's layout rules;
- ``entry.py``: the entry point, the names it uses (a walk of the call graph) and its
  bindings;
- this file: the records (``Binding``, ``ModuleReflection``) and ``reflect()``.

It does not validate WGSL: wgpu-native does that when it compiles the module.

What counts as a binding: a module-scope ``var<storage>`` or ``var<storage, read>``
(kind ``storage_read``), ``var<storage, read_write>`` (``storage_read_write``) or
``var<uniform>`` (``uniform``) with ``@group`` and ``@binding``. ``var<workgroup>``,
``var<private>`` and ``var<immediate>`` (whose size is ``immediate_size``) are not bindings. Handles (textures, samplers, binding arrays,
acceleration structures: any ``var`` with ``@group``/``@binding`` but no address space)
cannot be bound by vyre_native.

Which bindings take handles: only those the entry point uses, meaning their name is
an identifier in the entry point's body or, transitively, in the body of a module-scope
function it calls. Bindings it does not use take no handle, as in wgpu's own layout
inference, so one module may declare the buffers of several entry points, and an
unsupported handle is an error only when the chosen entry point uses it. The test is
by name: a local that shadows a global's name makes that binding count as used, a
conservative over-approximation (the caller then passes a buffer the shader ignores).
The same test picks the ``var<workgroup>`` memory the entry point uses.

Text as WGSL defines it: every WGSL line break (LF, VT, FF, CR, NEL, U+2028, U+2029;
CR LF is one) ends a ``//`` comment and a line, and LRM/RLM are blankspace. A module's
own structs and aliases shadow predeclared names: ``struct vec2f {...}`` is laid out by
its members. Sizes and counts are evaluated with the override values applied; an
``@id(n)`` override is set by its name or by ``"n"``, WebGPU's key, under which the
values go to wgpu-native.

Errors: every ShaderError raised here names the line and column of the token it is
about, worded as the compiler's (see tokens.py), or says it has no line or column (an
argument's error, or a name the module lacks).

Depth: nesting deeper than wgpu-native's compiler survives is C's rule
(``vn_wgsl_check_nesting``, csrc/resources/wgsl_depth.c, which ``vn_shader_create`` applies;
``MAX_NESTING_DEPTH`` is its limit, read from the library). Text from a caller reaches
the parser only through ``_prepare``, which asks C first, so ``compile()``,
``reflect()`` and ``tokenize()`` refuse deep nesting with C's ShaderError, its line and
column. Behind that check nothing here recurses per declaration in a chain
(declarations are resolved through a work list) nor per level of an expression (they
are evaluated with explicit stacks), and nesting of any depth but a type's template
lists reads without recursion; the layout of a type recurses once per template list
(``array<array<...>>``), within C's limit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

from .entry import _listing, _Module
from .tokens import MAX_NESTING_DEPTH, _error, _prepare, _Source, _Tok, _unplaced, tokenize

__all__ = ["MAX_NESTING_DEPTH", "Binding", "ModuleReflection", "reflect", "tokenize"]


@dataclass(frozen=True)
class Binding:
    """A buffer binding the entry point uses.

    ``kind`` is ``"storage_read"``, ``"storage_read_write"`` or ``"uniform"``;
    ``is_output`` is true for every read_write binding: it takes an ``outputs`` handle
    (and is one of ``read_output``'s indices) whether or not it is preserved;
    ``preserve`` says whether it is left uncleared (in/out state);
    ``min_size`` is the byte size of the declared type (for a runtime-sized array,
    the fixed part before it).
    """

    group: int
    binding: int
    name: str
    kind: str
    is_output: bool
    preserve: bool
    min_size: int


@dataclass(frozen=True)
class ModuleReflection:
    """What a compute entry point needs: its bindings in (group, binding) order, its
    workgroup size with the override values applied, and every override the module
    declares, with its WGSL scalar type name."""

    entry_point: str
    workgroup_size: tuple[int, int, int]
    bindings: list[Binding]
    overrides: dict[str, str]
    #: per binding, the size wgpu itself requires (naga's rule: a runtime-sized array
    #: counts one element). Declared in the bind-group layout, it spares wgpu a size
    #: check on every dispatch; it is min_size for every fixed-size type.
    binding_sizes: list[int] = field(default_factory=list)
    #: bytes of var<workgroup> memory the entry point uses (WebGPU's sum: each variable
    #: rounded up to 16), with the override values applied
    workgroup_storage_size: int = 0
    #: the override values passed, under the keys wgpu-native expects: an @id(n)
    #: override's is "n", any other's its name
    constants: dict[str, float | int | bool] = field(default_factory=dict)
    #: each @id override's id
    override_ids: dict[str, int] = field(default_factory=dict)
    #: bytes of the entry point's var<immediate> data (its type's size, rounded up to 4
    #: as wgpu requires of a pipeline layout's immediate size), 0 when it uses none
    immediate_size: int = 0


F = TypeVar("F", Binding, ModuleReflection)


def reflect(
    wgsl: str | _Source | Sequence[_Tok],
    entry_point: str = "main",
    preserve: Sequence[str] = (),
    constants: Mapping[str, float | int | bool] | None = None,
) -> ModuleReflection:
    """Reflect the buffer bindings, workgroup size and memory, and overrides of a compute
    entry point, with the override values in ``constants`` applied (keyed by name, or for
    an ``@id(n)`` override by name or ``"n"``).

    ``wgsl`` is the source, or what ``tokenize(source)`` (or the package's own
    ``_prepare(source)``) returned when the caller already has it. Pure Python over the
    source text: the tokens in one regular-expression pass, function bodies read only for
    the names they mention, so callers reflect once per pipeline and keep the result.
    Raises ShaderError for what vyre_native cannot run or bind (see the module docstring),
    and C's for nesting deeper than ``MAX_NESTING_DEPTH``.
    """
    return _reflect(wgsl, entry_point, preserve, constants)[0]


def _reflect(
    wgsl: str | _Source | Sequence[_Tok],
    entry_point: str,
    preserve: Sequence[str],
    constants: Mapping[str, float | int | bool] | None,
) -> tuple[ModuleReflection, _Module, set[str]]:
    """``reflect()``, with the parsed module and the names the entry point uses, which
    the var<workgroup> zero-initialisation (zero_workgroup.py) reads."""
    if isinstance(wgsl, str):
        source = _prepare(wgsl)
    elif isinstance(wgsl, _Source):
        source = wgsl
    else:  # tokenize()'s tokens: all of one module
        source = wgsl[0].src if wgsl else _Source("")
    module = _Module(source)
    webgpu_constants = module.set_constants(constants or {})
    fn = module.entry(entry_point)
    workgroup_size = module.resolve(lambda: module.workgroup_size(entry_point, fn))
    used = module.used_names(entry_point)
    workgroup_storage = module.resolve(lambda: module.workgroup_storage(used))
    found: list[tuple[int, int, str, str, int, int]] = []
    taken: dict[tuple[int, int], str] = {}
    for var in module.vars:
        if var.name in used and var.space not in ("workgroup", "private", "immediate"):
            group, binding, kind, size, wgpu_size = module.resolve(partial(module.binding, var, entry_point))
            other = taken.setdefault((group, binding), var.name)
            if other != var.name:
                raise _error(
                    var,
                    f"`{other}` and `{var.name}` are both @group({group}) @binding({binding})"
                    f" and entry point `{entry_point}` uses both",
                    "give each its own binding number.",
                )
            found.append((group, binding, var.name, kind, size, wgpu_size))
    found.sort()
    read_write = [name for _, _, name, kind, _, _ in found if kind == "storage_read_write"]
    for name in preserve:
        if name not in read_write:
            kind_of = {f[2]: f[3] for f in found}
            what = f"a {kind_of[name]} binding" if name in kind_of else "not a binding it uses"
            raise _unplaced(
                f"preserve names `{name}`, which is {what}; preserve applies only to"
                f" storage_read_write bindings, and those entry point `{entry_point}` uses are"
                f" {_listing(read_write)}",
                "it is about the preserve argument",
                f"remove `{name}` from preserve.",
            )
    bindings = [
        _frozen(
            Binding,
            group=group,
            binding=binding,
            name=name,
            kind=kind,
            is_output=name in read_write,
            preserve=name in preserve,
            min_size=size,
        )
        for group, binding, name, kind, size, _ in found
    ]
    overrides = {name: module.scalar_type(decl, name) for name, decl in module.overrides.items()}
    reflected = _frozen(
        ModuleReflection,
        entry_point=entry_point,
        workgroup_size=workgroup_size,
        bindings=bindings,
        overrides=overrides,
        binding_sizes=[f[5] for f in found],
        workgroup_storage_size=workgroup_storage,
        constants=webgpu_constants,
        override_ids={name: i for name in module.overrides if (i := module.override_id(name)) is not None},
        immediate_size=module.resolve(lambda: module.immediate_size(used)),
    )
    return reflected, module, used


def _frozen(cls: type[F], **fields: object) -> F:
    """A frozen dataclass with every field given, made without its ``__init__``, which
    sets each field through a Python-level ``object.__setattr__`` call."""
    made = object.__new__(cls)
    made.__dict__.update(fields)
    return made
