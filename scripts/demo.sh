#!/usr/bin/env bash
# The main job on the bundled example: inspect a ResNet-style CNN from the zoo, run it on the
# CPU against ONNX Runtime's reference output, and time it.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$REPO/scripts/build.sh"
MODEL="$REPO/zoo/resnet"
set -x
"$REPO/build/src/tandem" inspect "$MODEL/model.onnx" --dim batch=2
"$REPO/build/src/tandem" run "$MODEL/model.onnx" --dim batch=2 --threads 2 \
  --input "input=$MODEL/inputs/input.npy" --expect "logits=$MODEL/expected/logits.npy" \
  --warmup 5 --iterations 50
