"""docs/ARCHITECTURE.md stays a true map: every file it names exists, and every C or
Python name it puts in backticks is defined in the tree.

A file is a backticked word with a path or a file extension (`bind.c`, `reflect/`,
`tests/test_pin.py`), or a C or Python file named in the layer diagram, found under the
root, csrc/ or a folder of it, vyre_native/ or vyre_native/reflect/. A name is any other backticked
identifier, dotted or called (`vn_replay_split`, `Recording.replay`, `_marshal.to_u32(n)`):
a C name must be in csrc/'s code (comments and strings do not count) or in wgpu-native's
headers, a Python name defined in vyre_native/ or scripts/ (`Class.member` in that class,
`module.name` in that module, `vn.X` and `lib.X` as attributes). Backticked text that is no
name (values, keyword arguments, commands) is left alone; the few words that name
something outside the tree are listed in NOT_IN_THE_TREE.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pathlib
import re
import sys
from functools import cache
from typing import Any

import pytest

import vyre_native as vn
from vyre_native._lib import lib

ROOT = pathlib.Path(__file__).resolve().parent.parent
MAP = ROOT / "docs" / "ARCHITECTURE.md"
CSRC_FOLDERS = sorted(p for p in (ROOT / "csrc").iterdir() if p.is_dir())  # a layer each, include/, python/
PLACES = [ROOT, ROOT / "csrc", *CSRC_FOLDERS, ROOT / "vyre_native", ROOT / "vyre_native" / "reflect"]
FILE_EXTENSIONS = {"c", "h", "py", "pyi", "md", "sh", "toml", "txt", "typed", "json", "yml"}
NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*\*?(?:\(\w*(?:\.\w+)*\))?")
# Backticked identifiers that name something outside the tree, each with what it is.
NOT_IN_THE_TREE = {
    "main": "the branch the map describes",
    "n": "an argument in `replay(n)`",
    "fork": "POSIX's fork()",
    "__enter__": "Python's context-manager protocol",
    "__exit__": "Python's context-manager protocol",
}


def _text() -> tuple[str, str]:
    """(prose, fenced): the map without its fenced blocks, and the blocks."""
    text = MAP.read_text()
    fenced = "\n".join(re.findall(r"^```[^\n]*\n(.*?)^```", text, re.S | re.M))
    return re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.S | re.M), fenced


def _backticked() -> list[str]:
    return sorted(set(re.findall(r"`([^`\n]+)`", _text()[0])))


def _is_file(word: str) -> bool:
    return "/" in word or (
        "." in word and not word.startswith(".") and word.rsplit(".", 1)[1] in FILE_EXTENSIONS
    )


def _files() -> list[str]:
    named = [w for w in _backticked() if _is_file(w) and " " not in w]
    diagram = re.findall(r"(?<![\w/.])((?:[\w]+/)*\w+\.(?:c|h|py))\b", _text()[1])
    return sorted(set(named + diagram))


def _names() -> list[str]:
    return [w for w in _backticked() if not _is_file(w) and NAME.fullmatch(w)]


def _script(name: str) -> Any:
    sys.path.insert(0, str(ROOT / "scripts"))  # py_deps imports c_deps
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(ROOT / "scripts"))


def _c_words() -> set[str]:
    words: set[str] = set()
    for path in (ROOT / "csrc").rglob("*.[ch]"):
        code, directives = _script("c_deps").tokens(path.read_text())
        words.update(code, directives)
    return words


def _wgpu_words() -> set[str]:
    spec = importlib.util.find_spec("wgpu")
    assert spec is not None and spec.origin is not None
    resources = pathlib.Path(spec.origin).parent / "resources"
    return {w for name in ("webgpu.h", "wgpu.h") for w in re.findall(r"\w+", (resources / name).read_text())}


class _PythonDefinitions:
    """What vyre_native/'s modules (and scripts/', such as py_deps's LAYERS) define: names
    anywhere, names by module and by class."""

    def __init__(self) -> None:
        self.anywhere: set[str] = set()
        self.by_module: dict[str, set[str]] = {}
        self.by_class: dict[str, set[str]] = {}
        for path in [*(ROOT / "vyre_native").rglob("*.py"), *(ROOT / "scripts").glob("*.py")]:
            tree = ast.parse(path.read_text())
            module = path.stem if path.stem != "__init__" else path.parent.name
            self.by_module.setdefault(module, set()).update(self._bound(tree.body))
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    self.by_class.setdefault(node.name, set()).update(self._bound(node.body))
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    self.anywhere.add(node.name)
                elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    self.anywhere.add(node.id)
                elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                    self.anywhere.add(node.attr)
            self.anywhere.update(self.by_module[module])
        self.modules = set(self.by_module) | set(_script("py_deps").COMPILED)

    @staticmethod
    def _bound(body: list[ast.stmt]) -> set[str]:
        names: set[str] = set()
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
            elif isinstance(node, (ast.Import, ast.ImportFrom)):  # `lib`, as _lib has it
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
        return names

    def defines(self, dotted: str) -> bool:
        first, *rest = dotted.split(".")
        if not rest:
            return first in self.anywhere or first in self.modules
        if first == "vyre_native":
            return importlib.util.find_spec(dotted) is not None
        if first == "vn":
            obj: object = vn
            for part in rest:
                if not hasattr(obj, part):
                    return False
                obj = getattr(obj, part)
            return True
        if first == "lib":
            return len(rest) == 1 and hasattr(lib, rest[0])
        member = rest[-1]
        if first in self.by_class:
            return member in self.by_class[first]
        if first in self.by_module:
            return member in self.by_module[first]
        return member in self.anywhere  # a variable of an example (`rec.replay`): the method exists


def test_the_map_names_files_and_names_to_check() -> None:
    """The reader finds what it must, so an empty list cannot pass for a true map."""
    files, names = _files(), _names()
    assert {"bind.c", "reflect/tokens.py", "tests/test_structure.py", "pipeline.py"} <= set(files)
    assert {"vn_replay_split", "Recording.replay", "_marshal.to_u32(n)", "vn_life_lock_read*"} <= set(names)


def _missing_file(name: str) -> bool:
    return not any(any(place.glob(name)) if "*" in name else (place / name).exists() for place in PLACES)


@cache
def _definitions() -> tuple[set[str], set[str], _PythonDefinitions]:
    return _c_words(), _wgpu_words(), _PythonDefinitions()


def _undefined(word: str) -> bool:
    c_words, wgpu_words, python = _definitions()
    name = re.sub(r"\(.*\)$", "", word)
    if name in NOT_IN_THE_TREE:
        return False
    if name.endswith("*"):  # a family: vn_life_lock_read*
        return not any(w.startswith(name[:-1]) for w in c_words)
    if "." not in name and (name in c_words or name in wgpu_words):
        return False
    return not python.defines(name)


def test_the_check_refuses_what_the_tree_does_not_have() -> None:
    """Names and files that are gone or never were, of each kind the map uses."""
    assert all(map(_missing_file, ["reflect.py", "csrc/nope.c", "tests/test_nope.py", "nope/", "csrc/*.x"]))
    gone = ["vn_publish_retained", "cleared_output", "VN_NOPE*", "wgpuNope", "Recording.nope",
            "_marshal.nope(n)", "vn.Nope", "lib.vn_nope", "vyre_native.nope", "nope"]
    assert [w for w in gone if not _undefined(w)] == []
    here = ["vn_device_create", "VN_CALL*", "wgpuQueueSubmit", "Device.copy", "_marshal.to_u32(n)",
            "vn.Device", "lib.vn_device_create", "vyre_native.reflect.tokens", "LAYERS"]
    assert [w for w in here if _undefined(w)] == []


@pytest.mark.parametrize("name", _files())
def test_each_file_the_map_names_exists(name: str) -> None:
    assert not _missing_file(name), f"docs/ARCHITECTURE.md names {name}, which is not there"


def test_each_name_the_map_puts_in_backticks_is_defined() -> None:
    missing = [word for word in _names() if _undefined(word)]
    assert not missing, f"docs/ARCHITECTURE.md names what the tree does not define: {missing}"


def test_the_layer_diagram_names_every_module() -> None:
    """A module or subpackage of vyre_native/ the diagram leaves out has no place on the map
    (the command line, _typing.py and _version.py once had none)."""
    package = ROOT / "vyre_native"
    parts = [p.name for p in package.glob("*.py") if p.name != "__init__.py"]
    parts += [p.name + "/" for p in package.iterdir() if (p / "__init__.py").is_file()]
    diagram = _text()[1]
    assert [p for p in sorted(parts) if not re.search(rf"(?<![\w.]){re.escape(p)}", diagram)] == []


@pytest.mark.parametrize(
    ("phrase", "constant"),
    [
        ("at most {} launches", "VN_MAX_LAUNCHES_PER_SUBMIT"),
        ("{} launches per submit", "VN_MAX_LAUNCHES_PER_SUBMIT"),
        ("{} ms slices", "VN_WAIT_SLICE_MS"),
        ("in parts of {}, ", "VN_SPLIT_FIRST_STEPS"),
    ],
)
def test_the_maps_figures_are_cs(phrase: str, constant: str) -> None:
    """The numbers the map quotes are C's constants, not a copy that drifts."""
    text = " ".join(MAP.read_text().split())
    assert phrase.format(getattr(lib, constant)) in text, f"the map does not say {phrase!r} with {constant}"
