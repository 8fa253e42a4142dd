"""The wgpu-native file is checked before the system loader maps it (csrc/base/library_file.c).

A truncated copy still has a valid header, so dlopen maps it and the process dies of
SIGBUS on the first page past the end of the file. The C layer checks the file first:
a regular file, this platform's format and architecture, every segment and header table
inside the file. Each case loads in a child interpreter (WGPU_LIB_PATH), which must
exit normally with a LibraryError that names the path, says why, and has a Fix.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import sys
from collections.abc import Callable

import pytest
from support.child import run_child
from support.errors import raised

import vyre_native as vn
from vyre_native._lib import library_path

LOAD = "report(outcome(vn.Device))"


def _library() -> pathlib.Path:
    return pathlib.Path(library_path())


def _truncated(tmp_path: pathlib.Path, keep: int) -> str:
    data = _library().read_bytes()
    path = tmp_path / "libwgpu_native-truncated.so"
    path.write_bytes(data[:keep])
    return str(path)


# Where the cut falls: in the header tables, in the loaded segments (the SIGBUS case),
# and after every segment but before the section table at the end.
CUTS: dict[str, Callable[[int], int]] = {
    "header_page": lambda size: 4096,
    "half": lambda size: size // 2,
    "all_but_the_last_kilobyte": lambda size: size - 1024,
}


@pytest.mark.skipif(sys.platform != "linux", reason="cuts are chosen for the ELF layout of the Linux wheel")
@pytest.mark.parametrize("cut", list(CUTS))
def test_a_truncated_library_file_raises_library_error_naming_path_and_size_not_sigbus(
    cut: str, tmp_path: pathlib.Path
) -> None:
    keep = CUTS[cut](_library().stat().st_size)
    path = _truncated(tmp_path, keep)
    res = run_child(LOAD, env={"WGPU_LIB_PATH": path})
    msg = raised(res, vn.LibraryError, path, f"{keep} bytes", "truncated")
    assert "WGPU_LIB_PATH" in msg


def test_an_empty_library_file_raises_library_error_saying_so(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "empty.so"
    path.write_bytes(b"")
    raised(run_child(LOAD, env={"WGPU_LIB_PATH": str(path)}), vn.LibraryError, str(path), "empty")


def test_a_file_that_is_no_library_raises_library_error_saying_so(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "notes.so"
    path.write_text("not a library\n")
    raised(
        run_child(LOAD, env={"WGPU_LIB_PATH": str(path)}), vn.LibraryError, str(path), "no shared library"
    )


def test_a_directory_as_the_library_raises_library_error_saying_so(tmp_path: pathlib.Path) -> None:
    raised(
        run_child(LOAD, env={"WGPU_LIB_PATH": str(tmp_path)}), vn.LibraryError, str(tmp_path), "directory"
    )


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_as_the_library_raises_library_error_without_waiting_for_a_writer(
    tmp_path: pathlib.Path,
) -> None:
    path = tmp_path / "pipe.so"
    os.mkfifo(path)
    raised(
        run_child(LOAD, env={"WGPU_LIB_PATH": str(path)}), vn.LibraryError, str(path), "not a regular file"
    )


def test_a_complete_copy_of_the_library_passes_the_check_and_loads(tmp_path: pathlib.Path) -> None:
    path = tmp_path / _library().name
    shutil.copyfile(_library(), path)
    res = run_child(
        "dev = vn.Device(); report({'ok': True, 'backend': dev.info['backend']})",
        env={"WGPU_LIB_PATH": str(path)},
    )
    assert res["ok"], res
