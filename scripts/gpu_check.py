#!/usr/bin/env python3
"""The GPU half of Tandem on a machine with an NVIDIA GPU, in one pass (scripts/gpu-check.sh).

Runs from the repository root, with the binaries that scripts/gpu-check.sh --pack made on a
development machine in gpu-pack/ (tandem, cuda_tests, cuda_gemm and the shared libraries they
need that such a machine lacks; the CUDA libraries are the GPU machine's own). Steps:

  1. the carried binary starts and sees the GPU (tandem --version; nvidia-smi);
  2. the zoo (both tiers) is generated here with this machine's torch and ONNX Runtime;
  3. every zoo model on the native CUDA backend against ONNX Runtime (cuda_tests);
  4. GEMM TFLOP/s in bf16, fp16, tf32 and fp32 against the device's peak (data/presets);
  5. tandem calibrate --backend cuda writes the GPU's profile;
  6. a hybrid CPU+GPU plan, measured against predicted, outputs checked;
  7. one plan over the native CUDA device, the same GPU through the CUDA PJRT plugin and the
     CPU: a data-parallel batch over all three, outputs equal to the CPU alone.

Each step's result goes in a summary table printed last, and in $OUT/gpu-check.json when OUT is
set. A step that fails is reported and the next one runs. Exit status 0 when every step passed.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACK = os.path.join(REPO, "gpu-pack")
OUT = os.environ.get("OUT", "")
RESULTS: list[dict] = []


def cuda_library_dirs() -> list[str]:
    """Folders holding this machine's CUDA runtime, cuBLAS(Lt) and cuDNN: the toolkit's and the
    nvidia-* wheels' of its Python."""
    dirs = []
    for pattern in ("/usr/local/cuda/lib64", "/usr/local/cuda/lib", "/usr/local/cuda/targets/x86_64-linux/lib"):
        dirs += glob.glob(pattern)
    for site in sys.path:
        dirs += glob.glob(os.path.join(site, "nvidia", "*", "lib"))
    return [d for d in dirs if os.path.isdir(d)]


def environment() -> dict:
    env = dict(os.environ)
    paths = [os.path.join(PACK, "lib")] + cuda_library_dirs()
    env["LD_LIBRARY_PATH"] = ":".join(paths + [env.get("LD_LIBRARY_PATH", "")])
    env["TANDEM_PRESETS"] = os.path.join(REPO, "data", "presets")
    env["TANDEM_SOURCE"] = REPO
    env["TANDEM_CACHE_DIR"] = "off"
    env["PYTHONUNBUFFERED"] = "1"
    return env


ENV = environment()


