"""The code's structure: no circle among the C files of csrc/ (file A depends on file B
when A uses a function or global B defines) nor among the modules of vyre_native/
(runtime imports), as scripts/c_deps.py and scripts/py_deps.py read them; the Python
layers in order (py_deps.LAYERS); and the C layers in order: each .c includes its own
layer's header (platform.h, layer_base.h, layer_object.h, layer_device.h,
layer_resources.h, layer_work.h, each including the one below), lives in that layer's
folder of csrc/ and uses nothing a file of a higher layer defines.

A circle means no file of it can be read, changed or tested without the others; the
layers (docs/ARCHITECTURE.md draws them: platform, base, objects, device, resources,
work, with interop.c beside the resources; in Python, scripts/py_deps.py's LAYERS) hold only while
no file reaches up."""

from __future__ import annotations

import importlib.util
import pathlib
import shutil
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


def public_api() -> str:
    """The public C API as written: vyre_native.h, then the parts (csrc/include/vn_*.h) it includes."""
    csrc = ROOT / "csrc" / "include"
    return "".join(p.read_text() for p in [csrc / "vyre_native.h", *sorted(csrc.glob("vn_*.h"))])


@pytest.mark.parametrize("script", ["c_deps.py", "py_deps.py"])
def test_no_circles_and_layers_in_order(script: str) -> None:
    result = run([str(SCRIPTS / script), "-v"])
    assert result.returncode == 0 and result.stdout.rstrip().endswith("no circles, layers in order"), (
        result.stdout + result.stderr
    )


def test_c_layers_are_the_headers_in_include_order() -> None:
    """The layers the check holds are the ones the docs name, each file in the layer
    its concern belongs to, so a clean verdict is about these layers."""
    c_deps = load("c_deps")
    below = c_deps.layers_below(ROOT / "csrc")
    order = ["platform.h", "layer_base.h", "layer_object.h", "layer_device.h", "layer_resources.h", "layer_work.h"]
    assert sorted(below) == sorted(order)
    for i, header in enumerate(order):
        assert below[header] == set(order[: i + 1])
    layer = c_deps.layer_of(ROOT / "csrc")
    assert layer["loader.c"] == layer["error.c"] == ["layer_base.h"]
    assert layer["object.c"] == ["layer_object.h"]
    assert layer["device.c"] == ["layer_device.h"]
    assert layer["bind.c"] == layer["fill.c"] == layer["buffer.c"] == ["layer_resources.h"]
    assert layer["encode.c"] == layer["sequence.c"] == layer["readback.c"] == ["layer_work.h"]
    assert layer["platform_posix.c"] == ["platform.h"]
    assert c_deps.room_of(ROOT / "csrc") == {
        "platform": "platform.h", "base": "layer_base.h", "object": "layer_object.h", "device": "layer_device.h",
        "resources": "layer_resources.h", "interop": "layer_resources.h", "work": "layer_work.h",
    }
    folders = sorted(p.name for p in (ROOT / "csrc").iterdir())
    assert folders == sorted(["include", "python", *c_deps.room_of(ROOT / "csrc")])  # nothing loose in csrc/


def test_c_layer_check_finds_planted_breaks(tmp_path: pathlib.Path) -> None:
    """A copy of csrc/ with one break of each kind planted: the check names each, and
    the script exits 1 on it."""
    c_deps = load("c_deps")
    tree = tmp_path / "csrc"
    shutil.copytree(ROOT / "csrc", tree, ignore=shutil.ignore_patterns("python", "*.py"))
    assert c_deps.layer_breaks(tree) == []
    # A resources file calling into the work layer.
    with (tree / "resources" / "bind.c").open("a") as f:
        f.write("\nvoid vn_planted(WGPUCommandEncoder e) { vn_begin_pass(e, NULL); }\n")
    # A file including a second layer header besides its own.
    features = tree / "device" / "features.c"
    features.write_text(
        features.read_text().replace('#include "layer_device.h"', '#include "layer_device.h"\n#include "../work/layer_work.h"')
    )
    # A device header inline reaching up into the work layer.
    device_h = tree / "device" / "layer_device.h"
    text = device_h.read_text()
    inline = "static inline void vn_device_attach(vn_device *device, vn_device_part part, const vn_device_hooks *hooks) {"
    assert inline in text
    device_h.write_text(text.replace(inline, inline + " (void)vn_timing_release;"))
    # A work file pretending to be a resources file: it defines layer_work.h's names.
    submission = tree / "work" / "submission.c"
    submission.write_text(submission.read_text().replace('#include "layer_work.h"', '#include "../resources/layer_resources.h"'))
    # A device file in the work layer's folder, and one in a folder of no layer.
    (tree / "device" / "callbacks.c").rename(tree / "work" / "callbacks.c")
    (tree / "misc").mkdir()
    (tree / "base" / "debug.c").rename(tree / "misc" / "debug.c")
    breaks = c_deps.layer_breaks(tree)
    assert "bind.c (layer_resources.h) uses encode.c (layer_work.h), a higher layer: vn_begin_pass" in breaks
    assert "features.c includes 2 layer headers (layer_device.h layer_work.h): one, its own" in breaks
    assert "layer_device.h's vn_device_attach uses vn_timing_release of timing.c (layer_work.h), a higher layer" in breaks
    assert "submission.c includes layer_resources.h but defines vn_submit_tracked, which layer_work.h declares" in breaks
    assert "work/callbacks.c includes layer_device.h, the layer of device/, not of work/: a file lives in its layer's room" in breaks
    assert "misc/debug.c is in misc/, the room of no layer: move it to its layer's" in breaks
    result = run([str(SCRIPTS / "c_deps.py"), str(tree)])
    assert result.returncode == 1 and "layer order: bind.c (layer_resources.h) uses encode.c" in result.stdout, result.stdout


