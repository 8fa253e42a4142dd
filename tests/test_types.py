"""The public API's types: mypy --strict accepts tests/typecheck/public_api.py, whose
assert_type calls pin what each public call returns (no Any), and the file runs. And
the package's own code, the tests' shared code (tests/support/) and child scenarios
(tests/scenarios/) type check too: they are modules, not strings, so that mypy and ruff
read them."""

from __future__ import annotations

import pathlib

from mypy import api as mypy_api
from support.child import run

HERE = pathlib.Path(__file__).resolve().parent
PUBLIC_API = HERE / "typecheck" / "public_api.py"


def test_public_api_signatures_type_check_under_mypy_strict() -> None:
    out, err, status = mypy_api.run(
        ["--strict", "--no-incremental", "--show-traceback", "--python-version", "3.11", str(PUBLIC_API)]
    )
    assert status == 0, out + err


def test_test_support_and_scenarios_type_check_under_mypy_strict() -> None:
    # the project's mypy settings (untyped wgpu, the compiled cffi module) wherever pytest
    # runs from: the wheel's test stage runs the suite from a folder of its own
    config = str(HERE.parent / "pyproject.toml")
    out, err, status = mypy_api.run(
        ["--strict", "--no-incremental", "--python-version", "3.11", "--config-file", config,
         str(HERE / "support"), str(HERE / "scenarios")]
    )
    assert status == 0, out + err


def test_the_package_itself_type_checks_under_mypy_strict() -> None:
    # named as files: where the package is installed (editable, or a wheel in site-packages)
    # mypy would read it as a library and report nothing of its own code
    config = str(HERE.parent / "pyproject.toml")
    package = HERE.parent / "vyre_native"
    out, err, status = mypy_api.run(
        ["--strict", "--no-incremental", "--python-version", "3.11", "--config-file", config, str(package)]
    )
    assert status == 0, out + err


def test_public_api_examples_run() -> None:
    res = run([str(PUBLIC_API)], timeout=300)
    assert res.returncode == 0, res.stderr
