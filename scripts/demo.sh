#!/usr/bin/env bash
# The main job on the bundled example: inspect a ResNet-style CNN from the zoo, run it on the
# CPU against ONNX Runtime's reference output, then plan it across this CPU split into two
# devices (examples/clusters/cpu-split.yaml), run that plan for real, and set the measured time
# beside the predicted one; last, run it compiled by XLA through the PJRT CPU plugin (the path
# TPUs take), twice: the second run loads the program from the executable cache.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$REPO/scripts/build.sh"
TANDEM="$REPO/build/src/tandem"
MODEL="$REPO/zoo/resnet"
CLUSTER="$REPO/examples/clusters/cpu-split.yaml"
INPUT=(--input "input=$MODEL/inputs/input.npy")  # its shape (batch 2) binds the model's
DATA=("${INPUT[@]}" --expect "logits=$MODEL/expected/logits.npy")
set -x
"$TANDEM" inspect "$MODEL/model.onnx" "${INPUT[@]}"
"$TANDEM" run "$MODEL/model.onnx" "${DATA[@]}" --threads 2 --warmup 5 --iterations 50
"$TANDEM" plan "$MODEL/model.onnx" "${INPUT[@]}" --cluster "$CLUSTER" -o "$REPO/build/demo-plan.json" \
  --report "$REPO/build/demo-plan.html"
"$TANDEM" run "$MODEL/model.onnx" "${DATA[@]}" --cluster "$CLUSTER" --plan "$REPO/build/demo-plan.json" \
  --warmup 5 --iterations 50 --trace "$REPO/build/demo-trace.json"
"$TANDEM" plan "$MODEL/model.onnx" "${INPUT[@]}" --cluster "$REPO/examples/clusters/cpu-pjrt.yaml" \
  --strategy single:pjrt0 -o "$REPO/build/demo-pjrt-plan.json"
# The PJRT CPU plugin is found in .venv, where setup installed it: no variable to set.
for attempt in first second; do
  "$TANDEM" run "$MODEL/model.onnx" "${DATA[@]}" --cluster "$REPO/examples/clusters/cpu-pjrt.yaml" \
    --plan "$REPO/build/demo-pjrt-plan.json" --warmup 5 --iterations 50
done
