#!/usr/bin/env bash
# The GPU half of Tandem checked on a machine with an NVIDIA GPU (docs/CUDA.md):
#   bash scripts/gpu-check.sh --pack   on a development machine, after scripts/build.sh: packs
#                                      build/'s tandem, cuda_tests and cuda_gemm, with the shared
#                                      libraries they need beyond glibc, libstdc++ and CUDA's own,
#                                      into gpu-pack.tar.xz (64 MiB at most, to travel with the
#                                      tree; about 19 MiB)
#   bash scripts/gpu-check.sh          on the GPU machine, from the repository root with
#                                      gpu-pack.tar.xz (or gpu-pack/) there: unpacks it, then
#                                      scripts/gpu_check.py's steps, a summary table last
# The GPU machine needs an NVIDIA driver, CUDA 13's runtime, cuBLAS and cuDNN 9 (the toolkit's or
# the nvidia-* Python wheels'), and a python3 with numpy, PyYAML, onnx, onnxruntime and torch
# (the zoo is generated there); it needs none of Debian's libraries.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PACK="$REPO/gpu-pack"

if [[ "${1:-}" == "--pack" ]]; then
  BUILD="${BUILD:-$REPO/build}"
  binaries=("$BUILD/src/tandem" "$BUILD/tests/cuda_tests" "$BUILD/bench/cuda_gemm")
  for binary in "${binaries[@]}"; do
    [[ -x "$binary" ]] || { echo "gpu-check: $binary is missing: build with the CUDA toolkit first (scripts/build.sh)" >&2; exit 2; }
  done
  rm -rf "$PACK" && mkdir -p "$PACK/lib"
  cp "${binaries[@]}" "$PACK/"
  # What the GPU machine has of its own, in versions at least as new: glibc, the C++ runtime,
  # the driver and CUDA's libraries.
  skip='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|libpthread\.|librt\.|libstdc\+\+|libgcc_s|libcuda\.|libcudart|libcublas|libcudnn|libnvrtc|libnvJitLink)'
  for binary in "${binaries[@]}"; do
    ldd "$binary" | awk '/=> \//{print $1" "$3}' | while read -r name path; do
      [[ "$name" =~ $skip ]] || cp -L "$path" "$PACK/lib/$name"
    done
  done
  strip --strip-unneeded "$PACK"/tandem "$PACK"/cuda_tests "$PACK"/cuda_gemm "$PACK"/lib/* 2>/dev/null || true
  tar -cJf "$REPO/gpu-pack.tar.xz" -C "$REPO" gpu-pack
  rm -rf "$PACK"
  size=$(( $(stat -c %s "$REPO/gpu-pack.tar.xz") >> 20 ))
  echo "gpu-check: packed 3 binaries and their libraries in gpu-pack.tar.xz (${size} MiB)"
  if (( size > 64 )); then echo "gpu-check: gpu-pack.tar.xz is over 64 MiB" >&2; exit 1; fi
  exit 0
fi

if [[ -f "$REPO/gpu-pack.tar.xz" && ! -x "$PACK/tandem" ]]; then
  tar -xJf "$REPO/gpu-pack.tar.xz" -C "$REPO"
fi
[[ -x "$PACK/tandem" ]] || { echo "gpu-check: no gpu-pack here: run 'bash scripts/gpu-check.sh --pack' where Tandem was built" >&2; exit 2; }
exec python3 "$REPO/scripts/gpu_check.py"
