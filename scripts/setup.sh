#!/usr/bin/env bash
# Set up vyre_native on a fresh Debian/Ubuntu machine: a Vulkan driver where none is
# present (Mesa's lavapipe, a CPU Vulkan, so every test runs on a real adapter), a
# virtual environment in .venv, and the package built from this checkout with its
# test dependencies. Idempotent: a second run only rebuilds the package.
set -euo pipefail
cd "$(dirname "$0")/.."

have_vulkan_icd() {
  ls /usr/share/vulkan/icd.d/*.json /etc/vulkan/icd.d/*.json /usr/local/share/vulkan/icd.d/*.json >/dev/null 2>&1
}
if ! have_vulkan_icd || ! ldconfig -p 2>/dev/null | grep -q libvulkan.so.1; then
  echo "setup: no Vulkan driver found; installing Mesa's lavapipe (mesa-vulkan-drivers)"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq mesa-vulkan-drivers libvulkan1 >/dev/null
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
# Build requirements first, then the package without build isolation so the build
# compiles against the very wgpu headers the environment will load at run time.
.venv/bin/python -m pip install -q "scikit-build-core>=0.10" "cffi>=1.17" "wgpu==0.32.*" cmake ninja
.venv/bin/python -m pip install -q --no-build-isolation ".[test]"
version=$(.venv/bin/python -I -c 'import vyre_native as vn; print("vyre_native", vn.__version__)')
echo "setup: ok ($version)"
