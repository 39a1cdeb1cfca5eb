#!/usr/bin/env python3
"""The GPU half of Tandem on a machine with an NVIDIA GPU, in one pass (scripts/gpu-check.sh).

Runs from the repository root, with the binaries that scripts/gpu-check.sh --pack made on a
development machine in gpu-pack/ (tandem, cuda_tests, cuda_gemm and the shared libraries they
need that such a machine lacks; the CUDA libraries are the GPU machine's own). Steps, in the
order of what a short lease should bring back first:

  1. the carried binary starts and sees the GPU (tandem --version; nvidia-smi; ldd);
  2. the zoo (both tiers) is generated here with this machine's torch and ONNX Runtime, in the
     background while the GEMMs run;
  3. GEMM TFLOP/s in bf16, fp16, tf32 and fp32 against the device's peak (data/presets);
  4. bench/cuda_op_stream.py: a node of each kind (convolutions as models hold them, products,
     elementwise ops) as a run streams it and waited for, per node (op-stream.json);
  5. tandem calibrate --backend cuda writes the GPU's profile, once the zoo's generation has
     left the cores (beside it, calibration warned of 4.9 busy cores of 16);
  6. cuda_tests' device tests (all but the zoo's; one checks every zoo node is accepted);
  7. every zoo model on the native CUDA backend against ONNX Runtime (cuda_tests, one process
     per model, TANDEM_CUDA_SYNC=1 so that a fault names its node);
  8. every zoo model run on the GPU alone, measured against predicted from the calibrated
     profile (--expect checks its outputs too);
  9. torchvision's ResNet-18 and MobileNetV3-small in torch eager, beside the CUDA backend's runs;
  10. every zoo model on the GPU alone traced node by node, each node waited for (node_timelines:
     timelines.tar.gz, with the graphs, their large initializers emptied, to price them elsewhere);
  11. the example gpu-cpu.yaml cluster (gpu0 priced by this pass's calibration, cpu0 by its
     preset), greedy and auto, measured against predicted;
  12. one plan over the native CUDA device, the same GPU through the CUDA PJRT plugin and the
     CPU: a data-parallel batch over all three, outputs equal to the CPU alone.

The whole pass keeps to $GPU_CHECK_BUDGET seconds (default 540): each step's commands get what
is left, and a step that runs out is reported as such; GPU_CHECK_SKIP names steps (functions) to
leave out, comma-separated. Each step's result goes in a summary
table printed last; with OUT set, $OUT gets gpu-check.json (rewritten after every step),
gpu-profile.yaml, predictions.json, op-stream.json, timelines.tar.gz and logs.tar.gz (every
command's output). A step that fails
is reported and the next one runs. Exit status 0 when every step passed.
"""

from __future__ import annotations

import concurrent.futures
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACK = os.path.join(REPO, "gpu-pack")
OUT = os.environ.get("OUT", "")
LOGS = tempfile.mkdtemp(prefix="gpu-check-logs-")
BUDGET_S = float(os.environ.get("GPU_CHECK_BUDGET", "540"))
STARTED = time.time()
RESULTS: list[dict] = []
PREDICTIONS: list[dict] = []


def seconds_left() -> float:
    return BUDGET_S - (time.time() - STARTED)


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
TANDEM = os.path.join(PACK, "tandem")


class OutOfTime(Exception):
    pass


def run(cmd: list[str], timeout: float = 300, env: dict | None = None, log: str = "") -> subprocess.CompletedProcess:
    """Runs a command within the pass's budget; its output goes to LOGS/<log>.log when named."""
    limit = min(timeout, seconds_left())
    if limit < 3:
        raise OutOfTime("no time left in the budget for " + os.path.basename(cmd[0]))
    print("$ " + " ".join(cmd), flush=True)
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=limit, env=env or ENV, cwd=REPO)
    except subprocess.TimeoutExpired as expired:
        out = expired.stdout.decode() if isinstance(expired.stdout, bytes) else (expired.stdout or "")
        err = expired.stderr.decode() if isinstance(expired.stderr, bytes) else (expired.stderr or "")
        result = subprocess.CompletedProcess(cmd, 124, out, err + f"\n(timed out after {limit:.0f} s)")
    if log:
        with open(os.path.join(LOGS, log + ".log"), "w") as f:
            f.write("$ " + " ".join(cmd) + "\n" + result.stdout + "\n--- stderr ---\n" + result.stderr)
    return result


