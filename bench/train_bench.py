"""Training step time: `tandem train` on one CPU device and on a cluster's pipeline, against
PyTorch eager training the same module on the same cores. A benchmark, never a timed test.

For every model of zoo/train (tools/make_train_zoo.py): random data of the model's input shapes
(step time does not depend on the values), the same batch and optimiser on every side.

  tandem, 1 CPU     `tandem train --json --threads T` (this machine's CPU as one device): the
                    median of the step lines' samples_per_s after --warmup steps
  tandem, pipeline  the same with --cluster FILE --strategy pipeline (default the 2-stage
                    examples/clusters/cpu-split.yaml: two one-core devices)
  predicted         the step time the training step's plan predicts (predicted_step_s of
                    the --json start line), beside measured / predicted; left out, and said so,
                    where the command reports none
  PyTorch eager     torch.set_num_threads(T), module.train(), forward, loss, backward and
                    optimizer.step() timed per step (perf_counter), median after the warm-up

Prints a markdown table (medians in samples/s and ms per step, and the ratios) with the machine
(/proc/cpuinfo), and with --json FILE writes the same figures.

Usage: .venv/bin/python bench/train_bench.py [--tandem build/src/tandem] [--zoo zoo/train]
          [--threads 2] [--batch 32] [--steps 60] [--warmup 10] [--rounds 3] [--optimizer adam] [--lr 0.01]
          [--cluster examples/clusters/cpu-split.yaml] [--models mlp,digits_cnn] [--json FILE]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tools"))
import make_train_zoo  # noqa: E402


def machine():
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            name = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{name}, {os.cpu_count()} logical CPUs"


def write_data(folder, entry, samples, seed=0):
    rng = np.random.default_rng(seed)
    train = os.path.join(folder, "train")
    os.makedirs(train, exist_ok=True)
    inputs = {}
    for spec in entry["inputs"]:
        inputs[spec["name"]] = rng.random([samples] + spec["shape"][1:], dtype=np.float32)
    files = {"x": next(iter(inputs.values()))} if len(inputs) == 1 else inputs
    for stem, array in files.items():
        np.save(os.path.join(train, f"{stem}.npy"), array)
    y = rng.integers(0, entry["classes"], samples).astype(np.int64)
    np.save(os.path.join(train, "y.npy"), y)
    return inputs, y


def optimizer_args(args):
    return ["--optimizer", args.optimizer, "--lr", str(args.lr)]


def check_verb(tandem):
    result = subprocess.run([tandem, "train", "--help"], capture_output=True, text=True)
    if result.returncode != 0 or "--data" not in result.stdout:
        raise SystemExit(f"train_bench: `{tandem} train --help` shows no --data: {result.stderr.strip()}")


def time_tandem(tandem, model, data, args, cluster=None):
    """(median samples/s after the warm-up, the predicted and the simulated seconds per step, or
    None where the command reports none)."""
    argv = [tandem, "train", model, "--data", data, "--json", "--threads", str(args.threads),
            "--batch", str(args.batch), "--steps", str(args.steps), "--epochs", "1000000", "--seed", "1",
            *optimizer_args(args)]
    if cluster:
        argv += ["--cluster", cluster, "--strategy", "pipeline"]
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {result.stderr.strip()}")
    events = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    steps = [e for e in events if e.get("event") == "step"]
    if len(steps) <= args.warmup:
        raise RuntimeError(f"{model}: {len(steps)} steps, no more than the --warmup {args.warmup}")
    rate = statistics.median(e["samples_per_s"] for e in steps[args.warmup:])
    # the plan's predicted and simulated step times, in the start (and done) line
    predicted = next((e["predicted_step_s"] for e in events if "predicted_step_s" in e), None)
    simulated = next((e["simulated_step_s"] for e in events if "simulated_step_s" in e), None)
    return rate, predicted, simulated


def time_torch(entry, inputs, y, args):
    import torch
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    module = make_train_zoo.build(entry["name"]).train()
    if args.optimizer == "sgd":
        opt = torch.optim.SGD(module.parameters(), lr=args.lr)
    elif args.optimizer == "adam":
        opt = torch.optim.Adam(module.parameters(), lr=args.lr)
    else:
        opt = torch.optim.AdamW(module.parameters(), lr=args.lr, weight_decay=0.0)
    names = [spec["name"] for spec in entry["inputs"]]
    tensors = {n: torch.from_numpy(inputs[n]) for n in names}
    labels = torch.from_numpy(y)
    order = np.random.default_rng(1).permutation(len(y))
    batches = len(y) // args.batch
    times = []
    for step in range(args.steps):
        rows = torch.from_numpy(order[(step % batches) * args.batch:(step % batches + 1) * args.batch])
        start = time.perf_counter()
        feeds = [tensors[n].index_select(0, rows) for n in names]
        loss = torch.nn.functional.cross_entropy(module(*feeds), labels.index_select(0, rows))
        opt.zero_grad()
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - start)
    return args.batch / statistics.median(times[args.warmup:])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tandem", default=os.path.join(REPO, "build", "src", "tandem"))
    ap.add_argument("--zoo", default=os.path.join(REPO, "zoo", "train"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3, help="runs of each side, alternating")
    ap.add_argument("--optimizer", default="adam", choices=["sgd", "adam", "adamw"])
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--cluster", default=os.path.join(REPO, "examples", "clusters", "cpu-split.yaml"))
    ap.add_argument("--models", default="", help="comma-separated subset of zoo/train")
    ap.add_argument("--json", default="", help="write the figures to this file")
    args = ap.parse_args()

    manifest = make_train_zoo.manifest(args.zoo)
    names = [n for n in args.models.split(",") if n] or list(manifest)
    check_verb(args.tandem)
    load_before = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory(prefix="train-bench-") as tmp:
        for name in names:
            entry = manifest[name]
            model = os.path.join(args.zoo, entry["path"])
            data = os.path.join(tmp, name)
            inputs, y = write_data(data, entry, args.batch * min(args.steps, 64))
            # the sides alternate, round after round, so that noise on the machine hits all three;
            # each figure is the median of the rounds' medians
            one, pipe, eager = [], [], []
            predicted_one = predicted_pipe = simulated_one = simulated_pipe = None
            for _ in range(args.rounds):
                rate, predicted_one, simulated_one = time_tandem(args.tandem, model, data, args)
                one.append(rate)
                rate, predicted_pipe, simulated_pipe = time_tandem(args.tandem, model, data, args,
                                                                   cluster=args.cluster)
                pipe.append(rate)
                eager.append(time_torch(entry, inputs, y, args))
            one, pipe, eager = statistics.median(one), statistics.median(pipe), statistics.median(eager)
            rows.append({"model": name, "parameters": entry["parameter_count"],
                         "tandem_cpu_samples_per_s": one, "tandem_pipeline_samples_per_s": pipe,
                         "predicted_cpu_step_s": predicted_one, "predicted_pipeline_step_s": predicted_pipe,
                         "simulated_cpu_step_s": simulated_one, "simulated_pipeline_step_s": simulated_pipe,
                         "torch_samples_per_s": eager})
            print(f"train_bench: {name}: tandem {one:.0f}, pipeline {pipe:.0f}, torch {eager:.0f} samples/s",
                  file=sys.stderr)
    load_after = os.getloadavg()[0]

    predict = any(r["predicted_cpu_step_s"] is not None or r["predicted_pipeline_step_s"] is not None
                  for r in rows)
    ms = lambda rate: 1e3 * args.batch / rate  # noqa: E731
    print(f"Training step, batch {args.batch}, {args.optimizer} (lr {args.lr}), {args.threads} threads, "
          f"median of steps {args.warmup + 1}-{args.steps}, median of {args.rounds} rounds; machine: "
          f"{machine()} (load average {load_before:.2f} before, {load_after:.2f} after); pipeline: "
          f"{os.path.relpath(args.cluster, REPO)} --strategy pipeline\n")
    header = ["model", "params", "tandem 1 CPU samples/s (ms/step)", "tandem pipeline samples/s (ms/step)"]
    if predict:
        header += ["predicted (simulated) ms/step 1 CPU, measured / predicted",
                   "predicted (simulated) ms/step pipeline, measured / predicted"]
    header += ["PyTorch eager samples/s (ms/step)", "tandem 1 CPU / PyTorch", "pipeline / 1 CPU"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        cells = [r["model"], f"{r['parameters']:,}",
                 f"{r['tandem_cpu_samples_per_s']:,.0f} ({ms(r['tandem_cpu_samples_per_s']):.2f})",
                 f"{r['tandem_pipeline_samples_per_s']:,.0f} ({ms(r['tandem_pipeline_samples_per_s']):.2f})"]
        if predict:
            for v, sim, rate in ((r["predicted_cpu_step_s"], r["simulated_cpu_step_s"], r["tandem_cpu_samples_per_s"]),
                                 (r["predicted_pipeline_step_s"], r["simulated_pipeline_step_s"],
                                  r["tandem_pipeline_samples_per_s"])):
                sim_text = f" ({1e3 * sim:.2f})" if sim else ""
                cells.append(f"{1e3 * v:.2f}{sim_text}, {ms(rate) / (1e3 * v):.2f}x" if v else "n/a")
        cells += [f"{r['torch_samples_per_s']:,.0f} ({ms(r['torch_samples_per_s']):.2f})",
                  f"{r['tandem_cpu_samples_per_s'] / r['torch_samples_per_s']:.2f}x",
                  f"{r['tandem_pipeline_samples_per_s'] / r['tandem_cpu_samples_per_s']:.2f}x"]
        print("| " + " | ".join(cells) + " |")
    print("\nRatios are throughputs (above 1x: the first is faster).")
    if not predict:
        print("No predicted column: `tandem train --json` reported no predicted_step_s.")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine(), "load_average": [load_before, load_after], "rounds": args.rounds,
                       "batch": args.batch, "threads": args.threads,
                       "optimizer": args.optimizer, "steps": args.steps, "warmup": args.warmup,
                       "rows": rows}, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