def run(cmd: list[str], timeout: int = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    print("$ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env or ENV, cwd=REPO)


def step(name: str, passed: bool, figure: str, detail: str = "") -> None:
    RESULTS.append({"step": name, "passed": passed, "figure": figure, "detail": detail})
    print(f"[{'pass' if passed else 'FAIL'}] {name}: {figure}" + (f"\n{detail}" if detail and not passed else ""), flush=True)


def tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def check_binary() -> bool:
    tandem = os.path.join(PACK, "tandem")
    result = run([tandem, "--version"])
    smi = shutil.which("nvidia-smi")
    gpu = run([smi, "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"]).stdout.strip() if smi else "no nvidia-smi"
    ok = result.returncode == 0
    step("carried binary starts", ok, (result.stdout.strip() or "exit %d" % result.returncode) + "; " + gpu,
         tail(result.stderr))
    return ok


def make_zoo() -> None:
    started = time.time()
    small = run([sys.executable, "tools/make_zoo.py", "--out", "zoo"], timeout=600)
    real = run([sys.executable, "tools/make_real_zoo.py", "--out", "zoo/real"], timeout=600)
    counts = []
    for manifest in ("zoo/manifest.json", "zoo/real/manifest.json"):
        path = os.path.join(REPO, manifest)
        counts.append(len(json.load(open(path))) if os.path.exists(path) else 0)
    ok = small.returncode == 0 and real.returncode == 0
    step("zoo generated here", ok, f"{counts[0]} + {counts[1]} models in {time.time() - started:.0f} s",
         tail(small.stderr) + "\n" + tail(real.stderr))


def zoo_on_cuda() -> None:
    result = run([os.path.join(PACK, "cuda_tests"), "--gtest_filter=Zoo/ZooOnCuda.*:CudaSupport.*",
                  "--gtest_brief=0"], timeout=900)
    passed = re.findall(r"\[       OK \] Zoo/ZooOnCuda\.MatchesOnnxRuntime/(\S+)", result.stdout)
    failed = re.findall(r"\[  FAILED  \] Zoo/ZooOnCuda\.MatchesOnnxRuntime/(\S+)", result.stdout)
    skipped = re.findall(r"\[  SKIPPED \] Zoo/ZooOnCuda\.MatchesOnnxRuntime/(\S+)", result.stdout)
    failed = sorted(set(failed))
    ok = result.returncode == 0 and passed and not skipped
    step("zoo on the CUDA backend vs ONNX Runtime", bool(ok),
         f"{len(passed)} matched, {len(failed)} failed, {len(skipped)} skipped" + (": " + ", ".join(failed) if failed else ""),
         tail(result.stdout, 40))
    if OUT:
        with open(os.path.join(OUT, "cuda_tests.log"), "w") as log:
            log.write(result.stdout + result.stderr)


def preset_peaks(preset: str) -> dict:
    import yaml
    for path in glob.glob(os.path.join(REPO, "data", "presets", "*.yaml")):
        data = yaml.safe_load(open(path))
        for group in data.values() if isinstance(data, dict) else []:
            if isinstance(group, dict) and preset in group:
                matrix = group[preset].get("matrix", {})
                return {k: float(str(v["value"]).split()[0]) for k, v in matrix.items()}
    return {}


def gemm() -> None:
    peaks = preset_peaks("nvidia-h200")
    rows = []
    ok = True
    for precision, dtype, tf32 in (("bf16", "bf16", "0"), ("fp16", "fp16", "0"), ("tf32", "fp32", "1"), ("fp32", "fp32", "0")):
        env = dict(ENV, TANDEM_CUDA_TF32=tf32)
        result = run([os.path.join(PACK, "cuda_gemm"), "--dtype", dtype, "--n", "8192", "--runs", "10"], env=env)
        if result.returncode != 0:
            ok = False
            rows.append(f"{precision}: failed ({tail(result.stderr, 3)})")
            continue
        figure = json.loads(result.stdout.strip().splitlines()[-1])
        peak = peaks.get(precision, 0)
        share = f" = {100 * figure['tflops'] / peak:.0f}% of {peak:g}" if peak else ""
        rows.append(f"{precision} {figure['tflops']:.1f} TFLOP/s{share}")
    step("GEMM 8192^3 through the MatMul kernel", ok, "; ".join(rows))


def calibrate() -> None:
    profile = os.path.join(OUT or tempfile.gettempdir(), "gpu-profile.yaml")
    result = run([os.path.join(PACK, "tandem"), "calibrate", "--backend", "cuda", "--quick", "-o", profile, "--json"], timeout=600)
    figure = "exit %d" % result.returncode
    if result.returncode == 0:
        try:
            data = json.loads(result.stdout)
            figure = f"wrote {os.path.basename(profile)} ({len(json.dumps(data))} bytes of JSON summary)"
        except json.JSONDecodeError:
            figure = "wrote " + profile
    step("tandem calibrate --backend cuda", result.returncode == 0, figure, tail(result.stderr))


def zoo_files(model: str) -> tuple[str, list[str], list[str]]:
    tier = "zoo/real" if model.startswith("real/") else "zoo"
    name = model.split("/", 1)[-1]
    for entry in json.load(open(os.path.join(REPO, tier, "manifest.json"))):
        if entry["name"] == name:
            inputs = [f"--input={i['name']}={os.path.join(REPO, tier, i['file'])}" for i in entry["inputs"]]
            expects = [f"--expect={o['name']}={os.path.join(REPO, tier, o['file'])}" for o in entry["outputs"]]
            return os.path.join(REPO, tier, entry["path"]), inputs, expects
    raise KeyError(model)


def hybrid() -> None:
    cluster = os.path.join(REPO, "examples", "clusters", "gpu-cpu.yaml")
    rows, ok = [], True
    for model in ("real/resnet18", "real/bert_fold", "real/ssdlite320"):
        try:
            path, inputs, expects = zoo_files(model)
        except (KeyError, OSError) as error:
            ok = False
            rows.append(f"{model}: missing ({error})")
            continue
        result = run([os.path.join(PACK, "tandem"), "run", path, *inputs, *expects, "--cluster", cluster,
                      "--strategy", "greedy", "--warmup", "2", "--iterations", "10", "--json"], timeout=300)
        if result.returncode != 0:
            ok = False
            rows.append(f"{model}: exit {result.returncode}: {tail(result.stderr, 2)}")
            continue
        report = json.loads(result.stdout)
        measured = report["latency"]["median_s"] * 1e3
        predicted = report["plan"]["predicted_latency_s"] * 1e3
        checks = all(c["matches"] for c in report["checks"])
        ok = ok and checks
        rows.append(f"{model}: measured {measured:.3g} ms, predicted {predicted:.3g} ms "
                    f"(x{measured / predicted:.2f}), outputs {'match' if checks else 'DIFFER'}")
    step("hybrid gpu0+cpu0 plan (greedy), measured vs predicted", ok, "; ".join(rows))


def pjrt_cuda_plugin() -> str:
    for site in sys.path:
        for pattern in ("jax_plugins/xla_cuda*/xla_cuda_plugin.so", "jax_plugins/*cuda*/*.so"):
            found = sorted(glob.glob(os.path.join(site, pattern)))
            if found:
                return found[0]
    return ""


def three_backends() -> None:
    plugin = pjrt_cuda_plugin()
    if not plugin:
        step("native CUDA + PJRT-on-GPU + CPU in one plan", False, "no CUDA PJRT plugin found in this Python")
        return
    cluster = os.path.join(tempfile.mkdtemp(), "three.yaml")
    with open(cluster, "w") as f:
        f.write("hosts: [local]\ndevices:\n"
                "  - {id: gpu0, preset: nvidia-h200, host: local, backend: cuda}\n"
                f"  - {{id: xla0, kind: gpu, preset: nvidia-h200, host: local, backend: pjrt, plugin: {plugin}}}\n"
                "  - {id: cpu0, preset: cpu-generic-avx2, host: local, backend: cpu}\n")
    path = os.path.join(REPO, "zoo", "resnet", "model.onnx")
    outputs = {}
    for strategy in ("data-parallel", "single:cpu0"):
        folder = tempfile.mkdtemp()
        result = run([os.path.join(PACK, "tandem"), "run", path, "--dim", "batch=6", "--seed", "3", "--cluster", cluster,
                      "--strategy", strategy, "--output-dir", folder, "--iterations", "3", "--json"], timeout=300)
        if result.returncode != 0:
            step("native CUDA + PJRT-on-GPU + CPU in one plan", False, f"{strategy}: exit {result.returncode}", tail(result.stderr))
            return
        report = json.loads(result.stdout)
        outputs[strategy] = (folder, report)
    import numpy as np
    worst = 0.0
    for npy in glob.glob(os.path.join(outputs["single:cpu0"][0], "*.npy")):
        ours = np.load(os.path.join(outputs["data-parallel"][0], os.path.basename(npy)))
        ref = np.load(npy)
        worst = max(worst, float(np.max(np.abs(ours.astype(np.float64) - ref)) / (np.max(np.abs(ref)) or 1.0)))
    devices = [d["id"] for d in outputs["data-parallel"][1]["plan"]["devices"] if d["busy_s"] > 0]
    step("native CUDA + PJRT-on-GPU + CPU in one plan", worst < 1e-3,
         f"data-parallel batch 6 over {devices or 'gpu0, xla0, cpu0'}: max relative difference {worst:.2g} from cpu0 alone")


def main() -> int:
    if OUT:
        os.makedirs(OUT, exist_ok=True)
    if not check_binary():
        print("the carried binary does not start here: nothing else can run", file=sys.stderr)
    else:
        for fn in (make_zoo, zoo_on_cuda, gemm, calibrate, hybrid, three_backends):
            try:
                fn()
            except Exception as error:  # a step's crash is its failure; the next step still runs
                step(fn.__name__, False, f"{type(error).__name__}: {error}")
    width = max(len(r["step"]) for r in RESULTS)
    print("\nsummary (GPU: " + (shutil.which("nvidia-smi") and run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"]).stdout.strip() or "?") + ")")
    for r in RESULTS:
        print(f"  {'pass' if r['passed'] else 'FAIL'}  {r['step']:<{width}}  {r['figure']}")
    if OUT:
        json.dump(RESULTS, open(os.path.join(OUT, "gpu-check.json"), "w"), indent=2)
    return 0 if all(r["passed"] for r in RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
