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

Depth: nesting deeper than wgpu-native's compiler survives is C's rule
(``vn_wgsl_check_nesting``, csrc/wgsl_depth.c, which ``vn_shader_create`` applies;
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

import re
from bisect import bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import accumulate, repeat
from typing import NamedTuple, Protocol, TypeVar, cast

from ._lib import check, ffi, lib
from .errors import ShaderError

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


# ---------------------------------------------------------------- tokens


#: How deep a module may nest before vn_shader_create refuses it, unseen by wgpu-native,
#: whose compiler recurses per level and would crash the process (C owns the rule and
#: says why: csrc/vyre_native.h, "WGSL nesting depth").
MAX_NESTING_DEPTH: int = lib.VN_WGSL_MAX_NESTING_DEPTH

# WGSL's line breaks (spec: "Blankspace and line breaks"): LF, VT, FF, CR, NEL, LS and
# PS, with CR LF one break. Each becomes "\n" before anything else reads the text, so a
# `//` comment ends at any of them and a CR-only file has its lines.
_LINE_BREAK_RE = re.compile("\r\n?|[\v\f\x85\u2028\u2029]")
# Blankspace, once line breaks are "\n": space, tab, line break, LRM and RLM.
_BLANK = " \t\n\u200e\u200f"

# One token a match, with the blankspace before it (taken possessively: every run of
# blankspace in a text that ends in a token is followed by one, so no match backtracks
# and no position is scanned twice). Punctuation stays single-character so that `>>`
# closing two template lists needs no special case; only names are needed from
# expressions, never operators like `<=`.
_TOKEN = (
    r"[-!%&()*+,/:;<=>?@\[\]^{|}~]"  # the common punctuation first: tried most often
    r"|NAME"  # a name: in ASCII text [A-Za-z_][0-9A-Za-z_]*; see _unicode_tokens
    r"|(?=[0-9.])(?:0[xX](?:[0-9a-fA-F]*\.[0-9a-fA-F]*|[0-9a-fA-F]+)[pP][+-]?[0-9]+[fh]?"  # a number
    r"|0[xX][0-9a-fA-F]*\.[0-9a-fA-F]*|0[xX][0-9a-fA-F]+[iu]?"
    r"|(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fh]?|[0-9]+[eE][+-]?[0-9]+[fh]?|[0-9]+[fhiu]?)"
    r"|[^ \t\n\u200e\u200f]"  # any other punctuation
)
# one token a match, group 1 (findall: the texts; finditer: the offsets too)
_TOKENS_RE = re.compile(
    r"[ \t\n\u200e\u200f]*+(" + _TOKEN.replace("NAME", r"[A-Za-z_]\w*", 1) + ")", re.ASCII
)
# Text that is not ASCII: a name is first read as any run of ASCII word characters and
# non-ASCII characters that are not blankspace (WGSL has no non-ASCII punctuation), which
# is exact when every such run is an identifier, as in every module the compiler took.
_NON_ASCII = r"[^\x00-\x7f\u200e\u200f]"
_RUNS_RE = re.compile(
    r"[ \t\n\u200e\u200f]*+("
    + _TOKEN.replace("NAME", f"(?:[A-Za-z_]|{_NON_ASCII})(?:[0-9A-Za-z_]|{_NON_ASCII})*", 1)
    + ")"
)
_UNICODE_TOKENS_RE: re.Pattern[str] | None = None


def _tokens_of(text: str) -> tuple[re.Pattern[str], list[str]]:
    """The tokenizer for ``text`` and its tokens. A name is WGSL's ident_pattern_token,
    ``[_\\p{XID_Start}][\\p{XID_Continue}]+ | \\p{XID_Start}``, exactly: combining marks
    (Hindi `गति`, Telugu `వేగం`, a decomposed `é`), `·` and `‿` continue a name, `²`
    does not. Python's ``str.isidentifier`` is that same rule (PEP 3131). A `__` prefix,
    `_` alone as a name and the reserved words are the compiler's to refuse (it compiles
    a module before this reads it)."""
    if text.isascii():
        return _TOKENS_RE, _TOKENS_RE.findall(text)
    texts: list[str] = _RUNS_RE.findall(text)
    if all(t.isascii() or t.isidentifier() for t in texts):
        return _RUNS_RE, texts
    exact = _unicode_tokens()  # a run that is no name: split it where WGSL does
    return exact, exact.findall(text)


def _unicode_tokens() -> re.Pattern[str]:
    """The tokenizer whose names are XID classes, built from ``str.isidentifier`` once
    (a fraction of a second), for the first text with a run that is no identifier.
    Planes 4 to 13 hold no assigned character, 15 and 16 only private use: neither class."""
    global _UNICODE_TOKENS_RE
    if _UNICODE_TOKENS_RE is None:
        starts: list[str] = []
        continues: list[str] = []
        for lo, hi in ((0x80, 0x40000), (0xE0000, 0xF0000)):
            chars = [chr(c) for c in range(lo, hi) if not 0xD800 <= c < 0xE000]
            starts += (c for c, ok in zip(chars, map(str.isidentifier, chars)) if ok)
            continues += (c for c, ok in zip(chars, map(str.isidentifier, map("a".__add__, chars))) if ok)
        name = f"[A-Za-z_{_char_class(starts)}][0-9A-Za-z_{_char_class(continues)}]*"
        _UNICODE_TOKENS_RE = re.compile(r"[ \t\n\u200e\u200f]*+(" + _TOKEN.replace("NAME", name, 1) + ")")
    return _UNICODE_TOKENS_RE


def _char_class(chars: list[str]) -> str:
    """The body of a regex class of ``chars`` (in code point order), as ranges."""
    parts: list[str] = []
    i = 0
    while i < len(chars):
        j = i
        while j + 1 < len(chars) and ord(chars[j + 1]) == ord(chars[j]) + 1:
            j += 1
        parts.append(re.escape(chars[i]) + ("" if i == j else "-" + re.escape(chars[j])))
        i = j + 1
    return "".join(parts)
_COMMENT_RE = re.compile(r"//[^\n]*|/\*")
_DEPTH_STEPS = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}
_INT_RE = re.compile(r"(0[xX][0-9a-fA-F]+|\d+)([iu]?)$")


