"""WGSL text into tokens, and where a token is: what every other part of reflection reads.

A module's text is read as WGSL defines it (spec: "Blankspace and line breaks"): every
WGSL line break (LF, VT, FF, CR, NEL, U+2028, U+2029; CR LF is one) becomes ``\n`` and
ends a ``//`` comment and a line; LRM and RLM are blankspace; block comments nest. The
comments are blanked, each character by a space (line breaks kept), so a token's offset
in the blanked text is its offset in the text as written (line breaks normalised), and
its line and column are the ones the author sees.

Text from a caller reaches the tokenizer only through ``_prepare``, which asks C first
(``vn_wgsl_check_size``, ``vn_wgsl_check_nesting``, csrc/resources/wgsl_depth.c: the rules
``vn_shader_create`` applies), so nothing longer than ``VN_WGSL_MAX_SOURCE_BYTES`` or
nested deeper than ``MAX_NESTING_DEPTH`` is read here.

Errors found here and in the rest of reflection are worded as the compiler's
(csrc/resources/diagnostics.c): what happened "at line L, column C (wgsl:L:C)", the source line
with carets under the token, then the Fix on a line of its own, and ``line`` and
``column`` set on the ShaderError. Lines count WGSL's line breaks and columns characters
(code points, a tab one), as C's nesting check counts them. An error with no place in
the WGSL (one about an argument, or a name the module lacks) says so: "no line or column".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from itertools import accumulate, repeat
from typing import NamedTuple, Protocol, cast

from .._lib import check, ffi, lib
from ..errors import ShaderError

#: whose compiler recurses per level and would crash the process (C owns the rule and
#: says why: csrc/include/vn_pipeline.h, "WGSL nesting depth").
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
#: characters of a long source line shown around the column (csrc/resources/diagnostics.c's
#: SHOWN_LINE_MAX, there in bytes)
_SHOWN_LINE_MAX = 600


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
    texts of its tokens. Where a token is (its offset, line and column) is found when
    asked: only error messages and the rewrite of zero_workgroup.py ask."""

    __slots__ = ("_depths", "_offsets", "_tokens_re", "raw", "text", "texts")

    def __init__(self, src: str) -> None:
        if not src.isascii() or "\r" in src or "\v" in src or "\f" in src:
            src = _LINE_BREAK_RE.sub("\n", src)  # the scan costs more than these checks
        self.raw = src  # as written, but for its line breaks: what messages show
        self.text = text = _strip_comments(src)
        # without trailing blankspace, every run of it the tokenizer meets ends at a token
        self._tokens_re, self.texts = _tokens_of(text.rstrip(_BLANK))
        self._offsets: list[int] | None = None
        self._depths: list[int] | None = None

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

    def place(self, at: int) -> tuple[int, int]:
        """The line and column of token ``at``."""
        return _place(self.raw, self.offsets()[at])

    def tokens(self, start: int, end: int) -> list[_Tok]:
        """Tokens ``start`` up to ``end``."""
        return list(map(_new_tok, zip(self.texts[start:end], range(start, end), repeat(self))))

    def error(self, at: int, what: str, fix: str) -> ShaderError:
        """A ShaderError at token ``at`` (see the module docstring)."""
        return _error_at(self.raw, self.offsets()[at], len(self.texts[at]), what, fix)


class _Located(Protocol):
    """Anything an error can point at: a token or a parsed record, which keep where in
    their module they are (token ``at`` of ``src``: for a record, its name)."""

    @property
    def at(self) -> int: ...

    @property
    def src(self) -> _Source: ...


def _error(where: _Located, what: str, fix: str) -> ShaderError:
    """A ShaderError at ``where``: "<what> at line L, column C (wgsl:L:C)", the source line
    and a caret line, then "Fix: <fix>"."""
    return where.src.error(where.at, what, fix)


def _unplaced(what: str, why: str, fix: str) -> ShaderError:
    """A ShaderError about no place in the WGSL (``why`` says what it is about instead):
    its ``line`` and ``column`` are None, and its message says it has none."""
    return ShaderError(f"{what} (no line or column: {why}). Fix: {fix}")


def _place(text: str, offset: int) -> tuple[int, int]:
    """Line and column (1-based; characters) of ``offset`` in ``text``, line breaks normalised."""
    return text.count("\n", 0, offset) + 1, offset - text.rfind("\n", 0, offset)


def _error_at(text: str, offset: int, length: int, what: str, fix: str) -> ShaderError:
    """A ShaderError at the ``length`` characters at ``offset`` of ``text`` (line breaks
    normalised), worded as csrc/resources/diagnostics.c words the compiler's."""
    line, column = _place(text, offset)
    start = offset - column + 1
    end = text.find("\n", offset)
    shown = text[start : len(text) if end < 0 else end]
    at, lo, hi = column - 1, 0, len(shown)
    if hi > _SHOWN_LINE_MAX:  # a window around the column, as C shows a long line
        lo = max(0, at - _SHOWN_LINE_MAX // 2)
        hi = min(hi, lo + _SHOWN_LINE_MAX)
    indent = "".join("\t" if c == "\t" else " " for c in shown[lo:at])  # tabs kept, so carets line up
    excerpt = (
        f"{'...' if lo else ''}{shown[lo:hi]}{'...' if hi < len(shown) else ''}\n"
        f"{'   ' if lo else ''}{indent}{'^' * max(1, min(length, len(shown) - at))}"
    )
    return ShaderError(
        f"{what} at line {line}, column {column} (wgsl:{line}:{column})\n{excerpt}\nFix: {fix}",
        line=line,
        column=column,
    )


class _Tok(NamedTuple):
    """Token ``at`` of a module: its text, and its kind when asked."""

    text: str
    at: int
    src: _Source

    @property
    def kind(self) -> str:  # "ident", "num" or "punct" (punctuation is always one character)
        return _kind(self.text)

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
    return source.tokens(0, len(source.texts))


def _prepare(src: str) -> _Source:
    """``src`` read into tokens, once C has checked its length and nesting
    (``vn_wgsl_check_size``, ``vn_wgsl_check_nesting``: the rules vn_shader_create
    applies): a source too long or nested too deep is refused with C's ShaderError, its
    line and column, before reflection reads it (compile() reflects before C compiles)."""
    data = src.encode("utf-8", "surrogatepass")
    status = lib.vn_wgsl_check_size(data, len(data))
    if status == lib.VN_OK:
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
    """``src`` with each comment blanked, a space for each of its characters but its line
    breaks, so that every token keeps its offset, line and column."""
    out: list[str] = []
    pos = 0
    while (match := _COMMENT_RE.search(src, pos)) is not None:
        start = match.start()
        if match.group() == "/*":
            end = _block_comment_end(src, start)
            blank = "\n".join([" " * len(part) for part in src[start:end].split("\n")])
        else:
            end = match.end()
            blank = " " * (end - start)
        out += (src[pos:start], blank)
        pos = end
    out.append(src[pos:])
    return "".join(out)


def _block_comment_end(src: str, start: int) -> int:
    """The index just past the block comment at ``start``; block comments nest in WGSL."""
    depth, pos = 0, start
    while True:
        opener, closer = src.find("/*", pos), src.find("*/", pos)
        if closer < 0:
            raise _error_at(
                src,
                start,
                2,
                "block comment `/*` is never closed",
                "add the missing `*/` (block comments nest in WGSL, so every `/*` inside needs its own `*/`).",
            )
        if 0 <= opener < closer:
            depth, pos = depth + 1, opener + 2
        else:
            depth, pos = depth - 1, closer + 2
            if depth == 0:
                return pos
