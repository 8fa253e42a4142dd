"""The code's structure: no circle among the C files of csrc/ (file A depends on file B
when A uses a function or global B defines) nor among the modules of vyre_native/
(runtime imports), as scripts/c_deps.py and scripts/py_deps.py read them.

A circle means no file of it can be read, changed or tested without the others; the
layers (DESIGN: loader and errors, device, resources, work; interop beside the
resources) only hold while there is none."""

from __future__ import annotations

import importlib.util
import pathlib
import sys
from types import ModuleType

import pytest
from support.child import run

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts"


def load(name: str) -> ModuleType:
    sys.path.insert(0, str(SCRIPTS))  # py_deps imports c_deps
    try:
        spec = importlib.util.spec_from_file_location(f"vn_structure_{name}", SCRIPTS / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(SCRIPTS))


@pytest.mark.parametrize("script", ["c_deps.py", "py_deps.py"])
def test_no_circles(script: str) -> None:
    result = run([str(SCRIPTS / script), "-v"])
    assert result.returncode == 0 and result.stdout.rstrip().endswith("no circles"), result.stdout + result.stderr


def test_c_graph_sees_the_known_edges() -> None:
    """The reader is no C parser: prove it finds what it must, so an empty graph cannot
    pass for a clean one."""
    c_deps = load("c_deps")
    edges = c_deps.graph(ROOT / "csrc")
    nodes = {p.name for p in (ROOT / "csrc").glob("*.c") if not p.name.startswith("platform_")}
    assert set(edges) == nodes | {"platform_*.c"}
    assert edges["record.c"]["bind.c"] >= {"vn_bound_resolve", "vn_bound_encode"}  # a call
    assert "vn_buffer_submittable" in edges["readback.c"]["buffer.c"]  # a function's address
    assert "wgpu" in edges["replay.c"]["loader.c"]  # a global
    assert "vn_acquire_all" in edges["replay.c"]["object.c"]  # through a macro (VN_CALL2)
    assert "vn_wait" in edges["readback.c"]["device.c"]  # through an inline (vn_submit_ready)
    assert "vn_mutex_lock" in edges["device.c"]["platform_*.c"]
    # A circle is reported, and exits 1.
    assert c_deps.circles({"a": {"b": set()}, "b": {"c": set()}, "c": {"a": set()}, "d": {"a": set()}}) == [
        ["a", "b", "c"]
    ]


def test_python_graph_sees_the_known_edges() -> None:
    py_deps = load("py_deps")
    edges = py_deps.graph(ROOT / "vyre_native")
    assert "interop" in edges["__init__"]  # from . import interop
    assert "bench" in edges["__main__"]  # inside a function
    assert {"buffer", "device"} <= set(edges["interop"])
    assert "device" not in edges["pipeline"]  # under `if TYPE_CHECKING:` only


def test_python_graph_leaves_out_type_checking_imports(tmp_path: pathlib.Path) -> None:
    py_deps = load("py_deps")
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n")
    (package / "b.py").write_text("def f():\n    from . import a\n")
    edges = py_deps.graph(package)
    assert edges["a"] == {}
    assert set(edges["b"]) == {"a"}


def test_python_graph_names_the_modules_of_subpackages(tmp_path: pathlib.Path) -> None:
    py_deps = load("py_deps")
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("from .sub import f\n")
    (package / "errors.py").write_text("from ._compiled import lib\n")  # no module of the package
    (package / "sub" / "__init__.py").write_text("from .a import f\n")
    (package / "sub" / "a.py").write_text("from ..errors import E\nfrom . import b\n")
    (package / "sub" / "b.py").write_text("from .. import errors\nimport pkg.sub.a\n")
    edges = py_deps.graph(package)
    assert {k: set(v) for k, v in edges.items()} == {
        "__init__": {"sub"},
        "errors": set(),
        "sub": {"sub.a"},
        "sub.a": {"errors", "sub.b"},
        "sub.b": {"errors", "sub.a"},
    }


# vyre_native/reflect/, its modules in layer order: each imports only those before it
REFLECT_LAYERS = ["reflect.tokens", "reflect.parser", "reflect.constants", "reflect.layout", "reflect.entry", "reflect"]


def test_each_module_of_reflect_imports_only_the_modules_before_it() -> None:
    edges = load("py_deps").graph(ROOT / "vyre_native")
    for i, module in enumerate(REFLECT_LAYERS):
        inside = {dep for dep in edges[module] if dep == "reflect" or dep.startswith("reflect.")}
        assert inside <= set(REFLECT_LAYERS[:i]), f"{module} imports {sorted(inside)}"
    assert set(REFLECT_LAYERS) == {m for m in edges if m == "reflect" or m.startswith("reflect.")}