def _kind(text: str) -> str:
    """A token's kind, "ident", "num" or "punct", told by its first character as the
    tokenizer's alternatives tell it: a name starts with `_` or an XID_Start character,
    a number with an ASCII digit or a `.` and a digit."""
    first = text[0]
    if first.isascii():
        if first.isalpha() or first == "_":
            return "ident"
        if first.isdigit():
            return "num"
        if first == ".":
            return "num" if len(text) > 1 else "punct"
        return "punct"
    return "ident" if first.isidentifier() else "punct"  # XID_Start; e.g. `²` is punctuation


class _Source:
    """A module's text, its line breaks normalised and its comments blanked, as the
    texts of its tokens. Where a token is (its offset, its line) is found when asked:
    only error messages ask."""

    __slots__ = ("_breaks", "_depths", "_offsets", "_tokens_re", "text", "texts")

    def __init__(self, src: str) -> None:
        if not src.isascii() or "\r" in src or "\v" in src or "\f" in src:
            src = _LINE_BREAK_RE.sub("\n", src)  # the scan costs more than these checks
        self.text = text = _strip_comments(src)
        # without trailing blankspace, every run of it the tokenizer meets ends at a token
        self._tokens_re, self.texts = _tokens_of(text.rstrip(_BLANK))
        self._offsets: list[int] | None = None
        self._breaks: list[int] | None = None
        self._depths: list[int] | None = None

    def line(self, i: int) -> int:
        """The line of token ``i``."""
        if self._breaks is None:
            self._breaks = [m.start() for m in re.finditer("\n", self.text)]
        return bisect_right(self._breaks, self.offsets()[i]) + 1

    def offsets(self) -> list[int]:
        """Each token's offset in the text (line breaks normalised): tells `<=` from `< =`."""
        if self._offsets is None:
            self._offsets = [m.start(1) for m in self._tokens_re.finditer(self.text.rstrip(_BLANK))]
        return self._offsets

    def depths(self) -> list[int]:
        """The bracket depth after each token, `(`, `[` and `{` counting alike (`<` not):
        a bracket's closer is the first later token one level out."""
        if self._depths is None:
            self._depths = list(accumulate(map(_DEPTH_STEPS.get, self.texts, repeat(0))))
        return self._depths


