"""WGSL binding reflection for compute pipelines, done in Python.

wgpu-native has no reflection API, yet before it builds a pipeline vyre_native must
know which buffers an entry point binds, how many bytes each needs, which are outputs,
and the workgroup size. This module reads just enough WGSL to tell: a tokenizer
(nested block comments, attributes, template lists, integer literals), a parser of
module-scope declarations (function bodies are kept only as the names they mention),
an integer constant-expression evaluator, a layout calculator following WGSL's
alignment and size rules, and a walk of the call graph. It does not validate WGSL:
wgpu-native does that when it compiles the module.

What counts as a binding: a module-scope ``var<storage>`` or ``var<storage, read>``
(kind ``storage_read``), ``var<storage, read_write>`` (``storage_read_write``) or
``var<uniform>`` (``uniform``) with ``@group`` and ``@binding``. ``var<workgroup>`` and
``var<private>`` are not bindings. Handles (textures, samplers, binding arrays,
acceleration structures: any ``var`` with ``@group``/``@binding`` but no address space)
cannot be bound by vyre_native.

Which bindings take handles: only those the entry point uses, meaning their name is
an identifier in the entry point's body or, transitively, in the body of a module-scope
function it calls. Bindings it does not use take no handle, as in wgpu's own layout
inference, so one module may declare the buffers of several entry points, and an
unsupported handle is an error only when the chosen entry point uses it. The test is
by name: a local that shadows a global's name makes that binding count as used, a
conservative over-approximation (the caller then passes a buffer the shader ignores).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import NamedTuple

from .errors import ShaderError

__all__ = ["Binding", "ModuleReflection", "reflect"]


@dataclass(frozen=True)
class Binding:
    """A buffer binding the entry point uses.

    ``kind`` is ``"storage_read"``, ``"storage_read_write"`` or ``"uniform"``;
    ``is_output`` is true for a read_write binding not named in ``preserve``;
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
    """What a compute entry point needs: its bindings in (group, binding) order,
    its workgroup size (``None`` when overrides without values decide it), and every
    override the module declares, with its WGSL scalar type name."""

    entry_point: str
    workgroup_size: tuple[int, int, int] | None
    bindings: list[Binding]
    overrides: dict[str, str]
    #: per binding, the size wgpu itself requires (naga's rule: a runtime-sized array
    #: counts one element). Declared in the bind-group layout, it spares wgpu a size
    #: check on every dispatch; it is min_size for every fixed-size type.
    binding_sizes: list[int] = field(default_factory=list)
    #: bytes of the entry point's var<immediate> data (its type's size, rounded up to 4
    #: as wgpu requires of a pipeline layout's immediate size), 0 when it uses none
    immediate_size: int = 0


# ---------------------------------------------------------------- tokens


class _Tok(NamedTuple):
    kind: str  # "ident", "num" or "punct" (punctuation is always one character)
    text: str
    line: int


# Punctuation stays single-character so that `>>` closing two template lists needs no
# special case; only names are needed from expressions, never operators like `<=`.
# Whitespace matches no alternative, so finditer skips it.
_TOKEN_RE = re.compile(
    r"(?P<ident>[^\W\d]\w*)"
    r"|(?P<num>0[xX](?:[0-9a-fA-F]*\.[0-9a-fA-F]*|[0-9a-fA-F]+)[pP][+-]?\d+[fh]?"
    r"|0[xX][0-9a-fA-F]*\.[0-9a-fA-F]*|0[xX][0-9a-fA-F]+[iu]?"
    r"|(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?[fh]?|\d+[eE][+-]?\d+[fh]?|\d+[fhiu]?)"
    r"|(?P<punct>\S)"
)
_COMMENT_RE = re.compile(r"//[^\n]*|/\*")
_INT_RE = re.compile(r"(0[xX][0-9a-fA-F]+|\d+)([iu]?)$")


def _tokenize(src: str) -> list[_Tok]:
    toks: list[_Tok] = []
    for line, text in enumerate(_strip_comments(src).split("\n"), 1):
        # every alternative of the pattern is a named group, so lastgroup is never None
        toks += [_Tok(str(m.lastgroup), m.group(), line) for m in _TOKEN_RE.finditer(text)]
    return toks


