"""Every verb's --json against docs/JSON.md, both ways: every key a verb prints is documented
with its type, every documented key (not marked optional) is printed, and every number's key
names its unit or its meaning says it has none.

To cover another verb, add its section (`## tandem VERB --json`) to docs/JSON.md and a case to
CASES: the section's name and the commands whose outputs together show every key."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

TANDEM = ""
ZOO = ""
EXAMPLES = ""
DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "JSON.md")

TYPES = {"string", "integer", "number", "boolean", "array", "object"}
# A key naming its unit: _s, _bytes, _flops, _usd, _per_s, _per_hour (or just bytes, flops).
UNIT = re.compile(r"(^|_)(s|bytes|flops|usd)$|_per_(s|hour)$")
UNITLESS = ("(count)", "(index)", "(ratio)", "(version)", "(unit in `unit`)", "(unit in its key)",
            "(unit of the output)", "(unit of the loss)")


def segments(path):
    """'devices[].figures.*' -> ['devices', '[]', 'figures', '*']"""
    out = []
    for part in path.split("."):
        name = part.replace("[]", "")
        if name:
            out.append(name)
        out.extend(["[]"] * part.count("[]"))
    return out


def parse_doc(text):
    """{section title: {segments tuple: (types set, optional, meaning, path)}}"""
    sections, rows = {}, None
    for line in text.splitlines():
        if line.startswith("## "):
            rows = sections.setdefault(line[3:].strip(), {})
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if rows is None or len(cells) != 3 or not cells[0].startswith("`"):
            continue
        path, kind, meaning = cells[0].strip("`"), cells[1], cells[2]
        types = set(kind[len("null-or-"):].split()) | {"null"} if kind.startswith(
            "null-or-") else {kind}
        assert types <= TYPES | {"null"}, f"{path}: unknown type {kind}"
        rows[tuple(segments(path))] = (types, "(optional)" in meaning, meaning, path)
    return sections


def flatten(value, path=(), out=None):
    """Every path in a JSON value, with the types seen there."""
    out = {} if out is None else out
    kind = ("null" if value is None else "boolean" if isinstance(value, bool) else
            "integer" if isinstance(value, int) else "number" if isinstance(value, float) else
            "string" if isinstance(value, str) else "array" if isinstance(value, list) else
            "object")
    out.setdefault(path, set()).add(kind)
    if isinstance(value, dict):
        for key, item in value.items():
            flatten(item, path + (key,), out)
    elif isinstance(value, list):
        for item in value:
            flatten(item, path + ("[]",), out)
    return out


def leaves(value, path=()):
    """(path, value) of every number, string, boolean or null in a JSON value."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, path + (key,))
    elif isinstance(value, list):
        for item in value:
            yield from leaves(item, path + ("[]",))
    else:
        yield path, value


def matches(pattern, path):
    return len(pattern) == len(path) and all(
        p == q or (p == "*" and q != "[]") for p, q in zip(pattern, path))


def documented(rows, path):
    """The most specific row for a concrete path (fewest wildcards), or None."""
    candidates = [pattern for pattern in rows if matches(pattern, path)]
    return min(candidates, key=lambda p: p.count("*")) if candidates else None