class _Tok(NamedTuple):
    """Token ``at`` of a module: its text, and its kind, line and offset when asked."""

    text: str
    at: int
    src: _Source

    @property
    def kind(self) -> str:  # "ident", "num" or "punct" (punctuation is always one character)
        return _kind(self.text)

    @property
    def line(self) -> int:
        return self.src.line(self.at)

    @property
    def pos(self) -> int:
        return self.src.offsets()[self.at]


_new_tok = cast(Callable[[tuple[str, int, _Source]], _Tok], partial(tuple.__new__, _Tok))
# A NamedTuple's own constructor runs Python code; the parser makes its records with this.
_new = tuple.__new__


def tokenize(src: str) -> list[_Tok]:
    """The tokens of ``src``, refusing (ShaderError) a module nested deeper than
    ``MAX_NESTING_DEPTH`` (C's check, as ``_prepare``)."""
    source = _prepare(src)
    return _Parser(source).tokens(0, len(source.texts))


def _prepare(src: str) -> _Source:
    """``src`` read into tokens, once C has checked its nesting (``vn_wgsl_check_nesting``,
    the rule vn_shader_create applies): deep nesting is refused with C's ShaderError, its
    line and column, before reflection reads it (compile() reflects before C compiles)."""
    data = src.encode("utf-8", "surrogatepass")
    status = lib.vn_wgsl_check_nesting(data, len(data), MAX_NESTING_DEPTH)
    if status != lib.VN_OK:
        line, column = ffi.new("uint32_t *"), ffi.new("uint32_t *")
        placed = lib.vn_last_error_position(line, column)
        try:
            check(status)
        except ShaderError as err:
            if not placed:
                raise
            raise ShaderError(str(err), err.code, line=int(line[0]), column=int(column[0])) from None
    return _Source(src)


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
    text = tok.text
    if text.isdecimal():  # the common case: `\d+`
        return int(text)
    match = _INT_RE.match(text)  # only a number starts with a digit
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


# ---------------------------------------------------------------- declarations


class _Located(Protocol):
    """Anything messages can name the line of: a token or a record, which keep where in
    their module they are (token ``at`` of ``src``) and find the line when asked."""

    @property
    def line(self) -> int: ...


class _Type(NamedTuple):
    name: str
    args: tuple[tuple[_Tok, ...], ...]  # template arguments as tokens: types or expressions
    at: int  # the token the record starts at, its name: what messages give the line of
    src: _Source

    @property
    def line(self) -> int:
        return self.src.line(self.at)

    def __str__(self) -> str:
        return self.name + (f"<{', '.join(_text(a) for a in self.args)}>" if self.args else "")


class _Attr(NamedTuple):
    args: list[list[_Tok]]
    at: int  # the token the record starts at, its name: what messages give the line of
    src: _Source

    @property
    def line(self) -> int:
        return self.src.line(self.at)


class _Decl(NamedTuple):  # a module-scope const or override
    type: _Type | None
    init: list[_Tok] | None
    attrs: dict[str, _Attr]
    at: int  # the token the record starts at, its name: what messages give the line of
    src: _Source

    @property
    def line(self) -> int:
        return self.src.line(self.at)


class _Var(NamedTuple):
    name: str
    space: str | None
    access: str | None
    type: _Type | None
    attrs: dict[str, _Attr]
    at: int  # the token the record starts at, its name: what messages give the line of
    src: _Source

    @property
    def line(self) -> int:
        return self.src.line(self.at)


class _Member(NamedTuple):
    type: _Type
    attrs: dict[str, _Attr]


class _Fn(NamedTuple):
    attrs: dict[str, _Attr]
    body: tuple[int, int]  # where its body's tokens are (start, end)
    at: int  # the token the record starts at, its name: what messages give the line of
    src: _Source

    @property
    def line(self) -> int:
        return self.src.line(self.at)


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
        line = self.src.line(self.end - 1) if self.end > self.start else 1
        return ShaderError(
            f"line {line}: the WGSL ends in the middle of a declaration. Fix: complete it.",
            line=line,
        )

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
        return list(map(_new_tok, zip(self.texts[start:end], range(start, end), repeat(self.src))))

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


