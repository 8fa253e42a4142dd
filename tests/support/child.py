"""Run test code in a child interpreter, for behaviour that may abort, hang, fork or take
signals: a failure then fails one test, with the child's output, instead of the whole run.

``run_scenario(name, *args)`` runs the module ``scenarios.<name>`` (``python -m``);
``run_child(code)`` runs a short snippet after ``PRELUDE`` (``prelude=""`` for a child
that must set things up before vyre_native loads). Both return the value the child
passed to ``support.childlib.report`` last, and assert the child exited 0.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

from support.childlib import RESULT

TESTS = pathlib.Path(__file__).resolve().parent.parent

# What a snippet starts with: the modules it uses and childlib's helpers.
PRELUDE = """\
import gc, json, os, signal, sys, threading, time
import numpy as np
import vyre_native as vn
from support.childlib import long_recording, outcome, outcomes_across, report, rss_mib
U = vn.BufferUsage
"""


# What a logging child starts with: `records` collects the vyre_native logger's records,
# set up before vyre_native loads (it routes wgpu-native's log once, at load).
LOG_PRELUDE = """\
import logging, time
from support.childlib import keep_log, report
records = keep_log()
"""


def run(
    argv: Sequence[str],
    timeout: float = 180,
    env: Mapping[str, str | None] | None = None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `python argv` with tests/ on its path (env changes this process's: None
    removes a variable; stdin is its input); the completed process, whatever its status.
    An env value with bytes that are not UTF-8 passes as os.fsdecode(those bytes)."""
    full_env = dict(os.environ)
    full_env.setdefault("XDG_RUNTIME_DIR", "/tmp")  # silences a harmless lavapipe warning
    for name, value in (env or {}).items():
        if value is None:
            full_env.pop(name, None)
        else:
            full_env[name] = value
    full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TESTS), full_env.get("PYTHONPATH")]))
    # A neutral working directory: `python -c` puts it first on sys.path, and the source
    # tree's vyre_native (no compiled module) must not shadow the installed one.
    return subprocess.run(  # noqa: PLW1510 -- callers check the returncode
        [sys.executable, *argv],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        cwd=tempfile.gettempdir(),
    )


def result_of(proc: subprocess.CompletedProcess[str]) -> Any:
    """Assert the child exited 0; what it reported last."""
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, (
        f"child exited with {proc.returncode} (negative: killed by that signal):\n{out[-6000:]}"
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(RESULT)]
    assert lines, f"child printed no {RESULT.strip()}:\n{out[-6000:]}"
    return json.loads(lines[-1][len(RESULT) :])


def run_child(
    code: str,
    timeout: float = 180,
    env: Mapping[str, str | None] | None = None,
    prelude: str = PRELUDE,
    stdin: str | None = None,
) -> Any:
    """Run prelude + code (dedented) in a fresh interpreter; its report."""
    return result_of(run(["-c", prelude + textwrap.dedent(code)], timeout=timeout, env=env, stdin=stdin))


def run_scenario(
    name: str, *args: str, timeout: float = 180, env: Mapping[str, str | None] | None = None
) -> Any:
    """Run tests/scenarios/<name>.py as __main__ with args; its report."""
    return result_of(run(["-m", f"scenarios.{name}", *args], timeout=timeout, env=env))


def wgpu_log(records: list[list[str]]) -> list[list[str]]:
    """The records of a logging child that came from wgpu-native."""
    return [r for r in records if r[1].startswith("wgpu-native: ")]


def run_logging_child(code: str) -> list[list[str]]:
    """Run LOG_PRELUDE + code in a fresh interpreter; the wgpu-native records it logged."""
    return wgpu_log(
        run_child(textwrap.dedent(code) + "\nreport(records)\n", timeout=120, prelude=LOG_PRELUDE)
    )
