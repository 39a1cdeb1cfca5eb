"""`tandem calibrate --mpi` as a user meets it: two ranks on this machine (Open MPI over TCP on
loopback) measure their link, the profile loads through a cluster file's link, `tandem devices`
shows the measured figures and `tandem plan` prices a transfer between the hosts with them; the
errors outside mpirun and for bad rank names."""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

TANDEM = ""
MPIRUN = ""
ZOO = ""

# Two hosts, one CPU device each; the network between them measured in links.yaml (which the
# calibration writes: the cluster file names it before it exists).
MEASURED = """hosts: [node-a, node-b]
devices:
  - {id: cpu0, preset: cpu-generic-avx2, host: node-a, cores: 1}
  - {id: cpu1, preset: cpu-generic-avx2, host: node-b, cores: 1}
links:
  - {from: node-a, to: node-b, profile: links.yaml}
"""
PRESET = MEASURED.replace("profile: links.yaml", "preset: network-100g")


def mpi_environment():
    environment = dict(os.environ)
    environment.update({
        # CI runs as root on one machine with two cores.
        "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
        "OMPI_MCA_rmaps_base_oversubscribe": "1",
        # TCP on loopback: works in any container (shared memory may not be allowed to map).
        "OMPI_MCA_btl": "self,tcp", "OMPI_MCA_btl_tcp_if_include": "lo",
        "OMPI_MCA_oob_tcp_if_include": "lo",
    })
    return environment


def mpirun(ranks, *args):
    return subprocess.run([MPIRUN, "-np", str(ranks), TANDEM, *args], capture_output=True,
                          text=True, timeout=120, env=mpi_environment())


def tandem(*args):
    environment = {k: v for k, v in os.environ.items()
                   if not k.startswith(("OMPI_", "PMIX_", "PMI_"))}
    return subprocess.run([TANDEM, *args], capture_output=True, text=True, timeout=120,
                          env=environment)


def error_lines(stderr):
    return [line for line in stderr.splitlines() if line.startswith("tandem:")]


