"""Every run checks its prediction: each zoo model on each example cluster this machine can run,
calibrated, `tandem run --cluster` with `auto`, measured latency beside predicted, the segments
off by more than 25%, and auto's plan against the whole machine as one device (where auto keeps
a split, `tandem run` tries it against the machine as one device first: the summary counts the
cells it tried and those where the machine as one device ran faster and ran instead).

The example clusters name presets; here each device gets a profile measured on this machine
first (`tandem calibrate`: 1 thread for a device of one core, every core for a device without
`cores:`, `--backend pjrt` for a PJRT device), written into a copy of the cluster file, so that
the prediction is the calibrated one a user would get. The whole machine as one device is
`examples/clusters/local.yaml` (the CPU backend on every core) with its own profile, which each
cluster's hosts also name (`profile:`), so that `auto` compares its split with the machine as
one device on measured figures (docs/CLUSTERS.md).

Beside each prediction, the one the same profiles gave before plans priced the runtime's own
costs: `tandem plan --strategy <what auto chose>` on copies of the profiles without
`run_overhead`, `handoff_latency` and `step_overhead` (docs/COST_MODEL.md).

Usage: .venv/bin/python bench/cluster_checks.py [--tandem build/src/tandem] [--zoo zoo]
           [--clusters local,cpu-split,cpu-pjrt] [--models a,b] [--iterations 20]
           [--rounds 3] [--json FILE] [--markdown] [--keep-profiles DIR]

The summary names each calibration's speed_drift and its two 256^3 references, and
--keep-profiles keeps the profiles, so that a choice can be traced to the figures it was made on.
Each run also times its devices' speed reference again (`tandem run --cluster`'s speed checks):
each cell shows the reference's time now over its calibrated time (the device furthest off),
and the summary splits the errors between the cells where it held within 10% and the others.

Measured latency is the median over rounds of each round's median (models and clusters take
turns within a round, so a burst of load hits one round rather than one cell). Error is
(measured - predicted) / predicted, as `tandem run` prints it. Beside it, the fast phase: the
median over rounds of each round's 10th percentile, what a run takes while a shared VM's host
runs at full speed, the speed a calibration measures (docs/COST_MODEL.md).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Untimed runs first, for 50 ms rather than a count: the first ~75 runs of a 4 us model took 6 us
# (torch_embeddingbag, 2-vCPU Xeon VM), and calibration times the steady state.
WARMUP = ("--warmup-duration", "0.05")
CLUSTERS = os.path.join(REPO, "examples", "clusters")


def run(args, what):
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{what} failed ({result.returncode}): {result.stderr.strip()[-2000:]}")
    return result.stdout


def model_args(zoo, entry):
    args = [os.path.join(zoo, entry["path"])]
    for name, size in entry["dims"].items():
        args += ["--dim", f"{name}={size}"]
    for spec in entry["inputs"]:
        args += ["--input", f"{spec['name']}={os.path.join(zoo, spec['file'])}"]
    return args


RUNTIME_FIGURES = ("run_overhead", "handoff_latency", "step_overhead")


def without_runtime_costs(path):
    """A copy of the profile at `path` without the runtime's figures."""
    with open(path) as f:
        profile = json.load(f)
    for key in RUNTIME_FIGURES:
        profile["figures"].pop(key, None)
    stripped = path.replace(".json", "-without.json")
    with open(stripped, "w") as f:
        json.dump(profile, f)
    return stripped


