"""Lower precision on the CPU: Tandem's `run --precision bf16` and `int8` beside fp32, and ONNX
Runtime's dynamic int8 quantization beside its fp32, on the zoo's models: speed and accuracy.

Each `tandem run --precision P` times the model in P and in fp32 in the same process, the two
alternating run by run, and reports each output's error against fp32 (relative L2 error, and for classifiers whether the
top-1 class is the same). ONNX Runtime's peer is `onnxruntime.quantization.quantize_dynamic`
(int8 weights of MatMul/Gemm, uint8 activations quantized per run), timed and compared the same
way. Sides alternate in rounds so that machine noise hits all; medians are printed, and
Tandem's speed-ups are the median over rounds of each process's own fp32 / P ratio.

Usage: .venv/bin/python bench/precision_bench.py [--zoo zoo/real] [--threads 2]
                                                 [--iterations 20] [--rounds 3] [--models a,b]
                                                 [--json FILE]
"""
import argparse
import json
import logging
import math
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort
from onnxruntime.quantization import QuantType, quantize_dynamic

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "bench"))
from run_bench import cpu_model, geomean, time_ort  # noqa: E402


def tandem_run(tandem, zoo, entry, threads, iterations, precision):
    """{'median_ms', 'fp32_median_ms', 'error', 'top1'} of one `tandem run --precision`."""
    args = [tandem, "run", os.path.join(zoo, entry["path"]), "--json", "--threads", str(threads),
            "--warmup", "3", "--iterations", str(iterations), "--precision", precision]
    for name, size in entry["dims"].items():
        args += ["--dim", f"{name}={size}"]
    for spec in entry["inputs"]:
        args += ["--input", f"{spec['name']}={os.path.join(zoo, spec['file'])}"]
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"tandem --precision {precision} failed on {entry['name']}: "
                           f"{result.stderr.strip()}")
    report = json.loads(result.stdout)
    figures = report["precision"]
    # A detector's boxes may differ in number from fp32's: then no error is measured.
    worst = max(figures["outputs"], key=lambda o: o["relative_error"], default=None)
    rows = sum(o["rows"] for o in figures["outputs"])
    return {"median_ms": 1e3 * report["latency"]["median_s"],
            "fp32_median_ms": 1e3 * figures["fp32_median_s"],
            "lowered": f"{figures['lowered']}/{figures['matrix_products']}",
            "error": worst["relative_error"] if worst else None,
            "top1": (sum(o["same_argmax"] for o in figures["outputs"]), rows) if rows else None,
            "not_compared": [f"{o['output']}: {o['reason']}" for o in figures["not_compared"]]}


def relative_error(actual, expected):
    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    norm = np.linalg.norm(expected)
    return float(np.linalg.norm(actual - expected) / norm) if norm else 0.0