def save() -> None:
    if not OUT:
        return
    json.dump(RESULTS, open(os.path.join(OUT, "gpu-check.json"), "w"), indent=2)
    json.dump(PREDICTIONS, open(os.path.join(OUT, "predictions.json"), "w"), indent=2)
    with tarfile.open(os.path.join(OUT, "logs.tar.gz"), "w:gz") as tar:
        tar.add(LOGS, arcname="logs")


def step(name: str, passed: bool, figure: str, detail: str = "") -> None:
    RESULTS.append({"step": name, "passed": passed, "figure": figure, "detail": detail,
                    "at_s": round(time.time() - STARTED, 1)})
    print(f"[{'pass' if passed else 'FAIL'}] {name}: {figure}" + (f"\n{detail}" if detail and not passed else ""), flush=True)
    save()


def tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def check_binary() -> bool:
    result = run([TANDEM, "--version"], log="version")
    smi = shutil.which("nvidia-smi")
    gpu = run([smi, "--query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm", "--format=csv,noheader"],
              log="nvidia-smi").stdout.strip() if smi else "no nvidia-smi"
    missing = []
    for binary in ("tandem", "cuda_tests", "cuda_gemm"):
        ldd = run(["ldd", os.path.join(PACK, binary)], log="ldd-" + binary)
        missing += [line.strip() for line in ldd.stdout.splitlines() if "not found" in line]
    ok = result.returncode == 0 and not missing
    step("carried binary starts", ok, (result.stdout.strip() or "exit %d" % result.returncode) + "; " + gpu,
         tail(result.stderr) + ("\nmissing: " + "; ".join(sorted(set(missing))) if missing else ""))
    return ok


ZOO_JOBS: list[tuple[str, subprocess.Popen]] = []


def start_zoo() -> None:
    """Both tiers in the background, each with its own log."""
    for name, script, out in (("zoo-small", "tools/make_zoo.py", "zoo"), ("zoo-real", "tools/make_real_zoo.py", "zoo/real")):
        log = open(os.path.join(LOGS, name + ".log"), "w")
        process = subprocess.Popen([sys.executable, script, "--out", out], stdout=log, stderr=subprocess.STDOUT,
                                   env=ENV, cwd=REPO)
        ZOO_JOBS.append((name, process))


def wait_zoo() -> None:
    codes = []
    for name, process in ZOO_JOBS:
        try:
            codes.append(process.wait(timeout=max(1, seconds_left() - 60)))
        except subprocess.TimeoutExpired:
            process.kill()
            codes.append(124)
    counts = []
    for manifest in ("zoo/manifest.json", "zoo/real/manifest.json"):
        path = os.path.join(REPO, manifest)
        counts.append(len(json.load(open(path))) if os.path.exists(path) else 0)
    ok = all(code == 0 for code in codes)
    detail = "\n".join(tail(open(os.path.join(LOGS, name + ".log")).read(), 8) for name, _ in ZOO_JOBS)
    step("zoo generated here", ok, f"{counts[0]} + {counts[1]} models (exit {codes}) by {time.time() - STARTED:.0f} s",
         detail)


