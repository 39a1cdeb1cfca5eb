"""`tandem devices` as a user meets it: tables, JSON with a source for every figure, bad files."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import unittest

TANDEM = ""
EXAMPLES = ""


def tandem(*args):
    return subprocess.run([TANDEM, *args], capture_output=True, text=True, timeout=60)


def example(name):
    return os.path.join(EXAMPLES, name)


def figures_in(value):
    """Every figure object ({"value", "source"}) anywhere in a JSON document."""
    if isinstance(value, dict):
        if "value" in value and "source" in value:
            yield value
        for child in value.values():
            yield from figures_in(child)
    elif isinstance(value, list):
        for child in value:
            yield from figures_in(child)


class Devices(unittest.TestCase):
    def test_help(self):
        result = tandem("devices", "--help")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("--cluster", result.stdout)
        self.assertIn("--json", result.stdout)

    def test_default_is_this_machine(self):
        result = tandem("devices")
        self.assertEqual(result.returncode, 0, result.stderr)
        for word in ("cpu0", "local", "cpu-generic-avx2", "host-memory", "GFLOP/s"):
            self.assertIn(word, result.stdout)

    def test_table_of_a_hybrid_cluster(self):
        result = tandem("devices", "--cluster", example("two-hosts.yaml"))
        self.assertEqual(result.returncode, 0, result.stderr)
        for word in ("gpu0", "tpu3", "nvidia-h100-sxm", "989 TFLOP/s", "network-200g",
                     "25.0 GB/s", "ici-v5e", "(implicit)"):
            self.assertIn(word, result.stdout)

    def test_json_gives_every_figure_a_source(self):
        for name in sorted(os.listdir(EXAMPLES)):
            result = tandem("devices", "--cluster", example(name), "--json")
            self.assertEqual(result.returncode, 0, result.stderr)
            cluster = json.loads(result.stdout)
            self.assertTrue(cluster["devices"], name)
            figures = list(figures_in(cluster))
            self.assertGreater(len(figures), 3, name)
            for figure in figures:
                self.assertTrue(figure["source"], (name, figure))

    def test_json_of_the_hybrid(self):
        result = tandem("devices", "--cluster", example("h100-4xv5e.yaml"), "--json")
        cluster = json.loads(result.stdout)
        by_id = {device["id"]: device for device in cluster["devices"]}
        self.assertEqual(by_id["gpu0"]["backend"], "cuda")
        self.assertEqual(by_id["tpu1"]["backend"], "pjrt")
        self.assertEqual(by_id["tpu1"]["figures"]["matrix_tile"]["value"], 128)
        self.assertEqual(by_id["tpu1"]["figures"]["matrix_flops_per_s"]["bf16"]["value"], 197e12)
        self.assertIn("uncertain", by_id["tpu1"]["figures"]["matrix_flops_per_s"]["fp32"]["note"])

    def test_bad_cluster_file_is_exit_2_with_file_and_line(self):
        with tempfile.TemporaryDirectory() as directory:
            path = os.path.join(directory, "bad.yaml")
            with open(path, "w") as f:
                f.write("hosts: [h]\ndevices:\n  - {id: g, preset: nvidia-h1000, host: h}\n")
            result = tandem("devices", "--cluster", path)
            self.assertEqual(result.returncode, 2)
            self.assertIn(f"tandem: error: {path}: line 3: devices[0].preset: unknown preset",
                          result.stderr)
            with open(path, "w") as f:
                f.write("hosts: [h\n")
            result = tandem("devices", "--cluster", path)
            self.assertEqual(result.returncode, 2)
            self.assertIn("not valid YAML", result.stderr)
        result = tandem("devices", "--cluster", "/nonexistent/cluster.yaml")
        self.assertEqual(result.returncode, 2)
        self.assertIn("no such file", result.stderr)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tandem", required=True)
    parser.add_argument("--examples", required=True)
    args, rest = parser.parse_known_args()
    TANDEM, EXAMPLES = args.tandem, args.examples
    unittest.main(argv=[sys.argv[0], *rest])
