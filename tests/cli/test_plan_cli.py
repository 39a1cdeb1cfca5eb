"""`tandem plan` as a user meets it: the summary, JSON, the plan file, every infeasible input."""
import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

TANDEM = ""
ZOO = ""
EXAMPLES = ""


def tandem(*args):
    return subprocess.run([TANDEM, *args], capture_output=True, text=True, timeout=120)


def model(name):
    return os.path.join(ZOO, name, "model.onnx")


def cluster(name):
    return os.path.join(EXAMPLES, name)


class Plan(unittest.TestCase):
    def test_help_names_the_options_and_fusion(self):
        result = tandem("plan", "--help")
        self.assertEqual(result.returncode, 0, result.stderr)
        for word in ("--cluster", "--strategy", "--objective", "--microbatches", "--max-latency",
                     "--pin", "--exclude", "--output", "--json", "prepared for inference"):
            self.assertIn(word, result.stdout)

    def test_summary_on_the_hybrid(self):
        result = tandem("plan", model("resnet"), "--cluster", cluster("h100-4xv5e.yaml"))
        self.assertEqual(result.returncode, 0, result.stderr)
        for word in ("gpu0", "tpu3", "predicted latency", "lower bound", "efficiency",
                     "speed-up over the best single device", "strategies side by side",
                     "single:gpu0", "greedy", "heft", "preset nvidia-h100-sxm"):
            self.assertIn(word, result.stdout)

    def test_summary_on_two_cpus(self):
        result = tandem("plan", model("gpt"), "--cluster", cluster("cpu-split.yaml"),
                        "--strategy", "heft")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("cpu1", result.stdout)
        self.assertIn("strategy heft", result.stdout)

    def test_json_parses_and_is_consistent(self):
        result = tandem("plan", model("bert"), "--cluster", cluster("cpu-split.yaml"),
                        "--strategy", "heft", "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        plan = json.loads(result.stdout)
        self.assertEqual(plan["format"], "tandem-plan")
        self.assertEqual(plan["strategy"], "heft")
        self.assertEqual({node["device"] for node in plan["nodes"]} - {"cpu0", "cpu1"}, set())
        self.assertEqual(sorted(plan["order"]), list(range(len(plan["nodes"]))))
        bound = plan["lower_bound"]["latency_s"]
        self.assertGreaterEqual(plan["predicted"]["latency_s"], bound * (1 - 1e-9))
        strategies = {row["strategy"]: row for row in plan["strategies"]}
        self.assertTrue(strategies["single:cpu0"]["feasible"])
        for row in plan["strategies"]:
            if row["feasible"]:
                self.assertGreaterEqual(row["latency_s"], bound * (1 - 1e-9))
                self.assertLessEqual(row["efficiency"], 1 + 1e-9)

    def test_objectives(self):
        for objective in ("throughput", "cost"):
            result = tandem("plan", model("mlp"), "--cluster", cluster("h100-4xv5e.yaml"),
                            "--objective", objective, "--strategy", "heft", "--json")
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(json.loads(result.stdout)["objective"], objective)

    def test_output_writes_a_plan_file(self):
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "plan.json")
            result = tandem("plan", model("mobilenet"), "--cluster", cluster("h100-4xv5e.yaml"),
                            "--strategy", "heft", "-o", path)
            self.assertEqual(result.returncode, 0, result.stderr)
            with open(path) as f:
                plan = json.load(f)
            self.assertEqual(plan["version"], 2)
            self.assertTrue(plan["segments"])
            self.assertIn(plan["devices"][0]["figures"], ("preset nvidia-h100-sxm",))
            # What it was made from.
            self.assertEqual(plan["model"]["path"], model("mobilenet"))
            self.assertEqual(plan["model"]["absolute_path"], os.path.abspath(model("mobilenet")))
            with open(model("mobilenet"), "rb") as f:
                self.assertEqual(plan["model"]["sha256"], hashlib.sha256(f.read()).hexdigest())
            with open(cluster("h100-4xv5e.yaml"), "rb") as f:
                self.assertEqual(plan["cluster"]["sha256"], hashlib.sha256(f.read()).hexdigest())
            # The batch nothing bound was bound to 1.
            self.assertEqual((plan["dims"], plan["shapes"], plan["fused"]), ({"batch": 1}, {}, True))
            self.assertEqual((plan["chosen"], plan["reason"]), ("heft", ""))

    def test_auto_says_what_it_chose_and_why(self):
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "plan.json")
            result = tandem("plan", model("mlp"), "--cluster", cluster("cpu-split.yaml"),
                            "--dim", "batch=8", "--no-fusion", "-o", path)
            self.assertEqual(result.returncode, 0, result.stderr)
            with open(path) as f:
                plan = json.load(f)
            self.assertEqual(plan["strategy"], "auto")
            self.assertNotIn(plan["chosen"], ("", "auto"))
            self.assertIn("feasible candidates (" + plan["chosen"] + " ", plan["reason"])
            self.assertIn("auto chose " + plan["chosen"] + ": " + plan["reason"], result.stdout)
            self.assertEqual((plan["dims"], plan["fused"]), ({"batch": 8}, False))

    def test_auto_compares_a_split_with_the_machine_as_one_device(self):
        # At batch 1 nothing shares out the samples: the two cores as one device beat any split.
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "plan.json")
            result = tandem("plan", model("tv_resnet18"), "--cluster", cluster("cpu-split.yaml"),
                            "--dim", "batch=1", "-o", path, "--json")
            self.assertEqual(result.returncode, 0, result.stderr)
            plan = json.loads(result.stdout)
            self.assertEqual(plan["cluster_view"], "whole machine")
            self.assertEqual([device["id"] for device in plan["devices"]], ["local.cpu"])
            self.assertEqual({node["device"] for node in plan["nodes"]}, {"local.cpu"})
            self.assertIn("on the machine as one device, local.cpu (cpu0 + cpu1), against ",
                          plan["reason"])
            # The plan file is run and simulated on the same view of the same cluster file.
            simulated = tandem("simulate", path, "--json")
            self.assertEqual(simulated.returncode, 0, simulated.stderr)
            self.assertAlmostEqual(json.loads(simulated.stdout)["planner_estimate"]["latency_s"],
                                   plan["predicted"]["latency_s"],
                                   delta=1e-6 * plan["predicted"]["latency_s"])
        # Whichever wins says what it beat, and the file says which view it is on. The devices
        # as given win only by more than 10%.
        def seconds(text):
            value, unit = text.split()
            return float(value) * {"s": 1, "ms": 1e-3, "us": 1e-6}[unit]
        number = r"([0-9.]+ (?:s|ms|us))"
        for name in ("mlp", "bert", "gpt", "resnet", "mobilenet"):
            result = tandem("plan", model(name), "--cluster", cluster("cpu-split.yaml"), "--json")
            self.assertEqual(result.returncode, 0, result.stderr)
            plan = json.loads(result.stdout)
            reason = plan["reason"]
            self.assertIn("on the machine as one device, local.cpu (cpu0 + cpu1)", reason)
            whole = reason.startswith("predicted ")
            self.assertEqual(plan["cluster_view"], "whole machine" if whole else "as given")
            self.assertEqual({d["id"] for d in plan["devices"]},
                             {"local.cpu"} if whole else {"cpu0", "cpu1"})
            if whole:
                found = re.match(r"predicted " + number + r" on the machine as one device, "
                                 r"local.cpu \(cpu0 \+ cpu1\), against " + number, reason)
                self.assertIsNotNone(found, reason)
                whole_s, given_s = seconds(found.group(1)), seconds(found.group(2))
                self.assertGreater(given_s * 1.1, whole_s * (1 - 1e-3), name)
                self.assertEqual("better by less than the 10% a split must win by" in reason,
                                 given_s < whole_s, name)
            else:
                found = re.search(r"; against " + number + r" on the machine as one device", reason)
                self.assertIsNotNone(found, reason)
                self.assertLess(plan["predicted"]["latency_s"] * 1.1,
                                seconds(found.group(1)) * (1 + 1e-3), name)

    def test_the_machine_as_one_device_by_name_and_when_not_compared(self):
        result = tandem("plan", model("mlp"), "--cluster", cluster("cpu-split.yaml"),
                        "--strategy", "single:local.cpu", "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        plan = json.loads(result.stdout)
        self.assertEqual((plan["cluster_view"], plan["strategy"]), ("whole machine", "single:local.cpu"))
        # Ops pinned to one of the devices it merges: the user has chosen among them.
        result = tandem("plan", model("tv_resnet18"), "--cluster", cluster("cpu-split.yaml"),
                        "--dim", "batch=1", "--pin", "Gemm=cpu1", "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        plan = json.loads(result.stdout)
        self.assertEqual(plan["cluster_view"], "as given")
        self.assertIn("the machine as one device not compared: ops are pinned to cpu1",
                      plan["reason"])

    def test_a_bad_cluster_view_in_a_plan_file(self):
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "plan.json")
            result = tandem("plan", model("mlp"), "--cluster", cluster("cpu-split.yaml"),
                            "--strategy", "heft", "-o", path)
            self.assertEqual(result.returncode, 0, result.stderr)
            with open(path) as f:
                plan = json.load(f)
            plan["cluster_view"] = "half"
            with open(path, "w") as f:
                json.dump(plan, f)
            self.assert_bad_input(tandem("simulate", path), path, "cluster_view")

    def test_microbatches_never_beat_the_bound(self):
        # Batch 1 cannot be split (one micro-batch); batch 8 is split into 4.
        for batch, microbatches in (("1", 1), ("8", 4)):
            result = tandem("plan", model("bert"), "--cluster", cluster("h100-4xv5e.yaml"),
                            "--dim", "batch=" + batch, "--microbatches", "4", "--strategy",
                            "pipeline", "--json")
            self.assertEqual(result.returncode, 0, result.stderr)
            plan = json.loads(result.stdout)
            self.assertEqual(plan["microbatches"], microbatches)
            self.assertLessEqual(plan["efficiency"], 1 + 1e-9)
            self.assertGreaterEqual(plan["predicted"]["latency_s"],
                                    plan["lower_bound"]["latency_s"] * (1 - 1e-9))

    def test_pin_moves_ops(self):
        result = tandem("plan", model("mlp"), "--cluster", cluster("cpu-split.yaml"),
                        "--strategy", "heft", "--pin", "*=cpu1", "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        plan = json.loads(result.stdout)
        self.assertEqual({node["device"] for node in plan["nodes"]}, {"cpu1"})

    def assert_bad_input(self, result, *words):
        self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
        lines = [line for line in result.stderr.splitlines() if line.startswith("tandem: error:")]
        self.assertEqual(len(lines), 1, result.stderr)
        for word in words:
            self.assertIn(word, lines[0])

    def test_pin_to_an_unknown_device(self):
        self.assert_bad_input(
            tandem("plan", model("mlp"), "--cluster", cluster("h100-4xv5e.yaml"), "--pin",
                   "Gemm*=gpu9"), "--pin Gemm*=gpu9", "no device 'gpu9'")

    def test_pin_contradicting_support(self):
        self.assert_bad_input(
            tandem("plan", model("postproc"), "--cluster", cluster("h100-4xv5e.yaml"), "--pin",
                   "NonZero=tpu0"), "NonZero", "tpu0", "depends on data")

    def test_op_no_device_supports(self):
        self.assert_bad_input(
            tandem("plan", model("postproc"), "--cluster", cluster("h100-4xv5e.yaml"),
                   "--exclude", "gpu0"), "no device can run it", "gpu0: excluded", "TPU:")

    def test_unknown_excluded_device(self):
        self.assert_bad_input(
            tandem("plan", model("mlp"), "--cluster", cluster("h100-4xv5e.yaml"), "--exclude",
                   "tpu9"), "--exclude tpu9")

    def test_unknown_strategy(self):
        self.assert_bad_input(
            tandem("plan", model("mlp"), "--cluster", cluster("h100-4xv5e.yaml"), "--strategy",
                   "fastest"), "--strategy fastest", "unknown strategy")

    def test_model_that_fits_nowhere(self):
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "small.yaml")
            with open(path, "w") as f:
                f.write("hosts: [h]\ndevices:\n"
                        "  - {id: gpu, count: 2, preset: nvidia-h100-sxm, host: h,"
                        " figures: {memory: 100 KB}}\n")
            self.assert_bad_input(tandem("plan", model("resnet"), "--cluster", path),
                                  "fits no combination of devices", "gpu0", "short by")

    def test_missing_cluster(self):
        result = tandem("plan", model("mlp"))
        self.assertEqual(result.returncode, 2)
        self.assertIn("--cluster", result.stderr)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tandem", required=True)
    parser.add_argument("--zoo", required=True)
    parser.add_argument("--examples", required=True)
    args, rest = parser.parse_known_args()
    TANDEM, ZOO, EXAMPLES = args.tandem, args.zoo, args.examples
    unittest.main(argv=[sys.argv[0], *rest])