def _strip_comments(src: str) -> str:
    """``src`` with each comment replaced by a blank and the newlines it spanned, so that
    tokens keep their line numbers."""
    out: list[str] = []
    pos = 0
    while (match := _COMMENT_RE.search(src, pos)) is not None:
        end = _block_comment_end(src, match.start()) if match.group() == "/*" else match.end()
        out += [src[pos : match.start()], " ", "\n" * src.count("\n", match.start(), end)]
        pos = end
    out.append(src[pos:])
    return "".join(out)


def _block_comment_end(src: str, start: int) -> int:
    """The index just past the block comment at ``start``; block comments nest in WGSL."""
    depth, pos = 0, start
    while True:
        opener, closer = src.find("/*", pos), src.find("*/", pos)
        if closer < 0:
            line = src.count("\n", 0, start) + 1
            raise ShaderError(
                f"line {line}: block comment `/*` is never closed. Fix: add the missing `*/`"
                " (block comments nest in WGSL, so every `/*` inside needs its own `*/`).",
                line=line,
            )
        if 0 <= opener < closer:
            depth, pos = depth + 1, opener + 2
        else:
            depth, pos = depth - 1, closer + 2
            if depth == 0:
                return pos


def _int_literal(tok: _Tok) -> int | None:
    match = _INT_RE.match(tok.text) if tok.kind == "num" else None
    if match is None:
        return None
    body = match.group(1)
    return int(body, 16) if body[:2] in ("0x", "0X") else int(body)


def _literal_type(text: str) -> str:
    """The concrete type of a literal; an AbstractInt becomes i32, an AbstractFloat f32."""
    match = _INT_RE.match(text)
    if match is not None:
        return "u32" if match.group(2) == "u" else "i32"
    return "f16" if text.endswith("h") else "f32"  # `h` is no hex digit: always a suffix


def _text(toks: Sequence[_Tok]) -> str:
    return "".join(t.text + (" " if t.text == "," else "") for t in toks)


def _unexpected(tok: _Tok, wanted: str) -> ShaderError:
    return ShaderError(
        f"line {tok.line}: expected {wanted}, found `{tok.text}`. Fix: correct the WGSL"
        " there (vyre_native reads module-scope declarations before wgpu-native compiles).",
        line=tok.line,
    )


def _depth_step(tok: _Tok, angle: bool) -> int:
    """How ``tok`` changes bracket depth; `<` `>` are brackets only in template lists."""
    if tok.kind != "punct":
        return 0
    if tok.text in "([{" or (angle and tok.text == "<"):
        return 1
    if tok.text in ")]}" or (angle and tok.text == ">"):
        return -1
    return 0


def _split(toks: Sequence[_Tok], angle: bool) -> list[list[_Tok]]:
    """Split at top-level commas; a trailing comma (allowed in WGSL lists) adds nothing."""
    items: list[list[_Tok]] = [[]]
    depth = 0
    for tok in toks:
        if depth == 0 and tok.text == ",":
            items.append([])
            continue
        depth += _depth_step(tok, angle)
        items[-1].append(tok)
    if not items[-1]:
        items.pop()
    return items


# ---------------------------------------------------------------- declarations


class _Type(NamedTuple):
    name: str
    args: tuple[tuple[_Tok, ...], ...]  # template arguments as tokens: types or expressions
    line: int

    def __str__(self) -> str:
        return self.name + (f"<{', '.join(_text(a) for a in self.args)}>" if self.args else "")


class _Attr(NamedTuple):
    args: list[list[_Tok]]
    line: int


class _Decl(NamedTuple):  # a module-scope const or override
    type: _Type | None
    init: list[_Tok] | None
    line: int


class _Var(NamedTuple):
    name: str
    space: str | None
    access: str | None
    type: _Type | None
    attrs: dict[str, _Attr]
    line: int


class _Member(NamedTuple):
    type: _Type
    attrs: dict[str, _Attr]


class _Fn(NamedTuple):
    attrs: dict[str, _Attr]
    refs: frozenset[str]  # identifiers in the body, except member names after `.`
    line: int


