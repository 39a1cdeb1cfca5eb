"""The cost model against measured runs on the local CPU: every zoo model, whole and per op type.

For each model, the predicted time (bench/predict_model: the cost model on a local cluster made
from a calibration profile, over the fused graph `tandem run` runs) is set beside the measured
median of `tandem run --json`; per op type, beside `tandem run --profile --json`. Two profiles:
one calibrated WITHOUT --model (micro-benchmarks only: the honest prediction), and one with
every zoo model's ops timed (--model: per-op history, which should come close by construction).
Prints median and p90 relative error (|predicted - measured| / measured) and writes JSON. With
--baseline-profile, each model is also priced on another profile (the same one less a rule,
say), beside the same measurements; with --baseline-predict, by another build's predict_model
(the same cost model less a rule), on the same profile unless --baseline-profile names one.

Usage: .venv/bin/python bench/predict_vs_measure.py [--threads 2] [--iterations 50]
           [--rounds 3] [--models a,b] [--profile FILE] [--history-profile FILE]
           [--baseline-profile FILE] [--baseline-predict BINARY] [--markdown]

The measured time of a model is the median over rounds of each round's median: models take
turns, so a burst of load from other processes hits one round rather than one model. Beside it,
the model's fast-phase time: the median over rounds of each round's 10th percentile. A shared
VM's host alternates between phases of full speed and of up to 1.6x slower, each lasting tens of
milliseconds (a chain of 50 small ops ran 8.9 or 14.5 us, in stretches of 1,000 runs, on either
vCPU, with no steal time counted), so a run's median is a mix of the two in proportions that
change from minute to minute, and its 10th percentile is the machine at full speed.

Before each model in each round a reference runs: one 512x512x512 MatMul, the shape the
calibration's GEMM curve times, run as a model. Beside the profile's point it says how fast the
machine ran while that model was measured against while it was calibrated (on a shared VM the
two differed by up to 35% within the hour, more than any pricing rule). The headline error
corrects nothing; beside it, each model's error "at calibration speed": each round's median
scaled by the profile's point over the reference timed just before it, the median of those.
The reference is a compute-bound product: it stands for the machine's speed, not for each op's.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Untimed runs first, for 50 ms rather than a count: the first ~75 runs of a 4 us model took 6 us
# (torch_embeddingbag, 2-vCPU Xeon VM), and calibration times the steady state.
WARMUP = ("--warmup-duration", "0.05")


def run(args, what):
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{what} failed: {result.stderr.strip()}")
    return result.stdout


def dim_args(entry):
    return [arg for name, size in entry["dims"].items() for arg in ("--dim", f"{name}={size}")]


def calibrate(tandem, threads, output, models):
    args = [tandem, "calibrate", "--threads", str(threads), "-o", output, "--json"]
    dims = {}
    for model, entry in models:
        args += ["--model", model]
        for name, size in entry["dims"].items():
            if dims.setdefault(name, size) != size:
                raise RuntimeError(f"dimension {name} differs between models; calibrate apart")
    args += [arg for name, size in dims.items() for arg in ("--dim", f"{name}={size}")]
    print(f"calibrating ({len(models)} models timed) -> {output}", file=sys.stderr, flush=True)
    return json.loads(run(args, "tandem calibrate"))


def measure(tandem, zoo, entry, threads, iterations, profile):
    args = [tandem, "run", os.path.join(zoo, entry["path"]), "--json", "--threads", str(threads),
            *WARMUP, "--iterations", str(iterations), *dim_args(entry)]
    for spec in entry["inputs"]:
        args += ["--input", f"{spec['name']}={os.path.join(zoo, spec['file'])}"]
    if profile:
        args.append("--profile")
    return json.loads(run(args, f"tandem run {entry['name']}"))


REFERENCE_SIZE = 512


def write_reference_model(path):
    """One REFERENCE_SIZE^3 fp32 MatMul with constant weights, as an ONNX file."""
    import numpy
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    size = REFERENCE_SIZE
    weights = numpy.random.default_rng(0).uniform(-1, 1, (size, size)).astype(numpy.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "reference",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [size, size])],
        [numpy_helper.from_array(weights, "w")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def reference_ms(tandem, model, threads):
    """The reference's median and 10th percentile, in ms."""
    args = [tandem, "run", model, "--json", "--threads", str(threads), *WARMUP,
            "--iterations", "20"]
    latency = json.loads(run(args, "tandem run (reference MatMul)"))["latency"]
    return 1e3 * latency["median_s"], 1e3 * quantile(latency["samples_s"], 0.1)


