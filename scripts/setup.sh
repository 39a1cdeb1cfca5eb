#!/usr/bin/env bash
# Tandem developer/CI setup for Debian 12 (run as root; idempotent, fast on re-runs).
#   1. apt packages (apt-get update only when something is missing)
#   2. Python venv at $REPO/.venv (system site packages: Debian's torch must be visible)
#   3. the test model zoo in $REPO/zoo (regenerated only when the generator scripts change)
#   4. the zoo's real-size tier in $REPO/zoo/real (the same way; ~3 min on 2 cores)
# Environment: TANDEM_SKIP_ZOO=1 skips steps 3 and 4, TANDEM_SKIP_REAL_ZOO=1 step 4 only;
# TANDEM_FORCE_ZOO=1 regenerates both.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"

log() { echo "setup: $*"; }

APT_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config
  libonnx-dev libprotobuf-dev protobuf-compiler
  libdnnl-dev ocl-icd-opencl-dev
  nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3-venv python3-dev python3-numpy python3-torch python3-torchvision
  python3-yaml  # bench/cluster_checks.py reads and writes cluster files
  libopenblas0-pthread  # Debian's torch uses the system BLAS: the reference one is ~20x slower
  chromium  # headless: the HTML report's browser test
  openmpi-bin libopenmpi-dev  # runs across hosts (docs/MPI.md); CI runs mpirun -np 2 and 3
  # scripts/sanitizers.sh: clang with libFuzzer and the sanitizer runtimes, LLVM's OpenMP runtime
  # (TSan understands it, with its Archer tool), llvm-symbolizer for the reports' stacks
  clang-14 libclang-rt-14-dev libomp-14-dev llvm-14
)
# The Python package (docs/PYTHON.md): nanobind and scikit-build-core build it, pytest tests it;
# its Keras and TensorFlow converters go through tf2onnx. These releases work together (tf2onnx
# 1.16.1 needs protobuf 3.20, which tensorflow-cpu 2.15 and onnx 1.17 both accept).
# scikit-learn ships the digits data set that `tandem train` is tested on (tools/make_digits.py);
# scipy pinned to a release that takes Debian's numpy 1.24 (newer ones would pull numpy 1.26).
PIP_REQUIREMENTS=("numpy<2" "onnx==1.17.0" "onnxruntime==1.20.1" "xla-cpu-pjrt==0.0.1"
  "nanobind==3.1.0" "scikit-build-core==1.1.2" "pytest==9.2.0"
  "tensorflow-cpu==2.15.1" "tf2onnx==1.16.1" "protobuf==3.20.3"
  "scikit-learn==1.5.2" "scipy==1.15.3")

# ---- 1. apt -----------------------------------------------------------------
missing=()
for p in "${APT_PACKAGES[@]}"; do
  status="$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)"
  [[ "$status" == "installed" ]] || missing+=("$p")
done
if ((${#missing[@]})); then
  log "installing apt packages: ${missing[*]}"
  if [[ $EUID -ne 0 ]]; then SUDO=sudo; else SUDO=; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -q
  $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${missing[@]}"
else
  log "apt packages present (${#APT_PACKAGES[@]})"
fi

# ---- 2. venv ----------------------------------------------------------------
VENV="$REPO/.venv"
PY="$VENV/bin/python"
STAMP="$VENV/.tandem-requirements"
REQ_STRING="${PIP_REQUIREMENTS[*]}"
if [[ ! -x "$PY" ]]; then
  log "creating venv $VENV"
  /usr/bin/python3 -m venv --system-site-packages "$VENV"
fi
if [[ ! -f "$STAMP" || "$(cat "$STAMP")" != "$REQ_STRING" ]]; then
  log "pip installing $REQ_STRING"
  "$PY" -m pip install -q --disable-pip-version-check "${PIP_REQUIREMENTS[@]}"
  TF_CPP_MIN_LOG_LEVEL=2 "$PY" -c "import numpy, onnx, onnxruntime, torch, torchvision, nanobind, pytest, tf2onnx, sklearn" \
    || { echo "setup: ERROR: venv imports failed" >&2; exit 1; }
  printf '%s' "$REQ_STRING" > "$STAMP"
else
  log "venv up to date ($REQ_STRING)"
fi

# ---- 3. model zoo -----------------------------------------------------------
if [[ "${TANDEM_SKIP_ZOO:-0}" == "1" ]]; then
  log "zoo skipped (TANDEM_SKIP_ZOO=1)"
  exit 0
fi
MANIFEST="$REPO/zoo/manifest.json"
BAD_CASES="$REPO/zoo/bad/cases.json"
need_zoo=0
if [[ "${TANDEM_FORCE_ZOO:-0}" == "1" || ! -f "$MANIFEST" || ! -f "$BAD_CASES" ]]; then
  need_zoo=1
else
  for f in tools/make_zoo.py tools/make_bad_inputs.py tools/zoo_common.py "$STAMP"; do
    if [[ -f "$f" && "$f" -nt "$MANIFEST" ]]; then need_zoo=1; fi
  done
fi
if ((need_zoo)); then
  log "generating model zoo in zoo/"
  start=$SECONDS
  # everything but the real-size tier, which step 4 keeps up to date on its own, and the
  # training models of zoo/train (committed, from tools/make_train_zoo.py)
  if [[ -d "$REPO/zoo" ]]; then
    find "$REPO/zoo" -mindepth 1 -maxdepth 1 ! -name real ! -name train -exec rm -rf {} +
  fi
  "$PY" tools/make_zoo.py --out zoo
  "$PY" tools/make_bad_inputs.py --out zoo/bad
  # the manifest is the freshness stamp: make it the newest file
  touch "$MANIFEST"
  log "zoo generated in $((SECONDS - start)) s"
else
  log "zoo up to date (zoo/manifest.json newer than tools/)"
fi

# ---- 4. real-size tier of the zoo -------------------------------------------
if [[ "${TANDEM_SKIP_REAL_ZOO:-0}" == "1" ]]; then
  log "real-size zoo tier skipped (TANDEM_SKIP_REAL_ZOO=1)"
  log "done"
  exit 0
fi
REAL_MANIFEST="$REPO/zoo/real/manifest.json"
need_real=0
if [[ "${TANDEM_FORCE_ZOO:-0}" == "1" || ! -f "$REAL_MANIFEST" ]]; then
  need_real=1
else
  for f in tools/make_real_zoo.py tools/zoo_common.py "$STAMP"; do
    if [[ -f "$f" && "$f" -nt "$REAL_MANIFEST" ]]; then need_real=1; fi
  done
fi
if ((need_real)); then
  log "generating the real-size zoo tier in zoo/real/ (torchvision and torch exports, ~3 min)"
  start=$SECONDS
  rm -rf "$REPO/zoo/real"
  # into a scratch folder first: an interrupted run leaves no manifest behind
  rm -rf "$REPO/zoo/real.partial"
  "$PY" tools/make_real_zoo.py --out zoo/real.partial
  mv "$REPO/zoo/real.partial" "$REPO/zoo/real"
  touch "$REAL_MANIFEST"
  log "real-size zoo tier generated in $((SECONDS - start)) s"
else
  log "real-size zoo tier up to date (zoo/real/manifest.json newer than tools/)"
fi
log "done"
