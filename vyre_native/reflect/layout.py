"""Memory layout of WGSL types: size, alignment and whether the size is fixed, by WGSL's
rules ("Alignment and Size"), for buffers (host-shareable: bool has no layout) and for
workgroup memory; and the sizes wgpu requires of a binding.

A struct or alias is resolved through the resolver of constants.py (a chain of structs
holding the one before grows its work list, not Python's stack); the layout of a type
recurses once per template list (``array<array<...>>``), which C's nesting check bounds
(``MAX_NESTING_DEPTH`` levels, checked before the text is read: tokens.py's ``_prepare``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from .constants import _Constants, _Key
from .parser import _Member, _Type, _type_of
from .tokens import _error, _Source, _Tok

_Layout = tuple[int, int, bool]  # size, align, fixed-size

_SCALAR_SIZE = {"f32": 4, "i32": 4, "u32": 4, "f16": 2}
_SHORTHAND = {"f": "f32", "h": "f16", "i": "i32", "u": "u32"}
# vecN and matCxR by name, with their sizes and component suffix ("" when templated)
_VECTORS = {f"vec{n}{suffix}": (n, suffix) for n in (2, 3, 4) for suffix in ("", "f", "h", "i", "u")}
_MATRICES = {
    f"mat{c}x{r}{suffix}": (c, r, suffix) for c in (2, 3, 4) for r in (2, 3, 4) for suffix in ("", "f", "h")
}


def _round_up(align: int, n: int) -> int:
    return -(-n // align) * align



class _Layouts(_Constants):
    """A module's declarations and constants, and the layout of its types."""

    def __init__(self, src: _Source) -> None:
        super().__init__(src)
        self._arg_types: dict[tuple[int, int], _Type] = {}  # type_of's, by where the tokens are

    def _resolve(self, key: _Key) -> object:
        kind, name, shareable = key
        if kind == "struct":
            return self._struct_layout(self.structs[name], shareable)
        if kind == "alias":
            return self.layout(self.aliases[name], shareable)
        return super()._resolve(key)

    def layout(self, t: _Type, shareable: bool = True) -> _Layout:
        """(size, align, fixed-size) of a type by WGSL's layout rules. A runtime-sized
        array has size 0; a struct ending in one has that array's offset as its size.
        ``shareable``: for a buffer, where bool has no layout; else for workgroup memory.
        The module's own structs and aliases come first: they shadow predeclared names
        (a struct named vec2f is that struct)."""
        if t.name in self.aliases:
            return cast(_Layout, self._resolved("alias", t.name, t, shareable))
        if t.name in self.structs:
            return cast(_Layout, self._resolved("struct", t.name, t, shareable))
        if t.name in _SCALAR_SIZE:
            size = _SCALAR_SIZE[t.name]
            return size, size, True
        if t.name == "atomic":
            return 4, 4, True
        if (vec := _VECTORS.get(t.name)) is not None:
            n, s = vec[0], self._component(t, vec[1], shareable)
            return n * s, (2 if n == 2 else 4) * s, True
        if (mat := _MATRICES.get(t.name)) is not None:
            cols, rows, s = mat[0], mat[1], self._component(t, mat[2], shareable)
            align = (2 if rows == 2 else 4) * s
            return cols * _round_up(align, rows * s), align, True
        if t.name == "array" and t.args:
            size, align, _ = self.layout(self.type_of(t.args[0], t), shareable)
            if len(t.args) == 1:
                return 0, align, False
            count = self.eval_int(t.args[1], t, f"the element count of {t}")
            if count <= 0:
                raise _error(t, f"{t} has {count} elements", "use a count of at least 1.")
            return count * _round_up(align, size), align, True
        if t.name == "bool":
            if not shareable:
                return 4, 4, True
            raise _error(t, "bool has no memory layout, so it cannot be in a buffer", "use u32 (0 or 1).")
        raise _error(
            t,
            f"type {t} cannot be laid out in memory: it is no scalar, vector, matrix, array,"
            " atomic, alias or struct of this module",
            "declare the struct or alias, or use a buffer-compatible type.",
        )

    def type_of(self, toks: Sequence[_Tok], where: _Type) -> _Type:
        """``_type_of(toks, where)``, parsed once per template argument."""
        key = (toks[0].at, len(toks)) if toks else (-1, 0)
        found = self._arg_types.get(key)
        if found is None:
            found = self._arg_types[key] = _type_of(toks, where)
        return found

    def binding_size(self, t: _Type, layout: _Layout | None = None) -> int:
        """The byte size wgpu requires of a buffer bound as ``t``: ``layout()``'s size
        (``layout`` when the caller has it), except that a runtime-sized array counts one
        element (naga sizes it so). A loop, not a recursion, down a chain of structs each
        ending in the next (invalid WGSL, which compile() reflects before naga refuses it)."""
        size, align, fixed = self.layout(t) if layout is None else layout
        enclosing: list[tuple[int, int]] = []  # (fixed part, align) of each struct on the way
        while not fixed:
            t = self._unalias(t)
            if t.name not in self.structs:  # the runtime-sized array: one element
                elem_size, elem_align, _ = self.layout(self.type_of(t.args[0], t))
                size = _round_up(elem_align, elem_size)
                break
            # the struct's last member is runtime-sized: the struct's fixed part, then
            # that member's binding size, rounded up to the struct's alignment
            enclosing.append((size, align))
            t = self.structs[t.name][-1].type
            size, align, fixed = self.layout(t)
        for fixed_part, struct_align in reversed(enclosing):
            size = _round_up(struct_align, fixed_part + size)
        return size

    def _component(self, t: _Type, suffix: str, shareable: bool) -> int:
        if suffix:
            return _SCALAR_SIZE[_SHORTHAND[suffix]]
        if len(t.args) != 1:
            raise _error(t, f"{t} needs one component type", f"write e.g. {t.name}<f32>.")
        return self.layout(self.type_of(t.args[0], t), shareable)[0]

    def _struct_layout(self, members: list[_Member], shareable: bool) -> _Layout:
        offset, struct_align = 0, 1
        for member in members:
            size, align, fixed = self.layout(member.type, shareable)
            if "align" in member.attrs:
                align = self.attr_int(member.attrs["align"], "align")
            if "size" in member.attrs:
                size = self.attr_int(member.attrs["size"], "size")
            offset = _round_up(align, offset)
            struct_align = max(struct_align, align)
            if not fixed:  # a runtime-sized array, always the last member
                return offset, struct_align, False
            offset += size
        return _round_up(struct_align, offset), struct_align, True


    def workgroup_storage(self, used: set[str]) -> int:
        """Bytes of workgroup memory the entry point uses: WebGPU's sum, over each used
        var<workgroup>, of its size rounded up to 16."""
        return sum(
            _round_up(16, self.layout(var.type, shareable=False)[0])
            for var in self.vars
            if var.space == "workgroup" and var.name in used and var.type is not None
        )


    def immediate_size(self, used: set[str]) -> int:
        """Bytes of the var<immediate> data the entry point uses (no binding), laid out as
        any host-shareable type and rounded up to 4. naga has already refused an entry
        point that uses more than one."""
        types = [v.type for v in self.vars if v.space == "immediate" and v.name in used and v.type is not None]
        return _round_up(4, self.layout(types[0])[0]) if types else 0
