#!/usr/bin/env bash
# Cross-compile the C layer (csrc/*/*.c but python/) for 64-bit Windows with MinGW-w64, as
# object files only, at -Wall -Wextra -Werror: proof that csrc/ builds on Windows through
# its platform layer (csrc/platform/: platform.h, platform_win32.c) and that platform_posix.c
# compiles to nothing there. Then, as a control, the same files with the host compiler
# in the mode the CMake build uses, where platform_win32.c compiles to nothing.
#
#   bash scripts/cross_windows.sh                      # PYTHON defaults to .venv/bin/python
#   PYTHON=/path/to/venv/bin/python bash scripts/cross_windows.sh
#
# PYTHON is an interpreter with the pinned wgpu package installed: its headers
# (webgpu.h, wgpu.h) and version are what the C compiles against, and pyproject.toml's
# pin the requirement its messages name (scripts/ffi_build.py --wgpu-info). It is used as given:
# resolving a venv's python through its symlink would name the base interpreter,
# which has no wgpu.
#
# Not compiled: the cffi-generated module source (scripts/ffi_build.py --emit), which
# includes Python.h. Windows' Python headers (pyconfig.h differs per platform) ship
# with Windows Python installers, not with any Debian package, so they are not here.
#
# Needs x86_64-w64-mingw32-gcc (Debian: gcc-mingw-w64-x86-64). Run as root, the script
# installs it when missing; otherwise it says what to run and exits 2. Exits 1 when
# any file fails to compile or warns, 0 when all compile cleanly.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# The default is the checkout's venv; a relative PYTHON is taken from the caller's
# directory. Made absolute without resolving symlinks; a bare name stays a PATH lookup.
if [[ -z "${PYTHON:-}" ]]; then
  PYTHON="$ROOT/.venv/bin/python"
elif [[ "$PYTHON" == */* && "$PYTHON" != /* ]]; then
  PYTHON="$PWD/$PYTHON"
fi
cd "$ROOT"

CROSS_CC=x86_64-w64-mingw32-gcc
if ! command -v "$CROSS_CC" >/dev/null 2>&1; then
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "cross_windows.sh: installing MinGW-w64 (gcc-mingw-w64-x86-64)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc-mingw-w64-x86-64 >/dev/null
  else
    echo "cross_windows.sh: $CROSS_CC not found. Fix: sudo apt-get install gcc-mingw-w64-x86-64" >&2
    exit 2
  fi
fi

if ! WGPU_INFO=$("$PYTHON" scripts/ffi_build.py --wgpu-info); then
  echo "cross_windows.sh: '$PYTHON' has no wgpu package. Fix: bash scripts/setup.sh, or set PYTHON" >&2
  exit 2
fi
IFS=';' read -r WGPU_RESOURCES WGPU_VERSION WGPU_REQUIREMENT <<<"$WGPU_INFO"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/vn-cross.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# compile LABEL CC FLAGS...: every .c of the C layer into $WORK/LABEL; counts failures.
# As CMakeLists.txt compiles them: every folder of csrc/ but python/ (the _owner module,
# which needs Python.h), and no include path of csrc/'s (a file names another folder's
# header by its relative path), only wgpu-native's.
failed=0
compile() {
  local label=$1 cc=$2
  shift 2
  mkdir -p "$WORK/$label"
  local src n=0
  for src in csrc/*/*.c; do
    [[ $src == csrc/python/* ]] && continue
    if "$cc" "$@" -Wall -Wextra -Werror -DVN_EXPECTED_WGPU_VERSION="$WGPU_VERSION" \
        -DVN_WGPU_REQUIREMENT="\"$WGPU_REQUIREMENT\"" -I"$WGPU_RESOURCES" -c "$src" -o "$WORK/$label/$(basename "$src" .c).o"; then
      n=$((n + 1))
    else
      echo "cross_windows.sh: FAILED [$label] $src" >&2
      failed=$((failed + 1))
    fi
  done
  echo "cross_windows.sh: [$label] $n file(s) compiled cleanly"
}

echo "cross_windows.sh: wgpu headers $WGPU_RESOURCES (version $WGPU_VERSION, $WGPU_REQUIREMENT); $($CROSS_CC --version | head -n1)"
# Strict ISO C11 proves the Windows side needs no extension; gnu11 is what CMake
# passes (CMAKE_C_EXTENSIONS). __USE_MINGW_ANSI_STDIO as CMakeLists.txt sets it.
for std in c11 gnu11; do
  compile "windows-$std" "$CROSS_CC" -std="$std" -D__USE_MINGW_ANSI_STDIO=1
done
# The control: POSIX, as the CMake build compiles it (glibc declares pthread_rwlock_t
# only outside strict ISO mode, so gnu11 alone).
compile "posix-gnu11" "${CC:-cc}" -std=gnu11

if [[ $failed -ne 0 ]]; then
  echo "cross_windows.sh: $failed compilation(s) failed or warned" >&2
  exit 1
fi
echo "cross_windows.sh: ok"
