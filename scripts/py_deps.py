#!/usr/bin/env python3
"""The import graph of the Python package vyre_native/, its circles, and its layer order.

Module A depends on module B when A imports B at run time: at module level or inside a
function (a function-level import still runs, only later). Imports under
`if TYPE_CHECKING:` never run, so they do not count. `from . import x` depends on the
submodule x when there is one, else on the package's __init__; importing any submodule
runs the package's __init__ first, but that is Python's doing and is not an edge. The
modules of a subpackage are nodes of their own (`reflect.tokens`), its __init__ the
subpackage's name (`reflect`).

The layers are LAYERS below, lowest first: a module may import, at run time, only
modules of lower rows. A subpackage's modules take its row (`reflect.tokens` is
`reflect`), and imports among them are the subpackage's own order (tests/test_structure.py
holds reflect's); the compiled modules (COMPILED) are rows too, so what imports them is
checked. Every module must have a row, and every row name must be a module.

Prints the graph, every strongly connected component of more than one module (as
scripts/c_deps.py does for csrc/) and every break of the layer order, and exits 1 when
there is either.

    python3 scripts/py_deps.py [-v] [vyre_native]     # -v: with the lines of each import
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from c_deps import report  # noqa: E402  (scripts/ is no package)


# vyre_native's modules, lowest first: each imports only modules of the rows below its own.
LAYERS = [
    ["_native", "_owner", "_version", "_typing"],
    ["errors"],
    ["_handles", "_turn"],
    ["_marshal", "_log"],
    ["_lib"],
    ["reflect"],
    ["zero_workgroup"],
    ["submission", "readback"],
    ["buffer"],
    ["dispatch", "replay"],
    ["pipeline"],
    ["sequence"],
    ["device"],
    ["interop", "worker", "debug"],  # debug.queued_write_bytes takes a Device
    ["__init__"],
    ["bench", "tinygrad"],  # tinygrad: the DEV=VN device, over the public API
    ["__main__"],
]

# The package's compiled modules (csrc/: the cffi module and csrc/python/owner.c), which
# have no .py to read but are imported.
COMPILED = ("_native", "_owner")


def type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def runtime_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """The Import and ImportFrom nodes that run: not under `if TYPE_CHECKING:` (its else
    branch does run)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and type_checking_only(node):
            for child in node.orelse:
                yield from runtime_imports(ast.Module(body=[child], type_ignores=[]))
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        yield from runtime_imports(node)


def module_names(package: Path) -> dict[str, Path]:
    """Each module of the package by its dotted name below it: `x` for x.py, `sub` for a
    subpackage's sub/__init__.py, `sub.x` for sub/x.py, and `__init__` for the package's own."""
    names: dict[str, Path] = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package).with_suffix("").parts
        if len(parts) > 1 and parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def targets(node: ast.Import | ast.ImportFrom, module: str, path: Path, name: str,
            modules: dict[str, Path]) -> list[str]:
    """The package's modules an import statement of `module` (at `path`) runs: the deepest
    module each imported name reaches (`from .sub import x` is sub.x where that is a
    module, else sub's __init__)."""
    def deepest(parts: list[str]) -> str | None:
        """The longest leading part of `parts` that is a module; `__init__` for none at
        all (the package itself); None when they name something else (a compiled module)."""
        if not parts:
            return "__init__"
        for n in range(len(parts), 0, -1):
            if ".".join(parts[:n]) in modules:
                return ".".join(parts[:n])
        return None

    if isinstance(node, ast.Import):
        # import vyre_native.x.y: x.y (or the deepest of it that is a module)
        found = [deepest(a.name.split(".")[1:]) for a in node.names
                 if a.name == name or a.name.startswith(name + ".")]
        return [t for t in found if t is not None]
    if node.level == 0:
        base_text = node.module or ""
        if base_text != name and not base_text.startswith(name + "."):
            return []
        base = base_text.split(".")[1:]
    else:
        here = [] if module == "__init__" else module.split(".")
        if path.name != "__init__.py":
            here = here[:-1]  # a plain module sits in its parent package
        up = node.level - 1
        if up > len(here):
            return []  # above the package
        base = here[: len(here) - up] + (node.module.split(".") if node.module else [])
    # `from .sub import x`: sub.x where that is a module, else sub itself (its __init__)
    found = [modules.get(".".join(base + [a.name])) and ".".join(base + [a.name]) or deepest(base)
             for a in node.names]
    return [t for t in found if t is not None]


def graph(package: Path, compiled: tuple[str, ...] = ()) -> dict[str, dict[str, set[str]]]:
    """module -> {a module of the package it imports: the names that import it}, with the
    modules of subpackages by dotted name (see module_names). `compiled` names modules
    with no source (extension modules): they are nodes, imported but importing nothing."""
    modules = module_names(package)
    edges: dict[str, dict[str, set[str]]] = {name: {} for name in compiled}
    modules.update({name: package / name for name in compiled if name not in modules})
    for module, path in modules.items():
        if module in compiled:
            continue
        deps = edges.setdefault(module, {})
        for node in runtime_imports(ast.parse(path.read_text(), str(path))):
            for target in targets(node, module, path, package.name, modules):
                if target in modules and target != module:
                    deps.setdefault(target, set()).add(f"line {node.lineno}")
    return edges


def layer_breaks(edges: dict[str, dict[str, set[str]]], layers: list[list[str]] = LAYERS) -> list[str]:
    """Each break of the layer order in `edges` (a graph()): a module in no row, a row
    name that is no module, a module that imports one of its own row or a higher one."""
    rank = {name: i for i, row in enumerate(layers) for name in row}
    unit = {module: module.split(".")[0] for module in edges}
    placed, found = set(rank), set(unit.values())
    breaks = [f"{m} is in no layer: place it in LAYERS (scripts/py_deps.py)" for m in sorted(found - placed)]
    breaks += [f"{m} is in LAYERS but is no module of the package" for m in sorted(placed - found)]
    for module in sorted(edges):
        for dep in sorted(edges[module]):
            a, b = unit[module], unit[dep]
            if a != b and a in rank and b in rank and rank[b] >= rank[a]:
                where = "its own row" if rank[b] == rank[a] else "a higher row"
                breaks.append(f"{module} imports {dep}, of {where} ({' '.join(sorted(edges[module][dep]))})")
    return breaks


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "-v"]
    root = Path(args[0]) if args else Path(__file__).resolve().parent.parent / "vyre_native"
    edges = graph(root, COMPILED)
    sys.exit(report(edges, layer_breaks(edges), verbose="-v" in sys.argv[1:]))
