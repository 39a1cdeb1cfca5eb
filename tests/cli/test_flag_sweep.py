"""Every option of every verb, given values a user might mistype: the tool answers with success,
a mismatch, or one line `tandem: error: ...` and exit 2 -- never a signal, an internal error, a
hang, or the argument parser's own text. The options come from each verb's --help, so a new
option is swept without anyone listing it."""
import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile
import unittest

TANDEM = ""
ZOO = ""
EXAMPLES = ""
VALUE_STRIDE = 1  # every n-th value only (the sanitizer builds, where each run is slow)

# A run that outlives this is a hang: every bad value must be refused or done quickly.
TIMEOUT_S = 60


# Where the swept commands run: a value taken as an output file lands here, not in the source tree.
WORKDIR = tempfile.mkdtemp(prefix="tandem-sweep-")


def tandem(*args):
    return subprocess.run([TANDEM, *args], capture_output=True, text=True, timeout=TIMEOUT_S,
                          cwd=WORKDIR)


def options_of(verb):
    """(option, takes_value) for each option in `tandem VERB --help`, but --help itself."""
    found = []
    for line in tandem(verb, "--help").stdout.splitlines():
        match = re.match(r"^  (?:-\w,)?(--[a-z][\w-]*)(\{\w+\})?( +[A-Z]+)?", line)
        if match and match.group(1) != "--help":
            found.append((match.group(1), bool(match.group(3)) and not match.group(2)))
    return found


class FlagSweep(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.TemporaryDirectory()
        folder = cls.folder.name
        model = os.path.join(ZOO, "mlp", "model.onnx")
        cluster = os.path.join(EXAMPLES, "cpu-split.yaml")
        plan = os.path.join(folder, "plan.json")
        made = tandem("plan", model, "--cluster", cluster, "-o", plan)
        assert made.returncode == 0, made.stderr
        profile = os.path.join(folder, "profile.json")
        # A data set for the zoo's training MLP: 8 samples of 64 features, 10 classes.
        import numpy as np
        data = os.path.join(folder, "data")
        os.makedirs(os.path.join(data, "train"))
        rng = np.random.default_rng(0)
        np.save(os.path.join(data, "train", "x.npy"), rng.standard_normal((8, 64)).astype(np.float32))
        np.save(os.path.join(data, "train", "y.npy"), rng.integers(0, 10, 8).astype(np.int64))
        train_model = os.path.join(ZOO, "train", "mlp.onnx")
        # The valid command each bad value is added to; quick ones, so a refusal is the only
        # slow path left to find.
        cls.bases = {
            "inspect": [model],
            "run": [model, "--iterations", "1", "--warmup", "0"],
            "plan": [model, "--cluster", cluster],
            "compare": [model, "--cluster", cluster, "--cluster", cluster],
            "simulate": [plan, "--cluster", cluster, "--model", model],
            "devices": [],
            "calibrate": ["--quick", "-o", profile],
            "train": [train_model, "--data", data, "--batch", "4", "--steps", "1"],
        }
        # Empty, negative, zero, not a number, beyond a double, beyond an int64, a word, a
        # malformed assignment, a missing file (relative: an output folder is made in the
        # scratch folder, not at the root), a directory, a format string.
        cls.values = ["", "-1", "0", "nan", "1e999", "99999999999999999999", "abc", "a=b=c",
                      "x=-3", "no/such/file", folder, "%s" * 40][::VALUE_STRIDE]

    def check(self, verb, args, result):
        where = f"tandem {verb} {' '.join(args)}"
        self.assertGreaterEqual(result.returncode, 0, f"{where}: killed by signal {-result.returncode}")
        self.assertIn(result.returncode, (0, 1, 2), f"{where}: exit {result.returncode}: {result.stderr}")
        for marker in ("terminate called", "what():", "Run with --help", "internal error", "Aborted"):
            self.assertNotIn(marker, result.stderr, where)
        if result.returncode == 2:
            errors = [line for line in result.stderr.splitlines() if line.startswith("tandem: error: ")]
            others = [line for line in result.stderr.splitlines()
                      if line and not line.startswith(("tandem: error: ", "note: ", "\r"))]
            self.assertEqual(len(errors), 1, f"{where}: {result.stderr}")
            self.assertEqual(others, [], f"{where}: {result.stderr}")

    def sweep(self, verb):
        cases = []
        for option, takes_value in options_of(verb):
            if takes_value:
                cases += [[option, value] for value in self.values] + [[option]]
            else:
                cases.append([option + "=abc"])
        self.assertGreater(len(cases), 5, f"no options parsed from `tandem {verb} --help`")
        base = self.bases[verb]
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            results = list(pool.map(lambda extra: (extra, tandem(verb, *base, *extra)), cases))
        for extra, result in results:
            with self.subTest(verb=verb, args=extra):
                self.check(verb, base + extra, result)

    def test_inspect(self):
        self.sweep("inspect")

    def test_run(self):
        self.sweep("run")

    def test_plan(self):
        self.sweep("plan")

    def test_compare(self):
        self.sweep("compare")

    def test_simulate(self):
        self.sweep("simulate")

    def test_devices(self):
        self.sweep("devices")

    def test_calibrate(self):
        self.sweep("calibrate")

    def test_train(self):
        self.sweep("train")

    def test_every_verb_is_swept(self):
        help_text = tandem("--help").stdout
        verbs = re.findall(r"^  ([a-z]+)\s", help_text.split("Subcommands:")[-1], re.M)
        self.assertEqual(sorted(verbs), sorted(self.bases))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tandem", required=True)
    parser.add_argument("--zoo", required=True)
    parser.add_argument("--examples", required=True)
    parser.add_argument("--value-stride", type=int, default=1)
    args, rest = parser.parse_known_args()
    TANDEM, ZOO, EXAMPLES = os.path.abspath(args.tandem), os.path.abspath(args.zoo), os.path.abspath(args.examples)
    VALUE_STRIDE = args.value_stride
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)
