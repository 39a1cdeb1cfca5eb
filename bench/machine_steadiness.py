"""How steady is this machine's speed, and does the speed reference follow the models?

Predictions are checked against runs, and both assume the machine runs at one speed. On a VM
it does not: other tenants slow it for seconds or minutes. This times, in turn and for as long
as asked, the calibration's speed reference (a 256^3 MatMul, as `tandem calibrate` and the
speed checks of `tandem run --cluster` time it), an Add in the caches and one in main memory, a
chain of tiny ops (the executor's own cost), and some zoo models, each a short
`tandem run --duration` of its own. It prints each one's spread over the windows (p10 and p90
of its window medians over their median), how each model's windows follow each probe's
(correlation of their logarithms), and a model's spread once each window is divided by the
reference's window beside it: what scaling a run by the speed reference timed next to it can
remove, and what it cannot.

Usage: .venv/bin/python bench/machine_steadiness.py [--tandem build/src/tandem]
           [--seconds 240] [--window 0.25] [--threads N]
           [--models resnet18,bert_fold,mobilenet_v3_small] [--zoo zoo/real] [--json FILE]
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def save_model(path, nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, os.path.basename(path), inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def float_input(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def probe_models(directory):
    """The probes: name -> tandem run arguments."""
    rng = np.random.default_rng(7)
    constant = lambda name, shape: numpy_helper.from_array(
        rng.random(shape, dtype=np.float32), name)
    probes = {}
    path = os.path.join(directory, "reference.onnx")
    save_model(path, [helper.make_node("MatMul", ["x", "w"], ["y"])], [float_input("x", [256, 256])],
               [float_input("y", [256, 256])], [constant("w", [256, 256])])
    probes["reference"] = [path]
    # Operands of 1 MiB (in the caches) and 16 MiB (past them on most machines).
    for name, elements in (("cache_add", 1 << 18), ("memory_add", 1 << 22)):
        path = os.path.join(directory, name + ".onnx")
        save_model(path, [helper.make_node("Add", ["x", "w"], ["y"])],
                   [float_input("x", [elements])], [float_input("y", [elements])],
                   [constant("w", [elements])])
        probes[name] = [path]
    nodes, previous = [], "x"
    for i in range(64):
        nodes.append(helper.make_node("Neg" if i % 2 else "Relu", [previous], [f"t{i}"]))
        previous = f"t{i}"
    nodes.append(helper.make_node("Identity", [previous], ["y"]))
    path = os.path.join(directory, "tiny_ops.onnx")
    save_model(path, nodes, [float_input("x", [4, 16])], [float_input("y", [4, 16])])
    probes["tiny_ops"] = [path, "--no-fusion"]  # 65 steps of the executor, not one fused loop
    return probes


def zoo_models(zoo, names):
    with open(os.path.join(zoo, "manifest.json")) as f:
        manifest = json.load(f)
    entries = {e["name"]: e for e in (manifest if isinstance(manifest, list) else manifest["models"])}
    models = {}
    for name in names:
        if name not in entries:
            sys.exit(f"machine_steadiness: error: {zoo}: no model {name}")
        entry = entries[name]
        args = [os.path.join(zoo, entry["path"])]
        for dim, size in entry["dims"].items():
            args += ["--dim", f"{dim}={size}"]
        models[name] = args
    return models


def window_median(tandem, args, window, threads):
    command = [tandem, "run", *args, "--warmup-duration", "0.05", "--duration", str(window),
               "--json"]
    if threads:
        command += ["--threads", str(threads)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {result.stderr.strip()[-500:]}")
    return json.loads(result.stdout)["latency"]["median_s"]


def correlation(xs, ys):
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = statistics.mean(lx), statistics.mean(ly)
    sx = math.sqrt(sum((x - mx) ** 2 for x in lx))
    sy = math.sqrt(sum((y - my) ** 2 for y in ly))
    return sum((x - mx) * (y - my) for x, y in zip(lx, ly)) / (sx * sy) if sx and sy else 0.0


def spread(values):
    """p10 and p90 over the median, and the median |log(value / median)|."""
    mid = statistics.median(values)
    ordered = sorted(values)
    quantile = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]
    typical = statistics.median(abs(math.log(v / mid)) for v in values)
    return quantile(0.1) / mid, quantile(0.9) / mid, math.exp(typical) - 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tandem", default=os.path.join(REPO, "build", "src", "tandem"))
    parser.add_argument("--seconds", type=float, default=240)
    parser.add_argument("--window", type=float, default=0.25, help="seconds of runs per window")
    parser.add_argument("--threads", type=int, default=0, help="CPU threads (default: all cores)")
    parser.add_argument("--zoo", default=os.path.join(REPO, "zoo", "real"))
    parser.add_argument("--models", default="resnet18,bert_fold,mobilenet_v3_small")
    parser.add_argument("--json", help="write every window's medians here")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as directory:
        probes = probe_models(directory)
        models = zoo_models(args.zoo, [m for m in args.models.split(",") if m])
        timed = {**probes, **models}
        rows = []
        end = time.monotonic() + args.seconds
        while time.monotonic() < end:
            row = {"t": time.time()}
            for name, run_args in timed.items():
                row[name] = window_median(args.tandem, run_args, args.window, args.threads)
            rows.append(row)
            print(f"\rround {len(rows)}", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
    if len(rows) < 3:
        sys.exit("machine_steadiness: error: fewer than 3 rounds: give it more --seconds")

    print(f"{len(rows)} rounds of {len(timed)} windows of {args.window} s each, "
          f"{args.threads or 'all'} threads\n")
    header = "| timed | median ms | p10 / median | p90 / median | typical move |"
    header += "".join(f" corr. with {p} |" for p in probes) + " typical move, scaled by the reference |"
    print(header)
    print("|---|" + "---:|" * (header.count("|") - 2))
    summary = {}
    for name in timed:
        values = [r[name] for r in rows]
        low, high, typical = spread(values)
        line = (f"| {name} | {statistics.median(values) * 1e3:.3f} | {low:.2f} | {high:.2f} | "
                f"{typical * 100:.1f}% |")
        correlations = {p: correlation(values, [r[p] for r in rows]) for p in probes}
        line += "".join(f" {correlations[p]:+.2f} |" for p in probes)
        scaled = None
        if name in models:
            scaled = spread([r[name] / r["reference"] for r in rows])[2]
            line += f" {scaled * 100:.1f}% |"
        else:
            line += " |"
        print(line)
        summary[name] = {"median_s": statistics.median(values), "p10_over_median": low,
                         "p90_over_median": high, "typical_move": typical,
                         "correlation": correlations, "typical_move_scaled": scaled}
    print("\ntypical move: the median |log(window / median)|, as a percentage")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"window_s": args.window, "threads": args.threads, "rounds": rows,
                       "summary": summary}, f, indent=1)


if __name__ == "__main__":
    main()