def run(*args):
    result = subprocess.run([TANDEM, *args], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"tandem {' '.join(args)}: {result.stderr}"
    return json.loads(result.stdout)


def model(name):
    return os.path.join(ZOO, name, "model.onnx")


def cluster(name):
    return os.path.join(EXAMPLES, name)


def plan_outputs(directory):
    outputs = [run("plan", model("resnet"), "--cluster", cluster("h100-4xv5e.yaml"), "--dim",
                   "batch=8", "--json"),
               run("plan", model("resnet"), "--cluster", cluster("h100-4xv5e.yaml"), "--dim",
                   "batch=8", "--strategy", "pipeline", "--microbatches", "4", "--json"),
               run("plan", model("bert"), "--cluster", cluster("cpu-split.yaml"), "--dim",
                   "batch=4", "--shape", "input_ids=4x32", "--strategy", "data-parallel",
                   "--objective", "throughput", "--json")]
    return outputs


def simulate_outputs(directory):
    path = os.path.join(directory, "plan.json")
    subprocess.run([TANDEM, "plan", model("mlp"), "--cluster", cluster("gpu-cpu.yaml"), "--dim",
                    "batch=4", "-o", path], check=True, capture_output=True, timeout=300)
    return [run("simulate", path, "--cluster", cluster("gpu-cpu.yaml"), "--json"),
            run("simulate", path, "--cluster", cluster("gpu-cpu.yaml"), "--replicas", "2",
                "--json")]


def compare_outputs(directory):
    tiny = os.path.join(directory, "tiny.yaml")
    with open(tiny, "w") as f:
        f.write("hosts: [h]\ndevices:\n  - {id: tiny0, preset: cpu-generic-avx2, host: h, "
                "figures: {memory: 1 KiB}}\n")
    priced = os.path.join(directory, "priced.yaml")
    with open(priced, "w") as f:
        f.write("hosts: [h]\ndevices:\n  - {id: cpu0, preset: cpu-generic-avx2, host: h, "
                "figures: {price_per_hour: 2 USD/h}}\n")
    return [run("compare", model("resnet"), "--cluster", cluster("h100-4xv5e.yaml"), "--cluster",
                cluster("cpu-split.yaml"), "--cluster", tiny, "--cluster", priced, "--dim",
                "batch=8", "--json"),
            run("compare", model("mlp"), "--cluster", tiny, "--cluster", priced, "--json")]


def inspect_outputs(directory):
    return [run("inspect", model("resnet"), "--json"),
            run("inspect", model("postproc"), "--cluster", cluster("h100-4xv5e.yaml"), "--json")]


def devices_outputs(directory):
    return [run("devices", "--json"), run("devices", "--cluster", cluster("h100-4xv5e.yaml"),
                                          "--json"),
            run("devices", "--cluster", cluster("2xa100-v6e.yaml"), "--json")]


def calibrate_outputs(directory):
    return [run("calibrate", "--quick", "--json", "-o", os.path.join(directory, "profile.json"))]


def calibrate_mpi_outputs(directory):
    """Two ranks on this machine over TCP on loopback; skipped in a build without MPI."""
    bare = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMIX_", "PMI_"))}
    outside = subprocess.run([TANDEM, "calibrate", "--mpi"], capture_output=True, text=True,
                             timeout=60, env=bare)
    if "without MPI" in outside.stderr or not shutil.which("mpirun"):
        raise unittest.SkipTest("this tandem was built without MPI")
    environment = dict(bare, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                       OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_btl="self,tcp",
                       OMPI_MCA_btl_tcp_if_include="lo", OMPI_MCA_oob_tcp_if_include="lo")
    result = subprocess.run(["mpirun", "-np", "2", TANDEM, "calibrate", "--mpi", "--quick",
                             "--json", "-o", os.path.join(directory, "links.yaml")],
                            capture_output=True, text=True, timeout=120, env=environment)
    assert result.returncode == 0, f"mpirun tandem calibrate --mpi: {result.stderr}"
    return [json.loads(result.stdout)]


def run_outputs(directory):
    reference = np.load(os.path.join(ZOO, "mlp", "expected", "logits.npy"))
    wrong = os.path.join(directory, "wrong.npy")
    np.save(wrong, reference + 1)
    mlp = [model("mlp"), "--dim", "batch=2", "--input",
           "x=" + os.path.join(ZOO, "mlp", "inputs", "x.npy"), "--iterations", "3", "--json"]
    mismatch = subprocess.run([TANDEM, "run", *mlp, "--expect", "logits=" + wrong],
                              capture_output=True, text=True, timeout=300)
    assert mismatch.returncode == 1, mismatch.stderr
    return [run("run", *mlp, "--profile", "--expect",
                "logits=" + os.path.join(ZOO, "mlp", "expected", "logits.npy")),
            json.loads(mismatch.stdout),
            run("run", model("resnet"), "--cluster", cluster("cpu-split.yaml"), "--iterations",
                "2", "--json"),
            run("run", model("mlp"), "--cluster", cluster("cpu-pjrt.yaml"), "--iterations", "1",
                "--json"),
            run("run", model("mlp"), "--precision", "int8", "--iterations", "2", "--json")]


def train_lines(*args):
    """`tandem train ... --json`: every line of stdout one JSON object, as {EVENT: the line less
    its `event`}, so that the section's rows are `EVENT.key`."""
    result = subprocess.run([TANDEM, "train", *args, "--json"], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, f"tandem train {' '.join(args)}: {result.stderr}"
    outputs = []
    for line in result.stdout.splitlines():
        event = json.loads(line)
        kind = event.pop("event")
        assert kind in ("start", "step", "epoch", "done"), f"an event {kind!r}: {line}"
        outputs.append({"schema_version": event.pop("schema_version", None), kind: event})
    assert "start" in outputs[0] and "done" in outputs[-1], result.stdout
    return outputs


def train_outputs(directory):
    """The mlp of zoo/train on random data: with a test split, --save, 2 micro-batches on the
    pipeline of cpu-split.yaml (so the peak memory names both devices); then mse without a test
    split (no accuracy)."""
    rng = np.random.default_rng(0)
    for split, n in (("train", 24), ("test", 10)):
        os.makedirs(os.path.join(directory, "data", split))
        np.save(os.path.join(directory, "data", split, "x.npy"),
                rng.standard_normal((n, 64)).astype(np.float32))
        np.save(os.path.join(directory, "data", split, "y.npy"),
                rng.integers(0, 10, n).astype(np.int64))
    os.makedirs(os.path.join(directory, "mse", "train"))
    np.save(os.path.join(directory, "mse", "train", "x.npy"),
            rng.standard_normal((24, 64)).astype(np.float32))
    np.save(os.path.join(directory, "mse", "train", "y.npy"),
            rng.standard_normal((24, 10)).astype(np.float32))
    mlp = os.path.join(ZOO, "train", "mlp.onnx")
    common = ["--batch", "8", "--threads", "2"]
    return (train_lines(mlp, "--data", os.path.join(directory, "data"), *common, "--epochs", "2",
                        "--cluster", cluster("cpu-split.yaml"), "--strategy", "pipeline",
                        "--microbatches", "2", "--optimizer", "adam",
                        "--save", os.path.join(directory, "trained.onnx")) +
            train_lines(mlp, "--data", os.path.join(directory, "mse"), *common, "--loss", "mse",
                        "--steps", "2"))


# Section of docs/JSON.md -> the commands whose outputs it documents.
CASES = {
    "tandem run --json": run_outputs,
    "tandem plan --json": plan_outputs,
    "tandem compare --json": compare_outputs,
    "tandem simulate --json": simulate_outputs,
    "tandem inspect --json": inspect_outputs,
    "tandem devices --json": devices_outputs,
    "tandem calibrate --json": calibrate_outputs,
    "tandem calibrate --mpi --json": calibrate_mpi_outputs,
    "tandem train --json": train_outputs,
}


def show(path):
    text = ""
    for part in path:
        text += part if part == "[]" else ("." if text else "") + part
    return text


class Schema(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(DOC) as f:
            cls.sections = parse_doc(f.read())

    def check_section(self, title):
        rows = self.sections.get(title)
        self.assertTrue(rows, f"docs/JSON.md has no section '## {title}'")
        with tempfile.TemporaryDirectory() as directory:
            emitted = {}
            for output in CASES[title](directory):
                self.assertEqual(output.get("schema_version"), 1)
                for path, kinds in flatten(output).items():
                    emitted.setdefault(path, set()).update(kinds)
        emitted.pop((), None)
        for path, kinds in sorted(emitted.items()):
            pattern = documented(rows, path)
            self.assertIsNotNone(pattern, f"{title}: `{show(path)}` is not in docs/JSON.md")
            allowed = set(rows[pattern][0])
            if "number" in allowed:
                allowed.add("integer")  # a number may happen to be whole
            self.assertLessEqual(kinds, allowed,
                                 f"{title}: `{show(path)}` is {kinds}, documented "
                                 f"`{rows[pattern][3]}` as {rows[pattern][0]}")
        # Every row not optional is printed wherever its parent is, filled.
        for pattern, (types, optional, meaning, text) in rows.items():
            if optional:
                continue
            parents = [path for path, kinds in emitted.items()
                       if len(pattern) > 1 and matches(pattern[:-1], path)]
            filled = [path for path in parents if any(
                child[:-1] == path for child in emitted if len(child) == len(path) + 1)]
            if len(pattern) > 1 and not filled:
                continue
            self.assertTrue(any(matches(pattern, path) for path in emitted),
                            f"{title}: `{text}` is documented but never printed")
        self.check_units(title, rows)

    def check_units(self, title, rows):
        for pattern, (types, optional, meaning, text) in rows.items():
            if not types & {"integer", "number"}:
                continue
            names = [part for part in pattern if part not in ("[]", "*", "value")]
            key = names[-1] if names else ""
            if UNIT.search(key):
                if re.search(r"(^|_)bytes$", key):
                    self.assertIn("integer", types, f"{title}: `{text}` counts bytes")
                continue
            self.assertTrue(any(marker in meaning for marker in UNITLESS),
                            f"{title}: `{text}` names no unit and its meaning says none of "
                            f"{UNITLESS}")
            if "(count)" in meaning:
                self.assertIn("integer", types, f"{title}: `{text}` is a count")

    def test_the_document_has_a_case_for_every_section(self):
        self.assertEqual(set(self.sections), set(CASES))

    def test_parser_and_checks_can_fail(self):
        rows = parse_doc("## t\n| key | type | meaning |\n|---|---|---|\n"
                         "| `a[].b_s` | number | x |\n| `m.*` | integer | (count) y |\n")["t"]
        self.assertEqual(documented(rows, ("a", "[]", "b_s")), ("a", "[]", "b_s"))
        self.assertEqual(documented(rows, ("m", "gpu0")), ("m", "*"))
        self.assertIsNone(documented(rows, ("a", "[]", "c")))
        self.assertIsNone(documented(rows, ("m", "[]")))
        self.assertEqual(flatten({"a": [{"b_s": 1.5}], "m": {}}),
                         {(): {"object"}, ("a",): {"array"}, ("a", "[]"): {"object"},
                          ("a", "[]", "b_s"): {"number"}, ("m",): {"object"}})
        self.assertTrue(UNIT.search("latency_s") and UNIT.search("price_usd_per_hour"))
        self.assertFalse(UNIT.search("latency") or UNIT.search("busy_ms"))


def add_case(title):
    name = "test_" + re.sub(r"\W+", "_", title.replace("tandem ", "").replace("--json", "")).strip(
        "_")
    setattr(Schema, name, lambda self: self.check_section(title))


for case in CASES:
    add_case(case)

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tandem", required=True)
    parser.add_argument("--zoo", required=True)
    parser.add_argument("--examples", required=True)
    args, rest = parser.parse_known_args()
    TANDEM, ZOO, EXAMPLES = args.tandem, args.zoo, args.examples
    unittest.main(argv=[sys.argv[0], *rest])