class CalibrateMpi(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.TemporaryDirectory()
        cls.cluster = os.path.join(cls.folder.name, "measured.yaml")
        cls.preset = os.path.join(cls.folder.name, "preset.yaml")
        cls.profile = os.path.join(cls.folder.name, "links.yaml")
        for path, text in ((cls.cluster, MEASURED), (cls.preset, PRESET)):
            with open(path, "w") as f:
                f.write(text)
        cls.calibration = mpirun(2, "calibrate", "--mpi", "--quick", "--cluster", cls.cluster,
                                 "-o", cls.profile)

    @classmethod
    def tearDownClass(cls):
        cls.folder.cleanup()

    def test_calibration_writes_a_table_and_the_profile(self):
        result = self.calibration
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("links between 2 MPI ranks", result.stdout)
        self.assertIn("node-a - node-b", result.stdout)
        self.assertIn("by message size", result.stdout)
        self.assertIn("wrote " + self.profile, result.stdout)
        self.assertIn("btl self,tcp", result.stdout)
        self.assertIn("measuring node-a <-> node-b", result.stderr)  # progress on stderr
        self.assertEqual(error_lines(result.stderr), [])
        with open(self.profile) as f:
            text = f.read()
        self.assertIn("format: tandem-link-profile", text)
        self.assertIn("from: node-a", text)

    def test_profile_loads_through_the_cluster_file(self):
        self.assertEqual(self.calibration.returncode, 0, self.calibration.stderr)
        result = tandem("devices", "--cluster", self.cluster, "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        links = [link for link in json.loads(result.stdout)["links"] if link["kind"] == "network"]
        self.assertEqual(len(links), 1)
        link = links[0]
        self.assertEqual(link["profile"], self.profile)
        for key in ("latency_s", "bandwidth_forward_bytes_per_s", "bandwidth_backward_bytes_per_s"):
            self.assertTrue(link[key]["source"].startswith("calibration " + self.profile + ": "),
                            link[key])
            self.assertGreater(link[key]["value"], 0)
        # One-way latency on loopback: microseconds, not milliseconds; bandwidth: over 10 MB/s.
        self.assertLess(link["latency_s"]["value"], 5e-3)
        self.assertGreater(link["bandwidth_forward_bytes_per_s"]["value"], 1e7)
        table = tandem("devices", "--cluster", self.cluster)
        self.assertEqual(table.returncode, 0, table.stderr)
        self.assertIn("(measured: links.yaml)", table.stdout)

    def network_figures(self, cluster):
        result = tandem("devices", "--cluster", cluster, "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        link = next(l for l in json.loads(result.stdout)["links"] if l["kind"] == "network")
        return (link["latency_s"]["value"], link["bandwidth_forward_bytes_per_s"]["value"])

    def transfer(self, cluster):
        """The plan's transfer from node-a's CPU to node-b's: its bytes and predicted time."""
        result = tandem("plan", os.path.join(ZOO, "mlp", "model.onnx"), "--cluster", cluster,
                        "--dim", "batch=64", "--pin", "*=cpu0", "--pin", "gemm_node_1=cpu1",
                        "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        transfers = [t for t in json.loads(result.stdout)["transfers"]
                     if t["from"] == "cpu0" and t["to"] == "cpu1"]
        self.assertEqual(len(transfers), 1, result.stdout)
        return transfers[0]["bytes"], transfers[0]["time_s"]

    def test_plan_prices_the_network_with_the_measured_figures(self):
        self.assertEqual(self.calibration.returncode, 0, self.calibration.stderr)
        measured_bytes, measured_time = self.transfer(self.cluster)
        preset_bytes, preset_time = self.transfer(self.preset)
        self.assertEqual(measured_bytes, preset_bytes)
        self.assertNotAlmostEqual(measured_time, preset_time, delta=1e-9)
        # The difference is the network hop's: the host-memory hops at either end are the same.
        latency, bandwidth = self.network_figures(self.cluster)
        preset_latency, preset_bandwidth = self.network_figures(self.preset)
        expected = (latency + measured_bytes / bandwidth) - (
            preset_latency + preset_bytes / preset_bandwidth)
        self.assertTrue(math.isclose(measured_time - preset_time, expected, rel_tol=1e-6,
                                     abs_tol=1e-12), (measured_time, preset_time, expected))

    def test_json_names_ranks_as_told(self):
        profile = os.path.join(self.folder.name, "named.yaml")
        result = mpirun(2, "calibrate", "--mpi", "--quick", "--rank-hosts", "left,right",
                        "--json", "-o", profile)
        self.assertEqual(result.returncode, 0, result.stderr)
        document = json.loads(result.stdout)  # rank 0 alone prints
        self.assertEqual(document["schema_version"], 1)
        self.assertEqual([r["host"] for r in document["ranks"]], ["left", "right"])
        link = document["links"][0]
        self.assertEqual((link["from"], link["to"]), ("left", "right"))
        sizes = [point["bytes"] for point in link["curve"]]
        self.assertEqual(sizes[0], 8)
        self.assertEqual(sizes, sorted(sizes))
        self.assertGreaterEqual(sizes[-1], 512 * 1024)
        for point in link["curve"]:
            self.assertGreater(point["forward_s"], 0)
            self.assertGreaterEqual(point["repetitions"], 3)
        self.assertLessEqual(document["elapsed_s"], 30)

    def test_default_names_are_the_processors_told_apart_by_rank(self):
        profile = os.path.join(self.folder.name, "default.yaml")
        result = mpirun(2, "calibrate", "--mpi", "--quick", "--json", "-o", profile)
        self.assertEqual(result.returncode, 0, result.stderr)
        ranks = json.loads(result.stdout)["ranks"]
        # Both ranks run on this machine: one processor name, told apart by rank.
        self.assertEqual(ranks[0]["processor"], ranks[1]["processor"])
        self.assertTrue(ranks[0]["host"].endswith("-rank0"), ranks)
        self.assertTrue(ranks[1]["host"].endswith("-rank1"), ranks)

    def test_errors_are_one_line_and_exit_2(self):
        outside = tandem("calibrate", "--mpi", "--quick")
        self.assertEqual(outside.returncode, 2, outside.stderr)
        self.assertEqual(outside.stderr.splitlines(),
                         [line for line in outside.stderr.splitlines()
                          if line.startswith("tandem: error: --mpi: start it under mpirun")])
        self.assertEqual(len(outside.stderr.splitlines()), 1, outside.stderr)
        for args, message in (
                (["--rank-hosts", "a,b,c"], "tandem: error: --rank-hosts: it names 3 hosts for 2 "
                                            "ranks"),
                (["--rank-hosts", "a,a"], "tandem: error: --rank-hosts: host 'a' is given to "
                                          "ranks 0 and 1"),
                (["-o", os.path.join(self.folder.name, "absent", "x.yaml")],
                 "cannot write the link profile: no folder")):
            result = mpirun(2, "calibrate", "--mpi", "--quick", *args)
            self.assertNotEqual(result.returncode, 0, result.stderr)
            lines = error_lines(result.stderr)
            self.assertEqual(len(lines), 1, result.stderr)  # rank 0 alone says it
            self.assertIn(message, lines[0])
        alone = mpirun(1, "calibrate", "--mpi", "--quick")
        self.assertNotEqual(alone.returncode, 0)
        self.assertIn("tandem: error: --mpi: the job has one rank", alone.stderr)
        excluded = tandem("calibrate", "--mpi", "--model", os.path.join(ZOO, "mlp", "model.onnx"))
        self.assertEqual(excluded.returncode, 2)
        self.assertIn("tandem: error: calibrate: --model excludes --mpi", excluded.stderr)
        needs = tandem("calibrate", "--rank-hosts", "a,b")
        self.assertEqual(needs.returncode, 2)
        self.assertIn("--rank-hosts requires --mpi", needs.stderr)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tandem", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--zoo", required=True)
    args, rest = parser.parse_known_args()
    TANDEM, MPIRUN, ZOO = args.tandem, args.mpirun, args.zoo
    unittest.main(argv=[sys.argv[0], *rest])
