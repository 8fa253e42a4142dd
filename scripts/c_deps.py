#!/usr/bin/env python3
"""The dependency graph of the C files in csrc/, its circles, its layer order, and its rooms.

File A depends on file B when A uses a function or global that B defines with external
linkage (a call, or its address taken). Uses through the layer headers count too: a
static inline function or a macro defined there that a file uses stands for the names
in its body (vn_submit_ready calls vn_wait, so its callers depend on waits.c).

csrc/ is a folder a layer (a room): platform/, base/, object/, device/, resources/, work/,
each holding its layer header and the .c files of that layer; interop/ stands beside
resources/ on its header (ROOMS_BESIDE); include/ holds the public API (vyre_native.h
and its parts, vn_*.h) and the X-macro tables it includes; python/ is no part of the C
layer (the _owner module, Python's C API). A file names a header of another folder by
its relative path ("../device/layer_device.h"); a header is known by its file name,
unique in csrc/.

The layers are the headers of csrc/ other than the public API (include/) and the
X-macro table wgpu_functions.h: platform.h, layer_base.h, layer_object.h,
layer_device.h, layer_resources.h, layer_work.h, each including the one below, so the
headers' own includes say which layer is below which. A .c file belongs to the one layer
header it includes. The order holds when every file includes exactly one layer header,
lives in that layer's room, every internal name it defines is declared in that header
(not in another layer's), every file it depends on belongs to its layer or one below,
and every inline or macro of a header uses only names of files at or below that
header's layer.

Prints each file with the files it depends on, then every strongly connected component
of more than one file (a circle), then every break of the layer order or of the rooms,
and exits 1 when there is either.

    python3 scripts/c_deps.py [-v] [csrc]     # -v: with the names that make each edge

Plain tokens, no C parser: comments, strings and #include lines are dropped; a
top-level `name(...) {` that is not static defines a function, a top-level declaration
that is neither static, extern nor a typedef defines a global; an identifier after `.`
or `->` is a field and one after `struct`, `enum` or `union` a tag, not a use. Enough
for this code base's C, which declares one thing a statement: on a Linux build its graph
equals the one `nm` reads from the object files, and tests/test_structure.py checks a
few known edges. Nothing is left out: loader.c's function table `wgpu` is a global like
any other (every file that calls wgpu-native depends on loader.c, as it should), and the
two platform files are one node (graph()).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

TOKEN = re.compile(
    r"""//[^\n]* | "(?:\\.|[^"\\\n])*" | '(?:\\.|[^'\\\n])*'
      | ^[ \t]*\#[^\n]* | [A-Za-z_]\w* | -> | \S""",
    re.S | re.X | re.M,
)
IDENT = re.compile(r"[A-Za-z_]\w*\Z")


def tokens(text: str) -> tuple[list[str], list[str]]:
    """(code, directives): the identifiers and punctuation of the code, and those of the
    preprocessor lines other than #include (a #define's body, an #if's condition), with
    comments and literals dropped and backslash-newlines joined."""
    text = re.sub(r"/\*.*?\*/", " ", text.replace("\\\n", " "), flags=re.S)
    code: list[str] = []
    directives: list[str] = []
    for m in TOKEN.finditer(text):
        t = m.group()
        if t.startswith(("//", '"', "'")):
            continue
        if t.lstrip().startswith("#"):
            if not re.match(r"\s*#\s*include", t):
                directives += tokens(t.lstrip()[1:])[0]
            continue
        code.append(t)
    return code, directives


def uses(toks: list[str]) -> set[str]:
    """The identifiers that are not fields (after `.` or `->`) nor tags (after `struct`,
    `enum`, `union`: a tag names a type, no symbol, and may share a function's name, as
    struct vn_readback and vn_readback do)."""
    after = (".", "->", "struct", "enum", "union")
    return {t for i, t in enumerate(toks) if IDENT.match(t) and (i == 0 or toks[i - 1] not in after)}


