"""The `tandem` command as a user meets it: help, tables, JSON, exit statuses, bad input."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np

TANDEM = ""
ZOO = ""


def tandem(*args, timeout=120):
    return subprocess.run([TANDEM, *args], capture_output=True, text=True, timeout=timeout)


def zoo(*parts):
    return os.path.join(ZOO, *parts)


class Help(unittest.TestCase):
    def test_every_verb_has_help(self):
        for verb in ([], ["run"], ["inspect"]):
            result = tandem(*verb, "--help")
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn("--help", result.stdout)
        self.assertIn("--iterations", tandem("run", "--help").stdout)

    def test_no_verb_is_a_usage_error(self):
        self.assertEqual(tandem().returncode, 2)
        self.assertEqual(tandem("frobnicate").returncode, 2)

    def test_parser_errors_are_one_line_with_a_suggestion(self):
        model = zoo("mlp", "model.onnx")
        cases = [
            (["runn"], "tandem: error: tandem: unknown verb 'runn' (did you mean run?)"),
            (["run", model, "--iterationz", "3"],
             "tandem: error: run: unknown option --iterationz (did you mean --iterations?)"),
            (["run", model, "--threads", "0"], "tandem: error: run: --threads: Value 0 not in range 1 to 1024"),
            (["run"], "tandem: error: run: model is required (or --plan PLAN.json, which names its model)"),
            (["run", model, "extra"], "tandem: error: run: unexpected argument 'extra'"),
        ]
        for args, line in cases:
            result = tandem(*args)
            self.assertEqual(result.returncode, 2, args)
            self.assertEqual(result.stderr.strip().splitlines(), [line], args)


class Inspect(unittest.TestCase):
    def test_table_lists_op_types_with_work(self):
        result = tandem("inspect", zoo("resnet", "model.onnx"), "--dim", "batch=2")
        self.assertEqual(result.returncode, 0, result.stderr)
        for word in ("Conv", "BatchNormalization", "parameters", "input", "2x3x64x64", "total"):
            self.assertIn(word, result.stdout)

    def test_json_matches_the_model(self):
        result = tandem("inspect", zoo("mlp", "model.onnx"), "--dim", "batch=4", "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        summary = json.loads(result.stdout)
        self.assertEqual(summary["inputs"][0]["shape"], [4, 256])
        self.assertEqual(summary["opset"], 13)
        self.assertGreater(summary["flops"], 2 * 4 * 256 * 10)
        self.assertGreater(summary["parameters"], 100000)
        self.assertEqual(sum(row["count"] for row in summary["op_types"]), summary["nodes"])


class Run(unittest.TestCase):
    def mlp_args(self):
        return [zoo("mlp", "model.onnx"), "--dim", "batch=2", "--input", "x=" + zoo("mlp", "inputs", "x.npy")]

    def test_expect_matches_reference(self):
        result = tandem("run", *self.mlp_args(), "--expect", "logits=" + zoo("mlp", "expected", "logits.npy"),
                        "--iterations", "3", "--threads", "2")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("logits: matches", result.stdout)
        self.assertIn("median", result.stdout)

    def test_mismatch_exits_1_naming_output_and_element(self):
        reference = np.load(zoo("mlp", "expected", "logits.npy"))
        reference[1, 3] += 1.0
        with tempfile.TemporaryDirectory() as tmp:
            wrong = os.path.join(tmp, "wrong.npy")
            np.save(wrong, reference)
            result = tandem("run", *self.mlp_args(), "--expect", "logits=" + wrong)
        self.assertEqual(result.returncode, 1, result.stderr)
        # The output, the worst element on every axis, both values and the error.
        self.assertRegex(result.stderr, r"tandem: mismatch: logits: 1 of 20 elements differ; worst at \[1, 3\]: "
                                        r"got -?[0-9.e+-]+, expected -?[0-9.e+-]+ \(error 0\.99")
        self.assertIn("MISMATCH logits", result.stdout)

    def test_tolerances_decide_the_check(self):
        reference = np.load(zoo("mlp", "expected", "logits.npy"))
        with tempfile.TemporaryDirectory() as tmp:
            off = os.path.join(tmp, "off.npy")
            np.save(off, reference + 0.01)
            expect = ["--expect", "logits=" + off, "--iterations", "1"]
            self.assertEqual(tandem("run", *self.mlp_args(), *expect).returncode, 1)
            self.assertEqual(tandem("run", *self.mlp_args(), *expect, "--atol", "0.02").returncode, 0)
            scaled = os.path.join(tmp, "scaled.npy")
            np.save(scaled, reference * 1.5)
            relative = ["--expect", "logits=" + scaled, "--iterations", "1", "--json"]
            self.assertEqual(tandem("run", *self.mlp_args(), *relative).returncode, 1)
            loose = tandem("run", *self.mlp_args(), *relative, "--rtol", "0.5")
            check = json.loads(loose.stdout)["checks"][0]
            self.assertEqual((loose.returncode, check["rtol"], check["mismatched"]), (0, 0.5, 0))
            self.assertEqual(tandem("run", *self.mlp_args(), *expect, "--atol", "0.001").returncode, 1)

    def test_latency_statistics_are_ordered(self):
        report = json.loads(tandem("run", *self.mlp_args(), "--iterations", "30", "--json").stdout)
        latency = report["latency"]
        order = [latency[k] for k in ("min_s", "median_s", "p90_s", "p95_s", "p99_s", "max_s")]
        self.assertEqual(order, sorted(order))
        self.assertLessEqual(latency["min_s"], latency["mean_s"])
        self.assertLessEqual(latency["mean_s"], latency["max_s"])
        self.assertGreater(latency["stddev_s"], 0)
        self.assertEqual((report["runs"], report["warmup_runs"], len(latency["samples_s"])), (30, 1, 30))
        self.assertAlmostEqual(report["throughput_samples_per_s"], 2 / latency["median_s"], delta=1e-6)
        self.assertIsInstance(report["memory"]["arena_bytes"], int)
        text = tandem("run", *self.mlp_args(), "--iterations", "5").stdout
        for word in ("min", "mean", "median", "max", "p90", "p95", "p99", "stddev", "samples/s"):
            self.assertIn(word, text)

    def test_duration_and_warmup_by_time(self):
        result = tandem("run", *self.mlp_args(), "--duration", "0.5", "--warmup-duration", "0.2", "--json")
        self.assertEqual(result.returncode, 0, result.stderr)
        report = json.loads(result.stdout)
        self.assertGreater(report["runs"], 10)
        self.assertGreater(report["warmup_runs"], 1)
        self.assertGreaterEqual(report["duration_s"], 0.5)
        self.assertLess(report["duration_s"], 5)
        self.assertEqual(len(report["latency"]["samples_s"]), report["runs"])
        for args, message in ((["--duration", "1", "--iterations", "3"], "--iterations excludes --duration"),
                              (["--warmup", "2", "--warmup-duration", "1"], "--warmup excludes --warmup-duration"),
                              (["--duration", "nan"], "--duration: 'nan' is not a number"),
                              (["--duration", "-1"], "--duration: -1 is outside 0 to 86400")):
            result = tandem("run", *self.mlp_args(), *args)
            self.assertEqual((result.returncode, result.stderr.strip()), (2, "tandem: error: run: " + message))

    def test_profile_per_node_and_its_export(self):
        nodes = json.loads(tandem("inspect", *self.mlp_args(), "--json").stdout)["nodes"]
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "profile.json")
            result = tandem("run", *self.mlp_args(), "--iterations", "3", "--no-fusion", "--profile-out", out)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn("gemm_node", result.stdout)  # the per-node table
            with open(out) as f:
                profile = json.load(f)
        self.assertEqual(len(profile["nodes"]), nodes)
        self.assertEqual(profile["runs"], 3)
        times = [node["time_per_run_s"] for node in profile["nodes"]]
        self.assertEqual(times, sorted(times, reverse=True))
        by_type = {row["op_type"]: row for row in profile["op_types"]}
        for row in by_type.values():
            per_node = sum(n["time_per_run_s"] for n in profile["nodes"] if n["op_type"] == row["op_type"])
            self.assertAlmostEqual(row["time_per_run_s"], per_node, delta=1e-12)
        self.assertAlmostEqual(sum(row["share"] for row in profile["op_types"]), 1.0, places=6)
        self.assertEqual(sum(row["calls"] for row in profile["op_types"]), nodes)

    def test_verbose_says_what_was_decided_on_stderr(self):
        quiet = tandem("run", zoo("resnet", "model.onnx"), "--iterations", "1")
        result = tandem("run", zoo("resnet", "model.onnx"), "--iterations", "1", "-v")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertRegex(result.stderr, r"verbose: fusion: [1-9][0-9]* BatchNormalization folded")
        self.assertIn("verbose: memory:", result.stderr)
        # The kernels chosen, as oneDNN names its implementations.
        self.assertRegex(result.stderr, r"verbose: kernels on cpu:0: Conv: [0-9]+ oneDNN \w+")
        self.assertEqual(quiet.stdout.splitlines()[:3], result.stdout.splitlines()[:3])

    def test_output_dir_and_json(self):
        with tempfile.TemporaryDirectory() as tmp:
            result = tandem("run", *self.mlp_args(), "--output-dir", tmp, "--json", "--iterations", "4")
            self.assertEqual(result.returncode, 0, result.stderr)
            report = json.loads(result.stdout)
            self.assertEqual(len(report["latency"]["samples_s"]), 4)
            self.assertLessEqual(report["latency"]["min_s"], report["latency"]["median_s"])
            written = np.load(os.path.join(tmp, "logits.npy"))
            reference = np.load(zoo("mlp", "expected", "logits.npy"))
            np.testing.assert_allclose(written, reference, rtol=1e-3, atol=1e-4 * np.abs(reference).max())

    def test_random_inputs_are_seeded(self):
        first = json.loads(tandem("run", zoo("resnet", "model.onnx"), "--seed", "5", "--json").stdout)
        second = json.loads(tandem("run", zoo("resnet", "model.onnx"), "--seed", "5", "--json").stdout)
        third = json.loads(tandem("run", zoo("resnet", "model.onnx"), "--seed", "6", "--json").stdout)
        self.assertEqual(first["outputs"], second["outputs"])
        self.assertNotEqual(first["outputs"], third["outputs"])

    def test_an_empty_batch_runs(self):
        # oneDNN divides by zero building a GEMM of no rows: such kernels are built at run time.
        for model in ("mlp", "resnet", "bert"):
            result = tandem("run", zoo(model, "model.onnx"), "--dim", "batch=0", "--iterations", "1", "--json")
            self.assertEqual(result.returncode, 0, f"{model}: {result.stderr}")
            for output in json.loads(result.stdout)["outputs"]:
                self.assertEqual(output["shape"][0], 0, output)

    def test_data_dependent_model_runs(self):
        args = [zoo("postproc", "model.onnx")]
        for name in ("boxes", "scores"):
            args += ["--input", f"{name}={zoo('postproc', 'inputs', name + '.npy')}"]
        args += ["--expect", "selected_indices=" + zoo("postproc", "expected", "selected_indices.npy")]
        result = tandem("run", *args)
        self.assertEqual(result.returncode, 0, result.stderr)


class Precision(unittest.TestCase):
    """`tandem run --precision`: the matrix products in bf16 or int8, with the speed-up and the
    outputs' error against fp32, which it runs too."""

    def run_in(self, precision, model="bert"):
        return tandem("run", zoo(model, "model.onnx"), "--precision", precision, "--iterations", "3",
                      "--json")

    def check_report(self, result, precision, max_relative_error):
        self.assertEqual(result.returncode, 0, result.stderr)
        figures = json.loads(result.stdout)["precision"]
        self.assertEqual(figures["name"], precision)
        self.assertGreater(figures["lowered"], 0, figures)
        self.assertLessEqual(figures["lowered"], figures["matrix_products"])
        self.assertGreater(figures["fp32_median_s"], 0)
        self.assertGreater(figures["speedup"], 0)
        self.assertTrue(figures["outputs"], figures)
        for output in figures["outputs"]:
            # Lower precision does change the outputs, and only a little.
            self.assertGreater(output["relative_error"], 0, output)
            self.assertLess(output["relative_error"], max_relative_error, output)
        return figures

    def test_int8_quantizes_the_constant_weight_products(self):
        figures = self.check_report(self.run_in("int8"), "int8", 0.1)
        # The encoder's attention products multiply two activations: those stay fp32.
        self.assertLess(figures["lowered"], figures["matrix_products"], figures)
        text = tandem("run", zoo("mlp", "model.onnx"), "--dim", "batch=2", "--precision", "int8",
                      "--iterations", "2")
        self.assertEqual(text.returncode, 0, text.stderr)
        self.assertRegex(text.stdout, r"precision   int8 in \d+ of \d+ matrix products")
        self.assertRegex(text.stdout, r"accuracy    logits against fp32: max \|error\| \S+, relative "
                                      r"\S+%, same top-1 in \d+ of 2 rows")

    def test_bf16_runs_or_is_refused_by_name(self):
        result = self.run_in("bf16", "resnet")
        if result.returncode == 2:
            # Refused on a CPU oneDNN would emulate bf16 on: said why, in one line.
            self.assertRegex(result.stderr, r"^tandem: error: --precision bf16: this CPU has no bf16 "
                                            r"instructions")
            return
        figures = self.check_report(result, "bf16", 0.05)
        self.assertEqual(figures["lowered"], figures["matrix_products"], figures)

    def test_precision_is_refused_where_it_does_not_apply(self):
        for args, expect in ((["--precision", "fp16"], "--precision"),
                             (["--precision", "int8", "--cluster",
                               os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                                            "clusters", "local.yaml")],
                              "a cluster's devices compute in fp32")):
            result = tandem("run", zoo("mlp", "model.onnx"), *args)
            self.assertEqual(result.returncode, 2, result.stderr)
            self.assertIn(expect, result.stderr)
            self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)


