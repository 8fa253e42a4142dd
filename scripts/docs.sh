#!/usr/bin/env bash
# Build the documentation site (mkdocs.yml, docs/) with warnings as errors, as CI does:
# installs the package's `docs` extra into .venv (only when pyproject.toml changed), then
# `zensical build --strict` into build/site (a broken link or anchor, a missing snippet, a
# name the reference cannot find: each fails it). The API reference is generated from the
# docstrings, so a renamed or removed name breaks the build. Run scripts/setup.sh first
# (CI's first step does).
set -euo pipefail
cd "$(dirname "$0")/.."
VPY=${PYTHON:-.venv/bin/python}
[ -x "$VPY" ] || { echo "docs: no $VPY. Fix: run bash scripts/setup.sh first." >&2; exit 1; }
docs_id=$(cat pyproject.toml | "$VPY" -c 'import hashlib,sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())')
if [ "$(cat .venv/.vn-docs 2>/dev/null)" != "$docs_id" ]; then
  echo "docs: installing the docs extra into .venv (pip)"
  mapfile -t reqs < <("$VPY" -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["docs"], sep="\n")')
  "$VPY" -m pip install -q "${reqs[@]}"
  echo "$docs_id" > .venv/.vn-docs
fi
# --clean drops Zensical's cache: the reference's docstrings live outside docs/, where
# the cache would not see them change.
exec "$VPY" -m zensical build --strict --clean "$@"
