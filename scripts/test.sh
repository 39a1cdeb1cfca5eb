#!/usr/bin/env bash
# Installs, builds and runs the whole test suite (what CI runs).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$REPO/scripts/build.sh"
cd "$REPO/build"
ctest --output-on-failure -j "$(nproc)" --timeout 900
