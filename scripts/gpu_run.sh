#!/usr/bin/env bash
# One run on the GPU machine (the `device` tool; see the shared gpu/README.md): build
# the package there, run the test suite, the benchmark suite and the workloads at full
# size, and leave logs and pytest-benchmark JSON in $OUT. Prepared beforehand on the
# development machine with the shared gpu/prepare.sh (wheels + Vulkan loader in .gpu/).
#
#   device run, carry [".gpu"]:  bash scripts/gpu_run.sh [tests] [bench] [workloads]
#
# Each stage has its own time limit (VN_GPU_*_S) so one slow stage cannot eat the
# others'; a stage's exit status goes to $OUT/summary.txt. VN_GPU_TEST_ARGS adds pytest
# arguments to the tests stage (e.g. --ignore=... to leave files out).
# The wheels .gpu/ needs beyond prepare.sh's own: mypy mypy_extensions typing_extensions
# pathspec librt ast_serialize hypothesis attrs sortedcontainers.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
: "${OUT:?run this through the device tool, which sets OUT}"
source .gpu/remote.sh || { echo "gpu_run: .gpu/remote.sh failed" >&2; exit 2; }
# --upgrade: a warm machine keeps /tmp/site, and pip --target never replaces a package
# that is already there, so without it a later run would test the earlier build.
python3 -m pip install -q --upgrade --no-build-isolation --no-index --no-deps --target /tmp/site . \
  || { echo "gpu_run: build failed" >&2; exit 2; }
stages=("$@"); [ ${#stages[@]} -gt 0 ] || stages=(tests bench workloads)
cd /tmp  # a neutral folder: the checkout's vyre_native/ has no compiled module here
{ nvidia-smi -L; python3 -c 'import vyre_native as vn; print(vn.__version__, vn.library_version()); [print(a) for a in vn.enumerate_adapters()]'; } > "$OUT/machine.txt" 2>&1
# A stage that exhausts the machine's memory takes the machine down, and with it every
# result of the call (seen: runs that ended "the device machine stopped answering").
# The watchdog kills the stage first, while VN_GPU_MIN_FREE_GIB is still available.
watchdog() {  # pid, name
  local floor=$(( ${VN_GPU_MIN_FREE_GIB:-16} * 1024 * 1024 )) avail
  while kill -0 "$1" 2>/dev/null; do
    avail=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
    if [ "$avail" -lt "$floor" ]; then
      echo "$2: killed by the memory watchdog (MemAvailable ${avail} KiB)" >> "$OUT/summary.txt"
      kill -KILL -- "-$1"; return  # timeout leads its own process group: children included
    fi
    sleep 0.2
  done
}
run() {  # name, limit, command...
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1 &
  local pid=$!
  watchdog "$pid" "$name" &
  wait "$pid"
  echo "$name rc=$? ${SECONDS}s-${t0}s" >> "$OUT/summary.txt"
}
for stage in "${stages[@]}"; do
  case $stage in
    tests) run tests "${VN_GPU_TESTS_S:-200}" python3 -m pytest "$ROOT/tests" ${VN_GPU_TEST_ARGS:-} -v -rfE -p no:cacheprovider ;;
    bench) run bench "${VN_GPU_BENCH_S:-300}" python3 -m pytest -c "$ROOT/benchmarks/pytest.ini" "$ROOT/benchmarks" \
             -q --benchmark-json "$OUT/bench.json" ;;
    workloads) VN_WORKLOAD_SIZE=full run workloads "${VN_GPU_WORKLOADS_S:-200}" python3 -m pytest \
             -c "$ROOT/benchmarks/pytest.ini" "$ROOT/benchmarks/workloads" -q --benchmark-json "$OUT/workloads.json" ;;
    *) echo "gpu_run: unknown stage $stage (tests, bench, workloads)" >> "$OUT/summary.txt" ;;
  esac
done
cat "$OUT/summary.txt"
