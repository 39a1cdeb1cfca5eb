"""The PJRT path on the xla-cpu-pjrt plugin: compile time per segment, the executable cache's hit
rate, and each zoo model run whole on PJRT-CPU against Tandem's own CPU backend and ONNX Runtime,
latency and peak memory.

Per model: the model is planned whole onto pjrt0 of examples/clusters/cpu-pjrt.yaml (one segment,
one program) and run with a fresh executable cache (cold: compiled); then, in --rounds rounds, a
new process loads the program from the disk cache (warm) beside a process of the CPU backend, one
after the other, so that noise hits both. Latencies are medians of in-process timings: Tandem's
from `run --json`, ORT's around InferenceSession.run; memory is each process's peak resident set
(the plugin's code, the model and every buffer). A model the PJRT device cannot run alone (an op
with no StableHLO lowering, control flow) is listed with the reason `tandem plan` gives.

Usage: .venv/bin/python bench/pjrt_bench.py [--zoo zoo/real] [--iterations 30] [--rounds 3]
                                            [--models a,b] [--json bench/pjrt_results.json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_bench import cpu_model, time_ort  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STATIC_MODELS = ["mlp", "bert", "resnet", "mobilenet", "dlrm", "tv_resnet18",
                 "tv_mobilenet_v3_small"]


def plugin_path():
    return subprocess.run(["bash", os.path.join(REPO, "scripts", "pjrt-plugin.sh")],
                          capture_output=True, text=True, check=True).stdout.strip()


def model_args(zoo, entry):
    args = [os.path.join(zoo, entry["path"])]
    for name, size in entry["dims"].items():
        args += ["--dim", f"{name}={size}"]
    return args


def input_args(zoo, entry):
    """The input files: they bind the shapes the dims leave open (a recommender's index counts)."""
    args = []
    for spec in entry["inputs"]:
        args += ["--input", f"{spec['name']}={os.path.join(zoo, spec['file'])}"]
    return args


def io_args(zoo, entry):
    args = input_args(zoo, entry)
    for spec in entry["outputs"]:
        args += ["--expect", f"{spec['name']}={os.path.join(zoo, spec['file'])}"]
    return args


def tandem(binary, *args, env):
    """stdout and the peak resident set in MiB of one `tandem` process."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen([binary, *args], stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if process.returncode != 0:
            raise RuntimeError(f"tandem {' '.join(args[:2])} failed: "
                               f"{err.read().decode().strip()}")
        return out.read().decode(), usage.ru_maxrss / 1024.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tandem", default=os.path.join(REPO, "build", "src", "tandem"))
    parser.add_argument("--zoo", default=os.path.join(REPO, "zoo"))
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--models", default="",
                        help="comma-separated (default: the small tier's static models, or every "
                             "model of another tier)")
    parser.add_argument("--json", default="")
    args = parser.parse_args()

    cluster = os.path.join(REPO, "examples", "clusters", "cpu-pjrt.yaml")
    with open(os.path.join(args.zoo, "manifest.json")) as f:
        manifest = {entry["name"]: entry for entry in json.load(f)}
    small_tier = os.path.abspath(args.zoo) == os.path.join(REPO, "zoo")
    names = (args.models.split(",") if args.models
             else STATIC_MODELS if small_tier else list(manifest))
    rows, not_alone = [], []
    totals = {"lookups": 0, "hits": 0}
    header = (f"{'model':22} {'compile s':>9} {'load ms':>8} {'pjrt ms':>9} {'tandem ms':>9} "
              f"{'ORT ms':>8} {'pjrt/tandem':>11} {'pjrt/ORT':>8} {'pjrt MiB':>8} "
              f"{'tandem MiB':>10} {'mem ratio':>9}")
    print(header)
    for name in names:
        entry = manifest[name]
        with tempfile.TemporaryDirectory() as folder:
            env = dict(os.environ, TANDEM_PJRT_PLUGIN=plugin_path(),
                       TANDEM_CACHE_DIR=os.path.join(folder, "cache"))
            plan = os.path.join(folder, "plan.json")
            try:
                tandem(args.tandem, "plan", *model_args(args.zoo, entry),
                       *input_args(args.zoo, entry), "--cluster", cluster,
                       "--strategy", "single:pjrt0", "-o", plan, env=env)
            except RuntimeError as error:
                reason = str(error).split("(", 1)[-1].rsplit(")", 1)[0]
                not_alone.append({"model": name, "reason": reason})
                print(f"{name:22} not run alone on PJRT: {reason}", flush=True)
                continue
            run = [*model_args(args.zoo, entry), *io_args(args.zoo, entry), "--cluster",
                   cluster, "--plan", plan, "--json", "--iterations", str(args.iterations)]
            native_run = [*model_args(args.zoo, entry), *io_args(args.zoo, entry), "--json",
                          "--iterations", str(args.iterations)]
            cold = json.loads(tandem(args.tandem, "run", *run, env=env)[0])
            warm, native = [], []
            for _ in range(args.rounds):
                warm.append(tandem(args.tandem, "run", *run, env=env))
                native.append(tandem(args.tandem, "run", *native_run, env=env))
        warm_reports = [json.loads(out) for out, _ in warm]
        native_reports = [json.loads(out) for out, _ in native]
        for report in [cold, *warm_reports]:
            if not all(check["matches"] for check in report["checks"]):
                raise RuntimeError(f"{name}: PJRT outputs differ from ONNX Runtime's")
        compiled = [r["plan"]["compiled"][0] for r in warm_reports]
        lookups = sum(c["compiles"] + c["disk_hits"] + c["memory_hits"] for c in compiled)
        hits = sum(c["disk_hits"] + c["memory_hits"] for c in compiled)
        totals["lookups"] += lookups
        totals["hits"] += hits
        options = ort.SessionOptions()
        options.intra_op_num_threads = os.cpu_count()
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(os.path.join(args.zoo, entry["path"]), options,
                                       providers=["CPUExecutionProvider"])
        feeds = {spec["name"]: np.load(os.path.join(args.zoo, spec["file"]))
                 for spec in entry["inputs"]}
        ort_ms = statistics.median(time_ort(session, feeds, args.iterations))
        pjrt_ms = 1e3 * statistics.median(r["latency"]["median_s"] for r in warm_reports)
        tandem_ms = 1e3 * statistics.median(r["latency"]["median_s"] for r in native_reports)
        pjrt_mib = statistics.median(rss for _, rss in warm)
        tandem_mib = statistics.median(rss for _, rss in native)
        row = {"model": name,
               "segments": cold["plan"]["segments"],
               "compile_seconds": cold["plan"]["compiled"][0]["compile_s"],
               "programs_compiled": cold["plan"]["compiled"][0]["compiles"],
               "load_ms": 1e3 * statistics.median(c["load_s"] for c in compiled),
               "cache_hit_rate": hits / lookups if lookups else 0.0,
               "pjrt_median_ms": pjrt_ms,
               "tandem_cpu_median_ms": tandem_ms,
               "ort_median_ms": ort_ms,
               "pjrt_peak_rss_mib": pjrt_mib,
               "tandem_cpu_peak_rss_mib": tandem_mib}
        rows.append(row)
        print(f"{name:22} {row['compile_seconds']:9.3f} {row['load_ms']:8.1f} {pjrt_ms:9.3f} "
              f"{tandem_ms:9.3f} {ort_ms:8.3f} {pjrt_ms / tandem_ms:11.2f} {pjrt_ms / ort_ms:8.2f} "
              f"{pjrt_mib:8.0f} {tandem_mib:10.0f} {pjrt_mib / tandem_mib:9.2f}", flush=True)
    if rows:
        geomean = statistics.geometric_mean(r["pjrt_median_ms"] / r["tandem_cpu_median_ms"]
                                            for r in rows)
        worst = max(rows, key=lambda r: r["pjrt_median_ms"] / r["tandem_cpu_median_ms"])
        print(f"PJRT / Tandem CPU: geometric mean {geomean:.2f}x, worst {worst['model']} "
              f"{worst['pjrt_median_ms'] / worst['tandem_cpu_median_ms']:.2f}x")
    rate = totals["hits"] / totals["lookups"] if totals["lookups"] else 0.0
    print(f"executable cache hit rate over the warm runs: {rate:.0%} "
          f"({totals['hits']} of {totals['lookups']} lookups)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": {"cpu": cpu_model(), "cores": os.cpu_count(),
                                   "onnxruntime": ort.__version__},
                       "plugin": "xla-cpu-pjrt 0.0.1", "iterations": args.iterations,
                       "rounds": args.rounds, "models": rows, "not_run_alone": not_alone,
                       "cache_hit_rate": rate}, f, indent=2)
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
