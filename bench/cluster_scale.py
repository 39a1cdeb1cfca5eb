#!/usr/bin/env python3
"""Planning and simulating on clusters of many hosts: wall time of `tandem plan -o` and of
`tandem simulate` on the plan, at 64, 256 and 1,024 hosts (tools/make_cluster.py: hosts of 8
H100s on one switch, and the same with a quarter of the hosts holding 4 TPU v5e instead), for
each strategy asked. Prints a Markdown table; `--json` the figures.

    .venv/bin/python bench/cluster_scale.py [--tandem build/src/tandem]
        [--model zoo/real/bert_fold/model.onnx] [--dims sequence=128] [--per-device 8]
        [--hosts 64,256,1024] [--strategies data-parallel,pipeline,heft,auto] [--repeat 1]

The batch is --per-device samples per device of the cluster (so data-parallel keeps every
device as busy at every size). Each figure is the median of --repeat runs; peak RSS from
/usr/bin/time when it is there.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def timed(command):
    """(seconds, peak RSS in MiB or None, completed process)."""
    time_binary = shutil.which("time") or ("/usr/bin/time" if os.path.exists("/usr/bin/time")
                                           else None)
    wrapped = [time_binary, "-f", "peak_rss_kb=%M"] + command if time_binary else command
    started = time.monotonic()
    result = subprocess.run(wrapped, capture_output=True, text=True)
    seconds = time.monotonic() - started
    rss = re.search(r"peak_rss_kb=(\d+)", result.stderr)
    return seconds, (int(rss.group(1)) / 1024 if rss else None), result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tandem", default=os.path.join(ROOT, "build", "src", "tandem"))
    parser.add_argument("--model", default=os.path.join(ROOT, "zoo", "real", "bert_fold",
                                                         "model.onnx"))
    parser.add_argument("--dims", default="sequence=128",
                        help="comma-separated NAME=N bindings besides the batch")
    parser.add_argument("--per-device", type=int, default=8)
    parser.add_argument("--hosts", default="64,256,1024")
    parser.add_argument("--strategies", default="data-parallel,pipeline,heft,auto")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for hosts in [int(h) for h in args.hosts.split(",")]:
            tpu_hosts = hosts // 4
            layouts = [
                (f"{hosts} x 8 H100", hosts * 8,
                 ["--hosts", str(hosts), "--host-devices", "nvidia-h100-sxm:8"]),
                (f"{hosts - tpu_hosts} x 8 H100 + {tpu_hosts} x 4 v5e",
                 (hosts - tpu_hosts) * 8 + tpu_hosts * 4,
                 ["--hosts", str(hosts - tpu_hosts), "--host-devices", "nvidia-h100-sxm:8",
                  "--tpu-hosts", str(tpu_hosts), "--tpu-devices", "google-tpu-v5e:4"]),
            ]
            for name, devices, generator in layouts:
                cluster = os.path.join(folder, f"cluster-{hosts}-{len(rows)}.yaml")
                subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_cluster.py"),
                                *generator, "-o", cluster], check=True, capture_output=True)
                batch = devices * args.per_device
                dims = [f"batch={batch}"] + [d for d in args.dims.split(",") if d]
                for strategy in args.strategies.split(","):
                    plan = os.path.join(folder, "plan.json")
                    plans, simulations, plan_rss, simulate_rss = [], [], [], []
                    outcome = ""
                    for _ in range(args.repeat):
                        command = [args.tandem, "plan", args.model, "--cluster", cluster,
                                   "--strategy", strategy, "-o", plan]
                        for dim in dims:
                            command += ["--dim", dim]
                        seconds, rss, result = timed(command)
                        plans.append(seconds)
                        plan_rss.append(rss)
                        if result.returncode != 0:
                            said = [line for line in result.stderr.strip().splitlines()
                                    if line.startswith("tandem: error:")]
                            outcome = "no plan: " + (said[-1] if said else "")[-90:]
                            break
                        seconds, rss, result = timed([args.tandem, "simulate", plan, "--json"])
                        if result.returncode != 0:
                            outcome = "simulate failed: " + result.stderr.strip().splitlines()[0][-90:]
                            break
                        simulations.append(seconds)
                        simulate_rss.append(rss)
                        simulated = json.loads(result.stdout)
                        outcome = (f"{simulated['chosen']}: "
                                   f"{simulated['predicted']['latency_s'] * 1e3:.3g} ms, "
                                   f"{simulated['predicted']['throughput_samples_per_s'] / 1e6:.3g}"
                                   " M samples/s")
                    rows.append({
                        "cluster": name, "hosts": hosts, "devices": devices, "batch": batch,
                        "strategy": strategy,
                        "plan_s": statistics.median(plans) if plans else None,
                        "simulate_s": statistics.median(simulations) if simulations else None,
                        "plan_peak_rss_mib": max(plan_rss, default=None) if all(plan_rss) else None,
                        "simulate_peak_rss_mib": max(simulate_rss, default=None)
                        if all(simulate_rss) else None,
                        "outcome": outcome})
                    print(f"{name}, {strategy}: plan {rows[-1]['plan_s']}, simulate "
                          f"{rows[-1]['simulate_s']}", file=sys.stderr)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"model {os.path.relpath(args.model)}, {args.per_device} samples per device\n")
    print("| cluster | devices | strategy | plan -o (s) | simulate (s) | peak RSS plan / "
          "simulate (MiB) | simulated |")
    print("|---|---:|---|---:|---:|---:|---|")
    for row in rows:
        def figure(value, digits="%.2f"):
            return digits % value if value is not None else "-"
        print(f"| {row['cluster']} | {row['devices']} | {row['strategy']} | "
              f"{figure(row['plan_s'])} | {figure(row['simulate_s'])} | "
              f"{figure(row['plan_peak_rss_mib'], '%.0f')} / "
              f"{figure(row['simulate_peak_rss_mib'], '%.0f')} | {row['outcome']} |")


if __name__ == "__main__":
    main()