def top_level(toks: list[str]) -> Iterator[tuple[list[str], list[str]]]:
    """(head, body) for each top-level statement of code tokens: head the tokens before
    its first `{` (with what follows its closing `}` up to the `;`, for `T x = {...};`)
    or up to its `;`; body the tokens from that `{` to its `}` (empty for none)."""
    i, n = 0, len(toks)
    while i < n:
        head: list[str] = []
        while i < n and toks[i] not in ("{", ";"):
            head.append(toks[i])
            i += 1
        body: list[str] = []
        if i < n and toks[i] == "{":
            depth = 0
            while i < n:
                depth += toks[i] == "{"
                depth -= toks[i] == "}"
                body.append(toks[i])
                i += 1
                if depth == 0:
                    break
            if "(" in head and "=" not in head:  # a function definition: no `;` follows
                yield head, body
                continue
            while i < n and toks[i] != ";":  # `struct x {...} y;`, `T y = {...};`
                head.append(toks[i])
                i += 1
        i += 1
        yield head, body


def defined_names(code: list[str]) -> set[str]:
    """Names of the functions and globals with external linkage that one .c file's code
    tokens define."""
    names = set()
    for head, body in top_level(code):
        if not head or head[0] in ("typedef", "extern") or "static" in head:
            continue
        decl = head[: head.index("=")] if "=" in head else head
        if body and "(" in head and "=" not in head:
            # A function: the identifier before the first `(` that is no attribute
            # macro (capitals) or compiler keyword (__attribute__, __declspec).
            for a, b in zip(head, head[1:]):
                if b == "(" and IDENT.match(a) and not a.isupper() and not a.startswith("__"):
                    names.add(a)
                    break
        elif "(" not in decl and "{" not in decl:
            # A global (not a prototype, not a type): the last identifier before any
            # `[` or `=`.
            decl = decl[: decl.index("[")] if "[" in decl else decl
            idents = [t for t in decl if IDENT.match(t)]
            if len(idents) >= 2 and idents[-2] not in ("struct", "enum", "union"):
                names.add(idents[-1])
    return names


PUBLIC = "include"  # the public API's room: vyre_native.h, its parts, their tables
NOT_C_LAYER = ("python",)  # the _owner module: Python's C API, built apart
NOT_LAYERS = ("wgpu_functions.h",)  # an X-macro table of the base room
# Rooms of entry points that stand beside a layer on its header (the diagram's "beside").
ROOMS_BESIDE = {"interop": "layer_resources.h"}


def c_files(csrc: Path) -> list[Path]:
    """The .c files of the C layer: every room's but python/'s."""
    return sorted(p for p in csrc.glob("*/*.c") if p.parent.name not in NOT_C_LAYER)


def headers_by_name(csrc: Path) -> dict[str, Path]:
    """Every header of the C layer by its file name (which the layer check knows it by);
    python/'s are the _owner module's, no part of it."""
    found: dict[str, Path] = {}
    for path in sorted(p for p in csrc.glob("*/*.h") if p.parent.name not in NOT_C_LAYER):
        if found.setdefault(path.name, path) != path:
            raise SystemExit(f"c_deps: two headers named {path.name}: {found[path.name]} and {path}")
    return found


def layer_headers(csrc: Path) -> list[str]:
    """The layer headers: not the public API (include/) nor a table."""
    headers = headers_by_name(csrc).items()
    return sorted(h for h, path in headers if h not in NOT_LAYERS and path.parent.name != PUBLIC)


