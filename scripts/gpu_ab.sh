#!/usr/bin/env bash
# An interleaved A/B run of the benchmark suite on the GPU machine: an earlier tree
# (A, e.g. `git archive <commit> | tar -x -C .gpu_ab`) against this checkout (B), each
# built into its own folder and run with its own benchmarks/, alternating A B A B so
# that drift of the machine (its clocks, other tenants) lands on both sides alike.
#
#   here:         mkdir -p .gpu_ab && git archive <commit> | tar -x -C .gpu_ab
#   device run:   carry [".gpu", ".gpu_ab"], command: bash scripts/gpu_ab.sh .gpu_ab [rounds]
#
# VN_AB_FILES (benchmark file names, e.g. "test_bench_replay.py test_bench_submit.py")
# runs those files of each tree instead of its whole benchmarks/ folder.
# Leaves $OUT/ab-{A,B}{1..rounds}.json (pytest-benchmark JSON) and their logs; compare
# with benchmarks/report.py --from on each file; commit the tables (--md), not the JSON.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
: "${OUT:?run this through the device tool, which sets OUT}"
A=$(cd "${1:?usage: gpu_ab.sh A_TREE [rounds]}" && pwd)
rounds=${2:-2}
source .gpu/remote.sh || { echo "gpu_ab: .gpu/remote.sh failed" >&2; exit 2; }
for side in A B; do
  tree=$ROOT; [ "$side" = A ] && tree=$A
  python3 -m pip install -q --upgrade --no-build-isolation --no-index --no-deps --target "/tmp/vn_$side" "$tree" \
    || { echo "gpu_ab: building $side ($tree) failed" >&2; exit 2; }
done
targets() {  # the benchmark files of tree $1 this run times
  if [ -z "${VN_AB_FILES:-}" ]; then echo "$1/benchmarks"; return; fi
  local f; for f in $VN_AB_FILES; do echo "$1/benchmarks/$f"; done
}
cd /tmp  # a neutral folder: neither checkout's vyre_native/ shadows its build
for i in $(seq 1 "$rounds"); do
  for side in A B; do
    tree=$ROOT; [ "$side" = A ] && tree=$A
    PYTHONPATH="/tmp/vn_$side:$PYTHONPATH" timeout 280 python3 -m pytest -c "$tree/benchmarks/pytest.ini" \
      $(targets "$tree") -q -p no:cacheprovider --benchmark-json "$OUT/ab-$side$i.json" > "$OUT/ab-$side$i.log" 2>&1
    echo "ab $side$i rc=$?" >> "$OUT/summary.txt"
  done
done
cat "$OUT/summary.txt"
