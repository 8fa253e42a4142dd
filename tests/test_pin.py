"""The wgpu pin is written once, as pyproject.toml's dependency (wgpu==X.Y.Z): the C ABI
of webgpu.h changes between wgpu-native releases, so the headers compiled against, the
library loaded and every message that says what to install name one release.

The build reads the pin (scripts/ffi_build.py --wgpu-info) and compiles it into the C
layer (VN_WGPU_REQUIREMENT); Python reads it from there (``_lib.WGPU_REQUIREMENT``).
"""

from __future__ import annotations

import importlib.metadata
import pathlib
import re
import subprocess
import tomllib
from typing import Any

from vyre_native._lib import WGPU_REQUIREMENT, lib

ROOT = pathlib.Path(__file__).resolve().parent.parent
PIN = re.compile(r"wgpu\s*==\s*\d[\w.*]*")


def _pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _pins(requirements: list[str]) -> list[str]:
    return [r for r in requirements if re.match(r"wgpu(?![\w.-])", r)]


def _tracked(*patterns: str) -> list[pathlib.Path]:
    out = subprocess.run(["git", "ls-files", "-z", *patterns], cwd=ROOT, capture_output=True, check=True)
    return [ROOT / name for name in out.stdout.decode().split("\0") if name]


def test_pyproject_pins_one_wgpu_release_for_the_build_and_the_package() -> None:
    meta = _pyproject()
    runtime, build = _pins(meta["project"]["dependencies"]), _pins(meta["build-system"]["requires"])
    assert len(runtime) == 1 and re.fullmatch(r"wgpu==\d+\.\d+\.\d+", runtime[0]), runtime
    assert build == runtime


def test_the_compiled_module_names_pyproject_s_pin() -> None:
    assert WGPU_REQUIREMENT == _pins(_pyproject()["project"]["dependencies"])[0]


def test_the_installed_wgpu_is_the_pinned_release() -> None:
    assert WGPU_REQUIREMENT == f"wgpu=={importlib.metadata.version('wgpu')}"
    assert lib.vn_expected_version() != 0


def test_no_code_file_but_pyproject_writes_a_wgpu_pin() -> None:
    code = _tracked("*.py", "*.c", "*.h", "*.sh", "*.txt", "*.toml", "*.cfg", "*.yml", "*.yaml")
    found = [
        f"{path.relative_to(ROOT)}: {m.group()}"
        for path in code
        if path.name != "pyproject.toml" and path.is_file()
        for m in PIN.finditer(path.read_text(errors="replace"))
    ]
    assert not found, found


def test_the_docs_name_the_pinned_release() -> None:
    """README.md and docs/ say which wgpu to install: the pin, in its one spelling."""
    found = [
        f"{path.relative_to(ROOT)}: {m.group()}"
        for path in _tracked("*.md")
        for m in PIN.finditer(path.read_text(errors="replace"))
        if m.group() != WGPU_REQUIREMENT
    ]
    assert not found, found
