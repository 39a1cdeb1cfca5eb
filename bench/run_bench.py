"""Tandem against ONNX Runtime on every zoo model: same inputs, same thread count, one run.

Prints model, Tandem median ms, ORT median ms, ratio (Tandem / ORT; below 1 is faster) and the
geometric mean, and writes the same as JSON. Both sides time only the model call: Tandem's
`run --json` reports per-iteration wall time measured inside the process; ORT's is timed
around `InferenceSession.run` here. The two alternate in rounds so that machine noise hits both.

Usage: .venv/bin/python bench/run_bench.py [--threads 2] [--iterations 50] [--rounds 3]
                                           [--models a,b] [--json bench/results.json]
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
    args = parser.parse_args()

    with open(os.path.join(args.zoo, "manifest.json")) as f:
        manifest = json.load(f)
    if args.models:
        wanted = set(args.models.split(","))
        manifest = [entry for entry in manifest if entry["name"] in wanted]

    rows = []
    print(f"{'model':24} {'tandem ms':>10} {'ORT ms':>10} {'ratio':>7}")
    for entry in manifest:
        options = ort.SessionOptions()
        options.intra_op_num_threads = args.threads
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(os.path.join(args.zoo, entry["path"]), options,
                                       providers=["CPUExecutionProvider"])
        feeds = {spec["name"]: np.load(os.path.join(args.zoo, spec["file"])) for spec in entry["inputs"]}
        tandem_samples, ort_samples = [], []
        for _ in range(args.rounds):
            tandem_samples += time_tandem(args.tandem, args.zoo, entry, args.threads, args.iterations)
            ort_samples += time_ort(session, feeds, args.iterations)
        row = {"model": entry["name"], "tandem_median_ms": statistics.median(tandem_samples),
               "ort_median_ms": statistics.median(ort_samples)}
        row["ratio"] = row["tandem_median_ms"] / row["ort_median_ms"]
        rows.append(row)
        print(f"{row['model']:24} {row['tandem_median_ms']:10.3f} {row['ort_median_ms']:10.3f} {row['ratio']:7.2f}",
              flush=True)
    geomean = math.exp(sum(math.log(r["ratio"]) for r in rows) / len(rows)) if rows else float("nan")
    print(f"{'geometric mean':24} {'':>10} {'':>10} {geomean:7.2f}")
    report = {"machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                          "threads": args.threads, "onnxruntime": ort.__version__},
              "iterations": args.iterations, "rounds": args.rounds, "models": rows, "geomean_ratio": geomean}
    with open(args.json, "w") as f:
        json.dump(report, f, indent=2)
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
