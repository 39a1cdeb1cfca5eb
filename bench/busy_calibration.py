"""Does a calibration taken beside a busy process predict what a quiet one does?

Calibrates this machine twice, side by side in one run: once quiet, once while another process
spins on one core (`--busy-cores`), then predicts every zoo model (both tiers) on one CPU device
with each profile and prints, per model, the two predictions and their ratio, with the median
and worst ratio. Also what `calibrate` said about the machine each time (--json's
`contention`). The target (issue: calibration that survives a busy machine) is every model's
two predictions within 10% of each other.

  .venv/bin/python bench/busy_calibration.py --tandem build/src/tandem --zoo zoo [--quick] [--pin]
"""
import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def spin(stop, core):
    if core is not None:
        os.sched_setaffinity(0, {core})
    while not stop.is_set():
        pass


def calibrate(tandem, path, quick, busy_cores, pin):
    stop = multiprocessing.Event()
    # With --pin, spinner i keeps to the process's i-th core from the last: the scheduler cannot
    # give it less of that core by moving it.
    cores = sorted(os.sched_getaffinity(0))
    spinners = [multiprocessing.Process(target=spin,
                                        args=(stop, cores[-1 - i] if pin else None))
                for i in range(busy_cores)]
    for spinner in spinners:
        spinner.start()
    time.sleep(0.5 if spinners else 0)  # let the spinners take their cores
    try:
        args = [tandem, "calibrate", "-o", path, "--json"] + (["--quick"] if quick else [])
        result = subprocess.run(args, capture_output=True, text=True, timeout=900)
    finally:
        stop.set()
        for spinner in spinners:
            spinner.join()
    if result.returncode != 0:
        sys.exit(f"calibrate failed: {result.stderr}")
    return json.loads(result.stdout), [line for line in result.stderr.splitlines()
                                       if line.startswith(("warning:", "note:"))]


def cluster_file(folder, name, profile):
    path = os.path.join(folder, name + ".yaml")
    with open(path, "w") as f:
        f.write("hosts: [local]\ndevices:\n"
                f"  - {{id: cpu0, preset: cpu-generic-avx2, host: local, backend: cpu, profile: {profile}}}\n")
    return path


def predict(tandem, zoo, entry, cluster):
    args = [tandem, "plan", os.path.join(zoo, entry["path"]), "--cluster", cluster,
            "--strategy", "single:cpu0", "--json"]
    for given in entry["inputs"]:
        args += ["--input", f"{given['name']}={os.path.join(zoo, given['file'])}"]
    result = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        return None
    return json.loads(result.stdout)["predicted"]["latency_s"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tandem", required=True)
    parser.add_argument("--zoo", required=True)
    parser.add_argument("--quick", action="store_true", help="calibrate --quick (seconds)")
    parser.add_argument("--busy-cores", type=int, default=1)
    parser.add_argument("--pin", action="store_true",
                        help="pin each spinning process to a core of its own")
    parser.add_argument("--keep", default="", help="copy the two profiles to this folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        quiet, quiet_notes = calibrate(args.tandem, os.path.join(folder, "quiet.json"), args.quick, 0,
                                        False)
        busy, busy_notes = calibrate(args.tandem, os.path.join(folder, "busy.json"), args.quick,
                                     args.busy_cores, args.pin)
        if args.keep:
            os.makedirs(args.keep, exist_ok=True)
            for name in ("quiet.json", "busy.json"):
                shutil.copy(os.path.join(folder, name), os.path.join(args.keep, name))
        clusters = {"quiet": cluster_file(folder, "quiet", "quiet.json"),
                    "busy": cluster_file(folder, "busy", "busy.json")}
        print(f"machine: {quiet['device_name']}")
        for name, report, notes in (("quiet", quiet, quiet_notes), ("busy", busy, busy_notes)):
            print(f"{name:6} calibration: contention {json.dumps(report['contention'])}")
            for note in notes:
                print(f"         {note}")
        rows = []
        for tier in ("", "real"):
            with open(os.path.join(args.zoo, tier, "manifest.json")) as f:
                entries = json.load(f)
            for entry in entries:
                zoo = os.path.join(args.zoo, tier)
                quiet_s = predict(args.tandem, zoo, entry, clusters["quiet"])
                busy_s = predict(args.tandem, zoo, entry, clusters["busy"])
                if quiet_s and busy_s:
                    rows.append(((tier + "/" if tier else "") + entry["name"], quiet_s, busy_s))
        print(f"\n{'model':28} {'quiet ms':>10} {'busy ms':>10} {'busy/quiet':>10}")
        for name, quiet_s, busy_s in rows:
            print(f"{name:28} {quiet_s * 1e3:10.3f} {busy_s * 1e3:10.3f} {busy_s / quiet_s:10.3f}")
        ratios = [busy_s / quiet_s for _, quiet_s, busy_s in rows]
        worst = max(ratios, key=lambda r: abs(r - 1))
        within = sum(abs(r - 1) <= 0.10 for r in ratios)
        print(f"\nmedian busy/quiet {statistics.median(ratios):.3f}, worst {worst:.3f}; "
              f"{within} of {len(ratios)} models within 10%")


if __name__ == "__main__":
    main()