def calibrated_cluster(tandem, name, folder, profiles):
    """A copy of examples/clusters/NAME.yaml whose devices name profiles measured here, and one
    whose profiles lack the runtime's figures."""
    with open(os.path.join(CLUSTERS, name + ".yaml")) as f:
        cluster = yaml.safe_load(f)
    for device in cluster["devices"]:
        backend = device.get("backend", "cpu")
        key = (backend, device.get("cores", 0))
        if key not in profiles:
            path = os.path.join(folder, f"{backend}-{key[1]}.json")
            args = [tandem, "calibrate", "-o", path]
            if backend == "pjrt":
                args += ["--backend", "pjrt"]
            elif key[1]:
                args += ["--threads", str(key[1])]
            print(f"calibrating {backend} ({key[1] or 'all'} cores) -> {path}", file=sys.stderr,
                  flush=True)
            run(args, "tandem calibrate")
            profiles[key] = path
        device["profile"] = profiles[key]
    # Each host's CPU as one device (every core), for auto's whole-machine comparison.
    whole = ("cpu", 0)
    if whole not in profiles:
        profiles[whole] = os.path.join(folder, "cpu-0.json")
        print(f"calibrating cpu (all cores) -> {profiles[whole]}", file=sys.stderr, flush=True)
        run([tandem, "calibrate", "-o", profiles[whole]], "tandem calibrate")
    cluster["hosts"] = [{"id": host if isinstance(host, str) else host["id"],
                         "profile": profiles[whole]} for host in cluster["hosts"]]
    path = os.path.join(folder, name + ".yaml")
    with open(path, "w") as f:
        yaml.safe_dump(cluster, f)
    for host in cluster["hosts"]:
        host["profile"] = without_runtime_costs(host["profile"])
    for device in cluster["devices"]:
        device["profile"] = without_runtime_costs(device["profile"])
    without = os.path.join(folder, name + "-without.yaml")
    with open(without, "w") as f:
        yaml.safe_dump(cluster, f)
    return path, without


def predicted_without(tandem, zoo, entry, cluster, strategy):
    dims = [arg for name, size in entry["dims"].items() for arg in ("--dim", f"{name}={size}")]
    inputs = [arg for spec in entry["inputs"]
              for arg in ("--input", f"{spec['name']}={os.path.join(zoo, spec['file'])}")]
    plan = json.loads(run([tandem, "plan", os.path.join(zoo, entry["path"]), *dims, *inputs,
                           "--cluster", cluster, "--strategy", strategy, "--json"],
                          f"tandem plan {entry['name']}"))
    return plan["predicted"]["latency_s"]