class _Parser:
    def __init__(self, toks: Sequence[_Tok]) -> None:
        self.toks = toks
        self.pos = 0

    def more(self) -> bool:
        return self.pos < len(self.toks)

    def peek(self) -> str:
        return self.toks[self.pos].text if self.more() else ""

    def next(self) -> _Tok:
        if not self.more():
            raise self._ended()
        self.pos += 1
        return self.toks[self.pos - 1]

    def _ended(self) -> ShaderError:
        line = self.toks[-1].line if self.toks else 1
        return ShaderError(
            f"line {line}: the WGSL ends in the middle of a declaration. Fix: complete it.",
            line=line,
        )

    def expect(self, text: str) -> _Tok:
        tok = self.next()
        if tok.text != text:
            raise _unexpected(tok, f"`{text}`")
        return tok

    def accept(self, text: str) -> bool:
        if self.peek() == text:
            self.pos += 1
            return True
        return False

    def ident(self) -> _Tok:
        tok = self.next()
        if tok.kind != "ident":
            raise _unexpected(tok, "a name")
        return tok

    def bracketed(self, opener: str) -> list[_Tok]:
        """Consume ``opener`` through its matching closer; return the tokens between."""
        self.expect(opener)
        depth, start = 1, self.pos
        for end in range(start, len(self.toks)):
            depth += _depth_step(self.toks[end], opener == "<")
            if depth == 0:
                self.pos = end + 1
                return list(self.toks[start:end])
        raise self._ended()

    def statement(self) -> list[_Tok]:
        """The tokens up to the next `;`, which is consumed."""
        out: list[_Tok] = []
        while (tok := self.next()).text != ";":
            out.append(tok)
        return out

    def type(self) -> _Type:
        name = self.ident()
        args = _split(self.bracketed("<"), angle=True) if self.peek() == "<" else []
        return _Type(name.text, tuple(tuple(a) for a in args), name.line)

    def attrs(self) -> dict[str, _Attr]:
        out: dict[str, _Attr] = {}
        while self.accept("@"):
            name = self.ident()
            args = _split(self.bracketed("("), angle=False) if self.peek() == "(" else []
            out[name.text] = _Attr(args, name.line)
        return out


def _type_of(toks: Sequence[_Tok]) -> _Type:
    parser = _Parser(toks)
    parsed = parser.type()
    if parser.more():
        raise _unexpected(parser.next(), "the end of the type")
    return parsed


def _refs(body: Sequence[_Tok]) -> frozenset[str]:
    return frozenset(
        t.text for i, t in enumerate(body) if t.kind == "ident" and (i == 0 or body[i - 1].text != ".")
    )


# ---------------------------------------------------------------- the module


