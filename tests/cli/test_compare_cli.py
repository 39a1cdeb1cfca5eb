"""`tandem compare` as a user meets it: one column per cluster, figures equal to `tandem plan` on
each cluster alone, a cluster without a plan as a column saying why, every bad input."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import unittest

TANDEM = ""
ZOO = ""
EXAMPLES = ""

# A CPU with 1 KiB of memory: no zoo model fits it.
TINY = """hosts: [h]
devices:
  - id: tiny0
    preset: cpu-generic-avx2
    host: h
    backend: cpu
    figures: {memory: 1 KiB}
"""
# Two one-core CPUs with a price, so that the cost row has a figure.
PRICED = """hosts: [h]
devices:
  - id: cpu
    count: 2
    preset: cpu-generic-avx2
    host: h
    backend: cpu
    cores: 1
    figures: {price_per_hour: 2 USD/h}
"""


def tandem(*args):
    return subprocess.run([TANDEM, *args], capture_output=True, text=True, timeout=120)


def model(name):
    return os.path.join(ZOO, name, "model.onnx")


def clusters(*files):
    """--cluster before each file; a bare name is one of the examples."""
    return [argument for file in files
            for argument in ("--cluster", file if os.sep in file else os.path.join(EXAMPLES, file))]


def relative_difference(a, b):
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


class Compare(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.TemporaryDirectory()
        cls.tiny = os.path.join(cls.folder.name, "tiny.yaml")
        cls.priced = os.path.join(cls.folder.name, "priced.yaml")
        for path, text in ((cls.tiny, TINY), (cls.priced, PRICED)):
            with open(path, "w") as f:
                f.write(text)
        cls.three = [os.path.join(EXAMPLES, name)
                     for name in ("cpu-split.yaml", "local.yaml", "h100-4xv5e.yaml")]

    @classmethod
    def tearDownClass(cls):
        cls.folder.cleanup()

    def assert_bad_input(self, result, *words):
        """Exit 2 with one line `tandem: error: ...` holding every word."""
        errors = [line for line in result.stderr.splitlines() if line.startswith("tandem: error:")]
        self.assertEqual((result.returncode, len(errors)), (2, 1), result.stdout + result.stderr)
        for word in words:
            self.assertIn(word, errors[0])

    def test_help_names_the_options(self):
        result = tandem("compare", "--help")
        self.assertEqual(result.returncode, 0, result.stderr)
        missing = [word for word in ("--cluster", "two or more", "--strategy", "--objective",
                                     "--microbatches", "--dim", "--shape", "--input",
                                     "--no-fusion", "--json") if word not in result.stdout]
        self.assertEqual(missing, [])
        self.assertIn("compare", tandem("--help").stdout)

    def test_text_has_a_column_per_cluster(self):
        result = tandem("compare", model("resnet"), *clusters(*self.three))
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = result.stdout.splitlines()
        header = next(line for line in lines if "cpu-split.yaml" in line)
        names = header.split()
        self.assertEqual(names, ["cpu-split.yaml", "local.yaml", "h100-4xv5e.yaml"])
        rows = {line.split("  ")[0]: line for line in lines}
        for label in ("strategy", "predicted latency", "predicted throughput", "predicted cost",
                      "lower bound (latency)", "efficiency", "vs best single", "tightest memory",
                      "work (busy share)", "latency vs first", "throughput vs first"):
            self.assertIn(label, rows)
        self.assertEqual(rows["predicted latency"].count(" us"), 3, rows["predicted latency"])
        self.assertEqual(rows["strategy"].count("auto (chose "), 3)
        self.assertIn("baseline", rows["latency vs first"])
        self.assertIn("faster", rows["latency vs first"])  # the hybrid beats two CPU cores
        self.assertIn("tpu0: ", rows["tightest memory"])
        self.assertIn(" free of ", rows["tightest memory"])
        self.assertIn("capacity unknown", rows["tightest memory"])  # the CPUs' memory
        self.assertRegex(rows["work (busy share)"], r"cpu0 \d+% \(\d+ nodes\)")

    def test_json_equals_plan_on_each_cluster_alone(self):
        result = tandem("compare", model("resnet"), *clusters(*self.three), "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        compared = json.loads(result.stdout)
        self.assertEqual((compared["strategy"], compared["objective"], compared["batch"]),
                         ("auto", "latency", 1))
        self.assertEqual([column["cluster"] for column in compared["clusters"]], self.three)
        first = compared["clusters"][0]
        for column in compared["clusters"]:
            alone = tandem("plan", model("resnet"), "--cluster", column["cluster"], "--json")
            self.assertEqual(alone.returncode, 0, alone.stderr)
            plan = json.loads(alone.stdout)
            simulated = plan["simulated"]
            self.assertTrue(column["feasible"])
            self.assertEqual((column["strategy"], column["chosen"], column["reason"]),
                             (plan["strategy"], plan["chosen"], plan["reason"]))
            self.assertLess(relative_difference(column["planner_estimate"]["latency_s"],
                                                plan["predicted"]["latency_s"]), 1e-9)
            self.assertEqual(column["latency_s"], simulated["predicted"]["latency_s"])
            self.assertEqual(column["throughput_samples_per_s"],
                             simulated["predicted"]["throughput_samples_per_s"])
            self.assertEqual([(d["id"], d["busy_s"], d["memory_peak_bytes"], d["capacity_bytes"])
                              for d in column["devices"]],
                             [(d["id"], d["busy_s"], d["memory_peak_bytes"], d["capacity_bytes"])
                              for d in simulated["devices"]])
            self.assertEqual(column["lower_bound"], plan["lower_bound"])
            for key in ("efficiency", "speedup_over_best_single", "best_single_device"):
                self.assertEqual(column[key], plan[key], key)
            nodes = {}
            for node in plan["nodes"]:
                nodes[node["device"]] = nodes.get(node["device"], 0) + 1
            self.assertEqual({d["id"]: d["nodes"] for d in column["devices"] if d["nodes"]}, nodes)
            self.assertAlmostEqual(sum(d["busy_share"] for d in column["devices"]), 1)
            self.assertIsNone(column["cost_per_million_samples_usd"])  # the presets have no price
            self.assertAlmostEqual(column["latency_speedup_vs_first"],
                                   first["latency_s"] / column["latency_s"])
            self.assertAlmostEqual(column["throughput_ratio_vs_first"],
                                   column["throughput_samples_per_s"] /
                                   first["throughput_samples_per_s"])
        headroom = compared["clusters"][2]["memory_headroom"]
        self.assertEqual(headroom["capacity_bytes"] - headroom["free_bytes"],
                         next(d["memory_peak_bytes"] for d in compared["clusters"][2]["devices"]
                              if d["id"] == headroom["device"]))
        self.assertIsNone(compared["clusters"][1]["memory_headroom"])

    def test_cost_where_every_device_used_has_a_price(self):
        result = tandem("compare", model("mlp"), *clusters(self.priced, "local.yaml"),
                        "--strategy", "heft", "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        priced, unpriced = json.loads(result.stdout)["clusters"]
        alone = json.loads(tandem("plan", model("mlp"), "--cluster", self.priced, "--strategy",
                                  "heft", "--json").stdout)
        # The used devices' price per second over the simulated throughput.
        used = sum(1 for d in priced["devices"] if d["nodes"])
        self.assertAlmostEqual(priced["cost_per_million_samples_usd"] /
                               (used * 2 / 3600 / priced["throughput_samples_per_s"] * 1e6), 1)
        self.assertAlmostEqual(priced["cost_per_million_samples_usd"] /
                               alone["predicted"]["cost_per_million_samples_usd"],
                               alone["predicted"]["throughput_samples_per_s"] /
                               priced["throughput_samples_per_s"])
        self.assertIsNone(unpriced["cost_per_million_samples_usd"])
        text = tandem("compare", model("mlp"), *clusters(self.priced, "local.yaml"),
                      "--strategy", "heft")
        self.assertIn("per M samples", text.stdout)

    def test_objective_and_microbatches_reach_every_cluster(self):
        result = tandem("compare", model("resnet"), "--dim", "batch=8", "--objective",
                        "throughput", "--strategy", "pipeline", "--microbatches", "4", *clusters(
                            "cpu-split.yaml", "h100-4xv5e.yaml"), "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        compared = json.loads(result.stdout)
        self.assertEqual((compared["objective"], compared["batch"]), ("throughput", 8))
        for column in compared["clusters"]:
            self.assertEqual((column["strategy"], column["microbatches"]), ("pipeline", 4))

    def test_a_model_that_fits_nowhere_is_a_column_saying_why(self):
        files = clusters(self.tiny, "local.yaml")
        result = tandem("compare", model("resnet"), *files)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("no plan (below)", result.stdout)
        self.assertIn("no plan on tiny.yaml: the model fits no combination of devices; the "
                      "closest single device: tiny0 is short by", result.stdout)
        rows = {line.split("  ")[0]: line for line in result.stdout.splitlines()}
        self.assertEqual(rows["latency vs first"].split()[-1], "-")  # no baseline to measure by
        compared = json.loads(tandem("compare", model("resnet"), *files, "--json").stdout)
        tiny, local = compared["clusters"]
        self.assertEqual((tiny["feasible"], local["feasible"]), (False, True))
        self.assertIn("tiny0 is short by", tiny["why_not"])
        self.assertIsNone(local["latency_speedup_vs_first"])

    def test_every_cluster_failing_is_an_error(self):
        self.assert_bad_input(
            tandem("compare", model("resnet"), *clusters(self.tiny, self.tiny)), self.tiny,
            "fits no combination of devices")

    def test_a_missing_cluster_file(self):
        missing = os.path.join(self.folder.name, "no-such-cluster.yaml")
        self.assert_bad_input(
            tandem("compare", model("mlp"), *clusters("local.yaml", missing)), missing)

    def test_one_cluster_is_not_a_comparison(self):
        self.assert_bad_input(tandem("compare", model("mlp"), *clusters("local.yaml")),
                              "--cluster", "two or more")
        self.assert_bad_input(tandem("compare", model("mlp")), "--cluster")

    def test_an_unknown_strategy(self):
        self.assert_bad_input(
            tandem("compare", model("mlp"), *clusters("local.yaml", self.tiny),
                   "--strategy", "fastest"), "--strategy fastest", "unknown strategy")

    def test_a_device_only_one_cluster_has(self):
        result = tandem("compare", model("mlp"), "--strategy", "single:gpu0", "--json",
                        *clusters("local.yaml", "h100-4xv5e.yaml"))
        self.assertEqual(result.returncode, 0, result.stderr)
        local, hybrid = json.loads(result.stdout)["clusters"]
        self.assertIn("--strategy single:gpu0: no device 'gpu0'", local["why_not"])
        self.assertEqual(hybrid["chosen"], "single:gpu0")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    for option in ("--tandem", "--zoo", "--examples"):
        parser.add_argument(option, required=True)
    args, rest = parser.parse_known_args()
    TANDEM, ZOO, EXAMPLES = args.tandem, args.zoo, args.examples
    unittest.main(argv=[sys.argv[0], *rest])
