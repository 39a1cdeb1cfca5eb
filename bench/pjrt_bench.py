"""The PJRT path on the xla-cpu-pjrt plugin: compile time per segment, the executable cache's hit
rate, and the zoo's static models on PJRT-CPU against Tandem's own CPU backend and ONNX Runtime.

Per model: the model is planned whole onto pjrt0 of examples/clusters/cpu-pjrt.yaml (one segment,
one program) and run with a fresh executable cache (cold: compiled), then again in new processes
(warm: loaded from the disk cache). Latencies are medians of in-process timings: Tandem's from
`run --json`, ORT's around InferenceSession.run; all on the same inputs and thread count.

Usage: .venv/bin/python bench/pjrt_bench.py [--iterations 30] [--warm-runs 3] [--models a,b]
                                            [--json bench/pjrt_results.json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_bench import cpu_model, time_ort  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STATIC_MODELS = ["mlp", "bert", "resnet", "mobilenet", "dlrm", "tv_resnet18",
                 "tv_mobilenet_v3_small"]


def plugin_path():
    return subprocess.run(["bash", os.path.join(REPO, "scripts", "pjrt-plugin.sh")],
                          capture_output=True, text=True, check=True).stdout.strip()


def model_args(zoo, entry):
    args = [os.path.join(zoo, entry["path"])]
    for name, size in entry["dims"].items():
        args += ["--dim", f"{name}={size}"]
    return args


def io_args(zoo, entry):
    args = []
    for spec in entry["inputs"]:
        args += ["--input", f"{spec['name']}={os.path.join(zoo, spec['file'])}"]
    for spec in entry["outputs"]:
        args += ["--expect", f"{spec['name']}={os.path.join(zoo, spec['file'])}"]
    return args


def tandem(binary, *args, env):
    result = subprocess.run([binary, *args], capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise RuntimeError(f"tandem {' '.join(args[:2])} failed: {result.stderr.strip()}")
    return result.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tandem", default=os.path.join(REPO, "build", "src", "tandem"))
    parser.add_argument("--zoo", default=os.path.join(REPO, "zoo"))
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--warm-runs", type=int, default=3)
    parser.add_argument("--models", default=",".join(STATIC_MODELS))
    parser.add_argument("--json", default="")
    args = parser.parse_args()

    cluster = os.path.join(REPO, "examples", "clusters", "cpu-pjrt.yaml")
    with open(os.path.join(args.zoo, "manifest.json")) as f:
        manifest = {entry["name"]: entry for entry in json.load(f)}
    rows = []
    totals = {"lookups": 0, "hits": 0}
    header = (f"{'model':22} {'compile s':>9} {'load ms':>8} {'hit rate':>8} {'pjrt ms':>9} "
              f"{'tandem ms':>9} {'ORT ms':>8} {'pjrt/tandem':>11} {'pjrt/ORT':>8}")
    print(header)
    for name in args.models.split(","):
        entry = manifest[name]
        with tempfile.TemporaryDirectory() as folder:
            env = dict(os.environ, TANDEM_PJRT_PLUGIN=plugin_path(),
                       TANDEM_CACHE_DIR=os.path.join(folder, "cache"))
            plan = os.path.join(folder, "plan.json")
            tandem(args.tandem, "plan", *model_args(args.zoo, entry), "--cluster", cluster,
                   "--strategy", "single:pjrt0", "-o", plan, env=env)
            run = [*model_args(args.zoo, entry), *io_args(args.zoo, entry), "--cluster",
                   cluster, "--plan", plan, "--json", "--iterations", str(args.iterations)]
            cold = json.loads(tandem(args.tandem, "run", *run, env=env))
            warm = [json.loads(tandem(args.tandem, "run", *run, env=env))
                    for _ in range(args.warm_runs)]
            native = json.loads(tandem(args.tandem, "run", *model_args(args.zoo, entry),
                                       *io_args(args.zoo, entry), "--json", "--iterations",
                                       str(args.iterations), env=env))
        for report in [cold, *warm]:
            if not all(check["matches"] for check in report["checks"]):
                raise RuntimeError(f"{name}: PJRT outputs differ from ONNX Runtime's")
        lookups = sum(r["plan"]["compiled"][0]["compiles"] + r["plan"]["compiled"][0]["disk_hits"] +
                      r["plan"]["compiled"][0]["memory_hits"] for r in warm)
        hits = sum(r["plan"]["compiled"][0]["disk_hits"] + r["plan"]["compiled"][0]["memory_hits"] for r in warm)
        totals["lookups"] += lookups
        totals["hits"] += hits
        options = ort.SessionOptions()
        options.intra_op_num_threads = os.cpu_count()
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(os.path.join(args.zoo, entry["path"]), options,
                                       providers=["CPUExecutionProvider"])
        feeds = {spec["name"]: np.load(os.path.join(args.zoo, spec["file"]))
                 for spec in entry["inputs"]}
        ort_ms = statistics.median(time_ort(session, feeds, args.iterations))
        pjrt_ms = 1e3 * statistics.median(sample for r in warm for sample in r["latency"]["samples_s"])
        row = {"model": name,
               "segments": cold["plan"]["segments"],
               "compile_seconds": cold["plan"]["compiled"][0]["compile_s"],
               "programs_compiled": cold["plan"]["compiled"][0]["compiles"],
               "load_ms": 1e3 * statistics.median(r["plan"]["compiled"][0]["load_s"] for r in warm),
               "cache_hit_rate": hits / lookups if lookups else 0.0,
               "pjrt_median_ms": pjrt_ms,
               "tandem_cpu_median_ms": 1e3 * native["latency"]["median_s"],
               "ort_median_ms": ort_ms}
        rows.append(row)
        print(f"{name:22} {row['compile_seconds']:9.3f} {row['load_ms']:8.1f} "
              f"{row['cache_hit_rate']:8.0%} {pjrt_ms:9.3f} {row['tandem_cpu_median_ms']:9.3f} "
              f"{ort_ms:8.3f} {pjrt_ms / row['tandem_cpu_median_ms']:11.1f} "
              f"{pjrt_ms / ort_ms:8.1f}", flush=True)
    rate = totals["hits"] / totals["lookups"] if totals["lookups"] else 0.0
    print(f"executable cache hit rate over the warm runs: {rate:.0%} "
          f"({totals['hits']} of {totals['lookups']} lookups)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                                   "onnxruntime": ort.__version__},
                       "plugin": "xla-cpu-pjrt 0.0.1", "iterations": args.iterations,
                       "warm_runs": args.warm_runs, "models": rows, "cache_hit_rate": rate},
                      f, indent=2)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
