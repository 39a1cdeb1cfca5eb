"""`tandem simulate` as a user meets it: the summary, JSON, traces, replicas, every bad input."""
import argparse
import json
import os
import shutil
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


class Simulate(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.heft = os.path.join(cls.dir.name, "heft.json")
        result = tandem("plan", model("bert"), "--cluster", cluster("cpu-split.yaml"),
                        "--strategy", "heft", "-o", cls.heft)
        assert result.returncode == 0, result.stderr
        cls.pipeline = os.path.join(cls.dir.name, "pipeline.json")
        result = tandem("plan", model("resnet"), "--cluster", cluster("h100-4xv5e.yaml"),
                        "--dim", "batch=8", "--strategy", "pipeline", "--objective",
                        "throughput", "--microbatches", "4", "-o", cls.pipeline)
        assert result.returncode == 0, result.stderr

    def simulate(self, *args, plan=None, model_name="bert", cluster_name="cpu-split.yaml"):
        return tandem("simulate", plan or self.heft, "--cluster", cluster(cluster_name),
                      "--model", model(model_name), *args)

    def assert_bad_input(self, result, *words):
        self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
        self.assertIn("tandem: error:", result.stderr)
        for word in words:
            self.assertIn(word, result.stderr)

    def test_summary_labels_every_figure_predicted_with_its_source(self):
        result = self.simulate()
        self.assertEqual(result.returncode, 0, result.stderr)
        for word in ("predicted (simulator; figures: preset cpu-generic-avx2)",
                     "predicted latency", "predicted throughput", "planner's estimate",
                     "predicted busy", "memory peak", "predicted bytes", "cpu0", "cpu1"):
            self.assertIn(word, result.stdout)

    def test_json_agrees_with_the_planner_without_contention(self):
        result = self.simulate("--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        summary = json.loads(result.stdout)
        with open(self.heft) as f:
            plan = json.load(f)
        simulated = summary["predicted"]["latency_s"]
        planned = plan["predicted"]["latency_s"]
        self.assertGreater(simulated, 0)
        # The evaluator charges whole transfers per device pair; the simulator hop by hop.
        self.assertLess(abs(simulated - planned) / planned, 0.05)
        self.assertEqual([d["id"] for d in summary["devices"]], ["cpu0", "cpu1"])
        for device in summary["devices"]:
            self.assertAlmostEqual(device["busy_s"] + device["idle_s"], simulated,
                                   delta=simulated * 1e-9)
        self.assertGreater(sum(link["bytes"] for link in summary["links"]), 0)

    def test_trace_has_a_track_per_device_and_link(self):
        path = os.path.join(self.dir.name, "trace.json")
        result = self.simulate("--trace", path)
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(path) as f:
            trace = json.load(f)
        events = trace["traceEvents"]
        threads = {e["args"]["name"] for e in events if e.get("name") == "thread_name"}
        self.assertIn("cpu0 compute", threads)
        self.assertIn("cpu1 compute", threads)
        self.assertTrue(any("local" in name for name in threads), threads)
        self.assertTrue(any(e["ph"] == "X" and e["cat"] == "transfer" for e in events))
        self.assertTrue(any(e["ph"] == "C" for e in events))
        self.assertIn("simulator", trace["otherData"]["source"])

    def test_pipeline_micro_batches_and_replicas(self):
        one = self.simulate("--json", plan=self.pipeline, model_name="resnet",
                            cluster_name="h100-4xv5e.yaml")
        self.assertEqual(one.returncode, 0, one.stderr)
        four = self.simulate("--json", "--replicas", "4", plan=self.pipeline,
                             model_name="resnet", cluster_name="h100-4xv5e.yaml")
        self.assertEqual(four.returncode, 0, four.stderr)
        one, four = json.loads(one.stdout), json.loads(four.stdout)
        self.assertEqual(one["microbatches"], 4)
        self.assertEqual(four["replicas"], 4)
        # One host: replicas share nothing, so each runs as fast as one alone.
        self.assertAlmostEqual(four["predicted"]["latency_s"],
                               one["predicted"]["latency_s"], delta=1e-12)
        self.assertAlmostEqual(four["predicted"]["throughput_samples_per_s"],
                               4 * one["predicted"]["throughput_samples_per_s"],
                               delta=1e-6 * one["predicted"]["throughput_samples_per_s"])

    def test_memory_overflow_is_named(self):
        small = os.path.join(self.dir.name, "small.yaml")
        with open(small, "w") as f:
            f.write("hosts: [local]\ndevices:\n"
                    "  - {id: cpu, count: 2, preset: cpu-generic-avx2, host: local, backend: cpu,"
                    " cores: 1, figures: {memory: 100 KB}}\n")
        result = tandem("simulate", self.heft, "--cluster", small, "--model", model("bert"))
        self.assert_bad_input(result, "does not fit", "cpu0", "needs", "holds")

    def test_the_plan_names_its_model_cluster_and_bindings(self):
        result = tandem("simulate", self.pipeline, "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertNotIn("note:", result.stderr)
        summary = json.loads(result.stdout)
        self.assertEqual(summary["microbatches"], 4)
        self.assertEqual(summary["model"], os.path.abspath(model("resnet")))
        self.assertEqual(summary["cluster"], os.path.abspath(cluster("h100-4xv5e.yaml")))

    def test_the_plan_says_what_auto_chose(self):
        path = os.path.join(self.dir.name, "auto.json")
        result = tandem("plan", model("mlp"), "--cluster", cluster("cpu-split.yaml"), "-o", path)
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(path) as f:
            plan = json.load(f)
        result = tandem("simulate", path, "--cluster", cluster("cpu-split.yaml"))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn(plan["chosen"] + ": " + plan["reason"], result.stdout)

    def test_a_model_or_cluster_changed_since_the_plan_is_refused(self):
        with tempfile.TemporaryDirectory() as directory:
            onnx, yaml = os.path.join(directory, "m.onnx"), os.path.join(directory, "c.yaml")
            shutil.copy(model("mlp"), onnx)
            shutil.copy(cluster("cpu-split.yaml"), yaml)
            path = os.path.join(directory, "plan.json")
            result = tandem("plan", onnx, "--cluster", yaml, "-o", path)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(tandem("simulate", path).returncode, 0)
            with open(yaml, "a") as f:
                f.write("# edited\n")
            self.assert_bad_input(tandem("simulate", path), "plan.json: the cluster " + yaml +
                                  " changed since the plan was made (sha256 ")
            # A cluster given on the command line is taken as it is.
            self.assertEqual(tandem("simulate", path, "--cluster", yaml).returncode, 0)
            with open(onnx, "ab") as f:
                f.write(b"\0")
            self.assert_bad_input(tandem("simulate", path, "--cluster", yaml),
                                  "plan.json: the model " + onnx + " changed since the plan")
            os.remove(onnx)
            self.assert_bad_input(tandem("simulate", path, "--cluster", yaml),
                                  "the model it was made from, " + onnx + ", is not there")

    def test_plan_for_another_model_is_refused(self):
        # Bound as the plan was, or by hand: its inputs are not the plan's.
        self.assert_bad_input(self.simulate(model_name="mlp"), "heft.json", "inputs.x", "missing")
        self.assert_bad_input(self.simulate("--dim", "batch=1", model_name="mlp"), "heft.json",
                              "inputs.x", "missing")

    def test_a_version_1_plan_is_refused_with_what_to_do(self):
        with open(self.heft) as f:
            plan = json.load(f)
        plan["version"] = 1
        path = os.path.join(self.dir.name, "old.json")
        with open(path, "w") as f:
            json.dump(plan, f)
        self.assert_bad_input(self.simulate(plan=path), "old.json: a version 1 plan",
                              "make it again with `tandem plan")

    def test_missing_plan_file(self):
        result = tandem("simulate", os.path.join(self.dir.name, "none.json"), "--cluster",
                        cluster("cpu-split.yaml"), "--model", model("bert"))
        self.assert_bad_input(result, "cannot open the plan file")

    def test_plan_fields_of_the_wrong_type_are_bad_input(self):
        with open(self.heft) as f:
            plan = json.load(f)
        plan["objective"] = 3
        for text, words in ((json.dumps(plan), ["objective", "expected a string"]),
                            ('{"format": 1e400}', ["not JSON"])):
            path = os.path.join(self.dir.name, "wrong.json")
            with open(path, "w") as f:
                f.write(text)
            result = tandem("simulate", path, "--cluster", cluster("cpu-split.yaml"), "--model",
                            model("mlp"), "--dim", "batch=1")
            self.assert_bad_input(result, "wrong.json", *words)

    def test_bad_replicas(self):
        self.assertEqual(self.simulate("--replicas", "0").returncode, 2)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tandem", required=True)
    parser.add_argument("--zoo", required=True)
    parser.add_argument("--examples", required=True)
    args, rest = parser.parse_known_args()
    TANDEM, ZOO, EXAMPLES = args.tandem, args.zoo, args.examples
    unittest.main(argv=[sys.argv[0], *rest])
