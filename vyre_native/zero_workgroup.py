"""WGSL's zero-initialisation of ``var<workgroup>`` memory, done by rewriting the source.

WGSL promises that every ``var<workgroup>`` an entry point uses holds zero when its
workgroup starts. wgpu-native 29 does not keep that promise: its
``wgpuDeviceCreateComputePipeline`` passes wgpu-core
``zero_initialize_workgroup_memory: false`` (marked ``TODO(wgpu.h)``: webgpu.h and wgpu.h
have no field for it), so wgpu-hal tells naga ``ZeroInitializeWorkgroupMemoryMode::None``
and the memory starts with whatever the last workgroup on that core left there.

So vyre_native adds the zeroing to the module before wgpu-native compiles it:

- a module-scope ``fn`` (a name the module does not use) takes the entry point's
  ``local_invocation_index`` and zeroes each ``var<workgroup>`` the entry point uses
  (``reflect``'s by-name test: never an unused one, which WGSL does not count either):
  arrays strided over the workgroup, each element by one invocation; a struct that holds
  an array member by member (so that its arrays are strided); atomics with
  ``atomicStore``; any other value (a struct too) by invocation 0 as ``T()``; then
  ``workgroupBarrier()``, so every invocation sees the zeros. A path down nested
  structs goes on from a pointer (``let p = &...;``) every ``_PATH_MAX`` accesses, so
  no chain of structs makes the zeroing nest past the nesting check;
- the entry point calls it first thing, passing its own ``local_invocation_index``
  (a parameter, or a member of a struct parameter), or one added as a new parameter.

The function sits at module scope, so the entry point's parameters cannot shadow the
names it uses. Counts are the ones ``reflect`` evaluated (override values applied), so
an override-sized array is covered. The text is inserted without line breaks except
at the end, so every line of the user's code keeps its number. What this cannot do: a
module that declares its own ``workgroupBarrier`` (or, where it needs them,
``atomicStore`` or ``u32``) at module scope hides the built-in one, and is refused with
a ShaderError whose Fix is ``compile(..., zero_workgroup_memory=False)``.
"""

from __future__ import annotations

from math import prod

from .reflect.entry import _Module
from .reflect.parser import _Attr, _Parser, _Type
from .reflect.tokens import _Tok

__all__ = ["zero_workgroup_source"]

#: the local_invocation_index builtin, as @builtin names it
_INDEX = "local_invocation_index"
#: the largest count whose strided loop stays within u32; past it the pipeline is past
#: any device's max_compute_workgroup_storage_size (a u32 of bytes) and is refused
_U32_MAX = 0xFFFFFFFF
#: the member and index accesses one path of the zeroing code holds before it goes on
#: from a pointer: a path down a chain of nested structs written whole passes
#: VN_WGSL_MAX_NESTING_DEPTH (6 operators a level) at about 1,500 links
_PATH_MAX = 32


class _Names:
    """Fresh identifiers: none that the module's tokens or an earlier call use."""

    def __init__(self, taken: set[str]) -> None:
        self.taken = taken

    def __call__(self, base: str) -> str:
        name, n = base, 0
        while name in self.taken:
            n += 1
            name = f"{base}{n}"
        self.taken.add(name)
        return name