def test_c_graph_sees_the_known_edges() -> None:
    """The reader is no C parser: prove it finds what it must, so an empty graph cannot
    pass for a clean one."""
    c_deps = load("c_deps")
    edges = c_deps.graph(ROOT / "csrc")
    nodes = {p.name for p in c_deps.c_files(ROOT / "csrc") if not p.name.startswith("platform_")}
    assert set(edges) == nodes | {"platform_*.c"}
    assert edges["prerecorded.c"]["bind.c"] >= {"vn_bound_resolve"}  # a call
    assert "vn_bound_encode" in edges["prerecorded.c"]["encode.c"]
    assert "vn_buffer_submittable" in edges["buffer_read.c"]["buffer.c"]  # a function's address
    assert "vn_readback" not in edges["staging.c"].get("readback.c", set())  # struct vn_readback is a tag
    assert "wgpu" in edges["submit.c"]["loader.c"]  # a global
    assert "vn_acquire_all" in edges["sequence.c"]["object.c"]  # through a macro (VN_CALL2)
    assert edges["parking.c"]["object.c"] == {"vn_fork_generation"}  # only through an inline (vn_inherited)
    assert "vn_mutex_lock" in edges["scopes.c"]["platform_*.c"]
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


def test_no_python_module_imports_a_module_of_its_row_or_above() -> None:
    """scripts/py_deps.py's LAYERS, the one table of the Python layers, holds for the
    package: every module placed, the compiled modules included, and no import upward."""
    py_deps = load("py_deps")
    edges = py_deps.graph(ROOT / "vyre_native", py_deps.COMPILED)
    assert {"_native", "_owner"} <= set(edges["_handles"])  # the compiled modules are nodes
    assert py_deps.layer_breaks(edges) == []