def _type_of(toks: Sequence[_Tok]) -> _Type:
    """The type written by ``toks``, consecutive tokens of one module."""
    if len(toks) == 1 and (tok := toks[0]).kind == "ident":
        return _new(_Type, (tok.text, (), tok.at, tok.src))  # the common case: a scalar or a struct
    parser = _Parser(toks[0].src, toks[0].at, toks[-1].at + 1) if toks else _Parser(_EMPTY)
    parsed = parser.type()
    if parser.more():
        raise _unexpected(parser.next(), "the end of the type")
    return parsed


_EMPTY = _Source("")


# ---------------------------------------------------------------- the module


class _Unresolved(Exception):
    """An override with no value in ``constants`` and no default was needed; callers turn
    this into a ShaderError that names what needed it."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


# What the resolver computes and memoises: ("value", name) the integer value of a const
# or override, ("struct" | "alias", name) a layout; the flag is whether the layout is
# for a buffer (host-shareable: no bool) or for workgroup memory.
_Key = tuple[str, str, bool]
_Layout = tuple[int, int, bool]  # size, align, fixed-size


class _Need(Exception):
    """Raised where a computation needs a declaration not resolved yet. ``_Module.resolve``
    resolves that first and retries, so a chain of declarations (a const defined by the
    one before, a struct holding the one before) grows a list, not Python's stack."""

    def __init__(self, key: _Key, where: _Located) -> None:
        super().__init__(key)
        self.key = key
        self.where = where  # what needs it, for the message if it turns out a cycle


_SCALAR_SIZE = {"f32": 4, "i32": 4, "u32": 4, "f16": 2}
_SHORTHAND = {"f": "f32", "h": "f16", "i": "i32", "u": "u32"}
# vecN and matCxR by name, with their sizes and component suffix ("" when templated)
_VECTORS = {f"vec{n}{suffix}": (n, suffix) for n in (2, 3, 4) for suffix in ("", "f", "h", "i", "u")}
_MATRICES = {
    f"mat{c}x{r}{suffix}": (c, r, suffix) for c in (2, 3, 4) for r in (2, 3, 4) for suffix in ("", "f", "h")
}
_BINDING_KINDS = {
    ("uniform", None): "uniform",
    ("storage", None): "storage_read",
    ("storage", "read"): "storage_read",
    ("storage", "read_write"): "storage_read_write",
}
_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2, "neg": 3}

T = TypeVar("T")
F = TypeVar("F", Binding, ModuleReflection)