def calibrated_reference_ms(profile_path):
    """The profile's GEMM point of the reference's shape, in ms; None where it has none."""
    with open(profile_path) as f:
        for point in json.load(f).get("gemm_curve", []):
            if point["m"] == point["n"] == point["k"] == REFERENCE_SIZE:
                return 1e3 * point["seconds"]
    return None


def predict(predictor, zoo, entry, profile):
    args = [predictor, os.path.join(zoo, entry["path"]), "--profile", profile, *dim_args(entry)]
    return json.loads(run(args, f"predict_model {entry['name']}"))


def figures_of(profile_path):
    """The headline figures of a profile, as `tandem calibrate --json` names them."""
    with open(profile_path) as f:
        profile = json.load(f)
    figures = profile["figures"]
    rows = [("matrix fp32 peak", figures["matrix_flops"].get("fp32")),
            ("vector fp32", figures["vector_flops"].get("fp32")),
            ("memory bandwidth", figures.get("memory_bandwidth")),
            ("launch overhead", figures.get("launch_overhead")),
            ("host link", profile.get("host_link_bandwidth"))]
    return [{"figure": name, "value": figure["value"]} for name, figure in rows if figure]


def relative_error(predicted, measured):
    return abs(predicted - measured) / measured


def quantile(values, q):
    values = sorted(values)
    if not values:
        return float("nan")
    position = q * (len(values) - 1)
    below = int(position)
    above = min(below + 1, len(values) - 1)
    return values[below] + (values[above] - values[below]) * (position - below)


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown CPU"


