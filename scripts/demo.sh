#!/usr/bin/env bash
# The main job on the bundled example: inspect a ResNet-style CNN from the zoo, run it on the
# CPU against ONNX Runtime's reference output, then calibrate this machine (a quick
# `tandem calibrate` of one core and of every core, a few seconds), plan the model across this
# CPU split into two one-core devices (examples/clusters/cpu-split.yaml, named with those
# profiles), run that plan for real, and set the measured time beside the predicted one; last,
# run it compiled by XLA through the PJRT CPU plugin (the path TPUs take), twice: the second run
# loads the program from the executable cache.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$REPO/scripts/build.sh"
TANDEM="$REPO/build/src/tandem"
MODEL="$REPO/zoo/resnet"
CLUSTER="$REPO/build/demo-cpu-split.yaml"
INPUT=(--input "input=$MODEL/inputs/input.npy")  # its shape (batch 2) binds the model's
DATA=("${INPUT[@]}" --expect "logits=$MODEL/expected/logits.npy")
set -x
"$TANDEM" inspect "$MODEL/model.onnx" "${INPUT[@]}"
"$TANDEM" run "$MODEL/model.onnx" "${DATA[@]}" --threads 2 --warmup 5 --iterations 50
# The example cluster's presets are one development VM's figures: its devices (one core each)
# and its host (the machine as one device, which `auto` weighs the split against) get this
# machine's own.
"$TANDEM" calibrate --quick --threads 1 -o "$REPO/build/demo-one-core.json"
"$TANDEM" calibrate --quick -o "$REPO/build/demo-every-core.json"
sed -e 's/^hosts: \[local\]$/hosts: [{id: local, profile: demo-every-core.json}]/' \
  -e 's/^    cores: 1$/    cores: 1\n    profile: demo-one-core.json/' \
  "$REPO/examples/clusters/cpu-split.yaml" > "$CLUSTER"
[ "$(grep -c 'profile: demo-' "$CLUSTER")" = 2 ] ||
  { echo "demo: error: $CLUSTER: the example cluster's layout changed; no profiles named" >&2; exit 1; }
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
