#!/usr/bin/env bash
# Installs what Tandem needs (scripts/setup.sh) and builds it in build/ (Release).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$REPO/scripts/setup.sh"
cmake -S "$REPO" -B "$REPO/build" -G Ninja -DCMAKE_BUILD_TYPE=Release ${TANDEM_CMAKE_ARGS:-} > /dev/null
echo "build: compiling (a few minutes on 2 cores the first time)"
ninja -C "$REPO/build" -j "$(nproc)"