def device_tests() -> None:
    result = run([os.path.join(PACK, "cuda_tests"), "--gtest_filter=-Zoo/*", "--gtest_brief=1"], timeout=120,
                 log="cuda_tests-device")
    summary = re.findall(r"\[  PASSED  \] (\d+) tests?|\[  FAILED  \] (\d+) tests?|\[  SKIPPED \] (\d+) tests?", result.stdout)
    passed = sum(int(p or 0) for p, _, _ in summary)
    failed = sum(int(f or 0) for _, f, _ in summary)
    skipped = sum(int(s or 0) for _, _, s in summary)
    step("cuda_tests without the zoo", result.returncode == 0 and failed == 0,
         f"{passed} passed, {failed} failed, {skipped} skipped (exit {result.returncode})", tail(result.stdout, 30))


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
        result = run([os.path.join(PACK, "cuda_gemm"), "--dtype", dtype, "--n", "8192", "--runs", "10"], env=env,
                     timeout=60, log="gemm-" + precision)
        if result.returncode != 0:
            ok = False
            rows.append(f"{precision}: failed ({tail(result.stderr, 3)})")
            continue
        figure = json.loads(result.stdout.strip().splitlines()[-1])
        peak = peaks.get(precision, 0)
        share = f" = {100 * figure['tflops'] / peak:.0f}% of {peak:g}" if peak else ""
        rows.append(f"{precision} {figure['tflops']:.1f} TFLOP/s{share}")
    step("GEMM 8192^3 through the MatMul kernel", ok, "; ".join(rows))


def op_stream() -> None:
    """bench/cuda_op_stream.py: a node of each kind as a run streams it and waited for."""
    table = os.path.join(OUT or LOGS, "op-stream.json")
    result = run([sys.executable, os.path.join(REPO, "bench", "cuda_op_stream.py"), "--tandem", TANDEM,
                  "--json", table], timeout=240, log="op-stream")
    step("a node of each kind, streamed and waited for", result.returncode == 0,
         f"exit {result.returncode}", result.stdout.strip() + "\n" + tail(result.stderr, 5))


PROFILE = os.path.join(OUT or LOGS, "gpu-profile.yaml")


def calibrate() -> None:
    """The full calibration; --quick only where the full one fails."""
    for flags in ([], ["--quick"]):
        result = run([TANDEM, "calibrate", "--backend", "cuda", *flags, "-o", PROFILE], timeout=200,
                     log="calibrate" + "".join(flags).replace("--", "-"))
        if result.returncode == 0:
            step("tandem calibrate --backend cuda " + " ".join(flags), True,
                 f"wrote {os.path.basename(PROFILE)} at {time.time() - STARTED:.0f} s", tail(result.stdout, 40))
            return
        step("tandem calibrate --backend cuda " + " ".join(flags), False, f"exit {result.returncode}",
             tail(result.stderr) + "\n" + tail(result.stdout))


def manifest_models() -> list[str]:
    names = []
    for tier, prefix in (("zoo/real", "real/"), ("zoo", "")):
        path = os.path.join(REPO, tier, "manifest.json")
        if os.path.exists(path):
            names += [prefix + entry["name"] for entry in json.load(open(path))]
    return names


def zoo_on_cuda() -> None:
    """One process per model, four at a time, so that one model's fault cannot fail the others."""
    env = dict(ENV, TANDEM_CUDA_SYNC="1")
    names = manifest_models()

    def one(name: str) -> tuple[str, str]:
        test = "Zoo/ZooOnCuda.MatchesOnnxRuntime/" + re.sub(r"[^A-Za-z0-9]", "_", name)
        result = run([os.path.join(PACK, "cuda_tests"), "--gtest_filter=" + test], timeout=180, env=env,
                     log="zoo-" + name.replace("/", "-"))
        if "[  SKIPPED ]" in result.stdout:
            return name, "skipped"
        return name, "ok" if result.returncode == 0 and "[  PASSED  ] 1 test" in result.stdout else f"FAILED (exit {result.returncode})"

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        outcomes = dict(pool.map(one, names))
    failed = sorted(n for n, o in outcomes.items() if o.startswith("FAILED"))
    skipped = sorted(n for n, o in outcomes.items() if o == "skipped")
    matched = len(names) - len(failed) - len(skipped)
    details = []
    for name in failed:
        text = open(os.path.join(LOGS, "zoo-" + name.replace("/", "-") + ".log")).read()
        details.append(f"--- {name}\n" + tail(text, 12))
    step("zoo on the CUDA backend vs ONNX Runtime", bool(names) and not failed and not skipped,
         f"{matched} of {len(names)} matched" + (f"; failed: {', '.join(failed)}" if failed else "")
         + (f"; skipped: {', '.join(skipped)}" if skipped else ""), "\n".join(details))