class _Unresolved(Exception):
    """An override with no value in ``constants`` and no default was needed; callers turn
    this into a ShaderError or, for the workgroup size, into ``None``."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


_SCALAR_SIZE = {"f32": 4, "i32": 4, "u32": 4, "f16": 2}
_SHORTHAND = {"f": "f32", "h": "f16", "i": "i32", "u": "u32"}
_VEC_RE = re.compile(r"vec([234])([fhiu]?)$")
_MAT_RE = re.compile(r"mat([234])x([234])([fh]?)$")


def _round_up(align: int, n: int) -> int:
    return -(-n // align) * align


def _listing(names: Sequence[str]) -> str:
    return ", ".join(f"`{n}`" for n in names) or "none"


class _Module:
    def __init__(self, src: str, constants: Mapping[str, float | int | bool]) -> None:
        self.constants = constants
        self.consts: dict[str, _Decl] = {}
        self.overrides: dict[str, _Decl] = {}
        self.structs: dict[str, list[_Member]] = {}
        self.aliases: dict[str, _Type] = {}
        self.vars: list[_Var] = []
        self.fns: dict[str, _Fn] = {}
        self._active: set[str] = set()  # declarations being resolved, to report cycles
        parser = _Parser(_tokenize(src))
        while parser.more():
            self._declaration(parser)

    def _declaration(self, p: _Parser) -> None:
        attrs = p.attrs()
        kw = p.next()
        if kw.text == "fn":
            name = p.ident()
            p.bracketed("(")
            while p.peek() != "{":  # the return type, if any
                p.next()
            self.fns[name.text] = _Fn(attrs, _refs(p.bracketed("{")), name.line)
        elif kw.text == "var":
            angle = p.peek() == "<"
            qual = [_text(q) for q in _split(p.bracketed("<"), angle=True)] if angle else []
            name = p.ident()
            vtype = p.type() if p.accept(":") else None
            p.statement()  # an initializer, allowed only on private vars
            space = qual[0] if qual else None
            access = qual[1] if len(qual) > 1 else None
            self.vars.append(_Var(name.text, space, access, vtype, attrs, name.line))
        elif kw.text in ("const", "override"):
            name = p.ident()
            dtype = p.type() if p.accept(":") else None
            init = p.statement()
            if init and init[0].text != "=":
                raise _unexpected(init[0], "`=` or `;`")
            table = self.consts if kw.text == "const" else self.overrides
            table[name.text] = _Decl(dtype, init[1:] or None, name.line)
        elif kw.text == "struct":
            name = p.ident()
            body = _Parser(p.bracketed("{"))
            members: list[_Member] = []
            while body.more():
                mattrs = body.attrs()
                body.ident()  # layout needs only the member's type and attributes
                body.expect(":")
                members.append(_Member(body.type(), mattrs))
                if body.more():
                    body.expect(",")
            self.structs[name.text] = members
        elif kw.text in ("alias", "type"):  # `type` is the pre-2023 spelling of `alias`
            name = p.ident()
            p.expect("=")
            self.aliases[name.text] = p.type()
            p.expect(";")
        elif kw.text in ("enable", "requires", "diagnostic", "const_assert"):
            p.statement()
        elif kw.text != ";":  # a lone `;` is an empty declaration
            raise _unexpected(kw, "a module-scope declaration")

    @contextmanager
    def _resolving(self, name: str, line: int) -> Iterator[None]:
        if name in self._active:
            raise ShaderError(
                f"line {line}: `{name}` is defined in terms of itself. Fix: break the cycle;"
                " WGSL declarations cannot be recursive.",
                line=line,
            )
        self._active.add(name)
        try:
            yield
        finally:
            self._active.discard(name)

    # -- constant expressions

    def _eval(self, toks: Sequence[_Tok], line: int) -> int:
        """Evaluate integer literals, const/override names, + - * / and parentheses."""
        pos = 0

        def bad() -> ShaderError:
            return ShaderError(
                f"line {line}: `{_text(toks)}` is not an integer expression vyre_native can"
                " evaluate (it takes integer literals, names of module-scope consts and"
                " overrides, + - * / and parentheses). Fix: write it in those terms.",
                line=line,
            )

        def take() -> _Tok:
            nonlocal pos
            if pos >= len(toks):
                raise bad()
            pos += 1
            return toks[pos - 1]

        def peek() -> str:
            return toks[pos].text if pos < len(toks) else ""

        def expr() -> int:
            value = term()
            while peek() in ("+", "-"):
                value = value + term() if take().text == "+" else value - term()
            return value

        def term() -> int:
            value = unary()
            while peek() in ("*", "/"):
                if take().text == "*":
                    value *= unary()
                    continue
                divisor = unary()
                if divisor == 0:
                    raise bad()
                quotient = abs(value) // abs(divisor)  # WGSL truncates toward zero
                value = quotient if (value < 0) == (divisor < 0) else -quotient
            return value

        def unary() -> int:
            tok = take()
            if tok.text == "-":
                return -unary()
            if tok.text == "(":
                value = expr()
                if take().text != ")":
                    raise bad()
                return value
            literal = _int_literal(tok)
            if literal is not None:
                return literal
            if tok.kind == "ident" and peek() != "(":  # calls such as min(a, b) are not evaluated
                return self._value(tok)
            raise bad()

        result = expr()
        if pos != len(toks):
            raise bad()
        return result

    def _value(self, tok: _Tok) -> int:
        name = tok.text
        decl = self.consts.get(name) or self.overrides.get(name)
        if decl is None:
            raise ShaderError(
                f"line {tok.line}: `{name}` in a constant expression is not a module-scope"
                f" const or override. Fix: declare it, e.g. `const {name} = 64;`.",
                line=tok.line,
            )
        if name in self.overrides and name in self.constants:
            value = self.constants[name]
            if isinstance(value, bool) or not float(value).is_integer():
                raise ShaderError(
                    f"constants[{name!r}] = {value!r} is used as an integer (line {tok.line})."
                    " Fix: pass an integer.",
                    line=tok.line,
                )
            return int(value)
        if decl.init is None:
            raise _Unresolved(name)
        with self._resolving(name, tok.line):
            return self._eval(decl.init, decl.line)

    def eval_int(self, toks: Sequence[_Tok], line: int, what: str) -> int:
        try:
            return self._eval(toks, line)
        except _Unresolved as e:
            raise ShaderError(
                f"line {line}: {what} depends on override `{e.name}`, which has no default"
                f" and no value in constants. Fix: pass constants={{'{e.name}': ...}}, or"
                " give the override a default.",
                line=line,
            ) from None

    def attr_int(self, attr: _Attr, name: str) -> int:
        if len(attr.args) != 1:
            raise ShaderError(
                f"line {attr.line}: @{name} takes one argument, got {len(attr.args)}. Fix: write @{name}(n).",
                line=attr.line,
            )
        return self.eval_int(attr.args[0], attr.line, f"@{name}")

    def scalar_type(self, decl: _Decl, name: str) -> str:
        """An override's type: declared, else that of the first literal, conversion or
        const/override name in its initializer."""
        if decl.type is not None:
            return self._unalias(decl.type).name
        for tok in decl.init or ():
            if tok.text in ("f32", "f16", "i32", "u32", "bool"):
                return tok.text
            if tok.text in ("true", "false"):
                return "bool"
            if tok.kind == "num":
                return _literal_type(tok.text)
            other = self.consts.get(tok.text) or self.overrides.get(tok.text)
            if other is not None:
                with self._resolving(tok.text, tok.line):
                    return self.scalar_type(other, tok.text)
        raise ShaderError(
            f"line {decl.line}: cannot tell the type of `{name}`. Fix: declare it,"
            f" e.g. `override {name}: u32 = ...;`.",
            line=decl.line,
        )

    def _unalias(self, t: _Type) -> _Type:
        if t.name not in self.aliases:
            return t
        with self._resolving(t.name, t.line):
            return self._unalias(self.aliases[t.name])

    # -- layout

    def layout(self, t: _Type) -> tuple[int, int, bool]:
        """(size, align, fixed-size) of a type by WGSL's layout rules. A runtime-sized
        array has size 0; a struct ending in one has that array's offset as its size."""
        if t.name in _SCALAR_SIZE:
            size = _SCALAR_SIZE[t.name]
            return size, size, True
        if t.name == "atomic":
            return 4, 4, True
        if (vec := _VEC_RE.match(t.name)) is not None:
            n, s = int(vec[1]), self._component(t, vec[2])
            return n * s, (2 if n == 2 else 4) * s, True
        if (mat := _MAT_RE.match(t.name)) is not None:
            cols, rows, s = int(mat[1]), int(mat[2]), self._component(t, mat[3])
            align = (2 if rows == 2 else 4) * s
            return cols * _round_up(align, rows * s), align, True
        if t.name == "array" and t.args:
            size, align, _ = self.layout(_type_of(t.args[0]))
            if len(t.args) == 1:
                return 0, align, False
            count = self.eval_int(t.args[1], t.line, f"the element count of {t}")
            if count <= 0:
                raise ShaderError(
                    f"line {t.line}: {t} has {count} elements. Fix: use a count of at least 1.",
                    line=t.line,
                )
            return count * _round_up(align, size), align, True
        if t.name in self.aliases:
            return self.layout(self._unalias(t))
        if t.name in self.structs:
            with self._resolving(t.name, t.line):
                return self._struct_layout(self.structs[t.name])
        if t.name == "bool":
            raise ShaderError(
                f"line {t.line}: bool has no memory layout, so it cannot be in a buffer."
                " Fix: use u32 (0 or 1).",
                line=t.line,
            )
        raise ShaderError(
            f"line {t.line}: type {t} cannot be laid out in a buffer: it is no scalar,"
            " vector, matrix, array, atomic, alias or struct of this module."
            " Fix: declare the struct or alias, or use a buffer-compatible type.",
            line=t.line,
        )

    def binding_size(self, t: _Type) -> int:
        """The byte size wgpu requires of a buffer bound as ``t``: ``layout()``'s size,
        except that a runtime-sized array counts one element (naga sizes it so)."""
        size, align, fixed = self.layout(t)
        if fixed:
            return size
        while t.name in self.aliases:
            t = self._unalias(t)
        if t.name == "array":
            elem_size, elem_align, _ = self.layout(_type_of(t.args[0]))
            return _round_up(elem_align, elem_size)
        # a struct whose last member is the runtime-sized array: its fixed part, one
        # element, rounded up to the struct's alignment
        return _round_up(align, size + self.binding_size(self.structs[t.name][-1].type))

    def _component(self, t: _Type, suffix: str) -> int:
        if suffix:
            return _SCALAR_SIZE[_SHORTHAND[suffix]]
        if len(t.args) != 1:
            raise ShaderError(
                f"line {t.line}: {t} needs one component type. Fix: write e.g. {t.name}<f32>.",
                line=t.line,
            )
        return self.layout(_type_of(t.args[0]))[0]

    def _struct_layout(self, members: list[_Member]) -> tuple[int, int, bool]:
        offset, struct_align = 0, 1
        for member in members:
            size, align, fixed = self.layout(member.type)
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

    # -- entry point and use

    def entry(self, name: str) -> _Fn:
        computes = [n for n, f in self.fns.items() if "compute" in f.attrs]
        fn = self.fns.get(name)
        if fn is None:
            raise ShaderError(
                f"entry point `{name}` not found: the module has no fn of that name; its"
                f" compute entry points are {_listing(computes)}. Fix: pass entry_point= one"
                f" of those, or declare `@compute @workgroup_size(64) fn {name}()`."
            )
        stage = next((s for s in ("vertex", "fragment") if s in fn.attrs), None)
        if stage is not None or "compute" not in fn.attrs:
            what = f"a @{stage} entry point" if stage else "a function with no @compute attribute"
            raise ShaderError(
                f"line {fn.line}: `{name}` is {what}; vyre_native runs only @compute entry"
                f" points, and this module's are {_listing(computes)}. Fix: pass entry_point="
                f" one of those, or mark `{name}` @compute @workgroup_size(...).",
                line=fn.line,
            )
        return fn

    def workgroup_size(self, name: str, fn: _Fn) -> tuple[int, int, int] | None:
        attr = fn.attrs.get("workgroup_size")
        if attr is None or not 1 <= len(attr.args) <= 3:
            raise ShaderError(
                f"line {fn.line}: compute entry point `{name}` needs @workgroup_size with one"
                " to three dimensions. Fix: add e.g. @workgroup_size(64).",
                line=fn.line,
            )
        try:
            dims = [self._eval(arg, attr.line) for arg in attr.args]
        except _Unresolved:  # the pipeline's override values decide it
            return None
        if min(dims) < 1:
            raise ShaderError(
                f"line {attr.line}: @workgroup_size of `{name}` evaluates to {dims}. Fix: make"
                " every dimension at least 1.",
                line=attr.line,
            )
        dims += [1] * (3 - len(dims))
        return dims[0], dims[1], dims[2]

    def used_names(self, entry: str) -> set[str]:
        """Every name mentioned in the entry point and the functions it reaches."""
        names: set[str] = set()
        pending = [entry]
        while pending:
            refs = self.fns[pending.pop()].refs
            pending += [r for r in refs - names if r in self.fns and r != entry]
            names |= refs
        return names

    def binding(self, var: _Var, entry: str) -> tuple[int, int, str, int, int]:
        """(group, binding, kind, min_size, binding_size) of a used buffer binding."""
        if "group" not in var.attrs or "binding" not in var.attrs:
            raise ShaderError(
                f"line {var.line}: `{var.name}` is used by entry point `{entry}` but has no"
                " @group/@binding. Fix: add @group(0) @binding(n), with an n of its own.",
                line=var.line,
            )
        group = self.attr_int(var.attrs["group"], "group")
        binding = self.attr_int(var.attrs["binding"], "binding")
        where = f"binding @group({group}) @binding({binding}) `{var.name}`"
        if var.space is None:
            raise ShaderError(
                f"line {var.line}: {where} has type {var.type or 'none'}, which vyre_native"
                " cannot bind. Fix: pass the data in a storage or uniform buffer, or stop"
                f" using `{var.name}` from entry point `{entry}` (unused bindings are ignored).",
                line=var.line,
            )
        kind = {
            ("uniform", None): "uniform",
            ("storage", None): "storage_read",
            ("storage", "read"): "storage_read",
            ("storage", "read_write"): "storage_read_write",
        }.get((var.space, var.access))
        if kind is None or var.type is None:
            qual = var.space + (f", {var.access}" if var.access else "")
            raise ShaderError(
                f"line {var.line}: {where} is declared var<{qual}> {var.name}:"
                f" {var.type or '(no type)'}, which vyre_native cannot bind. Fix: declare it"
                " var<storage, read>, var<storage, read_write> or var<uniform>, with a type.",
                line=var.line,
            )
        return group, binding, kind, self.layout(var.type)[0], self.binding_size(var.type)


