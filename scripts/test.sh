#!/usr/bin/env bash
# Set up (if needed) and run the test suite on whatever GPU adapter wgpu finds
# (lavapipe on a machine without a GPU). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
exec .venv/bin/python -m pytest tests "$@"