def run_on(tandem, zoo, entry, cluster, iterations):
    report = json.loads(run([tandem, "run", *model_args(zoo, entry), "--cluster", cluster,
                             *WARMUP, "--iterations", str(iterations), "--json"],
                            f"tandem run {entry['name']} on {os.path.basename(cluster)}"))
    plan = report["plan"]
    fast = sorted(report["latency"]["samples_s"])
    return {"measured_s": report["latency"]["median_s"],
            "fast_phase_s": fast[(len(fast) - 1) // 10],
            "predicted_s": plan["predicted_latency_s"],
            "chosen": plan["chosen"],
            # auto's split tried against the machine as one device before the timed runs, and
            # whether the machine as one device ran faster there (then it is the plan that ran)
            "tried": bool(plan["trial"]),
            "trial_took_whole_machine": any(t["kept"] and t["cluster_view"] == "whole machine"
                                            for t in plan["trial"]),
            # auto's plan is the machine as one device: the same work as local.yaml's run
            "whole_machine": [d["id"] for d in plan["devices"]] in (["cpu0"], ["local.cpu"]),
            "segments": len(plan["segment_checks"]),
            "segments_off": sum(1 for check in plan["segment_checks"] if check["off"]),
            # how far each device's speed reference moved since its calibration: now / then
            "speed": {check["device"]: check["now_s"] / check["calibrated_s"]
                      for check in plan.get("speed_checks", [])}}


def speed_split(rows, held):
    """The cells whose speed reference held within 10% (or moved), and their median |error|."""
    chosen = [r for r in rows if r["speed_now_over_calibrated"] is not None
              and (abs(r["speed_now_over_calibrated"] - 1) <= 0.1) == held]
    errors = sorted(abs(r["error"]) for r in chosen)
    return {"cells": len(chosen),
            "median_abs_error": statistics.median(errors) if errors else None,
            "within_15_percent": sum(1 for e in errors if e <= 0.15)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tandem", default=os.path.join(REPO, "build", "src", "tandem"))
    parser.add_argument("--zoo", default=os.path.join(REPO, "zoo"))
    parser.add_argument("--clusters", default="local,cpu-split,cpu-pjrt")
    parser.add_argument("--models", default="")
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", default="")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--keep-profiles", default="",
                        help="copy the calibrated profiles into this folder")
    args = parser.parse_args()

    with open(os.path.join(args.zoo, "manifest.json")) as f:
        entries = json.load(f)
    if args.models:
        wanted = set(args.models.split(","))
        entries = [e for e in entries if e["name"] in wanted]
    names = args.clusters.split(",")
    if "local" not in names:
        names.insert(0, "local")  # the whole machine, for auto's comparison

    with tempfile.TemporaryDirectory() as folder:
        profiles = {}
        clusters = {name: calibrated_cluster(args.tandem, name, folder, profiles) for name in names}
        # How far each calibration saw the machine's speed move (the profile's speed_drift),
        # beside the 256^3 references it is taken from: profiles a minute apart may still
        # disagree by more, which no figure inside one of them shows.
        calibrations = {}
        for (backend, cores), path in profiles.items():
            with open(path) as f:
                profile = json.load(f)
            references = {m["name"]: m["value"] for m in profile.get("measurements", [])
                          if m["name"].startswith("speed reference")}
            calibrations[f"{backend}-{cores or 'all'}"] = {
                "speed_drift": profile.get("speed_drift", {}).get("value", 0),
                "reference_start_s": references.get("speed reference at the start"),
                "reference_end_s": references.get("speed reference at the end")}
            if args.keep_profiles:
                os.makedirs(args.keep_profiles, exist_ok=True)
                shutil.copy(path, args.keep_profiles)
        samples = {}
        for round_index in range(args.rounds):
            print(f"round {round_index + 1} of {args.rounds}", file=sys.stderr, flush=True)
            for entry in entries:
                for name in names:
                    try:
                        cell = run_on(args.tandem, args.zoo, entry, clusters[name][0],
                                      args.iterations)
                        cell["predicted_without_s"] = predicted_without(
                            args.tandem, args.zoo, entry, clusters[name][1], cell["chosen"])
                    except RuntimeError as error:
                        cell = {"error": str(error).splitlines()[0]}
                    samples.setdefault((entry["name"], name), []).append(cell)

    rows = []
    for entry in entries:
        whole = samples[(entry["name"], "local")]
        whole_ms = (statistics.median(c["measured_s"] for c in whole) * 1e3
                    if all("error" not in c for c in whole) else None)
        for name in names:
            cells = samples[(entry["name"], name)]
            failed = [c["error"] for c in cells if "error" in c]
            if failed:
                rows.append({"model": entry["name"], "cluster": name, "error": failed[0]})
                continue
            measured = statistics.median(c["measured_s"] for c in cells) * 1e3
            fast = statistics.median(c["fast_phase_s"] for c in cells) * 1e3
            predicted = statistics.median(c["predicted_s"] for c in cells) * 1e3
            without = statistics.median(c["predicted_without_s"] for c in cells) * 1e3
            last = cells[-1]
            # Per device, the median over rounds of its reference's now / calibrated; the cell's
            # speed is the one that moved furthest.
            speeds = [statistics.median(c["speed"][d] for c in cells if d in c["speed"])
                      for d in sorted({d for c in cells for d in c["speed"]})]
            speed = max(speeds, key=lambda s: abs(s - 1)) if speeds else None
            rows.append({"model": entry["name"], "cluster": name, "chosen": last["chosen"],
                         "measured_ms": measured, "predicted_ms": predicted,
                         "error": (measured - predicted) / predicted,
                         "fast_phase_ms": fast, "fast_phase_error": (fast - predicted) / predicted,
                         "predicted_without_ms": without,
                         "error_without": (measured - without) / without,
                         "segments": last["segments"], "segments_off": last["segments_off"],
                         "whole_machine_ms": whole_ms,
                         "speed_now_over_calibrated": speed,
                         "whole_machine_plan": last["whole_machine"],
                         "rounds_tried": sum(1 for c in cells if c["tried"]),
                         "rounds_trial_took_whole_machine": sum(
                             1 for c in cells if c["trial_took_whole_machine"]),
                         # a split auto chose over the machine as one device, measured slower
                         "slower_than_whole_machine": whole_ms is not None and name != "local"
                         and not last["whole_machine"]
                         and measured > whole_ms})

    ok = [r for r in rows if isinstance(r.get("error"), float)]
    errors = sorted(abs(r["error"]) for r in ok)
    errors_without = sorted(abs(r["error_without"]) for r in ok)
    errors_fast = sorted(abs(r["fast_phase_error"]) for r in ok)
    summary = {
        "cells": len(rows), "ran": len(ok),
        "median_abs_error": statistics.median(errors) if errors else None,
        "p90_abs_error": errors[min(len(errors) - 1, int(0.9 * len(errors)))] if errors else None,
        "within_15_percent": sum(1 for e in errors if e <= 0.15),
        "fast_phase": {
            "median_abs_error": statistics.median(errors_fast) if errors_fast else None,
            "p90_abs_error": (errors_fast[min(len(errors_fast) - 1, int(0.9 * len(errors_fast)))]
                              if errors_fast else None),
            "within_15_percent": sum(1 for e in errors_fast if e <= 0.15)},
        "without_runtime_costs": {
            "median_abs_error": statistics.median(errors_without) if errors_without else None,
            "p90_abs_error": (errors_without[min(len(errors_without) - 1,
                                                 int(0.9 * len(errors_without)))]
                              if errors_without else None),
            "within_15_percent": sum(1 for e in errors_without if e <= 0.15)},
        "segments": sum(r["segments"] for r in ok),
        "segments_off": sum(r["segments_off"] for r in ok),
        "auto_slower_than_whole_machine": sum(1 for r in ok if r["slower_than_whole_machine"]),
        "split_cells": sum(1 for r in ok if r["cluster"] != "local"),
        "auto_chose_whole_machine": sum(1 for r in ok
                                        if r["cluster"] != "local" and r["whole_machine_plan"]),
        # cells where a round tried auto's split against the machine as one device, and where
        # a round's trial found the machine as one device faster and ran it
        "cells_tried": sum(1 for r in ok if r["rounds_tried"]),
        "cells_trial_took_whole_machine": sum(1 for r in ok
                                              if r["rounds_trial_took_whole_machine"]),
        "calibrations": calibrations,
        # cells where every device's speed reference held within 10% of its calibration (run
        # --cluster's speed checks), and their errors, beside the cells where it moved
        "speed_held": speed_split(ok, True),
        "speed_moved": speed_split(ok, False),
    }
    if args.markdown:
        print("| model | cluster | auto chose | measured ms | predicted ms | error | fast phase ms "
              "| error | without runtime costs ms | error | segments off | whole machine ms "
              "| speed now / calibrated |")
        print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            if not isinstance(r.get("error"), float):
                print(f"| {r['model']} | {r['cluster']} | failed: {r['error']} | | | | | | | | | | |")
                continue
            slower = " (slower)" if r["slower_than_whole_machine"] else ""
            tried = (f" (tried in {r['rounds_tried']} of {args.rounds} rounds; the whole machine "
                     f"ran in {r['rounds_trial_took_whole_machine']})" if r["rounds_tried"] else "")
            print(f"| {r['model']} | {r['cluster']} | {r['chosen']}{tried} | {r['measured_ms']:.3f}"
                  f"{slower} | {r['predicted_ms']:.3f} | {100 * r['error']:+.1f}% | "
                  f"{r['fast_phase_ms']:.3f} | {100 * r['fast_phase_error']:+.1f}% | "
                  f"{r['predicted_without_ms']:.3f} | {100 * r['error_without']:+.1f}% | "
                  f"{r['segments_off']} of {r['segments']} | {r['whole_machine_ms']:.3f} | "
                  + (f"{r['speed_now_over_calibrated']:.2f} |"
                     if r["speed_now_over_calibrated"] is not None else " |"))
    else:
        for r in rows:
            if not isinstance(r.get("error"), float):
                print(f"{r['model']:24} {r['cluster']:10} failed: {r['error']}")
                continue
            print(f"{r['model']:24} {r['cluster']:10} {r['chosen']:14} measured "
                  f"{r['measured_ms']:9.3f} ms  predicted {r['predicted_ms']:9.3f} ms  "
                  f"{100 * r['error']:+7.1f}%  fast phase {r['fast_phase_ms']:9.3f} ms "
                  f"{100 * r['fast_phase_error']:+7.1f}%  segments off {r['segments_off']}/{r['segments']}"
                  f"{'  SLOWER than the whole machine' if r['slower_than_whole_machine'] else ''}")
    print(json.dumps(summary, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "summary": summary}, f, indent=2)


if __name__ == "__main__":
    main()
