"""The checkout stays small: the files git tracks add up to at most 8 MiB.

Raw benchmark data is what grew it (26 of 28 MiB were pytest-benchmark JSON under
benchmarks/results/); only summaries are committed now (benchmarks/results/README.md).
The bound is on the tracked files' sizes in the working tree, so it fails before a
commit that would break it.
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
LIMIT = 8 * 2**20


def _tracked() -> list[pathlib.Path]:
    if shutil.which("git") is None:
        pytest.skip("git is not installed: the tracked files cannot be listed")
    run = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=False)
    if run.returncode != 0:
        pytest.skip(f"{ROOT} is not a git checkout (an sdist or a copy): {run.stderr.decode().strip()}")
    return [ROOT / name for name in run.stdout.decode().split("\0") if name]


def test_tracked_files_fit_in_8_mib() -> None:
    # A tracked file deleted but not yet committed counts nothing (is_file is False).
    sizes = sorted(((p.stat().st_size, p) for p in _tracked() if p.is_file()), reverse=True)
    total = sum(size for size, _ in sizes)
    largest = ", ".join(f"{p.relative_to(ROOT)} {size / 2**20:.2f} MiB" for size, p in sizes[:5])
    assert total <= LIMIT, (
        f"the tracked files add up to {total / 2**20:.2f} MiB, over the {LIMIT / 2**20:.0f} MiB bound; "
        f"largest: {largest}. Fix: commit summaries, not raw data (benchmarks/results/README.md)."
    )
