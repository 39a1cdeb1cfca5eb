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
cd "$REPO/build"
start=$SECONDS
rc=0
ctest --output-on-failure -j "$(nproc)" --timeout 900 2>&1 | tee ctest.log || rc=$?
{
  grep -E "tests passed|tests failed|^Total Test time" ctest.log | sed "s/^/release: /" || true
  grep -oh "bad-input suite:.*" Testing/Temporary/LastTest.log 2>/dev/null | sort -u | sed "s/^/release: /" || true
  echo "release: ctest took $((SECONDS - start)) s (exit $rc)"
} >> "$TANDEM_CI_SUMMARY"
if ((rc)); then
  cat "$TANDEM_CI_SUMMARY"
  exit "$rc"
fi
rc=0
bash "$REPO/scripts/sanitizers.sh" || rc=$?
echo "==== test.sh: summary ($((SECONDS - START)) s in all) ===="
cat "$TANDEM_CI_SUMMARY"
exit "$rc"
