"""Tandem against ONNX Runtime and PyTorch eager on the zoo: same inputs, same threads, one run.

Prints per model Tandem's, ONNX Runtime's and (where the model comes from a PyTorch module:
the real-size tier, `--zoo zoo/real`) PyTorch eager's median ms, the ratios Tandem / ORT and
Tandem / PyTorch (below 1: Tandem is faster) and their geometric means, and writes the same as
JSON. Each side times only the model call: Tandem's `run --json` reports per-iteration wall
time measured inside the process; ORT's `InferenceSession.run` and the module's call (under
torch.no_grad) are timed here. The three alternate in rounds so that machine noise hits all.
The PyTorch modules are rebuilt as tools/make_real_zoo.py built them (same seeds, same inputs).

Usage: .venv/bin/python bench/run_bench.py [--zoo zoo/real] [--threads 2] [--iterations 50]
                                           [--rounds 3] [--models a,b] [--json FILE]
"""
import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def time_tandem(tandem, zoo, entry, threads, iterations):
    args = [tandem, "run", os.path.join(zoo, entry["path"]), "--json", "--threads", str(threads),
            "--warmup", "3", "--iterations", str(iterations)]
    for name, size in entry["dims"].items():
        args += ["--dim", f"{name}={size}"]
    for spec in entry["inputs"]:
        args += ["--input", f"{spec['name']}={os.path.join(zoo, spec['file'])}"]
    for spec in entry["outputs"]:
        args += ["--expect", f"{spec['name']}={os.path.join(zoo, spec['file'])}"]
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"tandem failed on {entry['name']}: {result.stderr.strip()}")
    return [1e3 * s for s in json.loads(result.stdout)["latency"]["samples_s"]]


def time_ort(session, feeds, iterations):
    for _ in range(3):
        session.run(None, feeds)
    samples = []
    for _ in range(iterations):
        start = time.perf_counter()
        session.run(None, feeds)
        samples.append((time.perf_counter() - start) * 1000.0)
    return samples


def torch_modules(names, threads):
    """name -> (module, args) for the real tier's models, rebuilt by tools/make_real_zoo.py:
    its export is wrapped to keep what it exports (written to a scratch folder)."""
    import tempfile
    sys.path.insert(0, os.path.join(REPO, "tools"))
    import make_real_zoo
    import torch
    torch.set_num_threads(threads)
    make_real_zoo.ORT_THREADS = threads
    exported = {}
    original = make_real_zoo.export

    def keep(module, args, path, *rest, **options):
        exported["last"] = (module, args)
        original(module, args, path, *rest, **options)

    make_real_zoo.export = keep
    modules = {}
    with tempfile.TemporaryDirectory() as folder:
        for name in names:
            if name not in make_real_zoo.MODELS:
                continue
            builder, fold = make_real_zoo.MODELS[name]
            builder(os.path.join(folder, name + ".onnx"), fold)
            modules[name] = exported.pop("last")
    make_real_zoo.export = original
    return modules


def blas_loaded():
    """The BLAS library this process loaded (Debian's torch uses the system's libblas.so.3:
    the reference BLAS unless e.g. libopenblas0-pthread is installed, ~50x slower)."""
    with open("/proc/self/maps") as f:
        paths = {line.split()[-1] for line in f if "blas" in line and "/" in line}
    return ", ".join(sorted(paths)) or "none"


def time_torch(module, args, iterations):
    import torch
    module.eval()
    with torch.no_grad():
        for _ in range(3):
            module(*args)
        samples = []
        for _ in range(iterations):
            start = time.perf_counter()
            module(*args)
            samples.append((time.perf_counter() - start) * 1000.0)
    return samples


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tandem", default=os.path.join(REPO, "build", "src", "tandem"))
    parser.add_argument("--zoo", default=os.path.join(REPO, "zoo"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--models", default="", help="comma-separated subset")
    parser.add_argument("--json", default=os.path.join(REPO, "bench", "results.json"))
    parser.add_argument("--no-torch", action="store_true", help="leave PyTorch eager out")
    args = parser.parse_args()

    with open(os.path.join(args.zoo, "manifest.json")) as f:
        manifest = json.load(f)
    if args.models:
        wanted = set(args.models.split(","))
        manifest = [entry for entry in manifest if entry["name"] in wanted]

    modules = {} if args.no_torch else torch_modules([e["name"] for e in manifest], args.threads)
    blas = blas_loaded() if modules else ""
    if modules:
        import torch
        print(f"PyTorch {torch.__version__}, BLAS: {blas}")
    rows = []
    print(f"{'model':24} {'tandem ms':>10} {'ORT ms':>10} {'torch ms':>10} {'/ORT':>7} {'/torch':>7}")
    for entry in manifest:
        options = ort.SessionOptions()
        options.intra_op_num_threads = args.threads
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(os.path.join(args.zoo, entry["path"]), options,
                                       providers=["CPUExecutionProvider"])
        feeds = {spec["name"]: np.load(os.path.join(args.zoo, spec["file"])) for spec in entry["inputs"]}
        module = modules.get(entry["name"])
        tandem_samples, ort_samples, torch_samples = [], [], []
        for _ in range(args.rounds):
            tandem_samples += time_tandem(args.tandem, args.zoo, entry, args.threads, args.iterations)
            ort_samples += time_ort(session, feeds, args.iterations)
            if module:
                torch_samples += time_torch(*module, args.iterations)
        row = {"model": entry["name"], "tandem_median_ms": statistics.median(tandem_samples),
               "ort_median_ms": statistics.median(ort_samples),
               "torch_median_ms": statistics.median(torch_samples) if torch_samples else None}
        row["ratio"] = row["tandem_median_ms"] / row["ort_median_ms"]
        row["torch_ratio"] = (row["tandem_median_ms"] / row["torch_median_ms"]
                              if row["torch_median_ms"] else None)
        rows.append(row)
        torch_ms = f"{row['torch_median_ms']:10.3f}" if module else f"{'-':>10}"
        torch_ratio = f"{row['torch_ratio']:7.2f}" if module else f"{'-':>7}"
        print(f"{row['model']:24} {row['tandem_median_ms']:10.3f} {row['ort_median_ms']:10.3f} "
              f"{torch_ms} {row['ratio']:7.2f} {torch_ratio}", flush=True)
    ort_geomean = geomean([r["ratio"] for r in rows])
    torch_geomean = geomean([r["torch_ratio"] for r in rows if r["torch_ratio"]])
    print(f"{'geometric mean':24} {'':>10} {'':>10} {'':>10} {ort_geomean:7.2f} {torch_geomean:7.2f}")
    report = {"machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                          "threads": args.threads, "onnxruntime": ort.__version__,
                          "torch_blas": blas},
              "iterations": args.iterations, "rounds": args.rounds, "models": rows,
              "geomean_ratio": ort_geomean, "geomean_torch_ratio": torch_geomean}
    with open(args.json, "w") as f:
        json.dump(report, f, indent=2)
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
