#!/usr/bin/env bash
# The sanitizer jobs of CI, run by scripts/test.sh after the Release tests (docs/SECURITY.md):
#   asan  GCC, AddressSanitizer + UndefinedBehaviorSanitizer (undefined behaviour is fatal) and
#         LeakSanitizer: every test that build registers, in build-asan/ (TANDEM_SANITIZE trims
#         the real tier to 4 models on one cluster and the flag sweep to a third of its values,
#         and leaves out Python, CUDA and MPI: docs/SECURITY.md says exactly what runs)
#   tsan  clang with LLVM's OpenMP runtime (libomp and its Archer tool, which tells TSan about
#         OpenMP's barriers; GCC's libgomp is not instrumented and gives false races):
#         ThreadSanitizer on the runtime tests (GraphExecutor; PlanExecutor: a worker and an
#         OpenMP team per device), in build-tsan/
#   fuzz  clang, libFuzzer + ASan + UBSan: each target of tests/fuzz for TANDEM_FUZZ_SECONDS
#         (45) from its corpus, two at a time; a finding is written to build-fuzz/findings/
#         and fails the job
# Suppressions: tests/sanitizers/<asan|lsan|ubsan|tsan>.supp, used when present, may name other
# projects' libraries only, each with why (docs/SECURITY.md): lsan.supp names XLA's CPU plugin.
# Environment: TANDEM_SANITIZER_JOBS="asan tsan fuzz" picks jobs; TANDEM_SKIP_SANITIZERS=1 skips
# them all, except under CI=true; TANDEM_CI_SUMMARY=FILE appends the summary to FILE.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ "${TANDEM_SKIP_SANITIZERS:-0}" == "1" && "${CI:-}" != "true" ]]; then
  echo "sanitizers: skipped (TANDEM_SKIP_SANITIZERS=1)"
  exit 0
fi
JOBS="${TANDEM_SANITIZER_JOBS:-asan tsan fuzz}"
FUZZ_SECONDS="${TANDEM_FUZZ_SECONDS:-45}"
CORES="$(nproc)"
LLVM=/usr/lib/llvm-14
SUPP="$REPO/tests/sanitizers"
SUMMARY="$(mktemp)"
trap 'rm -f "$SUMMARY"' EXIT
status=0

log() { echo "sanitizers: $*"; }
note() { echo "$*" | tee -a "$SUMMARY"; }

# ":suppressions=FILE" for a tool whose file exists.
suppressions() { if [[ -f "$SUPP/$1.supp" ]]; then echo ":suppressions=$SUPP/$1.supp"; fi; }
export ASAN_SYMBOLIZER_PATH="$LLVM/bin/llvm-symbolizer"
export ASAN_OPTIONS="detect_leaks=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=1:strict_string_checks=1$(suppressions asan)"
export LSAN_OPTIONS="print_suppressions=0$(suppressions lsan)"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1$(suppressions ubsan)"

# ctest in a build, its output kept in ctest.log; notes the summary lines, or the failures.
run_ctest() {
  local name="$1" dir="$2"
  shift 2
  local start=$SECONDS rc=0
  (cd "$dir" && ctest --output-on-failure -j "$CORES" --timeout 1800 "$@") > "$dir/ctest.log" 2>&1 || rc=$?
  grep -E "tests passed|tests failed|^Total Test time" "$dir/ctest.log" | sed "s/^/$name: /" | tee -a "$SUMMARY" || true
  grep -oh "bad-input suite:.*" "$dir/Testing/Temporary/LastTest.log" 2>/dev/null | sort -u \
    | sed "s/^/$name: /" | tee -a "$SUMMARY" || true
  note "$name: ctest took $((SECONDS - start)) s"
  if ((rc)); then
    sed -n '/The following tests FAILED/,$p' "$dir/ctest.log" | tee -a "$SUMMARY"
    echo "---- $name: output of the failed tests ($dir/ctest.log) ----"
    grep -v -E "^ *[0-9]+/[0-9]+ Test +#[0-9]+: .* Passed" "$dir/ctest.log" | tail -n 400
    status=1
  fi
}

build() {
  local name="$1" dir="$2"
  shift 2
  local start=$SECONDS
  log "$name: configuring and building in $dir"
  cmake -S "$REPO" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTANDEM_BENCH=OFF "${CMAKE_ARGS[@]}" > /dev/null
  ninja -C "$dir" -j "$CORES" "$@" > "$dir/ninja.log" 2>&1 || {
    tail -n 60 "$dir/ninja.log"
    note "$name: build FAILED ($dir/ninja.log)"
    return 1
  }
  note "$name: build took $((SECONDS - start)) s"
}

