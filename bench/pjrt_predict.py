"""The cost model on a PJRT device (issue: prediction, item 3): every zoo model planned whole onto
the PJRT CPU plugin's device, predicted beside measured.

`tandem calibrate --backend pjrt` writes a profile (or --profile reuses one), a copy of
examples/clusters/cpu-pjrt.yaml names it for pjrt0, and each model runs there as one program
(`tandem run --cluster COPY --strategy single:pjrt0 --json`): its plan's predicted latency beside
the measured median. With --baseline, another build's `tandem plan` prices the same plans on the
same profile, so that a change of the cost model is compared on identical measurements; with
--baseline-profile, this build prices them on another profile (the same one less a curve, say),
so that a change of calibration is. With --baseline and --measure-baseline, the other build
also runs every model, the two taking turns, so that a change of the lowering is measured side
by side (the "after / before" column).

Usage: .venv/bin/python bench/pjrt_predict.py [--zoo zoo/real] [--iterations 20] [--rounds 3]
           [--models a,b] [--profile FILE] [--baseline OTHER/tandem] [--measure-baseline]
           [--baseline-profile FILE] [--json FILE] [--markdown]

Measured latency is the median over rounds of each round's median (models take turns within a
round, so a burst of load hits one round rather than one model). Error is
(predicted - measured) / measured.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

import yaml

from cluster_checks import model_args, run

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Untimed runs first, for 50 ms rather than a count: the first ~75 runs of a 4 us model took 6 us
# (torch_embeddingbag, 2-vCPU Xeon VM), and calibration times the steady state.
WARMUP = ("--warmup-duration", "0.05")


def cluster_with(profile, folder, name="cpu-pjrt.yaml"):
    with open(os.path.join(REPO, "examples", "clusters", "cpu-pjrt.yaml")) as f:
        cluster = yaml.safe_load(f)
    for device in cluster["devices"]:
        if device.get("backend") == "pjrt":
            device["profile"] = profile
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        yaml.safe_dump(cluster, f)
    return path


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tandem", default=os.path.join(REPO, "build", "src", "tandem"))
    parser.add_argument("--zoo", default=os.path.join(REPO, "zoo"))
    parser.add_argument("--models", default="")
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", default="", help="reuse a `calibrate --backend pjrt` profile")
    parser.add_argument("--baseline", default="", help="another build's tandem: its predictions")
    parser.add_argument("--measure-baseline", action="store_true",
                        help="run every model with --baseline's build too, taking turns")
    parser.add_argument("--baseline-profile", default="",
                        help="the baseline's predictions on this profile (default: the same one)")
    parser.add_argument("--json", default="")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()

    with open(os.path.join(args.zoo, "manifest.json")) as f:
        manifest = json.load(f)
    if args.models:
        wanted = set(args.models.split(","))
        manifest = [entry for entry in manifest if entry["name"] in wanted]

    with tempfile.TemporaryDirectory() as folder:
        profile = args.profile or os.path.join(folder, "pjrt.json")
        if not args.profile:
            print(f"calibrating pjrt -> {profile}", file=sys.stderr, flush=True)
            run([args.tandem, "calibrate", "--backend", "pjrt", "-o", profile], "calibrate")
        cluster = cluster_with(os.path.abspath(profile), folder)
        if args.measure_baseline and not args.baseline:
            parser.error("--measure-baseline needs --baseline OTHER/tandem")
        measured, predicted, baseline, baseline_measured, skipped = {}, {}, {}, {}, {}
        for round_index in range(args.rounds):
            for entry in manifest:
                name = entry["name"]
                print(f"round {round_index + 1}/{args.rounds}: {name}", file=sys.stderr, flush=True)
                if name in skipped:
                    continue
                builds = [("this", args.tandem)]
                if args.measure_baseline:  # who goes first alternates between rounds
                    builds.insert(round_index % 2, ("baseline", args.baseline))
                for build, tandem in builds:
                    try:
                        report = json.loads(run(
                            [tandem, "run", *model_args(args.zoo, entry), "--cluster", cluster,
                             "--strategy", "single:pjrt0", *WARMUP, "--iterations",
                             str(args.iterations), "--json"], f"{build} build: tandem run {name}"))
                    except RuntimeError as error:  # a model the plugin cannot take: its reason
                        skipped[name] = str(error).splitlines()[-1]
                        print(f"skipped {name}: {skipped[name]}", file=sys.stderr, flush=True)
                        break
                    if build == "baseline":
                        baseline_measured.setdefault(name, []).append(report["latency"]["median_s"])
                    else:
                        measured.setdefault(name, []).append(report["latency"]["median_s"])
                        predicted[name] = report["plan"]["predicted_latency_s"]
        manifest = [entry for entry in manifest if entry["name"] not in skipped]
        if args.baseline or args.baseline_profile:
            baseline_tandem = args.baseline or args.tandem
            baseline_cluster = cluster_with(os.path.abspath(args.baseline_profile), folder,
                                            "baseline.yaml") if args.baseline_profile else cluster
            for entry in manifest:
                plan = json.loads(run(
                    [baseline_tandem, "plan", *model_args(args.zoo, entry), "--cluster",
                     baseline_cluster, "--strategy", "single:pjrt0", "--json"],
                    f"baseline plan {entry['name']}"))
                baseline[entry["name"]] = plan["predicted"]["latency_s"]

    rows = []
    for entry in manifest:
        name = entry["name"]
        seconds = statistics.median(measured[name])
        row = {"model": name, "measured_s": seconds, "predicted_s": predicted[name],
               "error": (predicted[name] - seconds) / seconds}
        if baseline:
            row["baseline_predicted_s"] = baseline[name]
            row["baseline_error"] = (baseline[name] - seconds) / seconds
        if name in baseline_measured:
            before = statistics.median(baseline_measured[name])
            row["baseline_measured_s"] = before
            row["speedup"] = before / seconds
            row["baseline_error"] = (baseline[name] - before) / before  # on its own run
        rows.append(row)
    summary = {}
    for key in ("error", "baseline_error") if baseline else ("error",):
        errors = [abs(row[key]) for row in rows]
        summary[key] = {"median": statistics.median(errors), "p90": percentile(errors, 0.9)}

    paired = bool(baseline_measured)
    print(f"{'model':24} {'measured ms':>11} {'predicted':>10} {'error':>8}" +
          (f" {'before ms':>10}" if paired else "") +
          (f" {'baseline':>10} {'error':>8}" if baseline else "") +
          (f" {'after/before':>12}" if paired else ""))
    for row in rows:
        line = (f"{row['model']:24} {row['measured_s'] * 1e3:11.3f} "
                f"{row['predicted_s'] * 1e3:10.3f} {row['error']:+8.1%}")
        if paired:
            line += f" {row['baseline_measured_s'] * 1e3:10.3f}"
        if baseline:
            line += f" {row['baseline_predicted_s'] * 1e3:10.3f} {row['baseline_error']:+8.1%}"
        if paired:
            line += f" {1 / row['speedup']:12.2f}"
        print(line)
    for name, reason in skipped.items():
        print(f"skipped {name}: {reason}")
    for key, figures in summary.items():
        print(f"{key}: median |error| {figures['median']:.1%}, p90 {figures['p90']:.1%}")
    if args.markdown:
        print()
        print("| model | measured ms | predicted ms | error |" +
              (" before ms |" if paired else "") +
              (" predicted before ms | error before |" if baseline else "") +
              (" after / before |" if paired else ""))
        print("|---|---:|---:|---:|" + ("---:|" if paired else "") +
              ("---:|---:|" if baseline else "") + ("---:|" if paired else ""))
        for row in rows:
            line = (f"| {row['model']} | {row['measured_s'] * 1e3:.3f} | "
                    f"{row['predicted_s'] * 1e3:.3f} | {row['error']:+.1%} |")
            if paired:
                line += f" {row['baseline_measured_s'] * 1e3:.3f} |"
            if baseline:
                line += (f" {row['baseline_predicted_s'] * 1e3:.3f} | "
                         f"{row['baseline_error']:+.1%} |")
            if paired:
                line += f" {1 / row['speedup']:.2f} |"
            print(line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "summary": summary, "skipped": skipped}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