def test_python_layer_check_finds_planted_breaks(tmp_path: pathlib.Path) -> None:
    """A small package with one break of each kind: the check names each, and the
    script exits 1 on it."""
    py_deps = load("py_deps")
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("from . import top\n")
    (package / "low.py").write_text("def f():\n    from .top import g\n")  # up, inside a function
    (package / "mid.py").write_text("from ._compiled import lib\nfrom .low import f\n")
    (package / "peer.py").write_text("import pkg.mid\n")  # its own row
    (package / "top.py").write_text("from .sub.a import h\n")
    (package / "stray.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "a.py").write_text("from .. import low\nfrom . import b\n")  # b: sub's own order
    (package / "sub" / "b.py").write_text("")
    (package / "base.py").write_text("from ._compiled import lib\n")  # the compiled module's own row
    layers = [["_compiled", "base"], ["low"], ["mid", "peer"], ["sub"], ["top"], ["__init__"], ["gone"]]
    edges = py_deps.graph(package, ("_compiled",))
    assert py_deps.layer_breaks(edges, layers) == [
        "stray is in no layer: place it in LAYERS (scripts/py_deps.py)",
        "gone is in LAYERS but is no module of the package",
        "base imports _compiled, of its own row (line 1)",
        "low imports top, of a higher row (line 2)",
        "peer imports mid, of its own row (line 1)",
    ]
    tree = tmp_path / "vyre_native"
    shutil.copytree(ROOT / "vyre_native", tree, ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd"))
    (tree / "errors.py").write_text((tree / "errors.py").read_text() + "\nfrom . import device\n")
    result = run([str(SCRIPTS / "py_deps.py"), str(tree)])
    assert result.returncode == 1, result.stdout
    assert "layer order: errors imports device, of a higher row" in result.stdout, result.stdout


# vyre_native/reflect/, its modules in layer order: each imports only those before it
REFLECT_LAYERS = ["reflect.tokens", "reflect.parser", "reflect.constants", "reflect.layout", "reflect.entry", "reflect"]


def test_each_module_of_reflect_imports_only_the_modules_before_it() -> None:
    edges = load("py_deps").graph(ROOT / "vyre_native")
    for i, module in enumerate(REFLECT_LAYERS):
        inside = {dep for dep in edges[module] if dep == "reflect" or dep.startswith("reflect.")}
        assert inside <= set(REFLECT_LAYERS[:i]), f"{module} imports {sorted(inside)}"
    assert set(REFLECT_LAYERS) == {m for m in edges if m == "reflect" or m.startswith("reflect.")}


def test_vn_debug_exposes_its_functions_and_nothing_else() -> None:
    """vn.debug is a debugging surface, not a way to the C library: its public names are
    its __all__, each a plain function (it once imported cffi's ``lib``, so ``vn.debug.lib``
    handed any caller every C entry point, test control included, and raw pointers)."""
    import inspect

    import vyre_native as vn

    public = {name for name in dir(vn.debug) if not name.startswith("_")}
    assert public == set(vn.debug.__all__), f"public names beyond __all__: {sorted(public - set(vn.debug.__all__))}"
    for name in public:
        assert inspect.isfunction(getattr(vn.debug, name)), f"vn.debug.{name} is not a function"
    for raw in ("lib", "ffi"):
        assert not hasattr(vn.debug, raw)


def test_introspection_is_one_door_beside_the_api_and_refuses_what_it_lacks() -> None:
    """What C shows of its insides goes through vn_introspect alone (the five vn_debug_*
    entry points it replaced were production API beside the test door), and a file that
    is production code is not named as a test (tools drop test_* files from maps)."""
    from support.errors import typed

    import vyre_native as vn
    from vyre_native._lib import ffi, introspect, lib

    assert "vn_debug_" not in public_api()
    assert not [p.name for p in (ROOT / "csrc").rglob("test_*")]
    typed(lambda: introspect(99), vn.InvalidArgumentError, "vn_introspect", "no op 99")
    assert lib.vn_introspect(lib.VN_INTROSPECT_LIVE_IDS, ffi.NULL) == lib.VN_ERROR_INVALID_ARGUMENT
    assert introspect(lib.VN_INTROSPECT_LIVE_IDS).live_ids >= 0


def test_live_counts_and_buffer_usages_are_their_tables_rows() -> None:
    """vn_live_counts' fields and vn_buffer_usage's bits are written once, in
    csrc/include/object_kinds.h and csrc/include/usage_bits.h; the compiled module (through cffi's cdef,
    which scripts/ffi_build.py writes out of them) and the Python API follow them."""
    from support.tables import rows

    import vyre_native as vn
    from vyre_native._lib import ffi, lib

    fields = [row[1] for row in rows("object_kinds.h", "VN_HANDLE_KIND|VN_INNER_KIND")]
    assert len(fields) == 13
    assert [name for name, _ in ffi.typeof("vn_live_counts").fields] == fields
    assert list(vn.debug.live_objects()) == fields
    usages = rows("usage_bits.h", "VN_USAGE")
    assert [(name, int(bit, 16)) for name, bit in usages] == [
        (name, getattr(lib, f"VN_USAGE_{name}")) for name, _ in usages
    ]
    assert [(m.name, m.value) for m in vn.BufferUsage if m.name != "DEFAULT"] == [
        (name, int(bit, 16)) for name, bit in usages
    ]


def test_the_out_of_memory_message_is_written_once() -> None:
    """A host allocation that failed is reported through vn_fail_no_memory (error.c),
    which names what and how many bytes; only a message naming another value (a count of
    entries) spells its own."""
    import re

    inline = {}
    for path in sorted((ROOT / "csrc").rglob("*.c")):
        text = re.sub(r'"\s*\n\s*"', "", path.read_text())  # adjacent literals joined
        found = len(re.findall(r'"could not allocate [^%"]*Fix: free host memory\.', text))
        if found:
            inline[path.name] = found
    assert inline == {}


# Public entry points that never reach wgpu-native or the GPU driver (their own checks,
# tables, the library's loading, the log, a sequence's steps being written), or that
# only pass on to one that is guarded (vn_buffer_read to vn_view_read, ...).
_UNGUARDED_ENTRY_POINTS = {
    "vn_adapter_choose", "vn_assigned_by_environment", "vn_binding_kind_name", "vn_binding_kind_wgsl",
    "vn_buffer_read", "vn_buffer_read_async", "vn_buffer_write", "vn_buffer_retain_for_watch",
    "vn_device_retain_for_watch", "vn_device_close", "vn_device_destroy_shared", "vn_expected_version",
    "vn_host_block_alloc", "vn_host_block_give", "vn_host_block_take", "vn_host_blocks_free_kept",
    "vn_last_error", "vn_last_error_position", "vn_library_load", "vn_library_version",
    "vn_log_next", "vn_log_set_level", "vn_log_start", "vn_process_exiting", "vn_replay_split",
    "vn_sequence_clear", "vn_sequence_copy", "vn_sequence_length", "vn_test_control", "vn_view_check",
    "vn_wgpu_requirement", "vn_wgsl_check_nesting", "vn_wgsl_check_size",
}


def test_every_entry_point_that_may_reach_the_driver_is_inside_the_call_guard() -> None:
    """exit() and fork() wait for the calls in flight (layer_object.h, the call guard): an
    entry point outside it races the driver's exit handlers (the H200 crashed so) or
    leaves a fork child a lock held for ever. A new entry point is either guarded (a
    VN_CALL*, VN_VIEW_CALL, VN_GET or VN_PROBE body, a release, or vn_call_guard_enter
    itself) or named
    above, with a reason that it never reaches the driver."""
    import re

    header = public_api()
    names = set(re.findall(r"^[a-z_ ]*?[\w\*]+\s+\**(vn_\w+)\(", header, re.M))
    sources = [p.read_text() for p in load("c_deps").c_files(ROOT / "csrc")]
    unguarded = set()
    for name in names:
        for text in sources:
            m = re.search(r"^[\w \*]+\b" + name + r"\([^;{]*\)\s*\{", text, re.M)
            if m is None:
                continue
            depth, j = 1, m.end()
            while depth and j < len(text):
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                j += 1
            if not re.search(r"VN_CALL|VN_VIEW_CALL|VN_GET|VN_PROBE|vn_call_guard_enter|vn_id_release", text[m.end() : j]):
                unguarded.add(name)
            break
    assert unguarded == _UNGUARDED_ENTRY_POINTS


def test_no_c_source_is_over_600_lines() -> None:
    """A C file holds one thing (issue 27): a file past 600 lines is split by concern."""
    sources = [*(ROOT / "csrc").rglob("*.[ch]"), *(ROOT / "benchmarks" / "floor").glob("*.[ch]")]
    lines = {str(p.relative_to(ROOT)): len(p.read_text().splitlines()) for p in sorted(sources)}
    assert {name: n for name, n in lines.items() if n > 600} == {}
    assert len(lines) > 50 and "benchmarks/floor/floor.c" in lines


def test_the_cdef_comes_from_one_entry_header_and_each_declaration_from_one_part() -> None:
    """cffi's cdef is vyre_native.h's section (scripts/ffi_build.py): every public part
    (csrc/include/vn_*.h) is included there once, and no function is declared in two places."""
    import re

    csrc = ROOT / "csrc" / "include"
    entry = (csrc / "vyre_native.h").read_text()
    section = entry[entry.index("/* VN_CDEF_BEGIN */") : entry.index("/* VN_CDEF_END */")]
    parts = sorted(p.name for p in csrc.glob("vn_*.h"))
    included = re.findall(r'^#include "(vn_\w+\.h)"$', section, re.M)
    assert sorted(included) == parts and len(parts) > 1
    assert re.findall(r'^#include "(vn_\w+\.h)"$', entry, re.M) == included  # none outside the section
    declared: dict[str, list[str]] = {}
    for name in ["vyre_native.h", *parts]:
        for fn in re.findall(r"^[a-z_ ]*?[\w\*]+\s+\**(vn_\w+)\(", (csrc / name).read_text(), re.M):
            declared.setdefault(fn, []).append(name)
    assert len(declared) > 50
    assert {fn: where for fn, where in declared.items() if len(where) > 1} == {}
    ffi_build = importlib.util.spec_from_file_location("vn_structure_ffi_build", SCRIPTS / "ffi_build.py")
    assert ffi_build is not None and ffi_build.loader is not None
    module = importlib.util.module_from_spec(ffi_build)
    ffi_build.loader.exec_module(module)
    cdef = module.cdef_text()
    assert "#include" not in cdef and all(f"{fn}(" in cdef for fn in declared)
