"""`tandem calibrate` as a user meets it: the profile it writes, its summary, its bad inputs."""
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
# Speed floors are for optimized builds; under a sanitizer (every memory access checked, beside
# other tests) the benchmarks run several times slower, so a tenth of each floor is checked.
FLOOR = 1.0


def tandem(*args, timeout=120):
    return subprocess.run([TANDEM, *args], capture_output=True, text=True, timeout=timeout)


class Calibrate(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        self.profile = os.path.join(self.folder.name, "profile.json")

    def tearDown(self):
        self.folder.cleanup()

    def test_quick_writes_plausible_figures_in_seconds(self):
        start = time.monotonic()
        result = tandem("calibrate", "--quick", "-o", self.profile, "--json")
        elapsed = time.monotonic() - start
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertLess(elapsed, 30.0)
        self.assertIn("gemm 256x256x256", result.stderr)  # progress, one line per benchmark
        summary = json.loads(result.stdout)
        self.assertEqual(summary["profile"], self.profile)
        figures = summary["figures"]
        self.assertGreater(figures["matrix_fp32_flops_per_s"]["value"], 1e9 * FLOOR)
        self.assertGreater(figures["memory_bandwidth_bytes_per_s"]["value"], 1e9 * FLOOR)
        self.assertIsInstance(figures["memory_bytes"]["value"], int)
        for name, row in figures.items():
            self.assertGreater(row["value"], 0, name)
            self.assertTrue(row["source"].startswith("calibration " + self.profile), row)
        with open(self.profile) as f:
            profile = json.load(f)
        self.assertEqual(profile["version"], 1)
        self.assertGreaterEqual(len(profile["gemm_curve"]), 4)
        self.assertEqual(profile["op_seconds"], {})

    def test_table_names_every_figure(self):
        result = tandem("calibrate", "--quick", "-o", self.profile, "--threads", "1")
        self.assertEqual(result.returncode, 0, result.stderr)
        for figure in ("matrix fp32 peak", "memory bandwidth", "launch overhead", "host link"):
            self.assertIn(figure, result.stdout)
        self.assertIn("1 thread", result.stdout)
        self.assertIn("wrote " + self.profile, result.stdout)

    def test_model_ops_are_timed_by_signature(self):
        mlp = os.path.join(ZOO, "mlp", "model.onnx")
        result = tandem("calibrate", "--quick", "-o", self.profile, "--model", mlp,
                        "--dim", "batch=2", "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(self.profile) as f:
            op_seconds = json.load(f)["op_seconds"]
        self.assertGreater(len(op_seconds), 0)
        self.assertEqual(json.loads(result.stdout)["op_signatures"], len(op_seconds))
        self.assertTrue(any(key.startswith("MatMul(float32[2x256],") for key in op_seconds), op_seconds)
        self.assertTrue(all(seconds > 0 for seconds in op_seconds.values()))

    def test_models_of_different_dims_share_one_dim_list(self):
        # Each --dim binds the models that have it; mlp has no num_indices.
        mlp = os.path.join(ZOO, "mlp", "model.onnx")
        bags = os.path.join(ZOO, "torch_embeddingbag", "model.onnx")
        result = tandem("calibrate", "--quick", "-o", self.profile, "--model", mlp, "--model",
                        bags, "--dim", "batch=2", "--dim", "num_indices=10", "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(self.profile) as f:
            op_seconds = json.load(f)["op_seconds"]
        self.assertTrue(any(key.startswith("MatMul(float32[2x256],") for key in op_seconds))
        self.assertTrue(any(key.startswith("EmbeddingBag(") for key in op_seconds), op_seconds)


class BadInput(unittest.TestCase):
    """Bad input fails at once: exit status 2 and one line `tandem: error: <subject>: <what>`."""

    def check_one_line_error(self, result, subject, expect):
        self.assertEqual(result.returncode, 2, f"stdout={result.stdout!r} stderr={result.stderr!r}")
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertTrue(lines[0].startswith("tandem: error: " + subject), lines[0])
        self.assertIn(expect.lower(), lines[0].lower())

    def test_missing_model(self):
        self.check_one_line_error(tandem("calibrate", "--quick", "--model", "/no/such/model.onnx"),
                                  "/no/such/model.onnx", "no such file")

    def test_dim_no_model_has(self):
        mlp = os.path.join(ZOO, "mlp", "model.onnx")
        self.check_one_line_error(tandem("calibrate", "--quick", "--model", mlp, "--dim",
                                         "batch=2", "--dim", "tokens=3"), "--dim tokens=3",
                                  "no model given has")

    def test_output_in_missing_folder(self):
        self.check_one_line_error(tandem("calibrate", "--quick", "-o", "/no/such/folder/p.json"),
                                  "/no/such/folder/p.json", "no folder")


def main():
    global TANDEM, ZOO, FLOOR
    parser = argparse.ArgumentParser()
    parser.add_argument("--tandem", required=True)
    parser.add_argument("--zoo", required=True)
    parser.add_argument("--sanitized", action="store_true", help="a sanitizer build: lower floors")
    args, rest = parser.parse_known_args()
    TANDEM, ZOO = os.path.abspath(args.tandem), os.path.abspath(args.zoo)
    FLOOR = 0.1 if args.sanitized else 1.0
    unittest.main(argv=[sys.argv[0], "-v", *rest])


if __name__ == "__main__":
    main()
