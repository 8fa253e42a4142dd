"""Build helper called by CMakeLists.txt.

``--emit OUT.c``: write the cffi API-mode C source of ``vyre_native._native``. The cdef
is the text between the VN_CDEF markers of csrc/include/vyre_native.h, as-is but for the
public API's parts it includes there (csrc/include/vn_*.h, read in where they are
included) and the X-macro tables (status_codes.h, object_kinds.h, usage_bits.h, beside
them in csrc/include/), written out here as the C preprocessor writes them (cffi's cdef
runs none): those headers are the one place C signatures are written, each declaration
in one of them, and each table the one place of its rows.

``--wgpu-info``: print ``<resources dir>;<expected version as 0xMMmmppbb>;<requirement>``:
the installed ``wgpu`` package's headers, which the C layer compiles against, and its
wgpu-native version, which the loader insists on at run time; and the requirement
pyproject.toml pins it by (``wgpu==X.Y.Z``), which the build compiles in as
VN_WGPU_REQUIREMENT for every message that says what to install.
"""

from __future__ import annotations

import argparse
import importlib.util
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
# The public headers: the entry header, its parts and the tables they include, one folder.
INCLUDE = ROOT / "csrc" / "include"
HEADER = INCLUDE / "vyre_native.h"
PYPROJECT = ROOT / "pyproject.toml"


# A part of the public API, included in the cdef section: its text goes there whole.
PART_USE = re.compile(r'^#include "(vn_\w+\.h)"\n', re.M)
# An X-macro table's use: `#define M(params) body` for each macro of its rows, then
# `#include "table.h"`, then an `#undef` of each.
TABLE_USE = re.compile(r'((?:^#define \w+\([\w, ]*\).*\n)+)#include "(\w+\.h)"\n(?:#undef \w+\n)+', re.M)
MACRO = re.compile(r"^#define (\w+)\(([\w, ]*)\)(.*)$", re.M)


def expand_tables(text: str) -> str:
    """``text`` with each X-macro table's use replaced by its rows ``M(args)`` expanded,
    as the preprocessor expands them (parameters replaced by the row's arguments, ``##``
    pasted): one table, for the C compiler and for cffi's cdef alike."""

    def expand(use: re.Match[str]) -> str:
        macros = {m[1]: ([p.strip() for p in m[2].split(",")], m[3].strip()) for m in MACRO.finditer(use[1])}
        table = INCLUDE / use[2]
        source = re.sub(r"/\*.*?\*/", " ", table.read_text(), flags=re.S)
        lines = []
        for macro, row in re.findall(r"^\s*(\w+)\(([^)]*)\)", source, re.M):
            if macro not in macros:
                raise SystemExit(f"{table}: a row of {macro}, which its use in a header does not define")
            names, body = macros[macro]
            args = dict(zip(names, (a.strip() for a in row.split(",")), strict=True))
            line = re.sub(r"\b\w+\b", lambda word: args.get(word.group(0), word.group(0)), body)
            lines.append(re.sub(r"\s*##\s*", "", line))
        if not lines:
            raise SystemExit(f"{table}: no rows")
        return "".join(f"{line}\n" for line in lines if line)

    return TABLE_USE.sub(expand, text)


def cdef_text() -> str:
    text = HEADER.read_text()
    match = re.search(r"/\* VN_CDEF_BEGIN \*/(.*)/\* VN_CDEF_END \*/", text, re.DOTALL)
    if match is None:
        raise SystemExit(f"{HEADER}: VN_CDEF_BEGIN/VN_CDEF_END markers not found")
    return expand_tables(PART_USE.sub(lambda use: (INCLUDE / use[1]).read_text(), match.group(1)))


def emit(out: pathlib.Path) -> None:
    import cffi

    ffi = cffi.FFI()
    ffi.cdef(cdef_text())
    ffi.set_source("vyre_native._native", '#include "vyre_native.h"')
    out.parent.mkdir(parents=True, exist_ok=True)
    ffi.emit_c_code(str(out))


def wgpu_requirement() -> str:
    """The one pin of wgpu: pyproject.toml's runtime dependency on it, which its build
    requirement must equal (the headers compiled against are the library loaded)."""
    import tomllib

    meta = tomllib.loads(PYPROJECT.read_text())

    def pin(reqs: list[str], where: str) -> str:
        found = [r for r in reqs if re.match(r"wgpu(?![\w.-])", r)]
        if len(found) != 1 or not re.fullmatch(r"wgpu==\d+\.\d+\.\d+", found[0]):
            raise SystemExit(f"{PYPROJECT}: {where} must hold one wgpu==X.Y.Z, not {found}")
        return found[0]

    runtime = pin(meta["project"]["dependencies"], "[project] dependencies")
    build = pin(meta["build-system"]["requires"], "[build-system] requires")
    if build != runtime:
        raise SystemExit(f"{PYPROJECT}: the build requires {build}, the package {runtime}: make them one")
    return runtime


def wgpu_info() -> str:
    requirement = wgpu_requirement()
    # Find the package without importing it: importing wgpu loads wgpu-native,
    # which a build machine need not be able to do.
    spec = importlib.util.find_spec("wgpu")
    if spec is None or spec.origin is None:
        raise SystemExit(f"the wgpu package is not installed: pip install '{requirement}'")
    root = pathlib.Path(spec.origin).parent
    resources = root / "resources"
    for name in ("webgpu.h", "wgpu.h"):
        if not (resources / name).is_file():
            raise SystemExit(f"{resources / name} is missing: reinstall wgpu")
    init = (root / "backends" / "wgpu_native" / "__init__.py").read_text()
    found = re.search(r'__version__\s*=\s*"(\d+)\.(\d+)\.(\d+)\.(\d+)"', init)
    if found is None:
        raise SystemExit("cannot find the wgpu-native version in wgpu/backends/wgpu_native/__init__.py")
    major, minor, patch, build = (int(g) for g in found.groups())
    # wgpuGetVersion packs the four parts one byte each.
    version = (major << 24) | (minor << 16) | (patch << 8) | build
    return f"{resources.as_posix()};0x{version:08x};{requirement}"


def main() -> None:
    parser = argparse.ArgumentParser()
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--emit", type=pathlib.Path)
    group.add_argument("--wgpu-info", action="store_true")
    args = parser.parse_args()
    if args.emit:
        emit(args.emit)
    else:
        sys.stdout.write(wgpu_info())


if __name__ == "__main__":
    main()
