#!/usr/bin/env python3
"""The real-size tier of the zoo (zoo/real, tools/make_real_zoo.py) through the command line.

For every model of zoo/real/manifest.json, with the reference inputs and ONNX Runtime's outputs:

    tandem run MODEL --input NAME=FILE.npy ... --expect NAME=FILE.npy ...
    tandem run MODEL --input ... --expect ... --cluster C --strategy S

for each cluster C (default: examples/clusters/{local,cpu-split,cpu-pjrt}.yaml) and each
strategy S that `tandem plan --help` lists (single:<the cluster's first device> for
single:<device>). Shapes come from the input files only: no --dim, no --shape. Where
`tandem run` has no --strategy, the plan is made by `tandem plan --strategy S -o plan.json`
(with the same --input files, or, where plan has no --input, --dim from the manifest) and run
with `tandem run --cluster C --plan plan.json`; auto is then `run --cluster C` alone.

A case passes when tandem exits 0 and its JSON report has a matching check for every output.
Where a strategy cannot apply -- data-parallel on a batch `tandem plan --json` reports as not
splittable, or on a one-device cluster -- the case passes only with the one-line refusal that
names the reason (exit 2), and a splittable model must run. Each cluster also runs
`--strategy pipeline --microbatches 2`.
Prints each case as it ends, a table model x path, the failures with the first line of their
error and their exit status, and "real tier: N cases, P passed, F failed"; exits 1 if any
failed, 2 when the tier is missing.

    .venv/bin/python tests/real/run_real_tier.py [--tandem build/tandem] [--only bert_fold,...]
        [--cluster local,cpu-split] [--jobs 1] [--plugin-env] [--results results.json]

Every command runs in an empty scratch folder with absolute paths, and the environment is passed
on without TANDEM_PJRT_PLUGIN and TANDEM_FAULT: with --plugin-env, TANDEM_PJRT_PLUGIN is set to
what scripts/pjrt-plugin.sh prints.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_CLUSTERS = ["local", "cpu-split", "cpu-pjrt"]
# the order cases are listed in; strategies the help lists beyond these come after them
STRATEGY_ORDER = ["single", "greedy", "heft", "pipeline", "data-parallel", "auto"]


def default_tandem():
    for candidate in ("build/tandem", "build/src/tandem"):
        path = os.path.join(REPO, candidate)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return os.path.join(REPO, "build/tandem")


def help_text(tandem, verb, env):
    result = subprocess.run([tandem, verb, "--help"], capture_output=True, text=True, timeout=60, env=env)
    return result.stdout + result.stderr


def option_description(help_out, option):
    """The description of one option in CLI11's help, continuation lines included."""
    lines = help_out.splitlines()
    for i, line in enumerate(lines):
        if re.match(rf"\s+(-\w,)?{re.escape(option)}\b", line):
            text = re.sub(rf"^\s+(-\w,)?{re.escape(option)}\s+\S+", "", line)
            for more in lines[i + 1:]:
                if re.match(r"\s+-", more) or not more.strip():
                    break
                text += " " + more.strip()
            return text
    return None


def listed_strategies(plan_help):
    text = option_description(plan_help, "--strategy")
    if text is None:
        raise SystemExit("run_real_tier: `tandem plan --help` has no --strategy")
    words = re.findall(r"[a-z][a-z0-9-]*(?::<[^>]+>)?", text)
    strategies = [w for w in words if w not in ("or", "and", "the", "text", "with", "a", "of")]
    strategies = list(dict.fromkeys(strategies))
    if len(strategies) < 2:
        raise SystemExit(f"run_real_tier: cannot read the strategies from `tandem plan --help`: {text!r}")
    rank = {name: i for i, name in enumerate(STRATEGY_ORDER)}
    return sorted(strategies, key=lambda s: rank.get(s.split(":")[0], len(rank)))


def cluster_path(examples, name):
    if os.path.sep in name or name.endswith((".yaml", ".yml")):
        return os.path.abspath(name)
    return os.path.join(examples, name + ".yaml")


