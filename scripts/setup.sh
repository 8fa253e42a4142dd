#!/usr/bin/env bash
# Set up vyre_native in this checkout:
#   - .venv, a virtual environment with the build and test dependencies;
#   - the package installed editable: `import vyre_native` anywhere in that venv (this
#     checkout's root included) runs this checkout's Python sources with the compiled
#     module built from csrc/;
#   - a Vulkan driver (Mesa's lavapipe, a CPU Vulkan) only when wgpu finds no adapter
#     on the platform's primary backends;
#   - Ray (the `ray` extra, for tests/test_ray.py) in .venv;
#   - tinygrad (the `tinygrad` extra, for tests/test_tinygrad.py) in .venv, and clang
#     (tinygrad's CPU device compiles with it) only when none is on PATH.
# A second run touches no package manager: pip runs only when pyproject.toml changed or
# the C sources changed since the last build, apt only when no adapter or no clang is found.
#
#   PYTHON=python3.13 bash scripts/setup.sh    # choose the interpreter (>= 3.11)
set -euo pipefail
cd "$(dirname "$0")/.."
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
say() { echo "setup: $*"; }
die() { echo "setup: $*" >&2; exit 1; }

source scripts/setup_python.sh
PY=${PYTHON:-python3}
verdict=$(python_ok "$PY") || die "$verdict, then rerun bash $0."

# A venv made from another interpreter than the one PYTHON names is made again (a
# different version needs its own packages and build); without PYTHON any venv serves.
if [ -n "${PYTHON:-}" ] && [ -e .venv ] && ! verdict=$(venv_matches .venv "$PY"); then
  say "$verdict: making .venv again with $PY, and the C layer's build with it"
  rm -rf .venv build/cp3*
fi
if [ ! -x .venv/bin/python ]; then
  say "creating .venv with $("$PY" -V 2>&1)"
  "$PY" -m venv .venv || die "could not create a virtual environment in .venv (the error is above). Fix: make the checkout writable, and install the venv module where it is missing (Debian: apt-get install python3-venv); then rerun."
fi
VPY=.venv/bin/python

# A fingerprint of what stdin carries: rerun pip only when it changes.
fingerprint() { "$VPY" -c 'import hashlib,sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())'; }

deps_id=$(cat pyproject.toml scripts/setup.sh | fingerprint)
if [ "$(cat .venv/.vn-deps 2>/dev/null)" != "$deps_id" ]; then
  say "installing build and test dependencies into .venv (pip)"
  "$VPY" -m pip install -q --upgrade pip
  # Everything pyproject.toml names (build requirements, runtime and test dependencies),
  # read from it so there is one list; then the package without build isolation, so the
  # build compiles against the very wgpu headers the environment loads at run time.
  mapfile -t reqs < <("$VPY" - <<'EOF'
import tomllib
meta = tomllib.load(open("pyproject.toml", "rb"))
extras = meta["project"]["optional-dependencies"]
for req in meta["build-system"]["requires"] + meta["project"]["dependencies"] + extras["test"] + extras["tinygrad"] + extras["ray"]:
    print(req)
EOF
)
  "$VPY" -m pip install -q "${reqs[@]}" cmake ninja
  echo "$deps_id" > .venv/.vn-deps
  rm -f .venv/.vn-build
fi

# The editable install maps the package's module names when it is made: a new module
# file (in a subpackage too) counts as a change.
build_id=$( (LC_ALL=C find vyre_native -not -path "*__pycache__*" | LC_ALL=C sort; cat pyproject.toml CMakeLists.txt scripts/ffi_build.py $(LC_ALL=C find csrc -type f | LC_ALL=C sort)) | fingerprint)
if [ "$(cat .venv/.vn-build 2>/dev/null)" != "$build_id" ] || ! "$VPY" -c 'import vyre_native._native' 2>/dev/null; then
  say "building the C layer and installing vyre_native editable (pip; incremental in build/)"
  "$VPY" -m pip install -q --no-build-isolation --no-deps -e .
  echo "$build_id" > .venv/.vn-build
fi

# A driver, found the way wgpu finds one: an adapter on a primary backend (Vulkan, Metal,
# DX12; wgpu's OpenGL fallback does not count).
adapters() { "$VPY" -c 'import vyre_native as vn; print(len(vn.enumerate_adapters()))' 2>/dev/null || echo 0; }
if [ "$(adapters)" = 0 ]; then
  fix="install a Vulkan driver: on Debian/Ubuntu, as root, apt-get install -y mesa-vulkan-drivers libvulkan1 (Mesa's lavapipe, a CPU Vulkan), or your GPU vendor's driver"
  if [ "$(uname -s)" != Linux ] || ! command -v apt-get >/dev/null; then
    die "wgpu finds no GPU adapter on this machine. Fix: $fix."
  fi
  SUDO=""
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
      die "wgpu finds no GPU adapter, and installing one needs root. Fix: $fix; then rerun."
    fi
  fi
  say "wgpu finds no GPU adapter; installing Mesa's lavapipe (apt-get install mesa-vulkan-drivers libvulkan1)"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq mesa-vulkan-drivers libvulkan1 >/dev/null
  [ "$(adapters)" != 0 ] || die "still no adapter after installing lavapipe. Fix: $fix; check \`$VPY -m vyre_native info\`."
fi
# tinygrad's CPU device (the reference of tests/test_tinygrad.py, and where tinygrad makes
# device-less tensors such as arange) compiles its kernels with clang.
if ! command -v clang >/dev/null; then
  fix="install clang (Debian/Ubuntu, as root: apt-get install -y clang), or tests/test_tinygrad.py skips"
  if [ "$(uname -s)" = Linux ] && command -v apt-get >/dev/null; then
    SUDO=""
    if [ "$(id -u)" != 0 ]; then
      if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else SUDO=none; fi
    fi
    if [ "$SUDO" = none ]; then say "no clang, and installing it needs root. Fix: $fix."; else
      say "installing clang for tinygrad's CPU device (apt-get install clang)"
      $SUDO apt-get update -qq
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq clang >/dev/null
    fi
  else
    say "no clang on PATH. Fix: $fix."
  fi
fi
summary='import vyre_native as vn
found = vn.enumerate_adapters()
first = found[0]["name"] + " (" + found[0]["backend"] + ")"
print(f"vyre_native {vn.__version__}; {len(found)} adapter(s), first: {first}")'
say "ok ($("$VPY" -c "$summary"))"
