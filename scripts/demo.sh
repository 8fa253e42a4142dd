#!/usr/bin/env bash
# Set up (if needed) and run the demo: compile a kernel, record, replay, read back,
# check against numpy, and print the adapter and what each step cost.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
# -I: isolated mode keeps the working directory (this checkout, whose vyre_native
# has no compiled module) off sys.path, so the installed package is the one run.
exec .venv/bin/python -I -m vyre_native demo "$@"
