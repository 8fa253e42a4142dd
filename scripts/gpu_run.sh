#!/usr/bin/env bash
# One run on the GPU machine (the `device` tool; see the shared gpu/README.md): build
# the package there, run the test suite, the benchmark suite and the workloads at full
# size, and leave logs and pytest-benchmark JSON in $OUT. Prepared beforehand on the
# development machine with the shared gpu/prepare.sh (wheels + Vulkan loader in .gpu/).
#
#   device run, carry [".gpu"]:  bash scripts/gpu_run.sh [tests] [files] [bench] [bench-reversed] [tinygrad]
#                                 [tinygrad-unchecked] [call-path] [workloads]
#
# tinygrad: benchmarks/test_bench_tinygrad.py alone (DEV=VN beside tinygrad's CUDA and the
# others found; its log ends with the ratios and VN's breakdown), $OUT/tinygrad.{log,json};
# named again it runs again (tinygrad-2.{log,json}, ...), so the rows that move between
# calls can be read from several runs of one call; tinygrad-unchecked: the VN rows alone
# with VN_BOUNDS_CHECKS=0 (the kernels' bounds checks off: what they cost). call-path:
# benchmarks/call_path.py (where a launch made from Python spends its time), $OUT/call-path.*.
#
# Each stage has its own time limit (VN_GPU_*_S) so one slow stage cannot eat the
# others'; a stage's exit status goes to $OUT/summary.txt. VN_GPU_TEST_ARGS adds pytest
# arguments to the tests stage (e.g. --ignore=... to leave files out), VN_GPU_BENCH_ARGS
# to the bench stage (split on spaces), VN_GPU_BENCH_K its -k expression whole (e.g.
# "prerecord or chain"); the bench-reversed stage runs the same benchmarks in the reverse
# order (--vn-reverse) into $OUT/bench-reversed.json. VN_GPU_FILES (names such as
# "test_exit test_turns") runs those files alone in the files stage.
# The raw JSON comes back in $OUT and is not committed: render a run's summary with
# benchmarks/report.py --from $OUT/bench.json --md benchmarks/results/<run>.md (and
# benchmarks/workloads/report.py for workloads.json) and commit that; git ignores the
# JSON and charts under benchmarks/results/ (its README says where the old raw JSON is).
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
# So each stage runs in a session of its own, watched: it is killed while
# VN_GPU_MIN_FREE_GIB is still available, and one that does not die when killed (stuck in
# the GPU driver) is left behind 20 s after its limit, so the call still returns its logs.
# sampler.log records the machine every 5 s, and the tests stage writes one line per
# test (conftest's VN_TEST_RESOURCE_LOG), both synced as they go.
sampler() {
  while :; do
    { date +%T; awk '/^MemAvailable:/ {printf " avail_kib=%s", $2}' /proc/meminfo; printf " load=%s " "$(cut -d' ' -f1 /proc/loadavg)";
      nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv,noheader 2>&1 | head -1; } >> "$OUT/sampler.log"
    sync "$OUT/sampler.log" 2>/dev/null; sleep 5
  done
}
sampler & sampler_pid=$!
trap 'kill $sampler_pid 2>/dev/null' EXIT
run() {  # name, limit, command...
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS floor=$(( ${VN_GPU_MIN_FREE_GIB:-16} * 1024 * 1024 )) avail status=done
  setsid timeout -k 5 "$limit" "$@" > "$OUT/$name.log" 2>&1 &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    avail=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
    if [ "$avail" -lt "$floor" ]; then
      echo "$name: killed by the memory watchdog (MemAvailable ${avail} KiB)" >> "$OUT/summary.txt"
      kill -KILL -- "-$pid" 2>/dev/null  # its own session and process group: children included
    fi
    if [ $((SECONDS - t0)) -gt $((limit + 20)) ]; then
      status=stuck; echo "$name: still there 20 s after its limit, left behind" >> "$OUT/summary.txt"; break
    fi
    sleep 0.2
  done
  local rc=stuck; [ $status = stuck ] || { wait "$pid"; rc=$?; }
  echo "$name rc=$rc ${SECONDS}s-${t0}s" >> "$OUT/summary.txt"
}
for stage in "${stages[@]}"; do
  case $stage in
    tests) VN_TEST_RESOURCE_LOG=$OUT/resources.log run tests "${VN_GPU_TESTS_S:-200}" python3 -m pytest "$ROOT/tests" ${VN_GPU_TEST_ARGS:-} -v -rfE -p no:cacheprovider ;;
    files)  # each test file in a pytest process of its own: the whole suite, without what
            # one process accumulates over it (compare with the tests stage)
      mkdir -p "$OUT/files"; files_t0=$SECONDS
      for f in ${VN_GPU_FILES:-"$ROOT"/tests/test_*.py}; do
        case $f in /*) ;; *) f=$ROOT/tests/$f.py ;; esac  # VN_GPU_FILES names files: test_exit test_turns
        name=$(basename "$f" .py)
        if [ $((SECONDS - files_t0)) -gt "${VN_GPU_FILES_S:-400}" ]; then echo "files: $name not run (VN_GPU_FILES_S)" >> "$OUT/summary.txt"; continue; fi
        VN_TEST_RESOURCE_LOG=$OUT/files/resources.log run "files/$name" "${VN_GPU_FILE_S:-150}" \
          python3 -m pytest "$f" -q -rfE -p no:cacheprovider
        echo "  $(tail -1 "$OUT/files/$name.log")" >> "$OUT/summary.txt"
      done ;;
    bench|bench-reversed)
      order=(); [ "$stage" = bench ] || order=(--vn-reverse)
      run "$stage" "${VN_GPU_BENCH_S:-300}" python3 -m pytest -c "$ROOT/benchmarks/pytest.ini" "$ROOT/benchmarks" \
             ${VN_GPU_BENCH_ARGS:-} ${VN_GPU_BENCH_K:+-k "$VN_GPU_BENCH_K"} "${order[@]}" -q --benchmark-json "$OUT/$stage.json" ;;
    tinygrad|tinygrad-unchecked)  # named again, a stage runs again: tinygrad-2, tinygrad-3, ...
      tg_runs=$(( ${tg_runs:-0} + 1 )); name=$stage; [ "$tg_runs" -eq 1 ] || name=$stage-$tg_runs
      tg_env=(); [ "$stage" = tinygrad ] || tg_env=(VN_BOUNDS_CHECKS=0 VN_TINYGRAD_ROWS=VN)
      run "$name" "${VN_GPU_TINYGRAD_S:-500}" env "${tg_env[@]}" python3 -m pytest -c "$ROOT/benchmarks/pytest.ini" \
             "$ROOT/benchmarks/test_bench_tinygrad.py" -q -rs --benchmark-json "$OUT/$name.json" ;;
    call-path) run call-path "${VN_GPU_CALL_PATH_S:-200}" python3 "$ROOT/benchmarks/call_path.py" --json "$OUT/call-path.json" ;;
    workloads) VN_WORKLOAD_SIZE=full run workloads "${VN_GPU_WORKLOADS_S:-200}" python3 -m pytest \
             -c "$ROOT/benchmarks/pytest.ini" "$ROOT/benchmarks/workloads" -q --benchmark-json "$OUT/workloads.json" ;;
    *) echo "gpu_run: unknown stage $stage (tests, files, bench, bench-reversed, tinygrad, tinygrad-unchecked, call-path, workloads)" >> "$OUT/summary.txt" ;;
  esac
done
cat "$OUT/summary.txt"
