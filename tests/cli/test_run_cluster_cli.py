"""`tandem run --cluster` as a user meets it: a plan run across devices, its measured timeline,
measured against predicted, injected faults, failover, and the options it needs."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

TANDEM = ""
ZOO = ""
EXAMPLES = ""


def tandem(*args, fault=None):
    env = dict(os.environ)
    env.pop("TANDEM_FAULT", None)
    if fault:
        env["TANDEM_FAULT"] = fault
    return subprocess.run([TANDEM, *args], capture_output=True, text=True, timeout=60, env=env)


def entry_of(name):
    with open(os.path.join(ZOO, "manifest.json")) as f:
        return next(e for e in json.load(f) if e["name"] == name)


def model_and_dims(name):
    entry = entry_of(name)
    args = [os.path.join(ZOO, entry["path"])]
    for dim, size in entry["dims"].items():
        args += ["--dim", f"{dim}={size}"]
    return args


def model_args(name):
    """The model, its dims, the zoo's inputs and ONNX Runtime's outputs to match."""
    entry = entry_of(name)
    args = model_and_dims(name)
    for output in entry["outputs"]:
        args += ["--expect", f"{output['name']}={os.path.join(ZOO, output['file'])}"]
    for given in entry["inputs"]:
        args += ["--input", f"{given['name']}={os.path.join(ZOO, given['file'])}"]
    return args


SPLIT = ["--cluster", "", "--warmup", "0", "--iterations", "1"]
# A plan on both of cpu-split's devices (auto may take the machine as one device instead).
BOTH = ["--strategy", "data-parallel"]


class RunCluster(unittest.TestCase):
    def setUp(self):
        SPLIT[1] = os.path.join(EXAMPLES, "cpu-split.yaml")

    def test_auto_plan_matches_the_reference_and_shows_measured_against_predicted(self):
        with tempfile.TemporaryDirectory() as folder:
            trace = os.path.join(folder, "trace.json")
            result = tandem("run", *model_args("resnet"), *SPLIT, "--trace", trace, "--json")
            self.assertEqual(result.returncode, 0, result.stderr)
            devices = [d["id"] for d in json.loads(result.stdout)["plan"]["devices"]]
            self.assertTrue(devices in (["cpu0", "cpu1"], ["local.cpu"]), devices)
            text = tandem("run", *model_args("resnet"), *SPLIT).stdout
            for words in ("measured", "predicted", "error", devices[0] + " busy",
                          "latency (median)", "logits: matches"):
                self.assertIn(words, text)
            with open(trace) as f:
                events = json.load(f)["traceEvents"]
            names = {e["args"]["name"] for e in events if e.get("name") == "thread_name"}
            self.assertIn(devices[0] + " compute", names)
            self.assertTrue(any(e.get("ph") == "X" for e in events))

    def test_the_same_report_as_one_device(self):
        single = json.loads(tandem("run", *model_args("resnet"), "--iterations", "3", "--json").stdout)
        result = tandem("run", *model_args("resnet"), *SPLIT[:2], "--iterations", "3", "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        cluster = json.loads(result.stdout)
        # Everything one device reports, but the arena (each segment has its own).
        self.assertEqual(set(single) - {"memory"}, set(cluster) - {"plan"})
        self.assertEqual(set(single["latency"]), set(cluster["latency"]))
        self.assertEqual([c["matches"] for c in cluster["checks"]], [True])
        self.assertEqual([o["shape"] for o in cluster["outputs"]], [o["shape"] for o in single["outputs"]])
        self.assertEqual(cluster["runs"], 3)
        # Busy time is a median over the timed runs, as the latency is: a device cannot be busier.
        plan = cluster["plan"]
        self.assertTrue(all(d["busy_s"] <= cluster["latency"]["max_s"] for d in plan["devices"]), plan)
        self.assertIsInstance(plan["segments"], int)
        text = tandem("run", *model_args("resnet"), *SPLIT[:2], *BOTH, "--iterations", "3").stdout
        for word in ("p95", "p99", "stddev", "samples/s", "cpu0 busy (median)", "logits: matches"):
            self.assertIn(word, text)

    def test_profile_of_a_cluster_run_names_each_nodes_device(self):
        result = tandem("run", *model_args("resnet"), *SPLIT[:2], "--strategy", "pipeline",
                        "--microbatches", "2", "--iterations", "2", "--profile", "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        report = json.loads(result.stdout)
        nodes = report["profile"]["nodes"]
        self.assertEqual(len(nodes), 13)  # the fused graph's nodes, each once
        self.assertEqual({n["device"] for n in nodes}, {"cpu0", "cpu1"})
        # Each node ran once per micro-batch in every run.
        self.assertEqual(sum(t["calls"] for t in report["profile"]["op_types"]), 2 * 13)
        self.assertTrue(all(n["time_per_run_s"] > 0 for n in nodes if n["op_type"] != "Flatten"))

    def test_every_segment_measured_beside_predicted_and_misses_flagged(self):
        result = tandem("run", *model_args("resnet"), *SPLIT[:2], "--strategy", "pipeline",
                        "--iterations", "3", "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        plan = json.loads(result.stdout)["plan"]
        checks = plan["segment_checks"]
        self.assertEqual(len(checks), plan["segments"])
        self.assertEqual({c["device"] for c in checks}, {"cpu0", "cpu1"})
        self.assertEqual(sum(c["nodes"] for c in checks), 13)  # the fused graph's nodes
        for check in checks:
            self.assertGreater(check["measured_s"], 0)
            self.assertGreater(check["predicted_s"], 0)
            error = abs(check["measured_s"] - check["predicted_s"]) / check["predicted_s"]
            self.assertEqual(check["off"], error > 0.25, check)
        # A segment's median time fits in a run's.
        self.assertLessEqual(max(c["measured_s"] for c in checks),
                             json.loads(result.stdout)["latency"]["max_s"])
        text = tandem("run", *model_args("resnet"), *SPLIT[:2], "--strategy", "pipeline",
                      "--iterations", "3").stdout
        self.assertRegex(text, r"segments    (all \d+ within 25% of their prediction|"
                               r"\d+ of \d+ off their prediction by more than 25%)")

    def calibrated_split(self, folder, *calibrate_args):
        """A quick calibration in FOLDER/cpu.json, and FOLDER/split.yaml: cpu0 naming it, cpu1
        its preset only, one core each."""
        profile = os.path.join(folder, "cpu.json")
        made = tandem("calibrate", *calibrate_args, "-o", profile, "--quick")
        self.assertEqual(made.returncode, 0, made.stderr)
        cluster = os.path.join(folder, "split.yaml")
        with open(cluster, "w") as f:
            f.write("hosts: [local]\ndevices:\n"
                    "  - {id: cpu0, preset: cpu-generic-avx2, host: local, backend: cpu, "
                    "cores: 1, profile: cpu.json}\n"
                    "  - {id: cpu1, preset: cpu-generic-avx2, host: local, backend: cpu, "
                    "cores: 1}\n")
        return profile, cluster

    def test_calibrate_from_run_folds_the_measured_op_times_into_the_profile(self):
        with tempfile.TemporaryDirectory() as folder:
            profile, cluster = self.calibrated_split(folder)
            with open(profile) as f:
                before = json.load(f)
            single = ["plan", *model_and_dims("resnet"), "--cluster", cluster, "--strategy",
                      "single:cpu0", "--json"]
            predicted_before = json.loads(tandem(*single).stdout)["predicted"]["latency_s"]
            # Pinned, so that both devices run ops whatever this machine's calibration says
            # (a pipeline put every op on the preset device when the profile priced cpu0 slow).
            plan = os.path.join(folder, "plan.json")
            made = tandem("plan", *model_and_dims("resnet"), "--cluster", cluster, "--strategy",
                          "greedy", "--pin", "*=cpu0", "--pin", "Gemm=cpu1", "-o", plan)
            self.assertEqual(made.returncode, 0, made.stderr)
            result = tandem("run", "--plan", plan, "--iterations", "3", "--calibrate-from-run")
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertRegex(result.stderr, r"calibrated: \d+ op times measured on cpu0 folded into")
            self.assertRegex(result.stderr, r"calibrated: cpu1 names no profile; its \d+ op times")
            with open(profile) as f:
                after = json.load(f)
            folded = int(re.search(r"calibrated: (\d+) op times", result.stderr).group(1))
            self.assertGreater(folded, 0)
            self.assertEqual(len(after["op_seconds"]), len(before.get("op_seconds", {})) + folded)
            self.assertEqual(after["figures"], before["figures"])
            # The next plan prices those ops as they ran: cpu0's prediction moves to the
            # measured op times (it cannot be the roofline's to the nanosecond).
            planned = tandem(*single)
            self.assertEqual(planned.returncode, 0, planned.stderr)
            self.assertNotEqual(json.loads(planned.stdout)["predicted"]["latency_s"],
                                predicted_before)
            # A split batch is refused before any work, naming why.
            split = tandem("run", *model_args("resnet"), "--cluster", cluster, "--strategy",
                           "pipeline", "--microbatches", "2", "--calibrate-from-run")
            self.assertEqual(split.returncode, 2)
            self.assertIn("micro-batches", split.stderr)
        # A cluster without profiles has nothing to fold into.
        none = tandem("run", *model_args("resnet"), *SPLIT[:2], "--calibrate-from-run")
        self.assertEqual(none.returncode, 2)
        self.assertIn("no device names a profile", none.stderr)

    def test_the_calibrations_speed_reference_is_timed_again_after_the_runs(self):
        with tempfile.TemporaryDirectory() as folder:
            profile, cluster = self.calibrated_split(folder, "--threads", "1")
            with open(profile) as f:
                calibrated = json.load(f)
            reference = calibrated["speed_reference"]["value"]
            run = ["run", *model_args("mlp"), "--cluster", cluster, "--strategy", "single:cpu0",
                   "--iterations", "3"]
            result = tandem(*run, "--json")
            self.assertEqual(result.returncode, 0, result.stderr)
            checks = json.loads(result.stdout)["plan"]["speed_checks"]
            # cpu0 ran and names a profile that timed it; cpu1 neither.
            self.assertEqual([c["device"] for c in checks], ["cpu0"])
            self.assertEqual(checks[0]["calibrated_s"], reference)
            self.assertGreater(checks[0]["now_s"], 0)
            self.assertEqual(checks[0]["moved"], abs(checks[0]["now_s"] / reference - 1) > 0.1)
            # A profile whose reference ran a hundred times faster than this machine can: the
            # run says the machine is slower than its profile, by how much.
            calibrated["speed_reference"]["value"] = reference / 100
            with open(profile, "w") as f:
                json.dump(calibrated, f)
            report = os.path.join(folder, "report.html")
            text = tandem(*run, "--report", report).stdout
            self.assertRegex(text, r"speed       cpu0 ran its calibration's speed reference "
                                   r"\(a 256\^3 product\) in .*, \d+\.\d\dx its .* at "
                                   r"calibration: the machine runs slower than when calibrated")
            # The HTML report says it too, under the segments.
            with open(report) as f:
                html = f.read()
            self.assertRegex(html, r'<p class="speed" data-moved>cpu0 ran its calibration\'s '
                                   r"speed reference .* the machine runs slower than when "
                                   r"calibrated")
            # A profile from before the reference was kept: nothing to check.
            del calibrated["speed_reference"]
            with open(profile, "w") as f:
                json.dump(calibrated, f)
            result = tandem(*run, "--json")
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(json.loads(result.stdout)["plan"]["speed_checks"], [])
            self.assertNotIn("speed  ", tandem(*run).stdout)

    def test_a_pipeline_plan_file_runs_with_transfers(self):
        with tempfile.TemporaryDirectory() as folder:
            plan = os.path.join(folder, "plan.json")
            args = model_args("mobilenet")
            made = tandem("plan", *model_and_dims("mobilenet"), "--cluster", SPLIT[1],
                          "--strategy", "pipeline", "--objective", "throughput",
                          "--microbatches", "2", "-o", plan)
            self.assertEqual(made.returncode, 0, made.stderr)
            result = tandem("run", *args, *SPLIT, "--plan", plan)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn("plan        pipeline", result.stdout)
            self.assertIn("2 micro-batch", result.stdout)
            self.assertNotIn(" 0 transfers per run", result.stdout)

    def test_a_plan_file_names_everything_a_run_needs(self):
        with tempfile.TemporaryDirectory() as folder:
            model = os.path.join(folder, "model.onnx")
            shutil.copy(os.path.join(ZOO, "resnet", "model.onnx"), model)
            plan = os.path.join(folder, "plan.json")
            made = tandem("plan", model, "--dim", "batch=4", "--cluster", SPLIT[1], "--strategy", "heft", "-o", plan)
            self.assertEqual(made.returncode, 0, made.stderr)
            result = tandem("run", "--plan", plan, "--iterations", "2", "--json")
            self.assertEqual(result.returncode, 0, result.stderr)
            report = json.loads(result.stdout)
            self.assertEqual((report["batch"], report["plan"]["strategy"]), (4, "heft"))
            self.assertEqual(report["plan"]["cluster"], os.path.abspath(SPLIT[1]))
            with open(model, "ab") as f:
                f.write(b"\0")
            changed = tandem("run", "--plan", plan)
            self.assertEqual(changed.returncode, 2)
            self.assertRegex(changed.stderr, r"^tandem: error: .*plan.json: the model .*model.onnx changed since the plan was made")
            other = tandem("run", os.path.join(ZOO, "mlp", "model.onnx"), "--plan", plan)
            self.assertEqual(other.returncode, 2)
            self.assertIn("it was made for the model", other.stderr)

    def test_injected_fault_stops_the_run_naming_device_segment_and_op(self):
        result = tandem("run", *model_args("resnet"), *SPLIT, *BOTH, fault="fail:cpu1:after=0")
        self.assertEqual(result.returncode, 4, result.stdout + result.stderr)
        self.assertIn("tandem: error: device failed: cpu1: segment", result.stderr)
        self.assertIn(", op ", result.stderr)

    def test_failover_replans_and_finishes_with_correct_outputs(self):
        result = tandem("run", *model_args("resnet"), *SPLIT, *BOTH, "--failover",
                        fault="delay:cpu0:ms=5,fail:cpu1:after=0")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("failover    cpu1 failed", result.stdout)
        self.assertIn("logits: matches", result.stdout)

    def test_bad_fault_is_bad_input(self):
        result = tandem("run", *model_args("mlp"), *SPLIT, fault="explode:cpu1:after=1")
        self.assertEqual(result.returncode, 2)
        self.assertIn("tandem: error: TANDEM_FAULT explode:cpu1:after=1", result.stderr)

    def test_cluster_options_need_a_cluster(self):
        result = tandem("run", *model_args("mlp"), "--trace", "t.json")
        self.assertEqual(result.returncode, 2)
        self.assertIn("need --cluster", result.stderr)

    def cluster_file(self, folder, devices):
        path = os.path.join(folder, "cluster.yaml")
        with open(path, "w") as f:
            f.write("hosts: [h]\ndevices:\n" + "".join(f"  - {d}\n" for d in devices))
        return path

    def test_a_device_without_its_backend_is_refused_before_any_work(self):
        cpu = "{id: cpu0, preset: cpu-generic-avx2, host: h, backend: cpu, cores: 1}"
        for device, words in (
                ("{id: gpu0, preset: nvidia-h100-sxm, host: h, backend: cuda}", ["gpu0", "cuda"]),
                ("{id: sim0, preset: nvidia-h100-sxm, host: h, backend: none}", ["sim0", "none"])):
            with tempfile.TemporaryDirectory() as folder:
                cluster = self.cluster_file(folder, [cpu, device])
                result = tandem("run", *model_args("mlp"), "--cluster", cluster, "--iterations", "1")
            self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
            self.assertEqual(result.stdout, "")  # nothing ran, nothing was reported
            lines = result.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, result.stderr)
            self.assertTrue(lines[0].startswith("tandem: error: " + cluster), lines[0])
            for word in words:
                self.assertIn(word, lines[0])

    def test_shapes_come_from_the_input_files(self):
        # The zoo's DLRM has four inputs whose batch is a symbolic dim: the files alone bind it,
        # and the data-parallel split along it matches the single-device outputs.
        entry = entry_of("dlrm")
        args = [os.path.join(ZOO, entry["path"])]
        for given in entry["inputs"]:
            args += ["--input", f"{given['name']}={os.path.join(ZOO, given['file'])}"]
        for output in entry["outputs"]:
            args += ["--expect", f"{output['name']}={os.path.join(ZOO, output['file'])}"]
        plain = tandem("run", *args, "--iterations", "1")
        self.assertEqual(plain.returncode, 0, plain.stderr)
        self.assertNotIn("bound to 1", plain.stderr)
        split = tandem("run", *args, *SPLIT, "--strategy", "data-parallel", "--json")
        self.assertEqual(split.returncode, 0, split.stderr)
        report = json.loads(split.stdout)
        self.assertEqual(report["plan"]["strategy"], "data-parallel")
        self.assertTrue(all(check["matches"] for check in report["checks"]), report["checks"])
        inspect = tandem("inspect", *args[:1], *args[1:2 * len(entry["inputs"]) + 1], "--json")
        self.assertEqual(inspect.returncode, 0, inspect.stderr)
        shapes = {i["name"]: i["shape"] for i in json.loads(inspect.stdout)["inputs"]}
        for given in entry["inputs"]:
            self.assertEqual(shapes[given["name"]], given["shape"], shapes)

    def test_a_model_that_mixes_samples_is_not_split(self):
        # The zoo's Loop model branches on the mean over the whole batch.
        plan = tandem("plan", *model_and_dims("loop"), "--cluster", SPLIT[1], "--microbatches",
                      "2", "--objective", "throughput", "--json")
        self.assertEqual(plan.returncode, 0, plan.stderr)
        split = json.loads(plan.stdout)["batch_split"]
        self.assertFalse(split["splittable"])
        self.assertIn("subgraph", split["why_not"])
        self.assertEqual(json.loads(plan.stdout)["microbatches"], 1)
        result = tandem("run", *model_args("loop"), *SPLIT, "--strategy", "data-parallel")
        self.assertEqual(result.returncode, 2, result.stdout)
        self.assertIn("the batch cannot be split", result.stderr)

    def test_the_machine_as_one_device_runs_from_its_name_and_from_a_plan_file(self):
        result = tandem("run", *model_args("resnet"), *SPLIT, "--strategy", "single:local.cpu",
                        "--json")
        self.assertEqual(result.returncode, 0, result.stderr)  # --expect: ONNX Runtime's outputs
        plan = json.loads(result.stdout)["plan"]
        self.assertEqual([device["id"] for device in plan["devices"]], ["local.cpu"])
        self.assertGreater(plan["devices"][0]["busy_s"], 0)
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "plan.json")
            made = tandem("plan", *model_and_dims("resnet"), "--cluster", SPLIT[1], "--strategy",
                          "single:local.cpu", "-o", path)
            self.assertEqual(made.returncode, 0, made.stderr)
            result = tandem("run", "--plan", path, *model_args("resnet")[3:], "--iterations", "1",
                            "--json")
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(json.loads(result.stdout)["plan"]["strategy"], "single:local.cpu")

    def test_auto_tries_its_split_against_the_machine_as_one_device_and_runs_the_faster(self):
        # One core priced 50 TFLOP/s by hand: auto splits off that core, predicted far faster
        # than the two cores as one device. The run tries both and keeps whichever ran faster.
        fast = ("{id: cpu0, preset: cpu-generic-avx2, host: h, backend: cpu, cores: 1, figures: "
                "{matrix: {fp32: 50 TFLOP/s}, vector: {fp32: 5 TFLOP/s}, "
                "memory_bandwidth: 2 TB/s, launch_overhead: 10 ns}}")
        slow = "{id: cpu1, preset: cpu-generic-avx2, host: h, backend: cpu, cores: 1}"
        with tempfile.TemporaryDirectory() as folder:
            cluster = self.cluster_file(folder, [fast, slow])
            tried = tandem("run", *model_args("resnet"), "--cluster", cluster, "--iterations",
                           "2", "--json")
            self.assertEqual(tried.returncode, 0, tried.stderr)  # --expect: ORT's outputs
            plan = json.loads(tried.stdout)["plan"]
            trial = plan["trial"]
            self.assertEqual([(t["plan"], t["cluster_view"]) for t in trial],
                             [("single:cpu0", "as given"), (trial[1]["plan"], "whole machine")])
            self.assertLess(trial[0]["predicted_s"] * 2, trial[1]["predicted_s"])
            for t in trial:
                self.assertGreater(t["measured_s"], 0)
            kept = [t for t in trial if t["kept"]]
            self.assertEqual(kept, [min(trial, key=lambda t: t["measured_s"])])
            self.assertEqual(plan["chosen"], kept[0]["plan"])
            self.assertEqual([d["id"] for d in plan["devices"]],
                             ["h.cpu"] if kept[0]["cluster_view"] == "whole machine"
                             else ["cpu0", "cpu1"])
            # The table names both, and marks the one that ran; so does the HTML report.
            html = os.path.join(folder, "report.html")
            table = tandem("run", *model_args("resnet"), "--cluster", cluster, "--iterations", "1",
                           "--report", html)
            self.assertEqual(table.returncode, 0, table.stderr)
            with open(html) as f:
                section = f.read().split('<table class="trial">')[1].split("</table>")[0]
            self.assertEqual(section.count("<tr data-kept>"), 1, section)
            self.assertIn("<td>single:cpu0</td><td>the devices as given</td>", section)
            self.assertIn("<td>the machine as one device</td>", section)
            self.assertRegex(table.stdout, r"single:cpu0 \(the devices as given\) +[0-9.]+ [mu]?s")
            self.assertRegex(table.stdout, r"\(the machine as one device\) +[0-9.]+ [mu]?s")
            self.assertEqual(len(re.findall(r" ran\n", table.stdout)), 1, table.stdout)
            # --no-trial runs the predicted plan.
            predicted = tandem("run", *model_args("resnet"), "--cluster", cluster, "--iterations",
                               "1", "--json", "--no-trial")
            self.assertEqual(predicted.returncode, 0, predicted.stderr)
            plan = json.loads(predicted.stdout)["plan"]
            self.assertEqual((plan["chosen"], plan["trial"]), ("single:cpu0", []))
        # Nothing to try where auto took the machine as one device, or with another strategy.
        for strategy in ([], ["--strategy", "data-parallel"]):
            result = tandem("run", *model_args("resnet"), *SPLIT, *strategy, "--json")
            self.assertEqual(result.returncode, 0, result.stderr)
            plan = json.loads(result.stdout)["plan"]
            if not strategy and plan["devices"][0]["id"] != "local.cpu":
                continue  # the split won by the margin: tried, which the test above covers
            self.assertEqual(plan["trial"], [])
        result = tandem("run", *model_args("mlp"), "--no-trial")
        self.assertEqual(result.returncode, 2)
        self.assertIn("need --cluster", result.stderr)

    def test_single_device_run_is_unchanged(self):
        result = tandem("run", *model_args("mlp"), "--iterations", "1")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertNotIn("predicted", result.stdout)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tandem", required=True)
    parser.add_argument("--zoo", required=True)
    parser.add_argument("--examples", required=True)
    args, rest = parser.parse_known_args()
    TANDEM, ZOO, EXAMPLES = os.path.abspath(args.tandem), args.zoo, args.examples
    unittest.main(argv=[sys.argv[0], *rest])
