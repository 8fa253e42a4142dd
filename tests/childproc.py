"""Test code run in a child interpreter, for behaviour that may abort, hang, fork or take
signals: a failure then fails one test, with the child's output, instead of the whole run.

``run_child(code)`` runs PRELUDE + code and returns what the child passed to ``report``.
PRELUDE gives the child ``outcome(fn)`` (what a call raised, as data) and
``long_recording(dev, seconds)``: a recording whose one launch keeps the adapter busy
for about that long (lavapipe bounds every shader loop at 65535 iterations, so there the
length comes from the workgroup count; on a GPU from the loop count).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from typing import Any

PRELUDE = '''
import gc, json, os, signal, sys, threading, time
import numpy as np
import vyre_native as vn

def report(value):
    print("RESULT " + json.dumps(value), flush=True)

def outcome(fn):
    try:
        fn()
        return {"ok": True}
    except BaseException as e:
        return {"ok": False, "cls": type(e).__name__, "mro": [c.__name__ for c in type(e).__mro__], "msg": str(e)}

LONG = """
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@group(0) @binding(1) var<uniform> n: vec4<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    var acc = gid.x;
    for (var j = 0u; j < n.y; j = j + 1u) {
        for (var i = 0u; i < n.x; i = i + 1u) {
            acc = (acc ^ (acc << 13u)) ^ (i * 2654435761u + j);
            acc = acc ^ (acc >> 17u);
        }
    }
    out[gid.x & 63u] = acc;
}
"""

def long_recording(dev, seconds=3.0):
    """(recording, output buffer): one launch runs about `seconds` on this adapter."""
    pipeline = dev.compile(LONG)
    out = dev.alloc(256)
    cpu = dev.info["adapter_type"] == "CPU"
    def make(groups, outer):
        params = dev.upload(np.array([60000, outer, 0, 0], np.uint32))
        return pipeline.record([], [out], params=params, workgroups=(groups, 1, 1))
    def timed(rec):
        t0 = time.perf_counter()
        rec.replay().wait()
        return time.perf_counter() - t0
    groups, outer = 4, 1
    timed(make(groups, outer))  # the driver compiles the shader on first use
    for fraction in (0.05, 1.0):  # scale twice: the first estimate is noisy
        scale = seconds * fraction / max(timed(make(groups, outer)), 1e-4)
        if cpu:
            groups = min(65535, max(1, int(groups * scale)))
        else:
            outer = min(2**31, max(1, int(outer * scale)))
    return make(groups, outer), out
'''


def run_child(
    code: str, timeout: float = 180, env: dict[str, str] | None = None, prelude: str = PRELUDE
) -> Any:
    """Run prelude + code in a fresh interpreter; assert it exited 0; return what it
    printed last on a line starting "RESULT " (JSON)."""
    full_env = dict(os.environ)
    full_env.setdefault("XDG_RUNTIME_DIR", "/tmp")
    full_env.update(env or {})
    # A neutral working directory: `python -c` puts it first on sys.path, and the source
    # tree's vyre_native (no compiled module) must not shadow the installed one.
    proc = subprocess.run(  # noqa: PLW1510 -- the returncode is asserted
        [sys.executable, "-c", prelude + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        cwd=tempfile.gettempdir(),
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, (
        f"child exited with {proc.returncode} (negative: killed by that signal):\n{out[-6000:]}"
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, f"child printed no RESULT:\n{out[-6000:]}"
    return json.loads(lines[-1][len("RESULT ") :])


def raised(res: dict[str, Any], cls: str, *words: str) -> str:
    """The child's call raised `cls` (a vn.VyreError) whose message has every word and a Fix."""
    assert not res["ok"], f"expected {cls}, but the call succeeded"
    assert cls in res["mro"], f"expected {cls}, got {res['cls']}: {res['msg']}"
    assert "VyreError" in res["mro"], f"{res['cls']} is not a vn.VyreError"
    for word in (*words, "Fix:"):
        assert word in res["msg"], f"{word!r} not in the message: {res['msg']}"
    return str(res["msg"])