asan_job() {
  local dir="$REPO/build-asan"
  # Without GCC's variable-tracking assignments the objects' code is byte for byte the same (the
  # same instrumented code is checked); only their debug information is coarser (where a
  # debugger finds variables at -O1, some line-table rows), and the build is 0-25% faster per
  # file, 17% over eight of its largest (docs/SECURITY.md).
  CMAKE_ARGS=(-DTANDEM_SANITIZE=address,undefined -DCMAKE_CXX_FLAGS=-fno-var-tracking-assignments)
  build asan "$dir" || { status=1; return; }
  run_ctest asan "$dir"
}

tsan_job() {
  local dir="$REPO/build-tsan"
  CMAKE_ARGS=(-DCMAKE_CXX_COMPILER=clang++-14 -DTANDEM_SANITIZE=thread -DTANDEM_PJRT=OFF)
  build tsan "$dir" runtime_tests || { status=1; return; }
  # Archer (libomp's OMPT tool) gives TSan OpenMP's happens-before; libomp also runs oneDNN's
  # parallel regions (it provides libgomp's symbols and is loaded first).
  OMP_TOOL_LIBRARIES="$LLVM/lib/libarcher.so" \
    TSAN_OPTIONS="ignore_noninstrumented_modules=1:second_deadlock_stack=1:history_size=4:external_symbolizer_path=$LLVM/bin/llvm-symbolizer$(suppressions tsan)" \
    run_ctest tsan "$dir" -L runtime
}

fuzz_one() {
  local dir="$1" target="$2"
  mkdir -p "$dir/corpus/$target" "$dir/findings/$target"
  # The first folder gathers what libFuzzer finds (kept between local runs); the seeds in the
  # repository are only read.
  # A fixed seed: CI replays the same mutations each time (TANDEM_FUZZ_SEED=0 for a random one).
  "$dir/tests/fuzz/fuzz_$target" -seed="${TANDEM_FUZZ_SEED:-1}" -max_total_time="$FUZZ_SECONDS" \
    -timeout=25 -rss_limit_mb=2048 \
    -malloc_limit_mb=512 -print_final_stats=1 -artifact_prefix="$dir/findings/$target/" \
    -dict="$REPO/tests/fuzz/dict/$target.dict" \
    "$dir/corpus/$target" "$REPO/tests/fuzz/corpus/$target" > "$dir/fuzz_$target.log" 2>&1
}

fuzz_job() {
  local dir="$REPO/build-fuzz" targets=(onnx npy cluster plan)
  CMAKE_ARGS=(-DCMAKE_CXX_COMPILER=clang++-14 -DTANDEM_SANITIZE=address,undefined -DTANDEM_FUZZ=ON
              -DTANDEM_PJRT=OFF)
  build fuzz "$dir" "${targets[@]/#/fuzz_}" || { status=1; return; }
  local start=$SECONDS
  local -A rc=()
  for ((i = 0; i < ${#targets[@]}; i += CORES)); do
    local pids=()
    for target in "${targets[@]:i:CORES}"; do
      fuzz_one "$dir" "$target" &
      pids+=("$!:$target")
    done
    for entry in "${pids[@]}"; do
      wait "${entry%%:*}" && rc[${entry#*:}]=0 || rc[${entry#*:}]=$?
    done
  done
  for target in "${targets[@]}"; do
    local stats
    stats="$(grep -E "^stat::(number_of_executed_units|peak_rss_mb|new_units_added)" "$dir/fuzz_$target.log" \
      | sed 's/^stat:://' | tr -s ' \n' '  ')"
    if ((rc[$target] == 0)); then
      note "fuzz: $target: ${FUZZ_SECONDS} s, no finding; $stats"
    else
      note "fuzz: $target: FINDING (exit ${rc[$target]}), see $dir/fuzz_$target.log and $dir/findings/$target/"
      grep -E "ERROR|FINDING|SUMMARY|^    #[0-9]+ " "$dir/fuzz_$target.log" | head -n 40
      echo "  once fixed, keep the input as tests/fuzz/corpus/$target/crash-<sha1> (a regression seed)"
      status=1
    fi
  done
  note "fuzz: fuzzing took $((SECONDS - start)) s"
}

for job in $JOBS; do
  start=$SECONDS
  case "$job" in
    asan) asan_job ;;
    tsan) tsan_job ;;
    fuzz) fuzz_job ;;
    *) echo "sanitizers: unknown job '$job' (asan, tsan, fuzz)" >&2; exit 2 ;;
  esac
  note "$job: job took $((SECONDS - start)) s"
done

echo "==== sanitizers: summary ===="
cat "$SUMMARY"
if [[ -n "${TANDEM_CI_SUMMARY:-}" ]]; then cat "$SUMMARY" >> "$TANDEM_CI_SUMMARY"; fi
exit "$status"