def includes(text: str) -> list[str]:
    """The quoted #includes of a file, in order, each by its file name (a relative path
    such as "../device/layer_device.h" names layer_device.h)."""
    return [Path(inc).name for inc in re.findall(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', text, re.M)]


def header_expansions(csrc: Path) -> dict[str, set[str]]:
    """For each static inline function and each macro of the layer headers: the
    identifiers its body uses (a file that uses it uses those)."""
    out: dict[str, set[str]] = {}
    paths = headers_by_name(csrc)
    for header in layer_headers(csrc):
        text = re.sub(r"/\*.*?\*/", " ", paths[header].read_text().replace("\\\n", " "), flags=re.S)
        for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+(\w+)(.*)$", text, re.M):
            out[m.group(1)] = uses(tokens(m.group(2))[0])
        for head, body in top_level(tokens(text)[0]):
            if body and "static" in head and "inline" in head and "(" in head:
                out[head[head.index("(") - 1]] = uses(body)
    return out


def graph(csrc: Path) -> dict[str, dict[str, set[str]]]:
    """file -> {a file whose external names it uses: those names}."""
    files: dict[str, list[tuple[list[str], list[str]]]] = {}
    for path in c_files(csrc):
        # platform_posix.c and platform_win32.c define the same names, one per OS (one
        # of them is compiled): they are one node of the graph, "platform_*.c".
        node = "platform_*.c" if path.name.startswith("platform_") else path.name
        files.setdefault(node, []).append(tokens(path.read_text()))
    owner: dict[str, str] = {}
    for node, parts in files.items():
        for code, _ in parts:
            for name in defined_names(code):
                if owner.setdefault(name, node) != node:
                    raise SystemExit(f"c_deps: {name} is defined in both {owner[name]} and {node}")
    expand = header_expansions(csrc)
    edges: dict[str, dict[str, set[str]]] = {}
    for node, parts in files.items():
        seen: set[str] = set()
        todo = set().union(*(uses(code) | uses(directives) for code, directives in parts))
        while todo:  # through the headers' inlines and macros, to the names they use
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo |= expand.get(name, set()) - seen
        edges[node] = {}
        for name in seen:
            if owner.get(name, node) != node:
                edges[node].setdefault(owner[name], set()).add(name)
    return edges


def declared_names(code: list[str]) -> set[str]:
    """Names of the functions and globals a header's code tokens declare (prototypes,
    extern globals) or define (static inline functions)."""
    names = set()
    for head, body in top_level(code):
        if not head or head[0] == "typedef":
            continue
        if "(" in head and (not body or "inline" in head):
            for a, b in zip(head, head[1:]):
                if b == "(" and IDENT.match(a) and not a.isupper() and not a.startswith("__"):
                    names.add(a)
                    break
        elif head[0] == "extern" and not body:
            idents = [t for t in (head[: head.index("[")] if "[" in head else head) if IDENT.match(t)]
            names.add(idents[-1])
    return names


def node_of(path: Path) -> str:
    return "platform_*.c" if path.name.startswith("platform_") else path.name


def layers_below(csrc: Path) -> dict[str, set[str]]:
    """Each layer header -> the layer headers at or below it (itself and what its
    #includes reach)."""
    headers = layer_headers(csrc)
    paths = headers_by_name(csrc)
    below: dict[str, set[str]] = {}

    def reach(h: str) -> set[str]:
        if h not in below:
            below[h] = {h}
            for inc in includes(paths[h].read_text()):
                if inc in headers:
                    below[h] |= reach(inc)
        return below[h]

    for h in headers:
        reach(h)
    return below


def layer_of(csrc: Path) -> dict[str, list[str]]:
    """Each .c file -> the layer headers it includes (its layer, when there is one)."""
    headers = layer_headers(csrc)
    files = c_files(csrc)
    names = [p.name for p in files]
    if len(set(names)) != len(names):
        raise SystemExit(f"c_deps: two .c files of one name: {sorted(n for n in names if names.count(n) > 1)}")
    return {p.name: [inc for inc in includes(p.read_text()) if inc in headers] for p in files}


def room_of(csrc: Path) -> dict[str, str]:
    """Each room (folder) of the C layer -> the layer header its .c files include: the one
    it holds, or the one it stands beside (ROOMS_BESIDE)."""
    rooms: dict[str, str] = {}
    for h in layer_headers(csrc):
        rooms.setdefault(headers_by_name(csrc)[h].parent.name, h)
    rooms.update(ROOMS_BESIDE)
    return rooms


def room_breaks(csrc: Path) -> list[str]:
    """A room holding two layers, a .c file in a room of no layer or out of its layer's
    room: one line each."""
    breaks: list[str] = []
    paths = headers_by_name(csrc)
    rooms = room_of(csrc)
    for h in layer_headers(csrc):
        room = paths[h].parent.name
        if rooms[room] != h:
            breaks.append(f"{room}/ holds two layer headers ({rooms[room]} {h}): one layer a room")
    own = layer_of(csrc)
    for path in c_files(csrc):
        room = path.parent.name
        if room not in rooms:
            breaks.append(f"{room}/{path.name} is in {room}/, the room of no layer: move it to its layer's")
        elif len(own[path.name]) == 1 and own[path.name][0] != rooms[room]:
            home = sorted(r for r, h in rooms.items() if h == own[path.name][0] and r not in ROOMS_BESIDE)
            breaks.append(
                f"{room}/{path.name} includes {own[path.name][0]}, the layer of {' '.join(f'{r}/' for r in home)},"
                f" not of {room}/: a file lives in its layer's room"
            )
    return breaks


def layer_breaks(csrc: Path, edges: dict[str, dict[str, set[str]]] | None = None) -> list[str]:
    """Every break of the layer order (see the module's doc), one line each."""
    edges = graph(csrc) if edges is None else edges
    headers = layer_headers(csrc)
    below = layers_below(csrc)
    reach = below.__getitem__
    paths = headers_by_name(csrc)
    declared = {h: declared_names(tokens(paths[h].read_text())[0]) for h in headers}
    breaks: list[str] = room_breaks(csrc)
    layer: dict[str, str] = {}  # node -> its layer header
    files = {p.name: p for p in c_files(csrc)}
    for name_c, own in layer_of(csrc).items():
        path = files[name_c]
        text = path.read_text()
        if len(own) != 1:
            breaks.append(f"{path.name} includes {len(own)} layer headers ({' '.join(own) or 'none'}): one, its own")
            continue
        layer.setdefault(node_of(path), own[0])
        for name in sorted(defined_names(tokens(text)[0])):
            for h in headers:
                if name in declared[h] and h != own[0]:
                    breaks.append(f"{path.name} includes {own[0]} but defines {name}, which {h} declares")
    for node in sorted(edges):
        for dep in sorted(edges[node]):
            if node in layer and dep in layer and layer[dep] not in reach(layer[node]):
                names = " ".join(sorted(edges[node][dep]))
                breaks.append(f"{node} ({layer[node]}) uses {dep} ({layer[dep]}), a higher layer: {names}")
    owner: dict[str, str] = {}
    for path in c_files(csrc):
        for name in defined_names(tokens(path.read_text())[0]):
            owner[name] = node_of(path)
    expand = header_expansions(csrc)
    for h in headers:
        for name in sorted(declared[h] & set(expand)):
            for used in sorted(expand[name]):
                user = owner.get(used)
                if user is not None and user in layer and layer[user] not in reach(h):
                    breaks.append(f"{h}'s {name} uses {used} of {user} ({layer[user]}), a higher layer")
    return breaks


def circles(edges: dict[str, dict[str, set[str]]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def report(
    edges: dict[str, dict[str, set[str]]],
    breaks: list[str] | None = None,
    verbose: bool = False,
    out: TextIO = sys.stdout,
) -> int:
    """Print the graph (verbose: with the names each edge uses), its circles and, with
    breaks (a graph that has layers: C's), the layer order's breaks; 1 when there is a
    circle or a break, else 0."""
    width = max(map(len, edges))
    for node in sorted(edges):
        print(f"{node:<{width}} -> {' '.join(sorted(edges[node])) or '-'}", file=out)
        if verbose:
            for dep in sorted(edges[node]):
                print(f"{'':<{width}}    {dep}: {' '.join(sorted(edges[node][dep]))}", file=out)
    found = circles(edges)
    for component in found:
        print(f"circle: {{{', '.join(component)}}}", file=out)
    for line in breaks or ():
        print(f"layer order: {line}", file=out)
    if not found and not breaks:
        print("no circles" if breaks is None else "no circles, layers in order", file=out)
    return 1 if found or breaks else 0


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "-v"]
    root = Path(args[0]) if args else Path(__file__).resolve().parent.parent / "csrc"
    edges = graph(root)
    sys.exit(report(edges, layer_breaks(root, edges), verbose="-v" in sys.argv[1:]))