def zoo_files(model: str) -> tuple[str, list[str], list[str]]:
    tier = "zoo/real" if model.startswith("real/") else "zoo"
    name = model.split("/", 1)[-1]
    for entry in json.load(open(os.path.join(REPO, tier, "manifest.json"))):
        if entry["name"] == name:
            inputs = [f"--input={i['name']}={os.path.join(REPO, tier, i['file'])}" for i in entry["inputs"]]
            expects = [f"--expect={o['name']}={os.path.join(REPO, tier, o['file'])}" for o in entry["outputs"]]
            return os.path.join(REPO, tier, entry["path"]), inputs, expects
    raise KeyError(model)


def timed_run(model: str, cluster: str, strategy: str, log: str) -> dict:
    path, inputs, expects = zoo_files(model)
    result = run([TANDEM, "run", path, *inputs, *expects, "--cluster", cluster, "--strategy", strategy,
                  "--warmup", "3", "--iterations", "20", "--json"], timeout=120, log=log)
    row = {"model": model, "cluster": os.path.basename(cluster), "strategy": strategy, "exit": result.returncode}
    if result.returncode in (0, 1) and result.stdout.strip().startswith("{"):
        report = json.loads(result.stdout)
        row.update(measured_ms=report["latency"]["median_s"] * 1e3, min_ms=report["latency"]["min_s"] * 1e3,
                   predicted_ms=report["plan"]["predicted_latency_s"] * 1e3, chosen=report["plan"]["chosen"],
                   predicted_from=report["plan"].get("predicted_from", ""),
                   matches=all(c["matches"] for c in report["checks"]),
                   devices={d["id"]: [d["busy_s"], d["predicted_busy_s"]] for d in report["plan"]["devices"]})
        row["error"] = row["predicted_ms"] / row["measured_ms"] - 1
    else:
        row["problem"] = tail(result.stderr, 3)
    PREDICTIONS.append(row)
    return row


def calibrated_cluster() -> str:
    """A cluster of gpu0 alone, priced by this pass's calibration."""
    cluster = os.path.join(LOGS, "gpu-calibrated.yaml")
    with open(cluster, "w") as f:
        f.write("hosts: [local]\ndevices:\n"
                f"  - {{id: gpu0, preset: nvidia-h200, host: local, backend: cuda, profile: {PROFILE}}}\n")
    return cluster


