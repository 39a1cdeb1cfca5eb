"""Clusters of many hosts as a user meets them: tools/make_cluster.py writes them, `tandem
devices`, `plan` and `simulate` take 1,024 hosts (8,192 GPUs) within a bound generous enough for a
slow 2-core machine, and the figures are sane: data-parallel throughput grows with the hosts, a
hybrid of H100 and TPU v5e hosts gives the TPUs their share, the simulator agrees with the
planner."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

TANDEM = ""
ZOO = ""
MAKE_CLUSTER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                            "make_cluster.py")
# Seconds any one command may take here (it takes a few on a 2-core machine).
BOUND = 60


def run(*command):
    started = time.monotonic()
    result = subprocess.run(list(command), capture_output=True, text=True, timeout=300)
    return result, time.monotonic() - started


def tandem(*args):
    return run(TANDEM, *args)


def make_cluster(path, *args):
    result, _ = run(sys.executable, MAKE_CLUSTER, *args, "-o", path)
    assert result.returncode == 0, result.stderr
    return path


def bert():
    return os.path.join(ZOO, "bert", "model.onnx")


class ClusterScale(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.TemporaryDirectory()
        cls.h64 = make_cluster(cls.path("h64.yaml"), "--hosts", "64", "--host-devices",
                               "nvidia-h100-sxm:8")
        cls.h1024 = make_cluster(cls.path("h1024.yaml"), "--hosts", "1024", "--host-devices",
                                 "nvidia-h100-sxm:8")
        cls.h768 = make_cluster(cls.path("h768.yaml"), "--hosts", "768", "--host-devices",
                                "nvidia-h100-sxm:8")
        cls.hybrid = make_cluster(cls.path("hybrid.yaml"), "--hosts", "768", "--host-devices",
                                  "nvidia-h100-sxm:8", "--tpu-hosts", "256", "--tpu-devices",
                                  "google-tpu-v5e:4")

    @classmethod
    def tearDownClass(cls):
        cls.folder.cleanup()

    @classmethod
    def path(cls, name):
        return os.path.join(cls.folder.name, name)

    def ok(self, result_and_seconds, what):
        result, seconds = result_and_seconds
        self.assertEqual(result.returncode, 0, what + ": " + result.stderr)
        self.assertLess(seconds, BOUND, f"{what} took {seconds:.1f} s")
        return result

    def plan_and_simulate(self, cluster, batch, *plan_args, name="plan.json"):
        plan = self.path(name)
        self.ok(tandem("plan", bert(), "--cluster", cluster, "--dim", f"batch={batch}",
                       *plan_args, "-o", plan), f"plan on {cluster}")
        simulated = self.ok(tandem("simulate", plan, "--json"), f"simulate {plan}")
        with open(plan) as f:
            return json.load(f), json.loads(simulated.stdout)

    def test_the_generator_writes_what_it_says(self):
        path = make_cluster(self.path("small.yaml"), "--hosts", "2", "--host-devices",
                            "nvidia-h100-sxm:8", "--tpu-hosts", "2", "--tpu-devices",
                            "google-tpu-v5e:4")
        devices = json.loads(self.ok(tandem("devices", "--cluster", path, "--json"),
                                     "devices").stdout)
        self.assertEqual(len(devices["devices"]), 24)
        self.assertIn("fabric", devices["hosts"])
        kinds = {}
        for link in devices["links"]:
            kinds[link["kind"]] = kinds.get(link["kind"], 0) + 1
        # 28 NVLink pairs per GPU host, a 2x2 of ICI per TPU host, a port per host, PCIe each.
        self.assertEqual(kinds, {"nvlink": 56, "ici": 8, "network": 4, "pcie": 24})
        again = make_cluster(self.path("again.yaml"), "--hosts", "2", "--host-devices",
                             "nvidia-h100-sxm:8", "--tpu-hosts", "2", "--tpu-devices",
                             "google-tpu-v5e:4")
        with open(path) as first, open(again) as second:  # deterministic
            self.assertEqual(first.read(), second.read().replace("again.yaml", "small.yaml"))
        mesh = make_cluster(self.path("mesh.yaml"), "--hosts", "4", "--host-devices",
                            "nvidia-l4:2", "--topology", "mesh")
        devices = json.loads(self.ok(tandem("devices", "--cluster", mesh, "--json"),
                                     "devices").stdout)
        self.assertEqual(sum(link["kind"] == "network" for link in devices["links"]), 6)
        self.assertNotIn("fabric", devices["hosts"])

    def test_the_generator_refuses_what_it_does_not_know(self):
        result, _ = run(sys.executable, MAKE_CLUSTER, "--hosts", "2", "--host-devices",
                        "nvidia-h1000:8", "-o", self.path("bad.yaml"))
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("unknown device preset 'nvidia-h1000'", result.stderr)
        result, _ = run(sys.executable, MAKE_CLUSTER, "--hosts", "2", "--host-devices",
                        "nvidia-h100-sxm:8", "--price", "google-tpu-v5e=1", "-o",
                        self.path("bad.yaml"))
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("--price google-tpu-v5e=1", result.stderr)

    def test_a_thousand_hosts_load_in_time(self):
        devices = json.loads(self.ok(tandem("devices", "--cluster", self.h1024, "--json"),
                                     "devices").stdout)
        self.assertEqual(len(devices["devices"]), 8192)
        self.assertEqual(len(devices["hosts"]), 1025)

    def test_data_parallel_throughput_grows_with_the_hosts(self):
        # Four sequences per GPU on 64 and on 1,024 hosts: the same latency, 16x the throughput.
        small_plan, small = self.plan_and_simulate(self.h64, 64 * 8 * 4, "--strategy",
                                                   "data-parallel", name="dp64.json")
        big_plan, big = self.plan_and_simulate(self.h1024, 1024 * 8 * 4, "--strategy",
                                               "data-parallel", name="dp1024.json")
        self.assertEqual(len(big_plan["batch_share"]), 8192)
        self.assertEqual(len(big["devices"]), 8192)
        ratio = big["predicted"]["throughput_samples_per_s"] / small["predicted"][
            "throughput_samples_per_s"]
        self.assertAlmostEqual(ratio, 16, delta=16 * 0.05)
        self.assertAlmostEqual(big["predicted"]["latency_s"], small["predicted"]["latency_s"],
                               delta=0.05 * small["predicted"]["latency_s"])
        # The simulator agrees with the planner.
        self.assertAlmostEqual(big["predicted"]["latency_s"],
                               big["planner_estimate"]["latency_s"],
                               delta=0.05 * big["planner_estimate"]["latency_s"])
        # The summary folds 8,192 alike rows into one.
        text = self.ok(tandem("simulate", self.path("dp1024.json")), "simulate").stdout
        self.assertIn("h0-gpu0 .. h1023-gpu7 (8192 devices)", text)
        self.assertLess(len(text.splitlines()), 40)

    def test_auto_on_a_thousand_hybrid_hosts(self):
        batch = 768 * 8 * 4
        plan, hybrid = self.plan_and_simulate(self.hybrid, batch, "--strategy", "auto",
                                              name="hybrid.json")
        self.assertEqual(plan["chosen"], "data-parallel")
        tpu_share = sum(share for device, share in plan["batch_share"].items() if "-tpu" in device)
        self.assertGreater(tpu_share, 0)
        busy = [device["busy_s"] for device in hybrid["devices"] if "-tpu" in device["id"]]
        self.assertEqual(len(busy), 1024)
        self.assertTrue(all(seconds > 0 for seconds in busy))
        # The same batch on the H100 hosts alone is no faster than with the TPU hosts added.
        _, alone = self.plan_and_simulate(self.h768, batch, "--strategy", "data-parallel",
                                          name="h768.json")
        self.assertLessEqual(hybrid["predicted"]["latency_s"],
                             alone["predicted"]["latency_s"] * 1.001)

    def test_a_pipeline_across_hosts(self):
        plan, simulated = self.plan_and_simulate(self.h64, 64, "--strategy", "pipeline",
                                                 "--objective", "throughput", "--microbatches",
                                                 "8", name="pipeline.json")
        self.assertGreater(len(plan["stages"]), 1)
        estimate = simulated["planner_estimate"]["latency_s"]
        # Within the bounds prediction_property_test.cpp holds pipelines to.
        self.assertLess(simulated["predicted"]["latency_s"], estimate * 1.05)
        self.assertGreater(simulated["predicted"]["latency_s"], estimate * 0.7)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    for option in ("--tandem", "--zoo"):
        parser.add_argument(option, required=True)
    args, rest = parser.parse_known_args()
    TANDEM, ZOO = args.tandem, args.zoo
    unittest.main(argv=[sys.argv[0], *rest])
