"""scripts/setup.sh's interpreter checks (scripts/setup_python.sh), run alone against
stand-in interpreters: one that does not start (as a pyenv shim of an unselected
version), one too old, and a venv made from another interpreter than PYTHON names."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHECKS = ROOT / "scripts" / "setup_python.sh"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="the set-up scripts are bash")


def _check(call: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", f'source "{CHECKS}"; {call}'], capture_output=True, text=True, timeout=60, check=False
    )


def _fake(path: pathlib.Path, body: str) -> pathlib.Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return path


def test_this_interpreter_passes() -> None:
    res = _check(f'python_ok "{sys.executable}"')
    assert res.returncode == 0 and res.stdout == "", res.stdout + res.stderr


def test_an_interpreter_that_does_not_start_is_not_called_too_old(tmp_path: pathlib.Path) -> None:
    shim = _fake(tmp_path / "python3.13", "echo 'pyenv: python3.13: command not found' >&2; exit 127")
    res = _check(f'python_ok "{shim}"')
    assert res.returncode == 1
    assert "does not start (exit status 127" in res.stdout and "command not found" in res.stdout, res.stdout
    assert "too old" not in res.stdout and "Fix:" in res.stdout


def test_an_old_interpreter_is_too_old(tmp_path: pathlib.Path) -> None:
    old = _fake(tmp_path / "python3.9", "echo 3.9.18; exit 1")  # what the version check prints there
    res = _check(f'python_ok "{old}"')
    assert res.returncode == 1
    assert "is Python 3.9.18, too old" in res.stdout and "Fix:" in res.stdout, res.stdout


def test_a_missing_command_is_named(tmp_path: pathlib.Path) -> None:
    res = _check(f'python_ok "{tmp_path / "nosuch"}"')
    assert res.returncode == 1 and "no '" in res.stdout and "on PATH" in res.stdout, res.stdout


def test_a_venv_of_another_interpreter_does_not_match(tmp_path: pathlib.Path) -> None:
    _fake(tmp_path / "venv" / "bin" / "python", "echo 'Python 3.11.7 at /elsewhere'")
    res = _check(f'venv_matches "{tmp_path / "venv"}" "{sys.executable}"')
    assert res.returncode == 1
    assert "has Python 3.11.7 at /elsewhere, PYTHON=" in res.stdout, res.stdout


def test_a_venv_of_this_interpreter_matches(tmp_path: pathlib.Path) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    res = _check(f'venv_matches "{venv}" "{sys.executable}"')
    assert res.returncode == 0, res.stdout + res.stderr
