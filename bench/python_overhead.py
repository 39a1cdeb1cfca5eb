"""Per-call cost of Tandem from Python, beside `tandem run`'s own time and ONNX Runtime's
`InferenceSession.run`, on the same model, inputs and threads, in one run.

Per model: the median ms of `Model.run` (the CPU executor), `Plan.run` (the multi-device
executor, on this machine's CPU as the one device of Cluster.local()), `tandem run`'s
per-iteration time measured inside the process (no Python), and ONNX Runtime's session call;
then Python's overhead over the command (`Model.run` - `tandem run`, in microseconds). Each
side runs in a process of its own (ONNX Runtime's spinning thread pool and Tandem's OpenMP
threads would slow each other in one process), and the sides alternate in rounds so that
machine noise hits all of them.

Usage: .venv/bin/python bench/python_overhead.py [--models mlp,resnet] [--threads 2]
                                                 [--iterations 200] [--rounds 3] [--json FILE]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "build", "python"))
import tandem  # noqa: E402


def median_ms(call, iterations):
    call()
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def command_ms(binary, zoo, entry, threads, iterations):
    args = [binary, "run", os.path.join(zoo, entry["path"]), "--json", "--threads", str(threads),
            "--warmup", "3", "--iterations", str(iterations)]
    for spec in entry["inputs"]:
        args += ["--input", f"{spec['name']}={os.path.join(zoo, spec['file'])}"]
    report = json.loads(subprocess.run(args, capture_output=True, text=True, check=True).stdout)
    return 1e3 * report["latency"]["median_s"]


def python_side_ms(side, path, inputs, threads, iterations):
    """One side, timed in this process: 'model_run', 'plan_run' or 'ort'."""
    if side == "ort":
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        return median_ms(lambda: session.run(None, inputs), iterations)
    tandem.set_threads(threads)
    model = tandem.load(path, shapes={k: v.shape for k, v in inputs.items()})
    if side == "model_run":
        return median_ms(lambda: model.run(inputs), iterations)
    plan = model.plan(tandem.Cluster.local(), strategy="single:cpu0")
    return median_ms(lambda: plan.run(inputs), iterations)


def inputs_of(zoo, entry):
    return {s["name"]: np.load(os.path.join(zoo, s["file"])) for s in entry["inputs"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zoo", default=os.path.join(REPO, "zoo"))
    parser.add_argument("--tandem", default=os.path.join(REPO, "build", "src", "tandem"))
    parser.add_argument("--models", default="mlp,bert,resnet")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json")
    parser.add_argument("--side", help=argparse.SUPPRESS)  # a worker: time one side, print ms
    args = parser.parse_args()
    manifest = {e["name"]: e for e in json.load(open(os.path.join(args.zoo, "manifest.json")))}
    if args.side:
        [name] = args.models.split(",")
        entry = manifest[name]
        print(python_side_ms(args.side, os.path.join(args.zoo, entry["path"]),
                             inputs_of(args.zoo, entry), args.threads, args.iterations))
        return
    rows = []
    sides = ["model_run", "plan_run", "command", "ort"]
    for name in args.models.split(","):
        entry = manifest[name]
        figures = {side: [] for side in sides}
        for _ in range(args.rounds):
            for side in sides:
                if side == "command":
                    ms = command_ms(args.tandem, args.zoo, entry, args.threads, args.iterations)
                else:
                    worker = [sys.executable, __file__, "--side", side, "--models", name,
                              "--zoo", args.zoo, "--threads", str(args.threads),
                              "--iterations", str(args.iterations)]
                    ms = float(subprocess.run(worker, capture_output=True, text=True,
                                              check=True).stdout.split()[-1])
                figures[side].append(ms)
        row = {"model": name, **{side: statistics.median(v) for side, v in figures.items()}}
        row["python_overhead_us"] = 1e3 * (row["model_run"] - row["command"])
        rows.append(row)
    machine = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cpus"
    try:
        machine = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo")
                       if line.startswith("model name")) + f", {os.cpu_count()} cpus"
    except (OSError, StopIteration):
        pass
    print(f"machine: {machine}; {args.threads} threads; medians of {args.rounds} rounds x "
          f"{args.iterations} calls")
    print(f"{'model':10} {'Model.run':>10} {'Plan.run':>10} {'tandem run':>11} {'ORT':>9} "
          f"{'py overhead':>12}")
    for r in rows:
        print(f"{r['model']:10} {r['model_run']:9.3f}ms {r['plan_run']:9.3f}ms "
              f"{r['command']:10.3f}ms {r['ort']:8.3f}ms {r['python_overhead_us']:10.1f}us")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"machine": machine, "threads": args.threads, "rows": rows}, out, indent=2)


if __name__ == "__main__":
    main()
