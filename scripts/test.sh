#!/usr/bin/env bash
# Installs, builds and runs the whole test suite (what CI runs): the Release build's tests, then
# the sanitizer jobs (scripts/sanitizers.sh: ASan + UBSan, TSan, the fuzzers). Set
# TANDEM_SKIP_SANITIZERS=1 to skip those locally; under CI=true they always run.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
START=$SECONDS
bash "$REPO/scripts/build.sh"
export TANDEM_CI_SUMMARY="$REPO/build/ci-summary.txt"
echo "release: build.sh took $((SECONDS - START)) s" > "$TANDEM_CI_SUMMARY"
# Where the CUDA toolkit is (every development and CI machine), the CUDA backend must have been
# compiled and linked: a toolkit that CMake stopped finding would otherwise let it rot unseen.
if [[ -x /usr/local/cuda/bin/nvcc && -z "${TANDEM_CMAKE_ARGS:-}" ]]; then
  if [[ ! -x "$REPO/build/tests/cuda_tests" ]]; then
    echo "test.sh: the CUDA toolkit is here but the CUDA backend was not built" >&2
    exit 1
  fi
  echo "release: CUDA backend compiled and linked (sm_90 + PTX)" >> "$TANDEM_CI_SUMMARY"
fi
cd "$REPO/build"
start=$SECONDS
rc=0
ctest --output-on-failure -j "$(nproc)" --timeout 900 2>&1 | tee ctest.log || rc=$?
{
  grep -E "tests passed|tests failed|^Total Test time" ctest.log | sed "s/^/release: /" || true
  grep -oh "bad-input suite:.*" Testing/Temporary/LastTest.log 2>/dev/null | sort -u | sed "s/^/release: /" || true
  # pytest's result line of each Python suite (ctest shows a passing test's output only here).
  grep -E "^=+ .*(passed|failed|error).* in [0-9.]+s" Testing/Temporary/LastTest.log 2>/dev/null | sed "s/^/release: pytest: /" || true
  echo "release: ctest took $((SECONDS - start)) s (exit $rc)"
} >> "$TANDEM_CI_SUMMARY"
if ((rc)); then
  cat "$TANDEM_CI_SUMMARY"
  exit "$rc"
fi
# The Python package as a user installs it: `pip install .`, here reusing build/ (nothing is
# recompiled), into a scratch folder that is then imported alone.
if [[ -f "$REPO/build/python/tandem/__init__.py" ]]; then
  start=$SECONDS
  target="$(mktemp -d)"
  "$REPO/.venv/bin/python" -m pip install -q --disable-pip-version-check --no-build-isolation \
    --no-deps --config-settings=build-dir="$REPO/build" --target "$target" "$REPO"
  (cd "$target" && PYTHONPATH="$target" "$REPO/.venv/bin/python" "$REPO/tests/python/installed_check.py" "$REPO")
  rm -rf "$target"
  echo "release: pip install . and its import checked in $((SECONDS - start)) s" >> "$TANDEM_CI_SUMMARY"
fi
rc=0
bash "$REPO/scripts/sanitizers.sh" || rc=$?
echo "==== test.sh: summary ($((SECONDS - START)) s in all) ===="
cat "$TANDEM_CI_SUMMARY"
exit "$rc"
