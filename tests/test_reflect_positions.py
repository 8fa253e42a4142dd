"""Where reflection's own ShaderErrors point: every kind names the line and column of its
token, worded as the compiler's ("at line L, column C (wgsl:L:C)", the source line, a
caret line under the column, then the Fix), whatever the line breaks (CR LF), tabs,
comments or non-ASCII names before it; one about an argument says it has no place.
Columns count code points (a tab one, an astral character one), as the compiler's do.
No GPU needed, but for the one check against the compiler itself."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

import vyre_native as vn
from vyre_native.errors import ShaderError
from vyre_native.reflect import reflect

# `$` marks where the error points (it is no WGSL character): the token after it
USES_X = "@compute @workgroup_size(64) fn main() { let p = &x; }"
SLOT = "@group(0) @binding(0) var<storage>"
PLACED: dict[str, tuple[str, dict[str, Any]]] = {
    "unclosed block comment": ("const a = 1;\n$/* open /* nested */\n", {}),
    "text ends mid-declaration": (f"{SLOT} x: u32;\n{USES_X}\nconst c = $1", {}),
    "unexpected token": (f"{SLOT} x: u32;\n$let y = 1;\n{USES_X}", {}),
    "empty template argument": (f"{SLOT} x: $array<,4>;\n{USES_X}", {}),
    "alias cycle": (f"alias A = B;\nalias B = $A;\n{SLOT} x: A;\n{USES_X}", {}),
    "override set to a non-integer": (
        f"override $n: u32 = 4;\n{SLOT} x: array<u32, n>;\n{USES_X}",
        {"constants": {"n": 1.5}},
    ),
    "expression it cannot evaluate": (f"{SLOT} x: array<u32, $min(2, 3)>;\n{USES_X}", {}),
    "name that is no const": (f"{SLOT} x: array<u32, 2 * $K>;\n{USES_X}", {}),
    "override with no value": (f"override N: u32;\n{SLOT} x: $array<u32, N>;\n{USES_X}", {}),
    "attribute argument count": (f"@group(0) @$binding(0, 1) var<storage> x: u32;\n{USES_X}", {}),
    "override of unknown type": (f"override $o = p;\n{SLOT} x: u32;\n{USES_X}", {}),
    "element count below 1": (f"{SLOT} x: $array<u32, 0>;\n{USES_X}", {}),
    "bool in a buffer": (f"{SLOT} x: $bool;\n{USES_X}", {}),
    "type with no layout": (f"{SLOT} x: $sampler;\n{USES_X}", {}),
    "vector without component": (f"{SLOT} x: $vec3;\n{USES_X}", {}),
    "entry point of another stage": ("@fragment fn $fs() {}\n", {"entry_point": "fs"}),
    "no @workgroup_size": (f"{SLOT} x: u32;\n@compute fn $main() {{ let p = &x; }}", {}),
    "@workgroup_size of four dimensions": (
        f"{SLOT} x: u32;\n@compute @$workgroup_size(1, 1, 1, 1) fn main() {{ let p = &x; }}",
        {},
    ),
    "@workgroup_size of 0": (f"{SLOT} x: u32;\n@compute @$workgroup_size(0) fn main() {{ let p = &x; }}", {}),
    "binding without @group": (f"var<storage> $x: u32;\n{USES_X}", {}),
    "handle binding": (f"@group(0) @binding(0) var $x: texture_2d<f32>;\n{USES_X}", {}),
    "binding of another address space": (f"@group(0) @binding(0) var<storage, write> $x: u32;\n{USES_X}", {}),
    "two bindings in one slot": (
        f"{SLOT} a: u32;\n{SLOT} $b: u32;\n@compute @workgroup_size(1) fn main() {{ _ = a; _ = b; }}",
        {},
    ),
    # names of any XID characters before the token on its line count one column each
    "after non-ASCII names": (
        f"{SLOT} données: u32; {SLOT} $速度: u32;\n@compute @workgroup_size(1) fn main() {{ _ = données; _ = 速度; }}",
        {},
    ),
    "after astral characters": (  # U+1D431, U+1D432: one code point, four UTF-8 bytes, two UTF-16 units
        f"{SLOT} 𝐱𝐲: u32; var<storage> $z: u32;\n@compute @workgroup_size(1) fn main() {{ _ = 𝐱𝐲; _ = z; }}",
        {},
    ),
}

UNPLACED: dict[str, tuple[str, dict[str, Any]]] = {
    "constants key no override has": (f"{SLOT} x: u32;\n{USES_X}", {"constants": {"BLOKC": 1}}),
    "override set twice": (f"@id(7) override k: u32 = 1;\n{SLOT} x: u32;\n{USES_X}", {"constants": {"k": 1, "7": 2}}),
    "entry point the module lacks": (f"{SLOT} x: u32;\n{USES_X}", {"entry_point": "nope"}),
    "preserve of no binding": (f"{SLOT} x: u32;\n{USES_X}", {"preserve": ["nope"]}),
}

# WGSL's line breaks, CR LF one
BREAK_RE = re.compile("\r\n?|[\n\v\f\x85\u2028\u2029]")


def _lf(text: str) -> str:
    return text


def _crlf(text: str) -> str:
    return text.replace("\n", "\r\n")


def _tabs(text: str) -> str:
    return "\t" + text.replace("\n", "\n\t \t")


def _comments(text: str) -> str:
    """Comments on the lines before, and one before the token on its line."""
    lines = text.split("\n")
    marked = next(i for i, line in enumerate(lines) if "$" in line)
    if not lines[marked].lstrip().startswith("$/*"):  # not inside an unclosed comment's line
        lines[marked] = "/* é */ " + lines[marked]
    return "/* one /* two */\n three */ // four ü\n" + "\n".join(lines)


def _line_separators(text: str) -> str:
    return text.replace("\n", "\u2028")


LAYOUTS: dict[str, Callable[[str], str]] = {
    "LF": _lf,
    "CRLF": _crlf,
    "tabs": _tabs,
    "comments": _comments,
    "U+2028": _line_separators,
}


def marked_place(text: str) -> tuple[str, int, int]:
    """The text without its `$`, and the line and column (code points) of the `$`."""
    at = text.index("$")
    breaks = list(BREAK_RE.finditer(text, 0, at))
    line_start = breaks[-1].end() if breaks else 0
    return text.replace("$", "", 1), len(breaks) + 1, at - line_start + 1


def raised(wgsl: str, kwargs: dict[str, Any]) -> ShaderError:
    with pytest.raises(ShaderError) as info:
        reflect(wgsl, **kwargs)
    return info.value


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("kind", PLACED)
def test_each_reflection_error_names_the_line_and_column_of_its_token(kind: str, layout: str) -> None:
    text, kwargs = PLACED[kind]
    wgsl, line, column = marked_place(LAYOUTS[layout](text))
    err = raised(wgsl, kwargs)
    assert (err.line, err.column) == (line, column), str(err)
    assert f" at line {line}, column {column} (wgsl:{line}:{column})\n" in str(err)


@pytest.mark.parametrize("kind", PLACED)
def test_each_reflection_error_shows_its_source_line_with_a_caret_under_the_column(kind: str) -> None:
    text, kwargs = PLACED[kind]
    wgsl, line, column = marked_place(_tabs(text))
    err = raised(wgsl, kwargs)
    _, shown, caret, fix = str(err).split("\n", 3)
    assert shown == BREAK_RE.split(wgsl)[line - 1]
    # blanks up to the column, tabs where the line has them, then the token's carets
    assert caret[: column - 1] == "".join("\t" if c == "\t" else " " for c in shown[: column - 1])
    assert caret[column - 1 :].strip("^") == "" and caret[column - 1] == "^"
    assert fix.startswith("Fix: ") and len(fix) > len("Fix: ")


def test_the_carets_span_the_token() -> None:
    err = raised(f"{SLOT} x: sampler;\n{USES_X}", {})
    assert str(err).split("\n")[2] == " " * len(f"{SLOT} x: ") + "^" * len("sampler")


def test_a_long_line_is_shown_as_a_window_around_the_column() -> None:
    prefix = f"{SLOT} x: u32; " + "const c = 1; " * 60  # past the 600 characters shown
    err = raised(f"{prefix}let y = 1;\n{USES_X}", {})
    (shown, caret) = str(err).split("\n")[1:3]
    assert shown.startswith("...") and len(shown) <= 3 + 600 + 3
    assert shown[caret.index("^") :].startswith("let")
    assert err.column == len(prefix) + 1


@pytest.mark.parametrize("kind", UNPLACED)
def test_a_reflection_error_about_an_argument_says_it_has_no_line_or_column(kind: str) -> None:
    text, kwargs = UNPLACED[kind]
    err = raised(text, kwargs)
    assert (err.line, err.column) == (None, None)
    assert "(no line or column: " in str(err) and "Fix: " in str(err)


def test_reflection_and_the_compiler_count_columns_alike(device: vn.Device) -> None:
    # the same token, after a tab, a comment and non-ASCII text on its line: naga's error
    # (compile) and reflection's (reflect) give one line and column
    before = "\t/* données, 速度, 𝐱 */ "
    wgsl = f"{SLOT} x: u32;\n{before}let y = 1;\n{USES_X}"
    reflected = raised(wgsl, {})
    with pytest.raises(vn.ShaderError) as compiled:
        device.compile(wgsl)
    place = (2, len(before) + 1)
    assert (reflected.line, reflected.column) == place
    assert (compiled.value.line, compiled.value.column) == place


@pytest.mark.parametrize("br", ["\n", "\r\n", "\r", "\v", "\f", "\x85", "\u2028", "\u2029"])
def test_the_compiler_counts_lines_by_every_wgsl_line_break(device: vn.Device, br: str) -> None:
    # naga (codespan) counts lines by LF alone: a module whose lines end in CR or U+2028 was
    # "line 1, column 98" with the whole module shown as its line
    wgsl = br.join([f"{SLOT} x: u32;", "@compute @workgroup_size(1) fn main() {", "\tx = 1.5f;", "}"])
    with pytest.raises(vn.ShaderError) as info:
        device.compile(wgsl)
    err = info.value
    assert (err.line, err.column) == (3, 2), str(err)
    _, shown, caret, _ = str(err).split("\n", 3)
    assert (shown, caret) == ("\tx = 1.5f;", "\t^")
