"""`mpirun -np N tandem run` as a user meets it (docs/MPI.md): one rank per host of the
cluster, on this one machine over loopback TCP (as root, oversubscribed). Every zoo model under
every strategy whose plan puts work on more than one host gives ONNX Runtime's outputs (as the
single-process run does); a pipelined plan overlaps across ranks on the merged timeline; a
device that fails, a rank that dies or a rank that cannot start its devices ends every rank
in bounded time, naming the rank, its host and the device. `tandem train` across two hosts gives
one process's loss curve."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

TANDEM = ""
MPIRUN = ""
ZOO = ""
EXAMPLES = ""
STRATEGIES = ["greedy", "heft", "pipeline", "data-parallel", "auto"]


def environment(fault=None):
    env = dict(os.environ)
    env.pop("TANDEM_FAULT", None)
    if fault:
        env["TANDEM_FAULT"] = fault
    # Loopback TCP between the ranks, and shared memory off: as two hosts would talk.
    env.update({"OMPI_MCA_btl": "self,tcp", "OMPI_MCA_btl_tcp_if_include": "lo",
                "OMPI_MCA_oob_tcp_if_include": "lo", "OMPI_ALLOW_RUN_AS_ROOT": "1",
                "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_rmaps_base_oversubscribe": "1"})
    return env


def mpirun(ranks, *args, fault=None, timeout=120):
    return subprocess.run([MPIRUN, "-np", str(ranks), TANDEM, *args], capture_output=True,
                          text=True, timeout=timeout, env=environment(fault))


def tandem(*args):
    return subprocess.run([TANDEM, *args], capture_output=True, text=True, timeout=120,
                          env=environment())


def manifest():
    with open(os.path.join(ZOO, "manifest.json")) as f:
        return json.load(f)


def model_args(entry):
    """The model, its dims, the zoo's inputs and ONNX Runtime's outputs to match."""
    args = [os.path.join(ZOO, entry["path"])]
    for dim, size in entry["dims"].items():
        args += ["--dim", f"{dim}={size}"]
    for output in entry["outputs"]:
        args += ["--expect", f"{output['name']}={os.path.join(ZOO, output['file'])}"]
    for given in entry["inputs"]:
        args += ["--input", f"{given['name']}={os.path.join(ZOO, given['file'])}"]
    return args


def cluster(name):
    return os.path.join(EXAMPLES, name)


def plan_hosts(entry, cluster_file, strategy, extra=()):
    """The hosts the plan puts work on (from `tandem plan --json`), None when there is no plan."""
    result = tandem("plan", *model_args(entry)[:1 + 2 * len(entry["dims"])], "--cluster",
                    cluster_file, "--strategy", strategy, "--json", *extra)
    if result.returncode != 0:
        return None
    plan = json.loads(result.stdout)
    hosts_of = {}
    with open(cluster_file) as f:
        for line in f:
            if "id:" in line and "host:" in line:
                device = line.split("id:")[1].split(",")[0].strip()
                hosts_of[device] = line.split("host:")[1].split(",")[0].strip()
    busy = plan["predicted"]["busy_s"]
    return {hosts_of[device] for device, seconds in busy.items() if seconds > 0}


class MpiRun(unittest.TestCase):
    def run_everywhere(self, ranks, cluster_file, strategies, models=None, extra=()):
        ran = 0
        for entry in manifest():
            if models and entry["name"] not in models:
                continue
            for strategy in strategies:
                hosts = plan_hosts(entry, cluster_file, strategy, extra)
                if not hosts or len(hosts) < 2:
                    continue
                with self.subTest(model=entry["name"], strategy=strategy):
                    result = mpirun(ranks, "run", *model_args(entry), "--cluster", cluster_file,
                                    "--strategy", strategy, "--warmup", "0", "--iterations", "2",
                                    *extra)
                    self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
                    self.assertIn(f"ranks       {ranks}, one per host", result.stdout)
                    self.assertIn("match", result.stdout)
                    ran += 1
        return ran

    def test_two_ranks_every_zoo_model_every_strategy_across_hosts(self):
        ran = self.run_everywhere(2, cluster("mpi-two-hosts.yaml"), STRATEGIES)
        self.assertGreater(ran, 10, "few plans put work on both hosts")

    def test_three_ranks(self):
        ran = self.run_everywhere(3, cluster("mpi-three-hosts.yaml"),
                                  ["heft", "pipeline", "data-parallel"],
                                  models={"mlp", "resnet", "bert", "gpt", "tv_resnet18"})
        self.assertGreater(ran, 3)

    def test_a_pjrt_device_on_one_host(self):
        ran = self.run_everywhere(2, cluster("mpi-cpu-pjrt.yaml"), ["heft", "pipeline"],
                                  models={"mlp", "resnet", "bert"})
        self.assertGreater(ran, 0)

    def test_a_pipeline_overlaps_across_ranks_on_the_merged_timeline(self):
        entry = next(e for e in manifest() if e["name"] == "tv_resnet18")
        with tempfile.TemporaryDirectory() as folder:
            trace = os.path.join(folder, "trace.json")
            result = mpirun(2, "run", *model_args(entry), "--cluster",
                            cluster("mpi-two-hosts.yaml"), "--strategy", "pipeline",
                            "--microbatches", "4", "--warmup", "1",
                            # Six timed runs: beside other tests on two cores, the two ranks
                            # took turns through all of two runs' stages (a full ctest -j2).
                            "--iterations", "6", "--trace", trace, "--json")
            self.assertEqual(result.returncode, 0, result.stderr)
            report = json.loads(result.stdout)["plan"]
            self.assertEqual(report["ranks"], 2)
            links = {(l["from"], l["to"]): l for l in report["host_links"]}
            self.assertGreater(links[("host-a", "host-b")]["bytes"], 0)
            self.assertGreater(links[("host-a", "host-b")]["predicted_s"], 0)
            with open(trace) as f:
                events = json.load(f)["traceEvents"]
        names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
                 if e.get("ph") == "M" and e.get("name") == "thread_name"}
        spans = {}
        for e in events:
            if e.get("ph") == "X" and e.get("cat") == "compute":
                spans.setdefault(names[(e["pid"], e["tid"])], []).append(
                    (e["ts"], e["ts"] + e["dur"]))
        self.assertEqual(set(spans), {"cpu0 compute", "cpu1 compute"})
        overlap = sum(max(0, min(a[1], b[1]) - max(a[0], b[0]))
                      for a in spans["cpu0 compute"] for b in spans["cpu1 compute"])
        self.assertGreater(overlap, 0, "the two ranks' stages never overlap in time")
        self.assertTrue(any("network into rank 1" in n for n in names.values()), names)

    def test_rank_hosts_gives_each_rank_its_host(self):
        entry = next(e for e in manifest() if e["name"] == "resnet")
        result = mpirun(2, "run", *model_args(entry), "--cluster", cluster("mpi-two-hosts.yaml"),
                        "--strategy", "heft", "--rank-hosts", "host-b,host-a", "--iterations", "1")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("as --rank-hosts says", result.stdout)

    def test_a_device_failing_on_one_rank_ends_every_rank_naming_it(self):
        entry = next(e for e in manifest() if e["name"] == "resnet")
        start = time.monotonic()
        result = mpirun(2, "run", *model_args(entry), "--cluster", cluster("mpi-two-hosts.yaml"),
                        "--strategy", "pipeline", "--iterations", "1", fault="fail:cpu1:after=0")
        self.assertLess(time.monotonic() - start, 60)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("tandem: error: device failed: rank 1 (", result.stderr)
        self.assertIn("cpu1: segment", result.stderr)
        self.assertRegex(result.stderr, r"rank 0 \(.*\): stopped: rank 1 \(.*\): cpu1")

    def test_a_rank_that_dies_ends_the_job_in_bounded_time(self):
        entry = next(e for e in manifest() if e["name"] == "resnet")
        start = time.monotonic()
        result = mpirun(2, "run", *model_args(entry), "--cluster", cluster("mpi-two-hosts.yaml"),
                        "--strategy", "pipeline", "--iterations", "1", fault="crash:cpu1:after=0",
                        timeout=90)
        self.assertLess(time.monotonic() - start, 60)
        self.assertNotEqual(result.returncode, 0)
        self.assertRegex(result.stdout + result.stderr, r"rank 1 .*(signal 9|Killed)")

    def test_a_rank_that_cannot_start_its_devices_fails_at_start_up(self):
        entry = next(e for e in manifest() if e["name"] == "mlp")
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "cluster.yaml")
            with open(path, "w") as f:
                f.write("hosts: [host-a, host-b]\ndevices:\n"
                        "  - {id: cpu0, preset: cpu-generic-avx2, host: host-a, backend: cpu}\n"
                        "  - {id: pjrt0, preset: cpu-generic-avx2, host: host-b, backend: pjrt,"
                        " plugin: /nonexistent/plugin.so}\n"
                        "links:\n  - {from: host-a, to: host-b, preset: network-100g}\n")
            result = mpirun(2, "run", *model_args(entry), "--cluster", path, "--iterations", "1")
        self.assertEqual(result.returncode, 2, result.stdout + result.stderr)
        self.assertIn("tandem: error: rank 1 (", result.stderr)
        self.assertIn("cannot start its devices", result.stderr)
        self.assertNotIn("match", result.stdout)  # nothing ran

    def test_ranks_that_do_not_match_the_hosts_are_refused(self):
        entry = next(e for e in manifest() if e["name"] == "mlp")
        result = mpirun(3, "run", *model_args(entry), "--cluster", cluster("mpi-two-hosts.yaml"))
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("2 hosts hold devices (host-a, host-b) but the job has 3 ranks",
                      result.stderr)

    def test_failover_replans_onto_the_other_host_and_finishes(self):
        entry = next(e for e in manifest() if e["name"] == "resnet")
        result = mpirun(2, "run", *model_args(entry), "--cluster", cluster("mpi-two-hosts.yaml"),
                        "--strategy", "pipeline", "--iterations", "2", "--failover",
                        fault="fail:cpu1:after=0")
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("cpu1 failed", result.stderr)
        self.assertIn("failover    cpu1 failed; re-planned", result.stdout)
        self.assertIn("match", result.stdout)

    def test_a_data_parallel_failure_stops_the_rank_whose_share_finished(self):
        # cpu1's share finishes before cpu0 fails: rank 1 must still stop, not wait forever.
        entry = next(e for e in manifest() if e["name"] == "mlp")
        start = time.monotonic()
        result = mpirun(2, "run", *model_args(entry), "--cluster", cluster("mpi-two-hosts.yaml"),
                        "--strategy", "data-parallel", "--iterations", "3",
                        fault="fail:cpu0:after=1")
        self.assertLess(time.monotonic() - start, 60)
        self.assertEqual(result.returncode, 4, result.stdout + result.stderr)
        self.assertIn("rank 0 (", result.stderr)
        self.assertIn("cpu0: segment", result.stderr)

class MpiTrain(unittest.TestCase):
    """`mpirun -np 2 tandem train`: a training step's gradient graph across two hosts gives the
    loss curve of one process; a failing device ends both ranks."""

    @classmethod
    def setUpClass(cls):
        import numpy as np
        cls.folder = tempfile.TemporaryDirectory()
        rng = np.random.default_rng(0)
        os.makedirs(os.path.join(cls.folder.name, "train"))
        np.save(os.path.join(cls.folder.name, "train", "x.npy"),
                rng.standard_normal((48, 8, 32)).astype(np.float32))
        np.save(os.path.join(cls.folder.name, "train", "y.npy"),
                rng.integers(0, 10, 48).astype(np.int64))
        cls.model = os.path.join(ZOO, "train", "tiny_transformer.onnx")
        cls.args = ["train", cls.model, "--data", cls.folder.name, "--batch", "16", "--steps", "3",
                    "--no-shuffle", "--optimizer", "adam", "--json"]
        single = tandem(*cls.args)
        assert single.returncode == 0, single.stderr
        cls.single = cls.losses(single.stdout)

    @staticmethod
    def losses(stdout):
        lines = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
        return [line["loss"] for line in lines if line["event"] == "step"]

    def test_data_parallel_and_a_pipeline_across_hosts_give_one_process_curve(self):
        for extra in (["--strategy", "data-parallel"],
                      ["--strategy", "pipeline", "--microbatches", "4", "--schedule", "1f1b"],
                      ["--strategy", "pipeline", "--microbatches", "4", "--schedule", "gpipe"]):
            with self.subTest(extra=extra):
                result = mpirun(2, *self.args, "--cluster", cluster("mpi-two-hosts.yaml"), *extra)
                self.assertEqual(result.returncode, 0, result.stderr)
                lines = [json.loads(line) for line in result.stdout.splitlines()
                         if line.startswith("{")]
                start = next(line for line in lines if line["event"] == "start")
                self.assertGreaterEqual(start["segments"], 2)
                curve = self.losses(result.stdout)
                self.assertEqual(len(curve), len(self.single))
                for mine, theirs in zip(curve, self.single):
                    self.assertAlmostEqual(mine, theirs, delta=1e-5 * abs(theirs))

    def test_a_device_failing_on_one_rank_ends_the_training_on_every_rank(self):
        start = time.monotonic()
        result = mpirun(2, *self.args, "--cluster", cluster("mpi-two-hosts.yaml"), "--strategy",
                        "data-parallel", fault="fail:cpu1:after=1")
        self.assertLess(time.monotonic() - start, 60)
        self.assertEqual(result.returncode, 4, result.stdout + result.stderr)
        self.assertIn("rank 1 (", result.stderr)
        self.assertIn("cpu1: segment", result.stderr)
        self.assertIn("stopped", result.stderr)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tandem", required=True)
    parser.add_argument("--mpirun", required=True)
    parser.add_argument("--zoo", required=True)
    parser.add_argument("--examples", required=True)
    args, rest = parser.parse_known_args()
    TANDEM, MPIRUN = os.path.abspath(args.tandem), args.mpirun
    ZOO, EXAMPLES = args.zoo, args.examples
    unittest.main(argv=[sys.argv[0], *rest])
