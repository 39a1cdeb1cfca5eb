"""MPI transfer latency and bandwidth against message size on loopback: Open MPI's shared memory
(btl vader) and TCP (btl tcp on lo) side by side, measured by `tandem calibrate --mpi` itself.

Runs `mpirun -np 2 tandem calibrate --mpi --json` with each transport, alternating, `--runs`
times each, and prints a Markdown table: per message size the one-way time and rate of each
transport (the median over runs and both directions of each run's medians), then the latency,
the fitted bandwidth and the model's worst miss; the machine (CPU, cores, load) and the MPI
library are named above it.

  .venv/bin/python bench/mpi_links.py --tandem build/src/tandem [--runs 3] [--quick]
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

TRANSPORTS = {
    "shared memory (vader)": {"OMPI_MCA_btl": "self,vader"},
    "TCP loopback (tcp)": {"OMPI_MCA_btl": "self,tcp", "OMPI_MCA_btl_tcp_if_include": "lo"},
}


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown CPU"


def machine_busy_seconds():
    """Every core's busy time so far (/proc/stat: user, nice, system, irq, softirq), seconds."""
    with open("/proc/stat") as f:
        fields = f.readline().split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq = (int(x) for x in fields[:7])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def children_seconds():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def calibrate(tandem, transport, path, quick):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OMPI_MCA_btl")}
    environment.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                        "OMPI_MCA_rmaps_base_oversubscribe": "1",
                        "OMPI_MCA_oob_tcp_if_include": "lo"})
    environment.update(TRANSPORTS[transport])
    args = ["mpirun", "-np", "2", tandem, "calibrate", "--mpi", "--json", "-o", path]
    result = subprocess.run(args + (["--quick"] if quick else []), capture_output=True,
                            text=True, timeout=300, env=environment)
    if result.returncode != 0:
        sys.exit(f"{transport}: {' '.join(args)} failed:\n{result.stderr}")
    return json.loads(result.stdout)


def si(value, unit):
    for prefix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def seconds(value):
    return f"{value * 1e3:.3g} ms" if value >= 1e-3 else f"{value * 1e6:.3g} us"


def size(bytes_):
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if bytes_ >= scale:
            return f"{bytes_ // scale} {unit}"
    return f"{bytes_} B"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tandem", default="build/src/tandem")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()

    load_before = os.getloadavg()
    busy_before, ours_before, started = machine_busy_seconds(), children_seconds(), time.time()
    documents = {transport: [] for transport in TRANSPORTS}
    with tempfile.TemporaryDirectory() as folder:
        for run in range(args.runs):
            for transport in TRANSPORTS:
                print(f"run {run + 1}/{args.runs}: {transport}", file=sys.stderr)
                documents[transport].append(calibrate(
                    args.tandem, transport, os.path.join(folder, "links.yaml"), args.quick))
    load_after = os.getloadavg()
    # Cores' worth of CPU that other processes took meanwhile: the machine's busy time less
    # mpirun's and the ranks' own.
    others = ((machine_busy_seconds() - busy_before) - (children_seconds() - ours_before)) / (
        time.time() - started)

    # Per transport and size: every run's forward and backward one-way medians.
    times = {transport: {} for transport in TRANSPORTS}
    summary = {transport: {"latency": [], "bandwidth": [], "error": [], "fit": []}
               for transport in TRANSPORTS}
    for transport, runs in documents.items():
        for document in runs:
            link = document["links"][0]
            summary[transport]["latency"].append(link["latency_s"])
            summary[transport]["bandwidth"] += [link["bandwidth_forward_bytes_per_s"],
                                                link["bandwidth_backward_bytes_per_s"]]
            summary[transport]["error"].append(link["model_error"])
            summary[transport]["fit"].append(link["fit_bytes"])
            for point in link["curve"]:
                times[transport].setdefault(point["bytes"], []).extend(
                    [point["forward_s"], point["backward_s"]])

    first = next(iter(documents.values()))[0]
    print(f"Machine: {cpu_model()}, {os.cpu_count()} CPUs; {first['mpi']}; 2 ranks on one host; "
          f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after, other "
          f"processes kept {max(others, 0):.2f} cores busy meanwhile; "
          f"{args.runs} runs per transport, alternating{', --quick' if args.quick else ''}.\n")
    names = list(TRANSPORTS)
    print("| message | " + " | ".join(f"{n}: one-way | {n}: rate" for n in names) + " |")
    print("|---:|" + "---:|---:|" * len(names))
    sizes = sorted(set().union(*(set(times[n]) for n in names)))
    for bytes_ in sizes:
        cells = []
        for name in names:
            samples = times[name].get(bytes_)
            if not samples:
                cells += ["-", "-"]
                continue
            one_way = statistics.median(samples)
            cells += [seconds(one_way), si(bytes_ / one_way, "B/s")]
        print(f"| {size(bytes_)} | " + " | ".join(cells) + " |")
    print()
    print("| fitted (profile) | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    print("| latency (one-way, 8 B) | " + " | ".join(
        seconds(statistics.median(summary[n]["latency"])) for n in names) + " |")
    print("| bandwidth (fitted, both ways) | " + " | ".join(
        si(statistics.median(summary[n]["bandwidth"]), "B/s") + " (from " +
        size(min(summary[n]["fit"])) + ")" for n in names) + " |")
    print("| model's worst miss | " + " | ".join(
        f"{statistics.median(summary[n]['error']) * 100:.0f}%" for n in names) + " |")


if __name__ == "__main__":
    main()