def reflect(
    wgsl: str,
    entry_point: str = "main",
    preserve: Sequence[str] = (),
    constants: Mapping[str, float | int | bool] | None = None,
) -> ModuleReflection:
    """Reflect the buffer bindings, workgroup size and overrides of a compute entry point.

    Pure Python over the source text, about 2 microseconds a token (a few milliseconds
    for a 300-line module), so callers reflect once per pipeline and keep the result.
    Raises ShaderError for what vyre_native cannot run or bind (see the module docstring).
    """
    module = _Module(wgsl, constants or {})
    for key in module.constants:
        if key not in module.overrides:
            raise ShaderError(
                f"constants names `{key}`, which is no override declared in the module;"
                f" its overrides are {_listing(list(module.overrides))}. Fix: remove `{key}`"
                f" from constants, or declare `override {key}: u32;` (or f32, i32, bool)."
            )
    fn = module.entry(entry_point)
    workgroup_size = module.workgroup_size(entry_point, fn)
    used = module.used_names(entry_point)
    found: list[tuple[int, int, str, str, int, int]] = []
    taken: dict[tuple[int, int], str] = {}
    for var in module.vars:
        if var.name in used and var.space not in ("workgroup", "private", "immediate"):
            group, binding, kind, size, wgpu_size = module.binding(var, entry_point)
            other = taken.setdefault((group, binding), var.name)
            if other != var.name:
                raise ShaderError(
                    f"`{other}` and `{var.name}` are both @group({group}) @binding({binding})"
                    f" and entry point `{entry_point}` uses both. Fix: give each its own"
                    " binding number.",
                    line=var.line,
                )
            found.append((group, binding, var.name, kind, size, wgpu_size))
    found.sort()
    read_write = [name for _, _, name, kind, _, _ in found if kind == "storage_read_write"]
    for name in preserve:
        if name not in read_write:
            kind_of = {f[2]: f[3] for f in found}
            what = f"a {kind_of[name]} binding" if name in kind_of else "not a binding it uses"
            raise ShaderError(
                f"preserve names `{name}`, which is {what}; preserve applies only to"
                f" storage_read_write bindings, and those entry point `{entry_point}` uses are"
                f" {_listing(read_write)}. Fix: remove `{name}` from preserve."
            )
    bindings = [
        Binding(
            group,
            binding,
            name,
            kind,
            is_output=name in read_write and name not in preserve,
            preserve=name in preserve,
            min_size=size,
        )
        for group, binding, name, kind, size, _ in found
    ]
    overrides = {name: module.scalar_type(decl, name) for name, decl in module.overrides.items()}
    immediate_size = _immediate_size(module, used)
    return ModuleReflection(
        entry_point, workgroup_size, bindings, overrides, [f[5] for f in found], immediate_size
    )


def _immediate_size(module: _Module, used: set[str]) -> int:
    """Bytes of the var<immediate> data the entry point uses (no binding), laid out as any
    host-shareable type and rounded up to 4. naga has already refused an entry point that
    uses more than one."""
    types = [v.type for v in module.vars if v.space == "immediate" and v.name in used and v.type is not None]
    return _round_up(4, module.layout(types[0])[0]) if types else 0
