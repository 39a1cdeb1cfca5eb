"""A training step at a size users run, one plan beside another: `tandem train` of torchvision's
ResNet-18 at 224x224 (zoo/real/resnet18) on this machine's CPU as one device, on one core of
examples/clusters/cpu-split.yaml, and across its two one-core devices as a pipeline (the whole
batch; 4 micro-batches under GPipe and 1F1B) and data-parallel. A benchmark, never a timed test.

Per configuration: the median step time after the first (which compiles), the plan's predicted
and the simulator's step, the simulated peak memory per device and the process's peak RSS
(/usr/bin/time), and the loss of the last step (the same data, --no-shuffle). Rounds alternate the
configurations; the table holds the median over rounds. A last row trains the same network in
PyTorch eager on 2 threads: torchvision's resnet18 with each BatchNorm folded away as the export
folded it (convolutions with a bias, no BatchNorm), SGD, the same batch.

Usage: .venv/bin/python bench/train_schedules.py [--tandem build/src/tandem] [--batch 8]
          [--steps 4] [--rounds 2] [--model zoo/real/resnet18/model.onnx]
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPLIT = os.path.join(REPO, "examples", "clusters", "cpu-split.yaml")
CONFIGS = [
    ("this CPU, 2 threads", []),
    ("cpu-split: single:cpu0 (1 core)", ["--cluster", SPLIT, "--strategy", "single:cpu0"]),
    ("cpu-split: pipeline, whole batch", ["--cluster", SPLIT, "--strategy", "pipeline"]),
    ("cpu-split: pipeline, 4 µb, GPipe", ["--cluster", SPLIT, "--strategy", "pipeline",
                                         "--microbatches", "4", "--schedule", "gpipe"]),
    ("cpu-split: pipeline, 4 µb, 1F1B", ["--cluster", SPLIT, "--strategy", "pipeline",
                                        "--microbatches", "4", "--schedule", "1f1b"]),
    ("cpu-split: data-parallel", ["--cluster", SPLIT, "--strategy", "data-parallel"]),
]


def machine():
    with open("/proc/cpuinfo") as f:
        name = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    return f"{name}, {os.cpu_count()} logical CPUs"


def run(tandem, model, data, batch, steps, extra):
    command = ["/usr/bin/time", "-f", "maxrss_kb=%M", tandem, "train", model, "--data", data,
               "--batch", str(batch), "--steps", str(steps), "--no-shuffle", "--json", *extra]
    result = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)}: {result.stderr}")
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    start = next(line for line in lines if line["event"] == "start")
    done = next(line for line in lines if line["event"] == "done")
    losses = [line["loss"] for line in lines if line["event"] == "step"]
    rss = next(int(line.split("=")[1]) for line in result.stderr.splitlines()
               if line.startswith("maxrss_kb="))
    return {"step_s": done["median_step_s"], "predicted_s": start["predicted_step_s"],
            "simulated_s": start["simulated_step_s"], "strategy": start["strategy"],
            "memory": done["simulated_peak_memory_bytes"], "rss_mb": rss / 1024,
            "loss": losses[-1]}


def torch_step_seconds(batch, steps):
    import torch
    import torchvision
    torch.set_num_threads(2)
    torch.manual_seed(0)
    model = torchvision.models.resnet18()

    def fold(module):  # the exported graph's arithmetic: Conv with a bias, no BatchNorm
        for name, child in module.named_children():
            if isinstance(child, torch.nn.BatchNorm2d):
                setattr(module, name, torch.nn.Identity())
            elif isinstance(child, torch.nn.Conv2d):
                setattr(module, name, torch.nn.Conv2d(child.in_channels, child.out_channels,
                                                      child.kernel_size, child.stride,
                                                      child.padding, bias=True))
            else:
                fold(child)
    fold(model)
    model.train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(batch, 3, 224, 224)
    y = torch.randint(0, 1000, (batch,))
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        times.append(time.perf_counter() - start)
    return statistics.median(times[1:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tandem", default=os.path.join(REPO, "build", "src", "tandem"))
    ap.add_argument("--model", default=os.path.join(REPO, "zoo", "real", "resnet18", "model.onnx"))
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as data:
        os.makedirs(os.path.join(data, "train"))
        rng = np.random.default_rng(0)
        samples = args.batch * args.steps
        np.save(os.path.join(data, "train", "x.npy"),
                rng.standard_normal((samples, 3, 224, 224)).astype(np.float32))
        np.save(os.path.join(data, "train", "y.npy"), rng.integers(0, 1000, samples).astype(np.int64))
        results = {name: [] for name, _ in CONFIGS}
        for _ in range(args.rounds):
            for name, extra in CONFIGS:
                results[name].append(run(args.tandem, args.model, data, args.batch, args.steps, extra))
    print(f"Machine: {machine()}; load average {os.getloadavg()[0]:.2f} at the end.")
    print(f"`tandem train` {os.path.relpath(args.model, REPO)}, batch {args.batch}, "
          f"{args.steps} steps, SGD; medians over {args.rounds} rounds of the per-run median step.\n")
    print("| plan | strategy | measured ms | predicted ms | simulated ms | simulated peak per device | peak RSS MB | last loss |")
    print("|---|---|---:|---:|---:|---|---:|---:|")
    for name, _ in CONFIGS:
        runs = results[name]
        median = lambda key: statistics.median(r[key] for r in runs)
        memory = ", ".join(f"{d} {b / 2**20:.0f} MiB" for d, b in sorted(runs[0]["memory"].items()))
        print(f"| {name} | {runs[0]['strategy']} | {median('step_s') * 1e3:.0f} | "
              f"{runs[0]['predicted_s'] * 1e3:.0f} | {runs[0]['simulated_s'] * 1e3:.0f} | {memory} | "
              f"{median('rss_mb'):.0f} | {runs[-1]['loss']:.4f} |")
    torch_s = statistics.median(torch_step_seconds(args.batch, args.steps) for _ in range(args.rounds))
    print(f"| PyTorch eager, 2 threads | - | {torch_s * 1e3:.0f} | - | - | - | - | - |")


if __name__ == "__main__":
    main()