class BadInput(unittest.TestCase):
    """Each bad input: exit status 2 and exactly one line `tandem: error: <file>: <what>`."""

    def check_one_line_error(self, result, subject, expect):
        self.assertEqual(result.returncode, 2, f"stdout={result.stdout!r} stderr={result.stderr!r}")
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertTrue(lines[0].startswith("tandem: error: " + subject), lines[0])
        self.assertIn(expect.lower(), lines[0].lower())

    def test_fixtures(self):
        with open(zoo("bad", "cases.json")) as f:
            cases = json.load(f)
        self.assertGreaterEqual(len(cases), 20)
        tried = passed = 0
        for case in cases:
            with self.subTest(case["name"]):
                tried += 1
                path = zoo("bad", case["file"])
                if case["kind"] == "model":
                    result = tandem("inspect", path, timeout=20)
                    self.check_one_line_error(result, path, case["expect"])
                else:
                    model = zoo(case["model"], "model.onnx")
                    result = tandem("run", model, "--dim", "batch=2", "--input", f"{case['input']}={path}", timeout=20)
                    self.check_one_line_error(result, path, case["expect"])
                passed += 1
        # Read by scripts/test.sh and scripts/sanitizers.sh for the CI summary.
        print(f"bad-input suite: {tried} cases tried, {passed} passed", file=sys.stderr)

    def test_missing_model(self):
        self.check_one_line_error(tandem("run", "/no/such/model.onnx"), "/no/such/model.onnx", "no such file")

    def test_bad_options(self):
        model = zoo("mlp", "model.onnx")
        self.check_one_line_error(tandem("run", model, "--dim", "batch=-4"), "--dim", "not a valid dimension")
        self.check_one_line_error(tandem("run", model, "--dim", "batch"), "--dim", "NAME=VALUE")
        self.check_one_line_error(tandem("run", model, "--dim", "batch=2", "--input", "nope=x.npy"), "x.npy", "no such file")
        x = zoo("mlp", "inputs", "x.npy")
        self.check_one_line_error(tandem("run", model, "--input", "nope=" + x), x, "no input 'nope'")
        # The file binds the batch; a --dim that says otherwise is named with it.
        self.check_one_line_error(tandem("run", model, "--dim", "batch=3", "--input", "x=" + x), x,
                                  "but --dim batch=3 gives 3")
        self.check_one_line_error(tandem("run", model, "--shape", "x=3x256", "--input", "x=" + x), x,
                                  "differs from --shape x=3x256")
        self.check_one_line_error(tandem("run", model, "--shape", "x=2x3x4"), "--shape x=2x3x4", "rank")
        # A --dim that names nothing is an error, not ignored; the message lists what there is.
        self.check_one_line_error(tandem("run", model, "--dim", "nosuch=4"), "--dim nosuch=4",
                                  "no symbolic dimension 'nosuch' (they have: batch)")
        for verb in ("inspect", "plan"):
            result = tandem(verb, model, "--dim", "nosuch=4")
            self.assertEqual(result.returncode, 2, f"{verb}: {result.stderr}")
        self.assertEqual(tandem("run", model, "--seed", "-5").returncode, 2)

    def test_a_directory_is_named_as_one(self):
        model = zoo("mlp", "model.onnx")
        folder = zoo("mlp")
        self.check_one_line_error(tandem("run", model, "--input", "x=" + folder), folder, "is a directory")
        self.check_one_line_error(tandem("run", model, "--dim", "batch=2", "--cluster", folder), folder,
                                  "is a directory")
        self.check_one_line_error(tandem("simulate", folder, "--cluster", folder), folder, "is a directory")

    def test_absurd_dim_from_the_command_line(self):
        model = zoo("mlp", "model.onnx")
        self.check_one_line_error(tandem("run", model, "--dim", "batch=100000000000"), model, "elements")
        # Fewer elements than the hard limit, but more memory than the machine has.
        self.check_one_line_error(tandem("run", model, "--dim", "batch=100000000"), "the inputs", "memory")


def main():
    global TANDEM, ZOO
    parser = argparse.ArgumentParser()
    parser.add_argument("--tandem", required=True)
    parser.add_argument("--zoo", required=True)
    args, rest = parser.parse_known_args()
    TANDEM, ZOO = os.path.abspath(args.tandem), os.path.abspath(args.zoo)
    unittest.main(argv=[sys.argv[0], "-v", *rest])


if __name__ == "__main__":
    main()