def _round_up(align: int, n: int) -> int:
    return -(-n // align) * align


def _listing(names: Sequence[str]) -> str:
    return ", ".join(f"`{n}`" for n in names) or "none"


def _cycle(name: str, line: int) -> ShaderError:
    return ShaderError(
        f"line {line}: `{name}` is defined in terms of itself. Fix: break the cycle;"
        " WGSL declarations cannot be recursive.",
        line=line,
    )


class _Module:
    def __init__(self, src: _Source) -> None:
        self.values: dict[str, float | int | bool] = {}  # override name -> value from constants
        self.value_keys: dict[str, str] = {}  # override name -> the constants key that set it
        self.consts: dict[str, _Decl] = {}
        self.overrides: dict[str, _Decl] = {}
        self.structs: dict[str, list[_Member]] = {}
        self.aliases: dict[str, _Type] = {}
        self.vars: list[_Var] = []
        self.fns: dict[str, _Fn] = {}
        self._memo: dict[_Key, object] = {}
        self._types: dict[str, str] = {}  # const or override name -> its scalar type
        self._arg_types: dict[tuple[int, int], _Type] = {}  # type_of's, by where the tokens are
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
        elif kw == "var":
            p.pos += 1
            qual = p.qualifiers() if p.peek() == "<" else []
            name, at = p.name()
            vtype = p.type() if p.accept(":") else None
            p.skip_statement()  # an initializer, allowed only on private vars
            space = qual[0] if qual else None
            access = qual[1] if len(qual) > 1 else None
            self.vars.append(_new(_Var, (name, space, access, vtype, attrs, at, p.src)))
        elif kw in ("const", "override"):
            p.pos += 1
            name, at = p.name()
            dtype = p.type() if p.accept(":") else None
            init = p.statement()
            if init and init[0].text != "=":
                raise _unexpected(init[0], "`=` or `;`")
            table = self.consts if kw == "const" else self.overrides
            table[name] = _new(_Decl, (dtype, init[1:] or None, attrs, at, p.src))
        elif kw == "struct":
            p.pos += 1
            name, _ = p.name()
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
        elif kw in ("alias", "type"):  # `type` is the pre-2023 spelling of `alias`
            p.pos += 1
            name, _ = p.name()
            p.expect("=")
            self.aliases[name] = p.type()
            p.expect(";")
        elif kw in ("enable", "requires", "diagnostic", "const_assert"):
            p.pos += 1
            p.skip_statement()
        else:
            kw_tok = p.next()  # raises at the end of the text
            if kw != ";":  # a lone `;` is an empty declaration
                raise _unexpected(kw_tok, "a module-scope declaration")

    # -- resolution

    def resolve(self, compute: Callable[[], T]) -> T:
        """``compute()``, after resolving every declaration it needs (see _Need). Only
        public entry points call this; what they call raises _Need instead."""
        pending: list[_Key] = []
        waiting: set[_Key] = set()  # pending, as a set: a chain can be thousands long
        while True:
            try:
                if not pending:
                    return compute()
                key = pending[-1]
                try:
                    self._memo[key] = self._resolve(key)
                except _Unresolved as e:  # raised again where the value is used, which says why
                    self._memo[key] = e
                waiting.discard(pending.pop())
            except _Need as need:
                if need.key in waiting:
                    raise _cycle(need.key[1], need.where.line) from None
                pending.append(need.key)
                waiting.add(need.key)

    def _resolved(self, kind: str, name: str, where: _Located, shareable: bool = True) -> object:
        key = (kind, name, shareable)
        if key not in self._memo:
            raise _Need(key, where)
        return self._memo[key]

    def _resolve(self, key: _Key) -> object:
        kind, name, shareable = key
        if kind == "struct":
            return self._struct_layout(self.structs[name], shareable)
        if kind == "alias":
            return self.layout(self.aliases[name], shareable)
        if name in self.values:
            value = self.values[name]
            if isinstance(value, bool) or not float(value).is_integer():
                decl = self.overrides[name]
                raise ShaderError(
                    f"constants[{self.value_keys[name]!r}] = {value!r} sets override `{name}`,"
                    f" which is used as an integer (line {decl.line}). Fix: pass an integer.",
                    line=decl.line,
                )
            return int(value)
        decl = self.consts.get(name) or self.overrides[name]
        if decl.init is None:
            raise _Unresolved(name)
        return self._eval(decl.init, decl)

    def _unalias(self, t: _Type) -> _Type:
        if t.name not in self.aliases:
            return t
        seen: set[str] = set()
        while t.name in self.aliases:
            if t.name in seen:
                raise _cycle(t.name, t.line)
            seen.add(t.name)
            t = self.aliases[t.name]
        return t

    # -- constant expressions

    def _eval(self, toks: Sequence[_Tok], where: _Located) -> int:
        """Evaluate integer literals, const/override names, + - * / and parentheses, by
        operator precedence with explicit stacks (no recursion, however deep)."""
        if len(toks) == 1 and (literal := _int_literal(toks[0])) is not None:
            return literal  # the common case: @binding(0), @workgroup_size(64)

        def bad() -> ShaderError:
            line = where.line
            return ShaderError(
                f"line {line}: `{_text(toks)}` is not an integer expression vyre_native can"
                " evaluate (it takes integer literals, names of module-scope consts and"
                " overrides, + - * / and parentheses). Fix: write it in those terms.",
                line=line,
            )

        values: list[int] = []
        ops: list[str] = []  # "(", "neg" or a binary operator

        def apply(op: str) -> None:
            if op == "neg":
                values.append(-values.pop())
                return
            right, left = values.pop(), values.pop()
            if op == "+":
                values.append(left + right)
            elif op == "-":
                values.append(left - right)
            elif op == "*":
                values.append(left * right)
            elif right == 0:
                raise bad()
            else:
                quotient = abs(left) // abs(right)  # WGSL truncates toward zero
                values.append(quotient if (left < 0) == (right < 0) else -quotient)

        operand = True  # whether an operand (or a prefix) comes next
        for i, tok in enumerate(toks):
            if operand:
                literal = _int_literal(tok)
                if tok.text == "-" and tok.kind == "punct":
                    ops.append("neg")
                elif tok.text == "(":
                    ops.append("(")
                elif literal is not None:
                    values.append(literal)
                    operand = False
                elif tok.kind == "ident" and (i + 1 == len(toks) or toks[i + 1].text != "("):
                    values.append(self._value(tok))  # calls such as min(a, b) are not evaluated
                    operand = False
                else:
                    raise bad()
            elif tok.text in ("+", "-", "*", "/"):
                while ops and ops[-1] != "(" and _PRECEDENCE[ops[-1]] >= _PRECEDENCE[tok.text]:
                    apply(ops.pop())
                ops.append(tok.text)
                operand = True
            elif tok.text == ")":
                while ops and ops[-1] != "(":
                    apply(ops.pop())
                if not ops:
                    raise bad()
                ops.pop()
            else:
                raise bad()
        if operand:
            raise bad()
        while ops:
            op = ops.pop()
            if op == "(":
                raise bad()
            apply(op)
        return values[0]

    def _value(self, tok: _Tok) -> int:
        name = tok.text
        if name not in self.consts and name not in self.overrides:
            raise ShaderError(
                f"line {tok.line}: `{name}` in a constant expression is not a module-scope"
                f" const or override. Fix: declare it, e.g. `const {name} = 64;`.",
                line=tok.line,
            )
        value = self._resolved("value", name, tok)
        if isinstance(value, _Unresolved):
            raise _Unresolved(value.name)
        return cast(int, value)

    def eval_int(self, toks: Sequence[_Tok], where: _Located, what: str) -> int:
        try:
            return self._eval(toks, where)
        except _Unresolved as e:
            line = where.line
            key = self.webgpu_key(e.name)
            named = f"{{'{key}': ...}}" + (f" (or {{'{e.name}': ...}})" if key != e.name else "")
            raise ShaderError(
                f"line {line}: {what} depends on override `{e.name}`, which has no default"
                f" and no value in constants. Fix: pass constants={named}, or give the"
                " override a default.",
                line=line,
            ) from None

    def attr_int(self, attr: _Attr, name: str) -> int:
        args = attr.args
        if len(args) == 1 and len(args[0]) == 1 and (literal := _int_literal(args[0][0])) is not None:
            return literal  # the common case: @binding(0)
        if len(args) != 1:
            raise ShaderError(
                f"line {attr.line}: @{name} takes one argument, got {len(attr.args)}. Fix: write @{name}(n).",
                line=attr.line,
            )
        return self.eval_int(attr.args[0], attr, f"@{name}")

    # -- overrides

    def override_id(self, name: str) -> int | None:
        """The @id of an override, if it has one (resolved: it may be a const expression)."""
        attr = self.overrides[name].attrs.get("id")
        return None if attr is None else self.resolve(lambda: self.attr_int(attr, "id"))

    def webgpu_key(self, name: str) -> str:
        """The key WebGPU (and wgpu-native) sets an override by: its @id as a decimal
        string when it has one, else its name."""
        ident = self.override_id(name)
        return name if ident is None else str(ident)

    def set_constants(self, constants: Mapping[str, float | int | bool]) -> dict[str, float | int | bool]:
        """Take the caller's values, keyed by an override's name or, for an @id override,
        by its id as a decimal string (WebGPU's key); return them under WebGPU's keys."""
        by_id = {self.webgpu_key(n): n for n in self.overrides}
        for key, value in constants.items():
            name = key if key in self.overrides else by_id.get(key)
            if name is None:
                known = ", ".join(
                    f"`{n}`" + (f" (@id({k}): also '{k}')" if k != n else "") for k, n in by_id.items()
                )
                what = "" if isinstance(key, str) else f" (a {type(key).__name__}; keys are str)"
                declare = f"@id({key}) override x: u32;" if str(key).isdigit() else f"override {key}: u32;"
                raise ShaderError(
                    f"constants names `{key}`{what}, which is no override declared in the module;"
                    f" its overrides are {known or 'none'}. Fix: remove `{key}` from constants,"
                    f" or declare `{declare}` (or f32, i32, bool); an @id(n) override is set by"
                    " its name or by 'n'."
                )
            if name in self.values:
                raise ShaderError(
                    f"constants sets override `{name}` twice, as {self.value_keys[name]!r} and"
                    f" {key!r}. Fix: keep one of them."
                )
            self.values[name], self.value_keys[name] = value, key
        return {self.webgpu_key(name): value for name, value in self.values.items()}

    def scalar_type(self, decl: _Decl, name: str) -> str:
        """An override's type: declared, else that of the first literal, conversion or
        const/override name in its initializer (followed iteratively, and remembered for
        every name on the way)."""
        path: dict[str, None] = {name: None}  # insertion-ordered set
        while (found := self._types.get(name)) is None:
            found, follow = self._own_type(decl, name)
            if found is not None:
                break
            name, decl = follow
            if name in path:
                raise _cycle(name, decl.line)
            path[name] = None
        self._types.update(dict.fromkeys(path, found))
        return found

    def _own_type(self, decl: _Decl, name: str) -> tuple[str | None, tuple[str, _Decl]]:
        """(type, _) when ``decl`` tells its type itself, else (None, the const or override
        its type comes from)."""
        if decl.type is not None:
            return self._unalias(decl.type).name, (name, decl)
        for tok in decl.init or ():
            if tok.text in ("f32", "f16", "i32", "u32", "bool"):
                return tok.text, (name, decl)
            if tok.text in ("true", "false"):
                return "bool", (name, decl)
            if tok.kind == "num":
                return _literal_type(tok.text), (name, decl)
            other = self.consts.get(tok.text) or self.overrides.get(tok.text)
            if other is not None:
                return None, (tok.text, other)
        raise ShaderError(
            f"line {decl.line}: cannot tell the type of `{name}`. Fix: declare it,"
            f" e.g. `override {name}: u32 = ...;`.",
            line=decl.line,
        )

    # -- layout

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
            size, align, _ = self.layout(self.type_of(t.args[0]), shareable)
            if len(t.args) == 1:
                return 0, align, False
            count = self.eval_int(t.args[1], t, f"the element count of {t}")
            if count <= 0:
                raise ShaderError(
                    f"line {t.line}: {t} has {count} elements. Fix: use a count of at least 1.",
                    line=t.line,
                )
            return count * _round_up(align, size), align, True
        if t.name == "bool":
            if not shareable:
                return 4, 4, True
            raise ShaderError(
                f"line {t.line}: bool has no memory layout, so it cannot be in a buffer."
                " Fix: use u32 (0 or 1).",
                line=t.line,
            )
        raise ShaderError(
            f"line {t.line}: type {t} cannot be laid out in memory: it is no scalar,"
            " vector, matrix, array, atomic, alias or struct of this module."
            " Fix: declare the struct or alias, or use a buffer-compatible type.",
            line=t.line,
        )

    def type_of(self, toks: Sequence[_Tok]) -> _Type:
        """``_type_of(toks)``, parsed once per template argument."""
        key = (toks[0].at, len(toks)) if toks else (-1, 0)
        found = self._arg_types.get(key)
        if found is None:
            found = self._arg_types[key] = _type_of(toks)
        return found

    def binding_size(self, t: _Type, layout: _Layout | None = None) -> int:
        """The byte size wgpu requires of a buffer bound as ``t``: ``layout()``'s size
        (``layout`` when the caller has it), except that a runtime-sized array counts one
        element (naga sizes it so)."""
        size, align, fixed = self.layout(t) if layout is None else layout
        if fixed:
            return size
        t = self._unalias(t)
        if t.name in self.structs:
            # the struct's last member is the runtime-sized array: its fixed part, one
            # element, rounded up to the struct's alignment
            return _round_up(align, size + self.binding_size(self.structs[t.name][-1].type))
        elem_size, elem_align, _ = self.layout(self.type_of(t.args[0]))
        return _round_up(elem_align, elem_size)

    def _component(self, t: _Type, suffix: str, shareable: bool) -> int:
        if suffix:
            return _SCALAR_SIZE[_SHORTHAND[suffix]]
        if len(t.args) != 1:
            raise ShaderError(
                f"line {t.line}: {t} needs one component type. Fix: write e.g. {t.name}<f32>.",
                line=t.line,
            )
        return self.layout(self.type_of(t.args[0]), shareable)[0]

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

    # -- entry point and use

    def entry(self, name: str) -> _Fn:
        fn = self.fns.get(name)
        if fn is not None and "compute" in fn.attrs and not {"vertex", "fragment"} & fn.attrs.keys():
            return fn
        computes = [n for n, f in self.fns.items() if "compute" in f.attrs]
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

    def workgroup_size(self, name: str, fn: _Fn) -> tuple[int, int, int]:
        """The entry point's workgroup size with the override values applied."""
        attr = fn.attrs.get("workgroup_size")
        if attr is None or not 1 <= len(attr.args) <= 3:
            raise ShaderError(
                f"line {fn.line}: compute entry point `{name}` needs @workgroup_size with one"
                " to three dimensions. Fix: add e.g. @workgroup_size(64).",
                line=fn.line,
            )
        what = f"@workgroup_size of `{name}`"
        dims = [self.eval_int(arg, attr, what) for arg in attr.args]
        if min(dims) < 1:
            raise ShaderError(
                f"line {attr.line}: {what} evaluates to {dims}. Fix: make every dimension at least 1.",
                line=attr.line,
            )
        dims += [1] * (3 - len(dims))
        return dims[0], dims[1], dims[2]

    def workgroup_storage(self, used: set[str]) -> int:
        """Bytes of workgroup memory the entry point uses: WebGPU's sum, over each used
        var<workgroup>, of its size rounded up to 16."""
        return sum(
            _round_up(16, self.layout(var.type, shareable=False)[0])
            for var in self.vars
            if var.space == "workgroup" and var.name in used and var.type is not None
        )

    def used_names(self, entry: str) -> set[str]:
        """The names of module-scope vars and functions that the entry point and the
        functions it reaches mention."""
        names: set[str] = set()
        pending = [entry]
        scope = self.fns.keys() | {var.name for var in self.vars}
        while pending:
            refs = self._refs(self.fns[pending.pop()], scope)
            pending += [r for r in refs - names if r in self.fns and r != entry]
            names |= refs
        return names

    def _refs(self, fn: _Fn, scope: set[str]) -> set[str]:
        """The names of ``scope`` that ``fn``'s body mentions: as identifiers, not as
        member names (after a `.`)."""
        start, end = fn.body
        texts = self.src.texts
        body = texts[start:end]
        found = scope.intersection(body)
        if not found or "." not in body:
            return found
        followers = set()  # what follows each `.`
        at = body.index(".")
        try:
            while True:
                followers.add(body[at + 1] if at + 1 < len(body) else "")
                at = body.index(".", at + 1)
        except ValueError:
            pass
        for name in found & followers:  # counts only if some mention of it follows no `.`
            after = list(zip(texts[start - 1 : end - 1], body))  # the token before the first is `{`
            if body.count(name) == after.count((".", name)):
                found.discard(name)
        return found

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
        if var.space is None:
            where = f"binding @group({group}) @binding({binding}) `{var.name}`"
            raise ShaderError(
                f"line {var.line}: {where} has type {var.type or 'none'}, which vyre_native"
                " cannot bind. Fix: pass the data in a storage or uniform buffer, or stop"
                f" using `{var.name}` from entry point `{entry}` (unused bindings are ignored).",
                line=var.line,
            )
        kind = _BINDING_KINDS.get((var.space, var.access))
        if kind is None or var.type is None:
            where = f"binding @group({group}) @binding({binding}) `{var.name}`"
            qual = var.space + (f", {var.access}" if var.access else "")
            raise ShaderError(
                f"line {var.line}: {where} is declared var<{qual}> {var.name}:"
                f" {var.type or '(no type)'}, which vyre_native cannot bind. Fix: declare it"
                " var<storage, read>, var<storage, read_write> or var<uniform>, with a type.",
                line=var.line,
            )
        layout = self.layout(var.type)
        return group, binding, kind, layout[0], self.binding_size(var.type, layout)


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
        source = wgsl[0].src if wgsl else _EMPTY
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
        immediate_size=module.resolve(lambda: _immediate_size(module, used)),
    )
    return reflected, module, used


def _frozen(cls: type[F], **fields: object) -> F:
    """A frozen dataclass with every field given, made without its ``__init__``, which
    sets each field through a Python-level ``object.__setattr__`` call."""
    made = object.__new__(cls)
    made.__dict__.update(fields)
    return made


def _immediate_size(module: _Module, used: set[str]) -> int:
    """Bytes of the var<immediate> data the entry point uses (no binding), laid out as any
    host-shareable type and rounded up to 4. naga has already refused an entry point that
    uses more than one."""
    types = [v.type for v in module.vars if v.space == "immediate" and v.name in used and v.type is not None]
    return _round_up(4, module.layout(types[0])[0]) if types else 0
