"""VN_TEST_RESOURCE_LOG=path: one line per test (conftest) or per state-machine example
(test_stateful's child) of what the process holds then: open files (those on GPU
device nodes apart), threads, memory mappings, resident memory, and native objects by
kind. It finds after which test something accumulates when a long run ends badly on
some machine; each line is flushed and synced so it outlives the process, and with luck
the machine.
"""

from __future__ import annotations

import os

import vyre_native as vn

PATH = os.environ.get("VN_TEST_RESOURCE_LOG")


def _status(field: str) -> str:
    try:
        with open("/proc/self/status") as status:
            return next((line.split()[1] for line in status if line.startswith(field)), "?")
    except OSError:
        return "?"


def _files() -> tuple[str, str]:
    """(open files, of which on /dev/ device nodes such as /dev/nvidia*)"""
    try:
        links = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                links.append(os.readlink(f"/proc/self/fd/{fd}"))
            except OSError:
                pass
        return str(len(links)), str(sum(link.startswith("/dev/") for link in links))
    except OSError:
        return "?", "?"


def _mappings() -> str:
    try:
        with open("/proc/self/maps") as maps:
            return str(sum(1 for _ in maps))
    except OSError:
        return "?"


def append(label: str) -> None:
    """Append `label` and the process's resources now to PATH (a no-op when unset)."""
    if not PATH:
        return
    files, devices = _files()
    live = " ".join(f"{name}={n}" for name, n in vn.debug.live_objects(wait=0.0).items() if n)
    line = (
        f"{label} fds={files} dev_fds={devices} threads={_status('Threads:')} maps={_mappings()} "
        f"rss_kib={_status('VmRSS:')} {live}\n"
    )
    with open(PATH, "a") as log:
        log.write(line)
        log.flush()
        os.fsync(log.fileno())