def first_device(tandem, cluster, env, cwd):
    result = subprocess.run([tandem, "devices", "--cluster", cluster, "--json"], capture_output=True,
                            text=True, timeout=60, env=env, cwd=cwd)
    if result.returncode == 0:
        try:
            return json.loads(result.stdout)["devices"][0]["id"], None
        except (ValueError, KeyError, IndexError):
            pass
    return None, first_error_line(result.stdout, result.stderr) + f" (tandem devices, exit {result.returncode})"


def first_error_line(stdout, stderr):
    for text in (stderr, stdout):
        for line in text.splitlines():
            if line.startswith("tandem: "):
                return line.strip()
    for text in (stderr, stdout):
        for line in text.splitlines():
            if line.strip():
                return line.strip()
    return "(no output)"


def checks_of(stdout):
    """The `checks` of a `--json` report: {output name: matches}; None if there is no report."""
    start = stdout.find("{")
    if start < 0:
        return None
    try:
        report = json.loads(stdout[start:])
    except ValueError:
        return None
    if not isinstance(report, dict) or not isinstance(report.get("checks"), list):
        return None
    return {c.get("output"): bool(c.get("matches")) for c in report["checks"] if isinstance(c, dict)}


def output_file(folder, name):
    """Where `tandem run --output-dir` writes an output (its file_name_for)."""
    return os.path.join(folder, re.sub(r"[/\\: ]", "_", name) + ".npy")


def compare(actual_path, expected_path):
    """The driver's own check of an output, by Tandem's documented rule (floats: rtol 1e-3,
    atol 1e-4 x max|reference|; integers and booleans exactly). None when it matches."""
    import numpy as np
    if not os.path.isfile(actual_path):
        return "no output file written"
    a, b = np.load(actual_path), np.load(expected_path)
    if a.dtype != b.dtype:
        return f"dtype {a.dtype}, expected {b.dtype}"
    if a.shape != b.shape:
        return f"shape {list(a.shape)}, expected {list(b.shape)}"
    if b.size == 0:
        return None
    if b.dtype.kind == "f":
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        excess = np.abs(a64 - b64) - (1e-3 * np.abs(b64) + 1e-4 * float(np.max(np.abs(b64))))
        excess[np.isnan(a64) != np.isnan(b64)] = np.inf
        bad = ~(excess <= 0)
        bad[np.isnan(a64) & np.isnan(b64)] = False
    else:
        excess = (a != b).astype(np.float64)
        bad = a != b
    if not bad.any():
        return None
    worst = np.unravel_index(int(np.argmax(np.where(bad, excess, -np.inf))), b.shape)
    return (f"{int(bad.sum())} of {b.size} elements differ, worst at {list(map(int, worst))}: "
            f"{a[worst]!r} vs expected {b[worst]!r}").replace("np.float32(", "").replace("np.int64(", "")


class Case:
    def __init__(self, model, path, steps, expected, outdir):
        self.model, self.path, self.steps, self.expected, self.outdir = model, path, steps, expected, outdir
        self.status, self.error, self.seconds, self.rc = None, "", 0.0, None
        # where the strategy cannot apply (a batch Tandem proved unsplittable, one device): the
        # one-line refusal it must give instead, (exit status, words it must contain)
        self.refusal = None

    def fail(self, rc, error):
        self.status, self.rc, self.error = "FAIL", rc, error
        return self


def differences(case):
    found = []
    for name, expected in case.expected.items():
        problem = compare(output_file(case.outdir, name), expected)
        if problem:
            found.append(f"{name}: {problem}")
    return found


