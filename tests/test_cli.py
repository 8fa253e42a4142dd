"""The command line: python -m vyre_native (and the vyre-native script)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import vyre_native as vn


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    # A neutral working directory: the child must import the installed package.
    return subprocess.run(
        [sys.executable, "-m", "vyre_native", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tempfile.gettempdir(),
        env={**os.environ, "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp")},
    )


def test_help_prints_usage_and_exits_zero() -> None:
    for flag in ("-h", "--help"):
        res = cli(flag)
        assert res.returncode == 0
        assert res.stdout.startswith("usage: python -m vyre_native")
        assert "demo" in res.stdout and "info" in res.stdout and "bench" in res.stdout


def test_version_names_the_package_and_the_wgpu_native_it_loads() -> None:
    res = cli("--version")
    assert res.returncode == 0
    loaded, expected = vn.library_version()
    assert (
        res.stdout.strip()
        == f"vyre_native {vn.__version__}, wgpu-native {loaded} (compiled against {expected})"
    )


def test_no_command_prints_usage_and_exits_two() -> None:
    res = cli()
    assert res.returncode == 2
    assert "usage: python -m vyre_native" in res.stderr


def test_info_lists_every_adapter_with_its_backend_and_features() -> None:
    res = cli("info")
    assert res.returncode == 0, res.stderr
    for adapter in vn.enumerate_adapters():
        assert adapter["name"] in res.stdout
        assert f"backend {adapter['backend']}" in res.stdout
    assert "features: " in res.stdout
    assert "max_buffer_size" in res.stdout


def test_a_failure_prints_the_message_with_its_fix_and_exits_one_without_a_traceback() -> None:
    absent = "metal" if sys.platform == "win32" else "dx12"
    res = cli("demo", "--backend", absent)
    assert res.returncode == 1
    assert "LibraryError" in res.stderr and "Fix:" in res.stderr
    assert "Traceback" not in res.stderr


def test_an_unknown_option_is_a_usage_error() -> None:
    res = cli("info", "--backend", "cuda")
    assert res.returncode == 2
    assert "invalid choice: 'cuda'" in res.stderr