class _Rewrite:
    def __init__(
        self, module: _Module, entry: str, used: set[str], workgroup_size: tuple[int, int, int]
    ) -> None:
        self.module, self.src, self.entry = module, module.src, entry
        self.used = used
        self.invocations = prod(workgroup_size)
        self.texts = self.src.texts
        self._members: dict[str, list[tuple[str, _Type, dict[str, _Attr]]]] = {}
        self._facts: dict[str, tuple[bool, bool]] = {}

    # -- text

    def span(self, start: int, end: int) -> str:
        """The module's text of tokens ``start`` up to ``end``, as written."""
        offsets = self.src.offsets()
        return self.src.text[offsets[start] : offsets[end - 1] + len(self.texts[end - 1])]

    def type_text(self, t: _Type) -> str:
        p = _Parser(self.src, t.at)
        p.type()
        return self.span(t.at, p.pos)

    def arg_text(self, toks: tuple[_Tok, ...]) -> str:
        return self.span(toks[0].at, toks[-1].at + 1)

    # -- types

    def members(self, struct: str) -> list[tuple[str, _Type, dict[str, _Attr]]]:
        """A struct's members as (name, type, attributes); reflect keeps no names. Its body
        is found from where reflect saw its name declared, so each struct costs its own
        tokens only (a scan of the module for each was quadratic in a chain of structs)."""
        if struct not in self._members:
            body = _Parser(self.src, *_Parser(self.src, self.module.declared[struct] + 1).skip("{"))
            found: list[tuple[str, _Type, dict[str, _Attr]]] = []
            while body.more():
                attrs = body.attrs()
                name, _ = body.name()
                body.expect(":")
                found.append((name, body.type(), dict(attrs)))
                if body.more():
                    body.expect(",")
            self._members[struct] = found
        return self._members[struct]

    def count(self, t: _Type) -> int:
        return self.module.eval_int(t.args[1], t, f"the element count of {t}")

    def element(self, t: _Type) -> _Type:
        """``t`` past its aliases and arrays: the type of its innermost elements."""
        u = self.module._unalias(t)
        while u.name == "array" and u.args:
            u = self.module._unalias(self.module.type_of(u.args[0], u))
        return u

    def facts(self, struct: str) -> tuple[bool, bool]:
        """Whether a struct holds an atomic (at any depth, arrays included), and whether it
        holds an array through its members and theirs. Worked out once for each struct
        (an explicit stack: a chain of thousands of nested structs raises no
        RecursionError, and costs each struct its own members only)."""
        known, structs = self._facts, self.module.structs
        path: set[str] = set()  # the structs being worked out, each inside the one before
        pending = [(struct, False)]  # (struct, whether its members are known)
        while pending:
            s, inner_known = pending.pop()
            if inner_known:
                path.discard(s)
                atomic = array = False
                for m in structs[s]:
                    u = self.element(m.type)
                    array |= u is not self.module._unalias(m.type)
                    inner = known.get(u.name, (u.name == "atomic", False))  # (False, False) in a cycle
                    atomic |= inner[0]
                    array |= inner[1]
                known[s] = (atomic, array)
            elif s not in known and s not in path:  # in the path: a cycle, which reflect refuses
                path.add(s)
                pending.append((s, True))
                pending += [(u.name, False) for m in structs[s] if (u := self.element(m.type)).name in structs]
        return known[struct]

    def has_atomic(self, t: _Type) -> bool:
        """Whether ``t`` holds an atomic (then it has no zero-value constructor)."""
        u = self.element(t)
        return u.name == "atomic" or (u.name in self.module.structs and self.facts(u.name)[0])

    def reach(self, expr: str, depth: int, out: list[str], fresh: _Names) -> tuple[str, int]:
        """``expr``, ``depth`` member or index accesses long, as a base to access further:
        itself, or past _PATH_MAX accesses a pointer to it taken by a `let` added to
        ``out`` (then 1 access long), so that no path the zeroing writes nests past the
        nesting check (each `.` and `[` is an operator to it and to naga)."""
        if depth < _PATH_MAX:
            return expr, depth
        p = fresh("_vn_p")
        out.append(f"let {p} = &{expr};")
        return f"(*{p})", 1

    # -- code

    def zero_value(self, expr: str, depth: int, t: _Type, text: str, fresh: _Names) -> list[str]:
        """Statements by which one invocation zeroes ``expr`` (``depth`` accesses long),
        of type ``t`` written ``text``: ``T()`` when ``t`` has a constructor, else member
        by member, element by element, ``atomicStore`` for each atomic."""
        out: list[str] = []
        pending: list[tuple[str, int, _Type, str] | str] = [(expr, depth, t, text)]
        while pending:
            item = pending.pop()
            if isinstance(item, str):  # a loop's closing brace
                out.append(item)
                continue
            expr, depth, t, text = item
            if not self.has_atomic(t):
                out.append(f"{expr} = {text}();")
                continue
            u = self.module._unalias(t)
            if u.name == "atomic":
                self.need("atomicStore")
                out.append(f"atomicStore(&{expr}, 0);")
                continue
            base, depth = self.reach(expr, depth, out, fresh)
            if u.name == "array":
                j, n = fresh("_vn_j"), self.count(u)
                out.append(f"for (var {j} = 0u; {j} < {n}u; {j}++) {{")
                pending.append("}")
                elem = self.module.type_of(u.args[0], u)
                pending.append((f"{base}[{j}]", depth + 1, elem, self.arg_text(u.args[0])))
            else:  # a struct
                pending += [
                    (f"{base}.{name}", depth + 1, mt, self.type_text(mt))
                    for name, mt, _ in reversed(self.members(u.name))
                ]
        return out

    def body(self, lid: str, fresh: _Names) -> list[str] | None:
        """The zeroing function's statements, or None when there is nothing to zero or
        a count is too large for any device (its pipeline is refused for that). A struct
        that holds an array is zeroed member by member, so that its arrays are strided;
        any other is zeroed whole."""
        pointers: list[str] = []  # the `let`s by which long paths go on (see reach)
        first: list[str] = []  # what invocation 0 zeroes
        strided: list[str] = []
        wg = self.invocations
        pending = [
            (v.name, 0, v.type)
            for v in reversed(self.module.vars)
            if v.space == "workgroup" and v.name in self.used and v.type is not None
        ]
        if not pending:
            return None
        while pending:
            expr, depth, t = pending.pop()
            u = self.module._unalias(t)
            if u.name == "array" and len(u.args) == 2:
                n = self.count(u)
                if n + wg > _U32_MAX:
                    return None
                i = fresh("_vn_i")
                base, depth = self.reach(expr, depth, pointers, fresh)
                elem = " ".join(
                    self.zero_value(
                        f"{base}[{i}]", depth + 1, self.module.type_of(u.args[0], u), self.arg_text(u.args[0]), fresh
                    )
                )
                if n <= wg:
                    guard = "" if n == wg else f"if ({lid} < {n}u) "
                    strided.append(f"{guard}{{ let {i} = {lid}; {elem} }}")
                else:
                    k = fresh("_vn_k")
                    guard = "" if n % wg == 0 else f"if ({i} < {n}u) "
                    strided.append(
                        f"for (var {k} = 0u; {k} < {-(-n // wg)}u; {k}++) {{"
                        f" let {i} = {lid} + {k} * {wg}u; {guard}{{ {elem} }} }}"
                    )
            elif u.name in self.module.structs and self.facts(u.name)[1]:
                base, depth = self.reach(expr, depth, pointers, fresh)
                pending += [(f"{base}.{name}", depth + 1, mt) for name, mt, _ in reversed(self.members(u.name))]
            else:
                first += self.zero_value(expr, depth, t, self.type_text(t), fresh)
        self.need("workgroupBarrier")
        out = [f"if ({lid} == 0u) {{ {' '.join(first)} }}"] if first else []
        return [*pointers, *out, *strided, "workgroupBarrier();"]

    def need(self, name: str) -> None:
        at = self.module.declared.get(name)
        if at is not None:
            raise self.src.error(
                at,
                f"the module declares its own `{name}` at module scope, which hides WGSL's"
                " built-in one that vyre_native needs to zero-initialise the var<workgroup>"
                f" memory of entry point `{self.entry}`",
                f"rename the module's `{name}`, or initialise the memory in the kernel and pass"
                " compile(..., zero_workgroup_memory=False).",
            )

    def index_param(self) -> tuple[int, str | None, str | None]:
        """Where the entry point's parameter list starts (the token after its `(`), and
        its local_invocation_index as an expression and a type's text, if it has one."""
        fn = self.module.fns[self.entry]
        start, end = _Parser(self.src, fn.at + 1).skip("(")
        params = _Parser(self.src, start, end)
        while params.more():
            attrs = params.attrs()
            name, _ = params.name()
            params.expect(":")
            t = params.type()
            if _is_index(attrs):
                return start, name, self.type_text(t)
            u = self.module._unalias(t)
            if u.name in self.module.structs:
                for member, mt, mattrs in self.members(u.name):
                    if _is_index(mattrs):
                        return start, f"{name}.{member}", self.type_text(mt)
            if params.more():
                params.expect(",")
        return start, None, None