def run_case(case, env, timeout, cwd):
    start = time.time()
    try:
        for i, (label, argv) in enumerate(case.steps):
            last = i == len(case.steps) - 1
            try:
                result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)
            except subprocess.TimeoutExpired:
                return case.fail("timeout", f"{label}: no result after {timeout} s")
            except OSError as error:  # e.g. the binary being relinked under us
                return case.fail("-", f"{label}: cannot run {argv[0]}: {error}")
            if last and case.refusal:
                rc, words = case.refusal
                line = first_error_line(result.stdout, result.stderr)
                if result.returncode == rc and all(w in line for w in words) \
                        and len(result.stderr.strip().splitlines()) == 1:
                    case.status, case.error = "refused", line
                    return case
                return case.fail(result.returncode, f"expected a one-line refusal (exit {rc}, "
                                 f"{' '.join(words)!r}), got: {line}")
            if not last:
                if result.returncode != 0:
                    return case.fail(result.returncode, f"{label}: " + first_error_line(result.stdout, result.stderr))
                continue
            if result.returncode == 1:  # outputs differ: say where
                diffs = differences(case)
                line = first_error_line("", result.stderr) if result.stderr.strip() else ""
                return case.fail(1, line if line.startswith("tandem: mismatch") or not diffs
                                 else "mismatch: " + "; ".join(diffs))
            if result.returncode != 0:
                return case.fail(result.returncode, first_error_line(result.stdout, result.stderr))
            checks = checks_of(result.stdout)
            if checks is None:
                return case.fail(0, "exit 0 but no JSON report with checks: " + first_error_line(result.stdout, ""))
            missing = [o for o in case.expected if o not in checks]
            wrong = [o for o in case.expected if checks.get(o) is False]
            if missing or wrong:
                return case.fail(0, "exit 0 but " + ", ".join(
                    ([f"no check of {', '.join(missing)}"] if missing else []) +
                    ([f"{', '.join(wrong)} did not match"] if wrong else [])))
            diffs = differences(case)  # tandem's own verdict, checked
            if diffs:
                return case.fail(0, "tandem reports a match, but " + "; ".join(diffs))
        case.status = "pass"
        return case
    finally:
        case.seconds = time.time() - start
        shutil.rmtree(case.outdir, ignore_errors=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tandem", default=None, help="the tandem binary (default: build/tandem, else build/src/tandem)")
    ap.add_argument("--zoo", default=os.path.join(REPO, "zoo", "real"), help="the tier's folder (default: zoo/real)")
    ap.add_argument("--examples", default=os.path.join(REPO, "examples", "clusters"),
                    help="folder of the cluster files named by --cluster")
    ap.add_argument("--only", default="", help="comma-separated models of the manifest")
    ap.add_argument("--cluster", default=",".join(DEFAULT_CLUSTERS),
                    help="comma-separated cluster names (in --examples) or files; '' for the plain run only "
                         "(default: %(default)s)")
    ap.add_argument("--jobs", type=int, default=1, help="cases run at once (default 1: timings stay honest)")
    ap.add_argument("--plugin-env", action="store_true",
                    help="set TANDEM_PJRT_PLUGIN to what scripts/pjrt-plugin.sh prints (default: unset)")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per command (default 900)")
    ap.add_argument("--warmup", type=int, default=0, help="tandem run --warmup (default 0)")
    ap.add_argument("--iterations", type=int, default=1, help="tandem run --iterations (default 1)")
    ap.add_argument("--results", default="", help="also write the results as JSON here")
    args = ap.parse_args(argv)

    tandem = os.path.abspath(args.tandem or default_tandem())
    args.zoo, args.examples = os.path.abspath(args.zoo), os.path.abspath(args.examples)
    if not os.path.isfile(tandem):
        print(f"run_real_tier: no tandem binary at {tandem} (build it first)", file=sys.stderr)
        return 2
    manifest_path = os.path.join(args.zoo, "manifest.json")
    if not os.path.isfile(manifest_path):
        print(f"run_real_tier: no {manifest_path}: run scripts/setup.sh (or tools/make_real_zoo.py)",
              file=sys.stderr)
        return 2
    with open(manifest_path) as f:
        manifest = json.load(f)
    only = [n for n in args.only.split(",") if n]
    unknown = [n for n in only if n not in {e["name"] for e in manifest}]
    if unknown:
        print(f"run_real_tier: not in {manifest_path}: {', '.join(unknown)}", file=sys.stderr)
        return 2
    entries = [e for e in manifest if not only or e["name"] in only]

    env = dict(os.environ)
    env.pop("TANDEM_PJRT_PLUGIN", None)
    env.pop("TANDEM_FAULT", None)
    if args.plugin_env:
        plugin = subprocess.run(["bash", os.path.join(REPO, "scripts", "pjrt-plugin.sh")],
                                capture_output=True, text=True)
        if plugin.returncode != 0:
            print(f"run_real_tier: --plugin-env: {plugin.stderr.strip()}", file=sys.stderr)
            return 2
        env["TANDEM_PJRT_PLUGIN"] = plugin.stdout.strip()

    try:
        run_help = help_text(tandem, "run", env)
        plan_help = help_text(tandem, "plan", env)
    except (OSError, subprocess.SubprocessError) as error:
        print(f"run_real_tier: cannot run {tandem}: {error}", file=sys.stderr)
        return 2
    strategies = listed_strategies(plan_help)
    run_has_strategy = option_description(run_help, "--strategy") is not None
    plan_has_input = option_description(plan_help, "--input") is not None
    clusters = [c for c in args.cluster.split(",") if c]
    print(f"run_real_tier: {tandem}")
    print(f"run_real_tier: {len(entries)} models from {manifest_path}; clusters: {', '.join(clusters) or 'none'}; "
          f"strategies (tandem plan --help): {', '.join(strategies)}")
    print("run_real_tier: " + ("run --cluster C --strategy S" if run_has_strategy else
                               "plan --strategy S -o plan.json (" + ("--input" if plan_has_input else "--dim") +
                               "), then run --cluster C --plan plan.json")
          + (f"; TANDEM_PJRT_PLUGIN={env['TANDEM_PJRT_PLUGIN']}" if args.plugin_env else
             "; TANDEM_PJRT_PLUGIN unset"), flush=True)

    scratch = tempfile.TemporaryDirectory(prefix="tandem-real-")
    # every command runs in an empty folder, with absolute paths: nothing may depend on where
    # the user happens to stand (e.g. on a .venv next to them)
    workdir = os.path.join(scratch.name, "cwd")
    os.makedirs(workdir)
    cluster_files, single_devices = {}, {}
    setup_errors = {}
    for name in clusters:
        path = cluster_path(args.examples, name)
        cluster_files[name] = path
        device, error = first_device(tandem, path, env, workdir)
        single_devices[name] = device
        if error:
            setup_errors[name] = error

    def devices_of(path):
        result = subprocess.run([tandem, "devices", "--cluster", path, "--json"], capture_output=True,
                                text=True, env=env, cwd=workdir)
        try:
            return len(json.loads(result.stdout)["devices"])
        except (ValueError, KeyError, TypeError):
            return 0

    def batch_split_of(model, inputs, cluster):
        """What `tandem plan` says of the model's batch: the split, or why it cannot be split.

        Asked of a greedy plan, one of the baselines every plan is compared with: the batch's
        split does not depend on the strategy, and auto's local search, the default's, costs
        minutes on the detector under the sanitizers (its own cases run it). Auto only where
        greedy finds no plan."""
        for strategy in (["--strategy", "greedy"], []):
            result = subprocess.run([tandem, "plan", model, *inputs, "--cluster", cluster, *strategy, "--json"],
                                    capture_output=True, text=True, env=env, cwd=workdir)
            try:
                return json.loads(result.stdout)["batch_split"]
            except (ValueError, KeyError, TypeError):
                continue
        return None

    device_count = {name: devices_of(cluster_files[name]) for name in clusters}
    cases = []
    for entry in entries:
        model = os.path.join(args.zoo, entry["path"])
        inputs = [a for i in entry["inputs"] for a in ("--input", f"{i['name']}={os.path.join(args.zoo, i['file'])}")]
        expected = {o["name"]: os.path.join(args.zoo, o["file"]) for o in entry["outputs"]}
        expects = [a for name, file in expected.items() for a in ("--expect", f"{name}={file}")]
        timing = ["--warmup", str(args.warmup), "--iterations", str(args.iterations), "--json"]

        def new_case(path, steps):
            outdir = os.path.join(scratch.name, "out", f"{len(cases)}")
            steps[-1][1].extend(["--output-dir", outdir])
            case = Case(entry["name"], path, steps, expected, outdir)
            cases.append(case)
            return case

        run = [tandem, "run", model, *inputs, *expects, *timing]
        new_case("run", [("run", list(run))])
        split = batch_split_of(model, inputs, cluster_files[clusters[0]]) if clusters else None
        splittable = bool(split and split.get("splittable"))
        if clusters:
            print(f"run_real_tier: {entry['name']}: batch " + (
                f"{split['samples']} along '{split['dim']}', splittable" if splittable else
                f"not split ({split['why_not'] if split else 'tandem plan gave no batch_split'})"), flush=True)
        for cname in clusters:
            cfile = cluster_files[cname]
            if run_has_strategy:
                # micro-batches: split where the batch splits, and one micro-batch (said so) where not
                new_case(f"{cname}/pipeline/mb2",
                         [("run", run + ["--cluster", cfile, "--strategy", "pipeline", "--microbatches", "2"])])
            for strategy in strategies:
                if strategy.startswith("single:"):
                    strategy = f"single:{single_devices[cname] or '?'}"
                path = f"{cname}/{strategy}"
                if cname in setup_errors and strategy.startswith("single:"):
                    new_case(path, [("run", [])]).fail("-", setup_errors[cname])
                    continue
                if run_has_strategy:
                    steps = [("run", run + ["--cluster", cfile, "--strategy", strategy])]
                elif strategy == "auto":
                    steps = [("run", run + ["--cluster", cfile])]
                else:
                    plan_file = os.path.join(scratch.name, f"{entry['name']}.{cname}.{strategy.replace(':', '_')}.json")
                    shapes = inputs if plan_has_input else \
                        [a for k, v in entry["dims"].items() for a in ("--dim", f"{k}={v}")]
                    steps = [("plan", [tandem, "plan", model, *shapes, "--cluster", cfile, "--strategy", strategy,
                                       "-o", plan_file]),
                             ("run", run + ["--cluster", cfile, "--plan", plan_file])]
                case = new_case(path, steps)
                if strategy == "data-parallel" and split is not None:
                    if not splittable:
                        case.refusal = (2, ["--strategy data-parallel", "the batch cannot be split"])
                    elif device_count[cname] < 2:
                        case.refusal = (2, ["--strategy data-parallel", "two or more devices"])

    total = len(cases)
    done = [0]
    lock = threading.Lock()
    started = time.time()

    def report(case):
        with lock:
            done[0] += 1
            result = {"pass": "pass", "refused": f"refused as expected: {case.error}"}.get(
                case.status, f"FAIL(exit {case.rc}: {case.error})")
            print(f"[{done[0]:3d}/{total}] {case.model:22s} {case.path:28s} {case.seconds:6.1f} s  {result}",
                  flush=True)

    todo = [c for c in cases if c.status is None]
    for c in cases:
        if c.status is not None:
            report(c)
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for case in pool.map(lambda c: run_case(c, env, args.timeout, workdir), todo):
            report(case)
    scratch.cleanup()

    # the table: one row per model, one column per path
    paths = list(dict.fromkeys(c.path for c in cases))
    models = list(dict.fromkeys(c.model for c in cases))
    cell = {(c.model, c.path): (f"ok {c.seconds:.1f}" if c.status == "pass" else
                                "n/a" if c.status == "refused" else f"F{c.rc} {c.seconds:.1f}")
            for c in cases}
    width = max(8, max(len(p) for p in paths)) if paths else 8
    mw = max(len(m) for m in models) if models else 5
    print("\nreal tier: model x path (ok SECONDS; n/a: refused as expected, the strategy cannot apply; "
          "or F<exit status> SECONDS)")
    for c0 in range(0, len(paths), 7):
        chunk = paths[c0:c0 + 7]
        print(f"{'model':{mw}s}  " + "  ".join(f"{p:>{width}s}" for p in chunk))
        for m in models:
            print(f"{m:{mw}s}  " + "  ".join(f"{cell.get((m, p), '-'):>{width}s}" for p in chunk))
        print()
    failed = [c for c in cases if c.status not in ("pass", "refused")]
    refused = sum(c.status == "refused" for c in cases)
    if failed:
        print("failures (model, path, exit status: first line of the error):")
        for c in failed:
            print(f"  {c.model:{mw}s}  {c.path:28s} exit {c.rc}: {c.error}")
        print()
    if args.results:
        with open(args.results, "w") as f:
            json.dump([{"model": c.model, "path": c.path, "status": c.status, "exit": c.rc, "error": c.error,
                        "seconds": round(c.seconds, 2),
                        "commands": [" ".join(argv) for _, argv in c.steps]} for c in cases], f, indent=2)
            f.write("\n")
    passed = total - len(failed)
    print(f"run_real_tier: {time.time() - started:.0f} s")
    print(f"real tier: {total} cases, {passed} passed ({refused} of them refused as expected: the "
          f"strategy cannot apply), {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