def session(path, threads):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tandem", default=os.path.join(REPO, "build", "src", "tandem"))
    parser.add_argument("--zoo", default=os.path.join(REPO, "zoo", "real"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--models", default="", help="comma-separated subset")
    parser.add_argument("--json", default=os.path.join(REPO, "bench", "precision.json"))
    args = parser.parse_args()

    logging.getLogger().setLevel(logging.ERROR)  # the quantizer's advice on every model
    ort.set_default_logger_severity(3)
    with open(os.path.join(args.zoo, "manifest.json")) as f:
        manifest = json.load(f)
    if args.models:
        wanted = set(args.models.split(","))
        manifest = [entry for entry in manifest if entry["name"] in wanted]

    print(f"machine: {cpu_model()}, {os.cpu_count()} cores; {args.threads} threads; "
          f"onnxruntime {ort.__version__}")
    header = (f"{'model':22} {'fp32 ms':>8} {'bf16 ms':>8} {'x':>5} {'err':>8} {'int8 ms':>8} "
              f"{'x':>5} {'err':>8} {'top1':>6} | {'ORT fp32':>8} {'ORT int8':>8} {'x':>5} "
              f"{'err':>8}")
    print(header)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for entry in manifest:
            model = os.path.join(args.zoo, entry["path"])
            quantized = os.path.join(scratch, entry["name"] + ".int8.onnx")
            try:
                # The same products Tandem quantizes: ORT's CPU provider has no ConvInteger
                # for uint8 activations with int8 weights.
                quantize_dynamic(model, quantized, weight_type=QuantType.QInt8,
                                 op_types_to_quantize=["MatMul", "Gemm"])
                ort_int8 = session(quantized, args.threads)
            except Exception as error:  # ORT's quantizer refuses some graphs: say so, go on
                print(f"  {entry['name']}: ONNX Runtime's quantize_dynamic failed: {error}")
                ort_int8 = None
            ort_fp32 = session(model, args.threads)
            feeds = {spec["name"]: np.load(os.path.join(args.zoo, spec["file"]))
                     for spec in entry["inputs"]}
            runs = {"bf16": [], "int8": []}
            ort_fp32_ms, ort_int8_ms = [], []
            for _ in range(args.rounds):
                for precision in runs:
                    runs[precision].append(tandem_run(args.tandem, args.zoo, entry, args.threads,
                                                      args.iterations, precision))
                ort_fp32_ms += time_ort(ort_fp32, feeds, args.iterations)
                if ort_int8:
                    ort_int8_ms += time_ort(ort_int8, feeds, args.iterations)
            ort_error = None
            if ort_int8:
                expected = ort_fp32.run(None, feeds)
                got = ort_int8.run(None, feeds)
                errors = [relative_error(g, e) for g, e in zip(got, expected)
                          if np.shape(g) == np.shape(e)]
                ort_error = max(errors) if errors else math.nan
            fp32 = statistics.median(r["fp32_median_ms"] for rs in runs.values() for r in rs)
            row = {"model": entry["name"], "fp32_ms": fp32,
                   "ort_fp32_ms": statistics.median(ort_fp32_ms),
                   "ort_int8_ms": statistics.median(ort_int8_ms) if ort_int8_ms else None,
                   "ort_int8_error": ort_error}
            for precision, results in runs.items():
                row[f"{precision}_ms"] = statistics.median(r["median_ms"] for r in results)
                # Each process's fp32 runs alternate with its own: the ratio within a process
                # is what the machine's noise spares.
                row[f"{precision}_speedup"] = statistics.median(
                    r["fp32_median_ms"] / r["median_ms"] for r in results)
                row[f"{precision}_error"] = results[-1]["error"]
                row[f"{precision}_lowered"] = results[-1]["lowered"]
                row[f"{precision}_top1"] = results[-1]["top1"]
                row[f"{precision}_not_compared"] = results[-1]["not_compared"]
            row["ort_int8_speedup"] = (row["ort_fp32_ms"] / row["ort_int8_ms"]
                                       if row["ort_int8_ms"] else None)
            rows.append(row)
            top1 = row["int8_top1"]
            ort_cells = (f"{row['ort_int8_ms']:8.3f} {row['ort_int8_speedup']:5.2f} "
                         f"{row['ort_int8_error']:8.2e}" if ort_int8 else f"{'-':>8} {'-':>5} {'-':>8}")
            ort_cells = ort_cells.replace("     nan", f"{'-':>8}")
            def error(value):
                return f"{value:8.2e}" if value is not None else f"{'-':>8}"
            print(f"{entry['name']:22} {fp32:8.3f} {row['bf16_ms']:8.3f} {row['bf16_speedup']:5.2f} "
                  f"{error(row['bf16_error'])} {row['int8_ms']:8.3f} {row['int8_speedup']:5.2f} "
                  f"{error(row['int8_error'])} {f'{top1[0]}/{top1[1]}' if top1 else '-':>6} | "
                  f"{row['ort_fp32_ms']:8.3f} {ort_cells}", flush=True)
            for note in row["bf16_not_compared"] + row["int8_not_compared"]:
                print(f"  {entry['name']}: not compared with fp32: {note}")
    summary = {f"{p}_geomean_speedup": geomean([r[f"{p}_speedup"] for r in rows])
               for p in ("bf16", "int8")}
    ort_speedups = [r["ort_int8_speedup"] for r in rows if r["ort_int8_speedup"]]
    summary["ort_int8_geomean_speedup"] = geomean(ort_speedups) if ort_speedups else math.nan
    print("geometric mean speed-up over fp32: " +
          ", ".join(f"{k.split('_geomean')[0]} {v:.2f}x" for k, v in summary.items()))
    with open(args.json, "w") as f:
        json.dump({"machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                               "threads": args.threads, "onnxruntime": ort.__version__},
                   "iterations": args.iterations, "rounds": args.rounds, "models": rows,
                   **summary}, f, indent=2)
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
