#!/usr/bin/env bash
# Set up (if needed) and run the demo: compile a kernel, record, replay, read back,
# check against numpy, and print the adapter and what each step cost.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
exec .venv/bin/python -m vyre_native demo "$@"