def _is_index(attrs: dict[str, _Attr]) -> bool:
    builtin = attrs.get("builtin")
    return builtin is not None and len(builtin.args) == 1 and [t.text for t in builtin.args[0]] == [_INDEX]


def zero_workgroup_source(
    module: _Module, entry: str, used: set[str], workgroup_size: tuple[int, int, int]
) -> str | None:
    """The module's text with the zero-initialisation of the var<workgroup> memory that
    entry point ``entry`` uses, or None when it uses none. ``module`` and ``used`` are
    what ``reflect`` parsed and found, its override values applied. Raises ShaderError
    only where the module hides a built-in the zeroing needs (see the module docstring)."""
    rewrite = _Rewrite(module, entry, used, workgroup_size)
    if not any(v.space == "workgroup" and v.name in used for v in module.vars):
        return None

    def generate() -> str | None:  # pure: resolve() calls it again after each need it meets
        fresh = _Names(set(rewrite.texts))
        params_at, lid_expr, lid_type = rewrite.index_param()
        added = ""
        if lid_expr is None:
            rewrite.need("u32")
            lid_expr, lid_type = fresh("_vn_local_index"), "u32"
            comma = "" if rewrite.texts[params_at] == ")" else ", "
            added = f"@builtin({_INDEX}) {lid_expr}: u32{comma}"
        zero_fn, lid = fresh("_vn_zero_workgroup"), fresh("_vn_lid")
        statements = rewrite.body(lid, fresh)
        if statements is None:
            return None
        src = rewrite.src
        offsets = src.offsets()
        fn = module.fns[entry]
        open_paren = offsets[params_at - 1] + 1
        open_brace = offsets[fn.body[0] - 1] + 1
        text = src.text
        return "".join(
            (
                text[:open_paren],
                added,
                text[open_paren:open_brace],
                f" {zero_fn}({lid_expr});",
                text[open_brace:],
                f"\nfn {zero_fn}({lid}: {lid_type}) {{ {' '.join(statements)} }}\n",
            )
        )

    return module.resolve(generate)
