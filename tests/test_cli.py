"""The command line: python -m vyre_native (and the vyre-native script)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import pytest
from support.child import run

import vyre_native as vn


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run(["-m", "vyre_native", *args], timeout=300)


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


def test_no_command_prints_the_help_and_exits_zero() -> None:
    res = cli()
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("usage: python -m vyre_native")
    assert "demo" in res.stdout and "info" in res.stdout and "bench" in res.stdout


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


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp"), **extra}
    env.pop("VN_BENCH_SUITE", None)
    return env


def test_a_reader_that_closes_the_pipe_ends_the_output_quietly() -> None:
    # `info | head -1`: the reader is gone before the command writes, so every write fails
    # with EPIPE; a Unix tool stops without a word (exit 141, as SIGPIPE would end it).
    proc = subprocess.Popen(
        [sys.executable, "-m", "vyre_native", "info"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tempfile.gettempdir(),
        env=_env(),
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode(errors="replace")
    status = proc.wait(timeout=300)
    assert "BrokenPipeError" not in err and "Traceback" not in err, err
    assert status == 141, (status, err)


def test_demo_prints_under_an_ascii_only_encoding() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "vyre_native", "demo"],
        check=False,
        capture_output=True,
        timeout=300,
        cwd=tempfile.gettempdir(),
        env=_env(PYTHONIOENCODING="ascii"),
    )
    err = res.stderr.decode(errors="replace")
    assert res.returncode == 0 and "Traceback" not in err, err
    out = res.stdout.decode("ascii")  # nothing but ASCII reached the stream
    assert " us\n" in out and "result vs numpy : OK" in out


def _bench_without_a_suite(*args: str) -> subprocess.CompletedProcess[str]:
    """``bench`` where no suite can be found: not beside the package (as in a wheel), not
    under the working directory."""
    code = (
        "import pathlib, sys\nimport vyre_native.bench as bench\n"
        "bench._BESIDE = pathlib.Path('/nonexistent/benchmarks')\n"
        "from vyre_native.__main__ import main\nsys.exit(main(sys.argv[1:]))\n"
    )
    return run(["-c", code, "bench", *args], timeout=300, env={"VN_BENCH_SUITE": None})


def test_bench_with_no_suite_to_find_prints_its_usage_and_exits_two() -> None:
    res = _bench_without_a_suite("--bogus")
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith("usage: python -m vyre_native bench"), res.stderr
    assert "python -m vyre_native bench: error: the benchmarks/ folder was not found" in res.stderr
    assert "Fix:" in res.stderr


def test_bench_given_a_folder_that_is_no_suite_prints_its_usage_and_exits_two() -> None:
    # It never falls back to another suite: the folder asked for is the one used.
    with tempfile.TemporaryDirectory() as empty:
        res = cli("bench", "--suite", empty, "--bogus")
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith("usage: python -m vyre_native bench"), res.stderr
    assert f"--suite {empty} is not the benchmarks/ folder" in res.stderr and "Fix:" in res.stderr


def test_bench_help_names_the_command_as_typed() -> None:
    # The report's parser named itself `python benchmarks/report.py` whatever was typed.
    res = cli("bench", "--help")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("usage: python -m vyre_native bench "), res.stdout


def test_bench_help_away_from_the_suite_is_help_not_an_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # An installed package (the ASan and wheel stages) has no benchmarks/ beside it: help
    # exited 2 with "the benchmarks/ folder was not found".
    from vyre_native import bench

    monkeypatch.setattr(bench, "find_suite", lambda explicit: None)
    assert bench.main(["--help"], prog="python -m vyre_native bench") == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m vyre_native bench "), out
    assert "none is found from here" in out


def test_the_console_script_names_itself() -> None:
    code = (
        "import sys\nsys.argv[0] = '/some/venv/bin/vyre-native'\n"
        "from vyre_native.__main__ import entry\nentry()\n"
    )
    res = run(["-c", code, "bench", "--help"], timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("usage: vyre-native bench "), res.stdout


def test_info_without_xdg_runtime_dir_prints_no_wayland_error() -> None:
    # Mesa's device-select layer made libwayland print this once per adapter enumeration
    # (10 lines for info) when XDG_RUNTIME_DIR was unset; the command line sets one.
    for value in (None, "not-absolute"):
        res = run(["-m", "vyre_native", "info"], timeout=300, env={"XDG_RUNTIME_DIR": value})
        assert res.returncode == 0, res.stderr
        assert "XDG_RUNTIME_DIR" not in res.stderr, res.stderr
