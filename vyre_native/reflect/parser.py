"""The module-scope declarations of a WGSL module, parsed from its tokens.

Function bodies are kept only as where their tokens are (reflection needs the names they
mention); types and attributes keep their template and call arguments as tokens, which
``constants.py`` evaluates and ``layout.py`` lays out when asked. Nothing here recurses:
a bracket is skipped by its depth, and a type's template list is split into its
arguments, each parsed only when a layout needs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ..errors import ShaderError
from .tokens import _error, _kind, _Located, _new, _new_tok, _Source, _Tok, _unplaced


def _text(toks: Sequence[_Tok]) -> str:
    return "".join(t.text + (" " if t.text == "," else "") for t in toks)


# Brackets, as (openers, closers); `<` `>` are brackets only in template lists. Tokens
# are never empty and punctuation is one character, so `text in openers` is exact.
_PLAIN = ("([{", ")]}")
_ANGLE = ("([{<", ")]}>")
# What a lone token between brackets cannot be for the parser's one-token shortcuts
_PAREN_SEPARATORS = frozenset("()[]{},")
_ANGLE_SEPARATORS = frozenset("()[]{}<>,")


def _split(toks: Sequence[_Tok], angle: bool) -> list[list[_Tok]]:
    """Split at top-level commas; a trailing comma (allowed in WGSL lists) adds nothing."""
    opens, closes = _ANGLE if angle else _PLAIN
    items: list[list[_Tok]] = []
    depth = start = 0
    for i, tok in enumerate(toks):
        text = tok.text
        if text in opens:
            depth += 1
        elif text in closes:
            depth -= 1
        elif depth == 0 and text == ",":
            items.append(list(toks[start:i]))
            start = i + 1
    if start < len(toks):
        items.append(list(toks[start:]))
    return items


class _Type(NamedTuple):
    name: str
    args: tuple[tuple[_Tok, ...], ...]  # template arguments as tokens: types or expressions
    at: int  # the token the record starts at, its name: where errors point
    src: _Source

    def __str__(self) -> str:
        return self.name + (f"<{', '.join(_text(a) for a in self.args)}>" if self.args else "")


class _Attr(NamedTuple):
    args: list[list[_Tok]]
    at: int  # the token the record starts at, its name: where errors point
    src: _Source


class _Decl(NamedTuple):  # a module-scope const or override
    type: _Type | None
    init: list[_Tok] | None
    attrs: dict[str, _Attr]
    at: int  # the token the record starts at, its name: where errors point
    src: _Source


class _Var(NamedTuple):
    name: str
    space: str | None
    access: str | None
    type: _Type | None
    attrs: dict[str, _Attr]
    at: int  # the token the record starts at, its name: where errors point
    src: _Source


class _Member(NamedTuple):
    type: _Type
    attrs: dict[str, _Attr]


class _Fn(NamedTuple):
    attrs: dict[str, _Attr]
    body: tuple[int, int]  # where its body's tokens are (start, end)
    at: int  # the token the record starts at, its name: where errors point
    src: _Source


def _cycle(name: str, where: _Located) -> ShaderError:
    return _error(
        where,
        f"`{name}` is defined in terms of itself",
        "break the cycle; WGSL declarations cannot be recursive.",
    )


def _unexpected(tok: _Tok, wanted: str) -> ShaderError:
    return _error(
        tok,
        f"expected {wanted}, found `{tok.text}`",
        "correct the WGSL there (vyre_native reads module-scope declarations before wgpu-native compiles).",
    )


class _Parser:
    """Reads tokens ``start`` up to ``end`` of a module; tokens are made as it hands
    them out, so what it skips (function bodies) costs no objects. The hot paths make
    records with ``_new`` (NamedTuple's own constructor is Python code) and skip the
    generic bracket walk for the common one-token template and attribute arguments."""

    __slots__ = ("end", "pos", "src", "start", "texts")

    def __init__(self, src: _Source, start: int = 0, end: int | None = None) -> None:
        self.src, self.texts = src, src.texts
        self.pos = self.start = start
        self.end = len(src.texts) if end is None else end

    def more(self) -> bool:
        return self.pos < self.end

    def peek(self) -> str:
        return self.texts[self.pos] if self.pos < self.end else ""

    def next(self) -> _Tok:
        pos = self.pos
        if pos >= self.end:
            raise self._ended()
        self.pos = pos + 1
        return _new_tok((self.texts[pos], pos, self.src))

    def _ended(self) -> ShaderError:
        what, fix = "the WGSL ends in the middle of a declaration", "complete it."
        last = self.end - 1 if self.end > self.start else self.start - 1
        if last < 0:
            return _unplaced(what, "the WGSL has no tokens", fix)
        return self.src.error(last, f"{what}, after `{self.texts[last]}`", fix)

    def expect(self, text: str) -> None:
        if self.pos < self.end and self.texts[self.pos] == text:
            self.pos += 1
            return
        raise _unexpected(self.next(), f"`{text}`")

    def accept(self, text: str) -> bool:
        if self.pos < self.end and self.texts[self.pos] == text:
            self.pos += 1
            return True
        return False

    def ident(self) -> _Tok:
        tok = self.next()
        if tok.kind != "ident":
            raise _unexpected(tok, "a name")
        return tok

    def name(self) -> tuple[str, int]:
        """``ident()``'s text and index, without making its token."""
        pos = self.pos
        if pos < self.end:
            text = self.texts[pos]
            first = text[0]
            if (first.isascii() and (first.isalpha() or first == "_")) or _kind(text) == "ident":
                self.pos = pos + 1
                return text, pos
        tok = self.ident()  # raises: no name here
        return tok.text, tok.at

    def skip(self, opener: str) -> tuple[int, int]:
        """Consume ``opener`` through its matching closer; return the indices of the
        tokens between (start, end)."""
        self.expect(opener)
        start = self.pos
        if opener != "<":
            depths = self.src.depths()
            try:
                end = depths.index(depths[start - 1] - 1, start, self.end)
            except ValueError:
                raise self._ended() from None
            self.pos = end + 1
            return start, end
        opens, closes = _ANGLE
        texts, depth = self.texts, 1
        for end in range(start, self.end):
            text = texts[end]
            if text in opens:
                depth += 1
            elif text in closes:
                depth -= 1
                if depth == 0:
                    self.pos = end + 1
                    return start, end
        raise self._ended()

    def bracketed(self, opener: str) -> list[_Tok]:
        """Consume ``opener`` through its matching closer; return the tokens between."""
        return self.tokens(*self.skip(opener))

    def tokens(self, start: int, end: int) -> list[_Tok]:
        return self.src.tokens(start, end)

    def statement(self) -> list[_Tok]:
        """The tokens up to the next `;`, which is consumed."""
        start = self.pos
        for end in range(start, self.end):
            if self.texts[end] == ";":
                self.pos = end + 1
                return self.tokens(start, end)
        self.pos = self.end
        raise self._ended()

    def skip_statement(self) -> None:
        """``statement()``, its tokens unused."""
        try:
            self.pos = self.texts.index(";", self.pos, self.end) + 1
        except ValueError:
            self.pos = self.end
            raise self._ended() from None

    def type(self) -> _Type:
        name, at = self.name()
        pos, texts, src = self.pos, self.texts, self.src
        if pos >= self.end or texts[pos] != "<":
            return _new(_Type, (name, (), at, src))
        if pos + 2 < self.end and texts[pos + 2] == ">" and texts[pos + 1] not in _ANGLE_SEPARATORS:
            self.pos = pos + 3  # the common case, one token: array<f32>
            return _new(_Type, (name, ((_new_tok((texts[pos + 1], pos + 1, src)),),), at, src))
        return _new(_Type, (name, tuple(map(tuple, _split(self.bracketed("<"), angle=True))), at, src))

    def attrs(self) -> dict[str, _Attr]:
        out: dict[str, _Attr] = {}
        texts, end = self.texts, self.end
        while self.pos < end and texts[self.pos] == "@":
            self.pos += 1
            name, at = self.name()
            pos = self.pos
            args: list[list[_Tok]]
            if pos >= end or texts[pos] != "(":
                args = []
            elif pos + 2 < end and texts[pos + 2] == ")" and texts[pos + 1] not in _PAREN_SEPARATORS:
                self.pos = pos + 3  # the common case, one token: @binding(0)
                args = [[_new_tok((texts[pos + 1], pos + 1, self.src))]]
            else:
                args = _split(self.bracketed("("), angle=False)
            out[name] = _new(_Attr, (args, at, self.src))
        return out

    def qualifiers(self) -> list[str]:
        """A var's `<address space, access mode>`, each as text."""
        pos, texts, end = self.pos, self.texts, self.end
        if pos + 2 < end and texts[pos + 2] == ">" and texts[pos + 1] not in _ANGLE_SEPARATORS:
            self.pos = pos + 3  # the common cases: <workgroup>, <storage, read>
            return [texts[pos + 1]]
        if (
            pos + 4 < end
            and texts[pos + 2] == ","
            and texts[pos + 4] == ">"
            and texts[pos + 1] not in _ANGLE_SEPARATORS
            and texts[pos + 3] not in _ANGLE_SEPARATORS
        ):
            self.pos = pos + 5
            return [texts[pos + 1], texts[pos + 3]]
        return [_text(q) for q in _split(self.bracketed("<"), angle=True)]



def _type_of(toks: Sequence[_Tok], where: _Type) -> _Type:
    """The type written by ``toks``, consecutive tokens of one module: a template
    argument of ``where``."""
    if len(toks) == 1 and (tok := toks[0]).kind == "ident":
        return _new(_Type, (tok.text, (), tok.at, tok.src))  # the common case: a scalar or a struct
    if not toks:
        raise _error(where, f"{where} has an empty template argument", "write a type there.")
    parser = _Parser(toks[0].src, toks[0].at, toks[-1].at + 1)
    parsed = parser.type()
    if parser.more():
        raise _unexpected(parser.next(), "the end of the type")
    return parsed


class _Declarations:
    """A module's module-scope declarations, by kind and name (a function's body as where
    its tokens are), and the token of each declared name."""

    def __init__(self, src: _Source) -> None:
        self.consts: dict[str, _Decl] = {}
        self.overrides: dict[str, _Decl] = {}
        self.structs: dict[str, list[_Member]] = {}
        self.aliases: dict[str, _Type] = {}
        self.vars: list[_Var] = []
        self.fns: dict[str, _Fn] = {}
        self.declared: dict[str, int] = {}  # every module-scope name -> the token of its name
        self.src = src
        parser = _Parser(src)
        while parser.more():
            self._declaration(parser)

    def _declaration(self, p: _Parser) -> None:
        attrs = p.attrs()
        kw = p.peek()
        if kw == "fn":
            p.pos += 1
            name, at = p.name()
            p.skip("(")
            try:  # past the return type, if any
                p.pos = p.texts.index("{", p.pos, p.end)
            except ValueError:
                p.pos = p.end
                raise p._ended() from None
            self.fns[name] = _new(_Fn, (attrs, p.skip("{"), at, p.src))
            self.declared[name] = at
        elif kw == "var":
            p.pos += 1
            qual = p.qualifiers() if p.peek() == "<" else []
            name, at = p.name()
            vtype = p.type() if p.accept(":") else None
            p.skip_statement()  # an initializer, allowed only on private vars
            space = qual[0] if qual else None
            access = qual[1] if len(qual) > 1 else None
            self.vars.append(_new(_Var, (name, space, access, vtype, attrs, at, p.src)))
            self.declared[name] = at
        elif kw in ("const", "override"):
            p.pos += 1
            name, at = p.name()
            dtype = p.type() if p.accept(":") else None
            init = p.statement()
            if init and init[0].text != "=":
                raise _unexpected(init[0], "`=` or `;`")
            table = self.consts if kw == "const" else self.overrides
            table[name] = _new(_Decl, (dtype, init[1:] or None, attrs, at, p.src))
            self.declared[name] = at
        elif kw == "struct":
            p.pos += 1
            name, at = p.name()
            body = _Parser(p.src, *p.skip("{"))
            members: list[_Member] = []
            while body.more():
                mattrs = body.attrs()
                body.name()  # layout needs only the member's type and attributes
                body.expect(":")
                members.append(_new(_Member, (body.type(), mattrs)))
                if body.more():
                    body.expect(",")
            self.structs[name] = members
            self.declared[name] = at
        elif kw in ("alias", "type"):  # `type` is the pre-2023 spelling of `alias`
            p.pos += 1
            name, at = p.name()
            p.expect("=")
            self.aliases[name] = p.type()
            self.declared[name] = at
            p.expect(";")
        elif kw in ("enable", "requires", "diagnostic", "const_assert"):
            p.pos += 1
            p.skip_statement()
        else:
            kw_tok = p.next()  # raises at the end of the text
            if kw != ";":  # a lone `;` is an empty declaration
                raise _unexpected(kw_tok, "a module-scope declaration")

    def _unalias(self, t: _Type) -> _Type:
        """The type an alias stands for (followed through aliases of aliases), or ``t``."""
        if t.name not in self.aliases:
            return t
        seen: set[str] = set()
        while t.name in self.aliases:
            if t.name in seen:
                raise _cycle(t.name, t)
            seen.add(t.name)
            t = self.aliases[t.name]
        return t