def summary(errors):
    return {"median": quantile(errors, 0.5), "p90": quantile(errors, 0.9), "count": len(errors)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tandem", default=os.path.join(REPO, "build", "src", "tandem"))
    parser.add_argument("--predict", default=os.path.join(REPO, "build", "bench", "predict_model"))
    parser.add_argument("--zoo", default=os.path.join(REPO, "zoo"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--models", default="", help="comma-separated subset")
    parser.add_argument("--profile", default="", help="reuse a profile made without --model")
    parser.add_argument("--history-profile", default="", help="reuse a profile made with --model")
    parser.add_argument("--baseline-profile", default="",
                        help="also price each model on this profile, beside the same measurements")
    parser.add_argument("--baseline-predict", default="",
                        help="also price each model with this predict_model (another build)")
    parser.add_argument("--json", default=os.path.join(REPO, "bench", "predict_vs_measure.json"))
    parser.add_argument("--markdown", action="store_true", help="also print markdown tables")
    args = parser.parse_args()

    with open(os.path.join(args.zoo, "manifest.json")) as f:
        manifest = json.load(f)
    if args.models:
        wanted = set(args.models.split(","))
        manifest = [entry for entry in manifest if entry["name"] in wanted]

    scratch = tempfile.mkdtemp(prefix="tandem-predict-")
    plain = args.profile or os.path.join(scratch, "profile.json")
    history = args.history_profile or os.path.join(scratch, "profile-history.json")
    if not args.profile:
        calibrate(args.tandem, args.threads, plain, [])
    with open(plain) as f:
        plain_device = json.load(f)["device_name"]
    plain_summary = figures_of(plain)
    if not args.history_profile:
        # One calibration per set of dims (a dim binds every model that has it); their measured
        # op times merged into one history profile.
        groups = {}
        for entry in manifest:
            key = tuple(sorted(entry["dims"].items()))
            groups.setdefault(key, []).append((os.path.join(args.zoo, entry["path"]), entry))
        merged = None
        for index, models in enumerate(groups.values()):
            part = history if index == 0 else os.path.join(scratch, f"profile-history-{index}.json")
            calibrate(args.tandem, args.threads, part, models)
            with open(part) as f:
                profile = json.load(f)
            if merged is None:
                merged = profile
            else:
                merged["op_seconds"].update(profile["op_seconds"])
        with open(history, "w") as f:
            json.dump(merged, f)

    load_before = os.getloadavg()
    reference = os.path.join(scratch, "reference.onnx")
    write_reference_model(reference)
    calibrated = calibrated_reference_ms(plain)
    reference_rounds = []
    round_medians = {entry["name"]: [] for entry in manifest}
    round_fast = {entry["name"]: [] for entry in manifest}
    # Each model's median in each round at the calibration's speed: scaled by the profile's
    # reference point over the reference timed just before it.
    round_at_speed = {entry["name"]: [] for entry in manifest}
    for _ in range(args.rounds):
        for entry in manifest:
            reference_now = reference_ms(args.tandem, reference, args.threads)
            reference_rounds.append(reference_now)
            measured = measure(args.tandem, args.zoo, entry, args.threads, args.iterations, False)
            median_ms = 1e3 * measured["latency"]["median_s"]
            round_medians[entry["name"]].append(median_ms)
            round_fast[entry["name"]].append(1e3 * quantile(measured["latency"]["samples_s"], 0.1))
            if calibrated:
                round_at_speed[entry["name"]].append(median_ms * calibrated / reference_now[0])

    rows, op_rows = [], []
    print(f"{'model':24} {'measured ms':>11} {'predicted':>10} {'error':>7} "
          f"{'w/ history':>10} {'error':>7} {'fast phase':>10} {'error':>7}")
    for entry in manifest:
        profiled = measure(args.tandem, args.zoo, entry, args.threads, args.iterations, True)
        predicted = predict(args.predict, args.zoo, entry, plain)
        with_history = predict(args.predict, args.zoo, entry, history)
        measured_ms = statistics.median(round_medians[entry["name"]])
        fast_ms = statistics.median(round_fast[entry["name"]])
        row = {"model": entry["name"], "measured_ms": measured_ms, "fast_phase_ms": fast_ms,
               "predicted_ms": predicted["total_seconds"] * 1e3,
               "history_ms": with_history["total_seconds"] * 1e3,
               "bounds": predicted["bounds"]}
        row["error"] = relative_error(row["predicted_ms"], measured_ms)
        row["history_error"] = relative_error(row["history_ms"], measured_ms)
        row["fast_phase_error"] = relative_error(row["predicted_ms"], fast_ms)
        if calibrated:
            row["at_calibration_speed_ms"] = statistics.median(round_at_speed[entry["name"]])
            row["at_calibration_speed_error"] = relative_error(row["predicted_ms"],
                                                               row["at_calibration_speed_ms"])
        if args.baseline_profile or args.baseline_predict:
            baseline = predict(args.baseline_predict or args.predict, args.zoo, entry,
                               args.baseline_profile or plain)
            row["baseline_ms"] = baseline["total_seconds"] * 1e3
            row["baseline_error"] = relative_error(row["baseline_ms"], measured_ms)
            row["baseline_fast_phase_error"] = relative_error(row["baseline_ms"], fast_ms)
            print(f"{'':24} baseline {row['baseline_ms']:10.4f} "
                  f"{row['baseline_error']:7.1%}   fast phase {row['baseline_fast_phase_error']:7.1%}",
                  flush=True)
        rows.append(row)
        print(f"{row['model']:24} {measured_ms:11.4f} {row['predicted_ms']:10.4f} "
              f"{row['error']:7.1%} {row['history_ms']:10.4f} {row['history_error']:7.1%} "
              f"{fast_ms:10.4f} {row['fast_phase_error']:7.1%}", flush=True)
        for op in profiled["profile"]["op_types"]:
            op_type = op["op_type"]
            if op["time_per_run_s"] <= 0 or op_type not in predicted["op_types"]:
                continue
            op_row = {"model": entry["name"], "op_type": op_type, "calls": op["calls"],
                      "measured_ms": 1e3 * op["time_per_run_s"],
                      "predicted_ms": predicted["op_types"][op_type]["seconds"] * 1e3,
                      "history_ms": with_history["op_types"][op_type]["seconds"] * 1e3}
            op_row["error"] = relative_error(op_row["predicted_ms"], op_row["measured_ms"])
            op_row["history_error"] = relative_error(op_row["history_ms"], op_row["measured_ms"])
            op_rows.append(op_row)

    by_type = {}
    for op_row in op_rows:
        total = by_type.setdefault(op_row["op_type"], {"measured_ms": 0, "predicted_ms": 0,
                                                       "history_ms": 0, "models": 0})
        for key in ("measured_ms", "predicted_ms", "history_ms"):
            total[key] += op_row[key]
        total["models"] += 1
    print(f"\n{'op type':24} {'models':>6} {'measured ms':>11} {'predicted':>10} {'error':>7} "
          f"{'w/ history':>10} {'error':>7}")
    for op_type, total in sorted(by_type.items(), key=lambda item: -item[1]["measured_ms"]):
        total["error"] = relative_error(total["predicted_ms"], total["measured_ms"])
        total["history_error"] = relative_error(total["history_ms"], total["measured_ms"])
        print(f"{op_type:24} {total['models']:6} {total['measured_ms']:11.4f} "
              f"{total['predicted_ms']:10.4f} {total['error']:7.1%} {total['history_ms']:10.4f} "
              f"{total['history_error']:7.1%}")

    errors = {
        "model": summary([row["error"] for row in rows]),
        "model_with_history": summary([row["history_error"] for row in rows]),
        "model_vs_fast_phase": summary([row["fast_phase_error"] for row in rows]),
        **({"model_at_calibration_speed":
                summary([row["at_calibration_speed_error"] for row in rows])} if calibrated else {}),
        **({"model_on_baseline_profile": summary([row["baseline_error"] for row in rows]),
            "model_on_baseline_profile_vs_fast_phase":
                summary([row["baseline_fast_phase_error"] for row in rows])}
           if args.baseline_profile or args.baseline_predict else {}),
        "op_type_per_model": summary([row["error"] for row in op_rows]),
        "op_type_per_model_with_history": summary([row["history_error"] for row in op_rows]),
    }
    print()
    for name, stats in errors.items():
        print(f"{name:32} median {stats['median']:7.1%}  p90 {stats['p90']:7.1%}  (n={stats['count']})")

    medians = sorted(ms for ms, _ in reference_rounds)
    print(f"reference {REFERENCE_SIZE}^3 MatMul before each model: median "
          f"{statistics.median(medians):.3f} ms ({medians[0]:.3f}-{medians[-1]:.3f}); the "
          "profile's point " + (f"{calibrated:.3f} ms" if calibrated else "absent"))
    report = {"machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "threads": args.threads},
              "reference_matmul": {"size": REFERENCE_SIZE,
                                   "before_each_model_ms": [ms for ms, _ in reference_rounds],
                                   "before_each_model_fast_phase_ms":
                                       [fast for _, fast in reference_rounds],
                                   "profile_ms": calibrated},
              "profile_device": plain_device,
              "profile_figures": {row["figure"]: row["value"] for row in plain_summary},
              "load_average": {"before": load_before, "after": os.getloadavg()},
              "profiles": {"plain": plain, "history": history,
                           "baseline": args.baseline_profile,
                           "baseline_predict": args.baseline_predict},
              "iterations": args.iterations, "rounds": args.rounds, "errors": errors, "models": rows,
              "op_types": by_type, "op_types_per_model": op_rows}
    with open(args.json, "w") as f:
        json.dump(report, f, indent=2)
    print(f"load average (1, 5, 15 min) before measuring {load_before}, after {os.getloadavg()}")
    print(f"wrote {args.json}")

    if args.markdown:
        baseline = args.baseline_profile or args.baseline_predict
        extra = " baseline ms | error |" if baseline else ""
        at_speed = " at calibration speed ms | error |" if calibrated else ""
        print("\n| model | measured ms | predicted ms | error | with history ms | error "
              "| fast phase ms | error |" + at_speed + extra)
        print("|---|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if at_speed else "")
              + ("---:|---:|" if extra else ""))
        for row in rows:
            cells = (f" {row['at_calibration_speed_ms']:.4f} | "
                     f"{row['at_calibration_speed_error']:.1%} |" if calibrated else "")
            cells += (f" {row['baseline_ms']:.4f} | {row['baseline_error']:.1%} |"
                      if baseline else "")
            print(f"| {row['model']} | {row['measured_ms']:.4f} | {row['predicted_ms']:.4f} | "
                  f"{row['error']:.1%} | {row['history_ms']:.4f} | {row['history_error']:.1%} | "
                  f"{row['fast_phase_ms']:.4f} | {row['fast_phase_error']:.1%} |" + cells)
        print("\n| op type | models | measured ms | predicted ms | error | with history ms | error |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for op_type, total in sorted(by_type.items(), key=lambda item: -item[1]["measured_ms"]):
            print(f"| {op_type} | {total['models']} | {total['measured_ms']:.4f} | "
                  f"{total['predicted_ms']:.4f} | {total['error']:.1%} | {total['history_ms']:.4f} | "
                  f"{total['history_error']:.1%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