def predictions() -> None:
    """Each zoo model on the GPU alone, priced by the calibrated profile."""
    if not os.path.exists(PROFILE):
        step("zoo on gpu0 alone: measured vs predicted (calibrated)", False, "no GPU profile (calibrate failed)")
        return
    cluster = calibrated_cluster()
    rows = []
    for model in manifest_models():
        try:
            rows.append(timed_run(model, cluster, "single:gpu0", "predict-" + model.replace("/", "-")))
        except OutOfTime:
            break
    errors = sorted(abs(r["error"]) for r in rows if "error" in r)
    wrong = [r["model"] for r in rows if r.get("matches") is False or "error" not in r]
    median = errors[len(errors) // 2] if errors else float("nan")
    step("zoo on gpu0 alone: measured vs predicted (calibrated)", bool(errors) and not wrong,
         f"{len(errors)} of {len(manifest_models())} timed, median |error| {100 * median:.0f}%"
         + (f"; failed or differ: {', '.join(wrong)}" if wrong else ""),
         "\n".join(f"{r['model']}: {r.get('measured_ms', 0):.3f} ms measured, {r.get('predicted_ms', 0):.3f} predicted"
                   for r in rows))


def node_timelines() -> None:
    """Each zoo model's nodes as they ran on gpu0 alone, as traces: a traced run waits for the
    device after every node, so each span is the node's launch, its kernels and the wait; and the
    models' graphs with their large initializers emptied, so that the runs can be priced node by
    node again off this machine."""
    if not os.path.exists(PROFILE):
        step("zoo on gpu0 alone, node by node", False, "no GPU profile (calibrate failed)")
        return
    import onnx
    folder = tempfile.mkdtemp(prefix="gpu-check-timelines-")
    os.makedirs(os.path.join(folder, "models"), exist_ok=True)
    cluster = calibrated_cluster()
    done = 0
    for model in manifest_models():
        path, inputs, _ = zoo_files(model)
        stem = model.replace("/", "-")
        result = run([TANDEM, "run", path, *inputs, "--cluster", cluster, "--strategy", "single:gpu0",
                      "--warmup", "3", "--iterations", "10", "--trace",
                      os.path.join(folder, f"{stem}.trace.json"), "--json"], timeout=120,
                     log=f"timeline-{stem}")
        with open(os.path.join(folder, f"{stem}.json"), "w") as f:
            f.write(result.stdout)
        graph = onnx.load(path)
        for tensor in graph.graph.initializer:
            if len(tensor.raw_data) > 4096:  # the dims and type stay; the values are put back at random
                tensor.ClearField("raw_data")
                tensor.doc_string = "emptied"
        onnx.save(graph, os.path.join(folder, "models", stem + ".onnx"))
        done += result.returncode == 0
    with tarfile.open(os.path.join(OUT or LOGS, "timelines.tar.gz"), "w:gz") as tar:
        tar.add(folder, arcname="timelines")
    step("zoo on gpu0 alone, node by node", done == len(manifest_models()),
         f"{done} of {len(manifest_models())} models traced, each node waited for")


def torch_eager() -> None:
    """torchvision's ResNet-18 and MobileNetV3-small in torch eager on this GPU (fp32 without
    TF32, as Tandem runs them; batch 1, 224x224; median of 50 after 10 warm-ups), beside the
    CUDA backend's medians from the predictions step."""
    import torch
    import torchvision
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    ours = {r["model"]: r.get("measured_ms") for r in PREDICTIONS if r["strategy"] == "single:gpu0"}
    rows = []
    for name, make in (("resnet18", torchvision.models.resnet18),
                       ("mobilenet_v3_small", torchvision.models.mobilenet_v3_small)):
        model = make().eval().cuda()
        x = torch.randn(1, 3, 224, 224, device="cuda")
        times = []
        with torch.no_grad():
            for i in range(60):
                start = time.perf_counter()
                model(x)
                torch.cuda.synchronize()
                if i >= 10:
                    times.append(time.perf_counter() - start)
        eager = sorted(times)[len(times) // 2] * 1e3
        tandem = ours.get("real/" + name)
        rows.append(f"{name}: torch eager {eager:.3f} ms, Tandem "
                    + (f"{tandem:.3f} ms ({tandem / eager:.2f}x)" if tandem else "not measured"))
    step("torch eager beside the CUDA backend", True, "; ".join(rows))


def hybrid() -> None:
    """The example gpu-cpu.yaml with gpu0 priced by this pass's calibration (the profile the
    example names came from such a pass; this one is what it would be replaced by)."""
    cluster = os.path.join(REPO, "examples", "clusters", "gpu-cpu.yaml")
    if os.path.exists(PROFILE):
        text = open(cluster).read().replace("../profiles/nvidia-h200-cuda.json", PROFILE)
        cluster = os.path.join(LOGS, "gpu-cpu-calibrated.yaml")
        with open(cluster, "w") as f:
            f.write(text)
    rows, ok = [], True
    for model in ("real/resnet18", "real/bert_fold", "real/ssdlite320"):
        for strategy in ("greedy", "auto"):
            row = timed_run(model, cluster, strategy, f"hybrid-{strategy}-{model.replace('/', '-')}")
            if "error" not in row:
                ok = False
                rows.append(f"{model} {strategy}: exit {row['exit']}: {row.get('problem', '')}")
                continue
            ok = ok and row["matches"]
            rows.append(f"{model} {strategy} ({row['chosen']}): measured {row['measured_ms']:.3g} ms, predicted "
                        f"{row['predicted_ms']:.3g} (x{row['measured_ms'] / row['predicted_ms']:.2f}), outputs "
                        f"{'match' if row['matches'] else 'DIFFER'}")
    step("example gpu-cpu.yaml, measured vs predicted", ok, "; ".join(rows))


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
    cluster = os.path.join(LOGS, "three.yaml")
    with open(cluster, "w") as f:
        f.write("hosts: [local]\ndevices:\n"
                "  - {id: gpu0, preset: nvidia-h200, host: local, backend: cuda}\n"
                f"  - {{id: xla0, kind: gpu, preset: nvidia-h200, host: local, backend: pjrt, plugin: {plugin}}}\n"
                "  - {id: cpu0, preset: cpu-generic-avx2, host: local, backend: cpu}\n")
    path = os.path.join(REPO, "zoo", "resnet", "model.onnx")
    outputs = {}
    for strategy in ("data-parallel", "single:cpu0"):
        folder = tempfile.mkdtemp()
        result = run([TANDEM, "run", path, "--dim", "batch=6", "--seed", "3", "--cluster", cluster,
                      "--strategy", strategy, "--output-dir", folder, "--iterations", "3", "--json"], timeout=180,
                     log="three-" + strategy.replace(":", "-"))
        if result.returncode != 0:
            step("native CUDA + PJRT-on-GPU + CPU in one plan", False, f"{strategy}: exit {result.returncode}", tail(result.stderr))
            return
        outputs[strategy] = (folder, json.loads(result.stdout))
    import numpy as np
    worst = 0.0
    for npy in glob.glob(os.path.join(outputs["single:cpu0"][0], "*.npy")):
        ours = np.load(os.path.join(outputs["data-parallel"][0], os.path.basename(npy)))
        ref = np.load(npy)
        worst = max(worst, float(np.max(np.abs(ours.astype(np.float64) - ref)) / (np.max(np.abs(ref)) or 1.0)))
    devices = [d["id"] for d in outputs["data-parallel"][1]["plan"]["devices"] if d["busy_s"] > 0]
    step("native CUDA + PJRT-on-GPU + CPU in one plan", worst < 1e-3,
         f"data-parallel batch 6 over {', '.join(devices)}: max relative difference {worst:.2g} from cpu0 alone")


def main() -> int:
    if OUT:
        os.makedirs(OUT, exist_ok=True)
    if not os.access(TANDEM, os.X_OK):
        print(f"gpu-check: no {TANDEM}: run scripts/gpu-check.sh, which unpacks gpu-pack.tar.xz",
              file=sys.stderr)
        return 2
    if not check_binary():
        print("the carried binary does not start here: nothing else can run", file=sys.stderr)
    else:
        skipped = os.environ.get("GPU_CHECK_SKIP", "").split(",")
        if "wait_zoo" not in skipped:
            start_zoo()
        for fn in (gemm, wait_zoo, op_stream, calibrate, device_tests, zoo_on_cuda, predictions, torch_eager,
                   node_timelines, hybrid, three_backends):
            if fn.__name__ in skipped:
                continue
            try:
                fn()
            except OutOfTime as error:
                step(fn.__name__, False, f"not run: {error}")
            except Exception as error:  # a step's crash is its failure; the next step still runs
                step(fn.__name__, False, f"{type(error).__name__}: {error}")
    for _, process in ZOO_JOBS:
        if process.poll() is None:
            process.kill()
    width = max(len(r["step"]) for r in RESULTS)
    print(f"\nsummary after {time.time() - STARTED:.0f} s (GPU: "
          + (shutil.which("nvidia-smi") and run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], timeout=10).stdout.strip() or "?") + ")")
    for r in RESULTS:
        print(f"  {'pass' if r['passed'] else 'FAIL'}  {r['step']:<{width}}  {r['figure']}")
    save()
    return 0 if all(r["passed"] for r in RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
