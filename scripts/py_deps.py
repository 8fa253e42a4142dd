#!/usr/bin/env python3
"""The import graph of the Python package vyre_native/, and its circles.

Module A depends on module B when A imports B at run time: at module level or inside a
function (a function-level import still runs, only later). Imports under
`if TYPE_CHECKING:` never run, so they do not count. `from . import x` depends on the
submodule x when there is one, else on the package's __init__; importing any submodule
runs the package's __init__ first, but that is Python's doing and is not an edge.

Prints the graph and every strongly connected component of more than one module (as
scripts/c_deps.py does for csrc/) and exits 1 when there is one.

    python3 scripts/py_deps.py [-v] [vyre_native]     # -v: with the lines of each import
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from c_deps import report  # noqa: E402  (scripts/ is no package)


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


def graph(package: Path) -> dict[str, dict[str, set[str]]]:
    """module -> {a module of the package it imports: the names that import it}."""
    name = package.name
    modules = {p.stem: p for p in sorted(package.glob("*.py"))}
    edges: dict[str, dict[str, set[str]]] = {}
    for module, path in modules.items():
        deps = edges.setdefault(module, {})
        for node in runtime_imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                # import vyre_native.x: x (and the package); import vyre_native: the package
                targets = [(a.name + ".__init__").split(".")[1] for a in node.names
                           if a.name == name or a.name.startswith(name + ".")]
            else:
                base = node.module or ""
                if node.level == 0 and base != name and not base.startswith(name + "."):
                    continue
                if node.level > 1:
                    continue  # above the package
                sub = base.split(".")[1] if node.level == 0 and "." in base else base if node.level else ""
                if sub:
                    targets = [sub.split(".")[0]]
                else:  # from . import x / from vyre_native import x
                    targets = [a.name if a.name in modules else "__init__" for a in node.names]
            for target in targets:
                if target in modules and target != module:
                    deps.setdefault(target, set()).add(f"line {node.lineno}")
    return edges


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "-v"]
    root = Path(args[0]) if args else Path(__file__).resolve().parent.parent / "vyre_native"
    sys.exit(report(graph(root), verbose="-v" in sys.argv[1:]))
