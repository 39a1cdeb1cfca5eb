"""`tandem train` against PyTorch: every gradient (one plain SGD step gives the weights that
torch's loss.backward(); opt.step() gives), the optimisers over several steps, BatchNorm's running
statistics, the saved model in ONNX Runtime and `tandem run`, a CNN learning scikit-learn's
digits across a 2-stage pipeline, the same loss curve on one device and on the pipeline, and
every bad input.

    .venv/bin/python tests/cli/test_train_cli.py --tandem build/src/tandem --zoo zoo/train \\
        --examples examples/clusters [unittest options, e.g. -k Gradients]

The models are zoo/train's (tools/make_train_zoo.py); the torch side builds the same modules from
that file and loads the ONNX initializers into them, so both start from the same weights. Every
test here runs `tandem train`: each fails (never skips) while the verb is missing.
"""
import argparse
import fnmatch
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tools"))
import make_digits  # noqa: E402
import make_train_zoo  # noqa: E402

TANDEM = os.environ.get("TANDEM_BIN", os.path.join(REPO, "build", "src", "tandem"))
ZOO = os.path.join(REPO, "zoo", "train")
EXAMPLES = os.path.join(REPO, "examples", "clusters")
THREADS = "2"

# Weights after training against torch's: |tandem - torch| <= RTOL * |torch| + ATOL * scale, the
# scale being the tensor's largest initial value. torch in float32 against torch in float64 on
# these cases stays under a tenth of that (0.04 at most, the Adam cases), and so did tandem against
# torch when these tests were written (0.063 at most; one SGD step's update, i.e. the gradient,
# within 2.3e-5 of torch's, relative to its largest element, on every parameter of every model).
RTOL, ATOL = 1e-4, 1e-5
LOSS_RTOL = 1e-5


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------

def tandem(*args, timeout=300, env=None):
    """env: variables to set on top of this process's environment."""
    environment = None if env is None else {**os.environ, **env}
    return subprocess.run([TANDEM, *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          env=environment)


def cluster(name="cpu-split.yaml"):
    return os.path.join(EXAMPLES, name)


def zoo_entry(name):
    return make_train_zoo.manifest(ZOO)[name]


def zoo_model(name):
    return os.path.join(ZOO, zoo_entry(name)["path"])


class Run:
    """One `tandem train --json`: its step, epoch and done events."""

    def __init__(self, result, argv):
        self.result, self.argv = result, argv
        self.events = []
        for line in result.stdout.splitlines():
            if line.strip():
                self.events.append(json.loads(line))  # --json: every line of stdout is JSON
        self.steps = [e for e in self.events if e.get("event") == "step"]
        self.epochs = [e for e in self.events if e.get("event") == "epoch"]
        self.done = [e for e in self.events if e.get("event") == "done"]

    @property
    def losses(self):
        return [e["loss"] for e in self.steps]


def train(testcase, model, data, *args, expect_ok=True, env=None):
    """`tandem train MODEL --data DATA --json --threads 2 ARGS`; with expect_ok, it must succeed and
    its JSON lines be well formed: steps numbered from 1 (or 0) in order, the done event last."""
    argv = ["train", model, "--data", data, "--json", "--threads", THREADS, *map(str, args)]
    result = tandem(*argv, env=env)
    if not expect_ok:
        return result
    testcase.assertEqual(result.returncode, 0, f"tandem {' '.join(argv)}\nstderr: {result.stderr[-3000:]}")
    try:
        run = Run(result, argv)
    except json.JSONDecodeError as e:
        testcase.fail(f"tandem {' '.join(argv)}: a stdout line is not JSON ({e}):\n{result.stdout[:2000]}")
    testcase.assertTrue(run.steps, f"no step events: {result.stdout[:2000]}")
    numbers = [e["step"] for e in run.steps]
    testcase.assertEqual(numbers, list(range(numbers[0], numbers[0] + len(numbers))), "step numbers")
    for e in run.steps:
        testcase.assertTrue(math.isfinite(e["loss"]), e)
        testcase.assertGreater(e["samples_per_s"], 0, e)
        testcase.assertIn("epoch", e)
    testcase.assertEqual(len(run.done), 1, "one done event")
    testcase.assertEqual(run.events[-1]["event"], "done", "the done event is the last line")
    return run


def write_split(folder, arrays):
    """arrays: file stem -> array (x, y, or one per model input)."""
    os.makedirs(folder, exist_ok=True)
    for stem, array in arrays.items():
        np.save(os.path.join(folder, f"{stem}.npy"), array)


def random_inputs(entry, n, seed):
    """Inputs for the model's inputs (by name), n samples: U(0,1) images, N(0,1) otherwise."""
    rng = np.random.default_rng(seed)
    out = {}
    for spec in entry["inputs"]:
        shape = [n] + spec["shape"][1:]
        if len(shape) == 4:
            out[spec["name"]] = rng.random(shape, dtype=np.float32)
        else:
            out[spec["name"]] = rng.standard_normal(shape, dtype=np.float32)
    return out


def input_files(entry, inputs):
    """x.npy for a one-input model, <input>.npy for each input otherwise."""
    if len(entry["inputs"]) == 1:
        return {"x": inputs[entry["inputs"][0]["name"]]}
    return dict(inputs)


def torch_train(entry, model_path, inputs, y, *, batch, steps, optimizer="sgd", lr=0.1, momentum=0.0,
                weight_decay=0.0, betas=(0.9, 0.999), eps=1e-8, loss="cross-entropy", freeze=(),
                dtype=None):
    """PyTorch's training of the same module from the same weights, batches in file order (the
    last incomplete one dropped): (module, per-step losses). dtype=torch.float64 for the noise
    estimate."""
    import torch
    module = make_train_zoo.module_from_onnx(entry, model_path)
    if dtype is not None:
        module = module.to(dtype)
    module.train()
    frozen = {row["torch"] for row in entry["parameters"]
              if any(fnmatch.fnmatchcase(row["initializer"], g) for g in freeze)}
    params = []
    for name, p in module.named_parameters():
        p.requires_grad_(name not in frozen)
        if name not in frozen:
            params.append(p)
    if optimizer == "sgd":
        opt = torch.optim.SGD(params, lr=lr, momentum=momentum, weight_decay=weight_decay)
    elif optimizer == "adam":
        opt = torch.optim.Adam(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
    elif optimizer == "adamw":
        opt = torch.optim.AdamW(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
    else:
        raise ValueError(optimizer)
    names = [spec["name"] for spec in entry["inputs"]]
    batches = len(y) // batch
    losses = []
    for step in range(steps):
        rows = slice((step % batches) * batch, (step % batches + 1) * batch)
        feeds = [torch.from_numpy(np.array(inputs[n][rows])) for n in names]
        target = torch.from_numpy(np.array(y[rows]))
        if dtype is not None:
            feeds = [f.to(dtype) for f in feeds]
            target = target.to(dtype) if target.is_floating_point() else target
        out = module(*feeds)
        if loss == "cross-entropy":
            value = torch.nn.functional.cross_entropy(out, target)
        else:
            value = torch.nn.functional.mse_loss(out, target)
        opt.zero_grad()
        value.backward()
        opt.step()
        losses.append(float(value))
    return module, losses


def weight_mismatches(entry, original_path, saved_path, module, rtol=RTOL, atol=ATOL):
    """Every initializer of the saved file against torch's module: a list of lines, one per
    initializer out of tolerance (its worst element, and the relative error of its update, which
    is the gradient's for plain SGD); empty when all agree."""
    initial = make_train_zoo.read_initializers(original_path)
    saved = make_train_zoo.read_initializers(saved_path)
    expected = make_train_zoo.expected_initializers(entry, module)
    problems = []
    for name, value in initial.items():
        if name not in saved:
            problems.append(f"{name}: missing from the saved model")
            continue
        got = saved[name]
        if got.dtype != value.dtype or got.shape != value.shape:
            problems.append(f"{name}: saved as {got.dtype}{list(got.shape)}, was {value.dtype}{list(value.shape)}")
            continue
        if name not in expected:  # an exporter's constant: kept as it was
            if not np.array_equal(got, value):
                problems.append(f"{name}: a constant, changed by training")
            continue
        want = expected[name].astype(np.float64)
        got64 = got.astype(np.float64)
        scale = max(float(np.max(np.abs(value))), 1e-30)
        error = np.abs(got64 - want)
        bound = rtol * np.abs(want) + atol * scale
        if np.all(error <= bound):
            continue
        worst = np.unravel_index(np.argmax(error - bound), error.shape)
        update_want = want - value.astype(np.float64)
        update_got = got64 - value.astype(np.float64)
        update_error = np.max(np.abs(update_got - update_want)) / max(np.max(np.abs(update_want)), 1e-30)
        ratio = (np.sum(update_got * update_want) / max(np.sum(update_want * update_want), 1e-300))
        problems.append(f"{name} {list(value.shape)}: at {list(map(int, worst))} got {got64[worst]:.8g}, "
                        f"torch {want[worst]:.8g}, initial {value[worst]:.8g}; update relative error "
                        f"{update_error:.3g}, update projected on torch's {ratio:.4g}x"
                        + ("" if np.any(update_got) else " (not updated at all)"))
    extra = sorted(set(saved) - set(initial))
    if extra:
        problems.append(f"initializers the input file does not have: {extra}")
    return problems


def same_graph(testcase, original_path, saved_path):
    """The saved model is the input file with its initializers replaced: the same nodes, inputs,
    outputs and opsets."""
    a, b = onnx.load(original_path), onnx.load(saved_path)
    onnx.checker.check_model(b, full_check=True)
    for field in ("node", "input", "output"):
        testcase.assertEqual([x.SerializeToString() for x in getattr(a.graph, field)],
                             [x.SerializeToString() for x in getattr(b.graph, field)], f"graph.{field}")
    testcase.assertEqual([(o.domain, o.version) for o in a.opset_import],
                         [(o.domain, o.version) for o in b.opset_import])


def ort_outputs(path, feeds):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    options.log_severity_level = 3
    session = ort.InferenceSession(path, sess_options=options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


def cross_entropy(logits, labels):
    shifted = logits.astype(np.float64) - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return float(-log_probs[np.arange(len(labels)), labels].mean())


def relative_difference(a, b):
    return abs(a - b) / max(abs(a), abs(b), 1e-30)


def one_line_error(testcase, result, subject, *what):
    """Exit status 2 and exactly one line on stderr: `tandem: error: <subject>...`, naming one
    of `what` (case-insensitive)."""
    lines = result.stderr.strip().splitlines()
    testcase.assertEqual(result.returncode, 2, f"exit status; stderr: {result.stderr[-2000:]}")
    testcase.assertEqual(len(lines), 1, f"one line on stderr: {result.stderr[-2000:]}")
    testcase.assertTrue(lines[0].startswith("tandem: error: " + subject), lines[0])
    if what:
        testcase.assertTrue(any(w.lower() in lines[0].lower() for w in what),
                            f"{lines[0]!r} names none of {what}")


class TrainTest(unittest.TestCase):
    """A temporary folder per class; the verb must exist (`tandem train --help` succeeds)."""
    runs = 0

    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.TemporaryDirectory(prefix="tandem-train-")
        cls.tmp = cls.folder.name

    @classmethod
    def tearDownClass(cls):
        cls.folder.cleanup()

    def setUp(self):
        if not hasattr(TrainTest, "_help"):
            TrainTest._help = tandem("train", "--help", timeout=60)
        help_run = TrainTest._help
        self.assertTrue(help_run.returncode == 0 and "--data" in help_run.stdout,
                        f"`tandem train --help` shows no --data: is the verb there?\n{help_run.stdout[-500:]}"
                        f"{help_run.stderr[-500:]}")

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def dataset(self, name, entry, n, seed, loss="cross-entropy"):
        """DIR/train/ of n random samples for the model (labels for cross-entropy, float32
        targets of the output's shape for mse): (dir, inputs, y)."""
        inputs = random_inputs(entry, n, seed)
        rng = np.random.default_rng(seed + 1)
        if loss == "cross-entropy":
            y = rng.integers(0, entry["classes"], n).astype(np.int64)
        else:
            y = rng.standard_normal((n, entry["classes"]), dtype=np.float32)
        folder = self.path(name)
        write_split(os.path.join(folder, "train"), {**input_files(entry, inputs), "y": y})
        return folder, inputs, y

    def check_against_torch(self, model, *, n, batch, steps, optimizer="sgd", lr=0.1, momentum=0.0,
                            weight_decay=0.0, betas=None, eps=None, loss="cross-entropy", freeze=(), seed=11):
        """Train with tandem (--no-shuffle) and with torch from the same weights on the same
        batches; the per-step losses and every saved weight (BatchNorm statistics included) must
        agree. Returns (saved path, torch module, run)."""
        entry = zoo_entry(model)
        TrainTest.runs += 1
        tag = f"{model}-{optimizer}-{steps}-{loss}-{TrainTest.runs}"
        data, inputs, y = self.dataset(tag, entry, n, seed, loss)
        saved = self.path(tag + ".onnx")
        args = ["--no-shuffle", "--batch", batch, "--steps", steps, "--epochs", math.ceil(steps / (n // batch)),
                "--optimizer", optimizer, "--lr", lr, "--loss", loss, "--save", saved]
        if optimizer == "sgd":
            args += ["--momentum", momentum]
        if weight_decay or optimizer == "adamw":  # torch's AdamW decays by 0.01 unless told
            args += ["--weight-decay", weight_decay]
        if betas is not None:
            args += ["--beta1", betas[0], "--beta2", betas[1]]
        if eps is not None:
            args += ["--eps", eps]
        for glob in freeze:
            args += ["--freeze", glob]
        run = train(self, zoo_model(model), data, *args)
        module, torch_losses = torch_train(entry, zoo_model(model), inputs, y, batch=batch, steps=steps,
                                           optimizer=optimizer, lr=lr, momentum=momentum,
                                           weight_decay=weight_decay, loss=loss, freeze=freeze,
                                           betas=betas or (0.9, 0.999), eps=1e-8 if eps is None else eps)
        self.assertEqual(len(run.steps), steps, f"steps run: {run.losses}")
        for k, (ours, theirs) in enumerate(zip(run.losses, torch_losses)):
            self.assertLessEqual(relative_difference(ours, theirs), LOSS_RTOL,
                                 f"{model}: step {k + 1} loss {ours!r}, torch {theirs!r} "
                                 f"(ratio {ours / theirs:.6g})")
        self.assertTrue(os.path.isfile(saved), "--save wrote no file")
        same_graph(self, zoo_model(model), saved)
        problems = weight_mismatches(entry, zoo_model(model), saved, module)
        self.assertFalse(problems, f"{model}, {optimizer} x{steps} ({loss}): weights against torch's:\n  "
                         + "\n  ".join(problems))
        return saved, module, run


# ---------------------------------------------------------------------------------------------
# gradients and optimisers against PyTorch
# ---------------------------------------------------------------------------------------------

class Gradients(TrainTest):
    """One plain SGD step over the whole of a small data set: the saved weights are w - lr * g,
    so every gradient is checked against torch's autograd."""

    def test_sgd_step_digits_cnn(self):
        self.check_against_torch("digits_cnn", n=16, batch=16, steps=1)

    def test_sgd_step_mlp(self):
        self.check_against_torch("mlp", n=16, batch=16, steps=1)

    def test_sgd_step_tiny_transformer(self):
        self.check_against_torch("tiny_transformer", n=16, batch=16, steps=1)

    def test_sgd_step_mixed_ops(self):
        self.check_against_torch("mixed_ops", n=16, batch=16, steps=1)

    def test_sgd_step_two_inputs(self):
        # one .npy file per model input, named after it
        self.check_against_torch("two_inputs", n=16, batch=16, steps=1)

    def test_mse_mlp(self):
        # torch's mse_loss: the mean over every element of [N, C]
        self.check_against_torch("mlp", n=16, batch=16, steps=1, loss="mse")
        self.check_against_torch("mlp", n=26, batch=8, steps=3, loss="mse", optimizer="adam", lr=0.01, eps=1e-3)

    def test_freeze(self):
        # frozen initializers stay as they were; the others get torch's update without them
        saved, _, _ = self.check_against_torch("mlp", n=16, batch=16, steps=1, freeze=("fc1.*", "fc3.bias"))
        before = make_train_zoo.read_initializers(zoo_model("mlp"))
        after = make_train_zoo.read_initializers(saved)
        for name in ("fc1.weight", "fc1.bias", "fc3.bias"):
            np.testing.assert_array_equal(after[name], before[name], err_msg=name)
        self.assertFalse(np.array_equal(after["fc2.weight"], before["fc2.weight"]))


class Optimizers(TrainTest):
    """Three steps on three consecutive batches (26 samples, batch 8: the last 2 dropped) of each
    optimiser, with torch.optim's: the state (momentum, Adam's moments and bias correction) and
    the weight decay carry over the steps.

    Adam's step is lr * m / (sqrt(v) + eps): where a gradient is near zero (a sum that cancels,
    the keys' bias of attention), float32 rounding in its last bits moves the step by up to lr,
    in torch as much as here (torch float32 against float64: up to 0.9 of the tolerance with
    eps 1e-8 on these cases; 241x for the transformer's k.bias). So the runs over every model
    take --eps 1e-3 (still Adam: the gradients here are ~1e-3 to 1e-1; float32 against float64
    then stays under 0.04 of the tolerance) and the default eps is checked where it is well
    conditioned."""

    MODELS = ("mlp", "digits_cnn", "tiny_transformer", "mixed_ops")

    def each_model(self, **kwargs):
        for model in self.MODELS:
            with self.subTest(model=model):
                self.check_against_torch(model, n=26, batch=8, steps=3, **kwargs)

    def test_sgd_momentum(self):
        self.each_model(optimizer="sgd", lr=0.05, momentum=0.9)

    def test_sgd_momentum_weight_decay(self):
        self.check_against_torch("mlp", n=26, batch=8, steps=3, optimizer="sgd", lr=0.05, momentum=0.9,
                                 weight_decay=0.01)

    def test_adam(self):
        self.each_model(optimizer="adam", lr=0.01, eps=1e-3)

    def test_adam_defaults(self):
        # PyTorch's defaults: betas 0.9, 0.999, eps 1e-8 (no --beta1, --beta2, --eps)
        self.check_against_torch("mlp", n=26, batch=8, steps=3, optimizer="adam", lr=0.01)

    def test_adam_betas(self):
        self.check_against_torch("mixed_ops", n=26, batch=8, steps=3, optimizer="adam", lr=0.01,
                                 betas=(0.8, 0.99), eps=1e-3)

    def test_adam_weight_decay(self):
        # Adam's weight decay is added to the gradient (L2), unlike AdamW's
        self.check_against_torch("mlp", n=26, batch=8, steps=3, optimizer="adam", lr=0.01, weight_decay=0.1,
                                 eps=1e-3)

    def test_adamw(self):
        self.each_model(optimizer="adamw", lr=0.01, weight_decay=0.1, eps=1e-3)


class Checkpoint(TrainTest):
    def test_resume_continues_as_if_never_stopped(self):
        # Adam (its moments and step count are in the checkpoint), BatchNorm statistics, file order:
        # 3 steps, a checkpoint, 3 more from it = 6 steps in one go
        entry = zoo_entry("digits_cnn")
        data, _, _ = self.dataset("resume", entry, 48, 21)
        common = ["--no-shuffle", "--batch", 8, "--optimizer", "adam", "--lr", 0.01]
        straight = self.path("straight.onnx")
        whole = train(self, zoo_model("digits_cnn"), data, *common, "--steps", 6, "--save", straight)
        folder = self.path("checkpoint")
        first = train(self, zoo_model("digits_cnn"), data, *common, "--steps", 3, "--checkpoint", folder)
        resumed = self.path("resumed.onnx")
        second = train(self, zoo_model("digits_cnn"), data, *common, "--steps", 6, "--resume", folder,
                       "--save", resumed)
        self.assertEqual(len(first.steps), 3)
        self.assertEqual([e["step"] for e in second.steps], [e["step"] for e in whole.steps[3:]],
                         "the resumed run goes on from step 4 to step 6")
        for k, (a, b) in enumerate(zip(first.losses + second.losses, whole.losses)):
            self.assertLessEqual(relative_difference(a, b), 1e-6, f"step {k + 1}: {a} resumed, {b} straight")
        a, b = make_train_zoo.read_initializers(resumed), make_train_zoo.read_initializers(straight)
        for name in b:
            np.testing.assert_allclose(a[name], b[name], rtol=1e-6, atol=1e-7, err_msg=name)


class BatchNorm(TrainTest):
    def test_running_statistics(self):
        # torch's train mode: momentum 0.1, the batch's unbiased variance into running_var
        saved, module, _ = self.check_against_torch("digits_cnn", n=26, batch=8, steps=3,
                                                    optimizer="sgd", lr=0.05, momentum=0.9)
        before = make_train_zoo.read_initializers(zoo_model("digits_cnn"))
        after = make_train_zoo.read_initializers(saved)
        for name, key in (("bn1.running_mean", "bn1.running_mean"), ("bn1.running_var", "bn1.running_var")):
            want = module.state_dict()[key].numpy()
            self.assertFalse(np.allclose(after[name], before[name]), f"{name} did not move")
            np.testing.assert_allclose(after[name], want, rtol=1e-5, atol=1e-6, err_msg=name)


class SavedModel(TrainTest):
    def test_saved_model_runs_in_onnxruntime_and_tandem_run(self):
        import torch
        saved, module, _ = self.check_against_torch("digits_cnn", n=26, batch=8, steps=3, optimizer="adam",
                                                    lr=0.01, eps=1e-3)
        x = np.random.default_rng(5).random((6, 1, 8, 8), dtype=np.float32)
        theirs = ort_outputs(saved, {"x": x})
        module.eval()
        with torch.no_grad():
            trained = module(torch.from_numpy(x)).numpy()
        # ONNX Runtime computes what the trained module does (running statistics in eval mode)
        np.testing.assert_allclose(theirs, trained, rtol=1e-4, atol=1e-4 * np.abs(trained).max())
        x_file = self.path("saved-x.npy")
        np.save(x_file, x)
        out_dir = self.path("saved-out")
        result = tandem("run", saved, "--input", f"x={x_file}", "--output-dir", out_dir, "--iterations", 1,
                        "--warmup", 0, "--threads", THREADS)
        self.assertEqual(result.returncode, 0, result.stderr[-2000:])
        ours = np.load(os.path.join(out_dir, "logits.npy"))
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4 * np.abs(theirs).max())


# ---------------------------------------------------------------------------------------------
# learning the digits; the same curve on one device and on a pipeline
# ---------------------------------------------------------------------------------------------

class Digits(TrainTest):
    # Adam at a constant lr 0.01 spikes now and then until the training loss is near zero: over
    # 16 seeds, tandem's test accuracy after 15 epochs was 94.7-98.9%, after 30 96.9-98.6% (seed 0:
    # 98.6%); PyTorch, the same CNN and settings, 12 shuffles: 96.1-98.1% after 15. 30 epochs of
    # 44 steps take ~4 s on 2 cores.
    EPOCHS = 30

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.data = os.path.join(cls.tmp, "digits")
        make_digits.write_digits(cls.data)

    def test_cnn_learns_digits_on_the_pipeline(self):
        saved = self.path("digits.onnx")
        run = train(self, zoo_model("digits_cnn"), self.data, "--cluster", cluster(), "--strategy", "pipeline",
                    "--epochs", self.EPOCHS, "--optimizer", "adam", "--lr", 0.01, "--batch", 32, "--save", saved)
        train_n = len(np.load(os.path.join(self.data, "train", "y.npy")))
        self.assertEqual(len(run.steps), self.EPOCHS * (train_n // 32), "steps: the last partial batch dropped")
        self.assertEqual([e["epoch"] for e in run.epochs], list(range(run.epochs[0]["epoch"],
                                                                       run.epochs[0]["epoch"] + self.EPOCHS)))
        last = run.epochs[-1]
        curve = [round(e["test_accuracy"], 4) for e in run.epochs]
        self.assertGreaterEqual(last["test_accuracy"], 0.95, f"test accuracy by epoch: {curve}")
        self.assertLess(last["train_loss"], run.epochs[0]["train_loss"], "train loss by epoch")
        # the saved model in ONNX Runtime, on the test split
        x = np.load(os.path.join(self.data, "test", "x.npy"))
        y = np.load(os.path.join(self.data, "test", "y.npy"))
        logits = ort_outputs(saved, {"x": x})
        accuracy = float((logits.argmax(axis=1) == y).mean())
        self.assertGreaterEqual(accuracy, 0.95, "the saved model's accuracy in ONNX Runtime")
        # the last epoch's test figures are the saved model's (both with the running statistics)
        self.assertLessEqual(abs(accuracy - last["test_accuracy"]), 1.5 / len(y),
                             f"ONNX Runtime {accuracy}, the epoch line {last['test_accuracy']}")
        self.assertLessEqual(relative_difference(cross_entropy(logits, y), last["test_loss"]), 1e-3,
                             f"ONNX Runtime's test loss {cross_entropy(logits, y)}, the epoch line {last['test_loss']}")


class SameCurve(TrainTest):
    """Same seed, same loss curve: one device and the 2-stage pipeline of cpu-split.yaml; another
    seed, another curve; --no-shuffle, torch's first loss."""
    STEPS = 20
    ARGS = ("--steps", STEPS, "--batch", 32, "--optimizer", "sgd", "--lr", 0.05, "--momentum", 0.9)

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.data = os.path.join(cls.tmp, "digits")
        make_digits.write_digits(cls.data)

    def curve(self, *args, devices=None):
        run = train(self, zoo_model("digits_cnn"), self.data, *self.ARGS, *args)
        self.assertEqual(len(run.steps), self.STEPS)
        if devices is not None:
            # the plan really spans them: each holds memory in the step's simulation
            self.assertEqual(sorted(run.done[0].get("simulated_peak_memory_bytes", {})), devices,
                             f"devices of the plan: {run.done[0]}")
        return run.losses

    def assert_same(self, a, b, what):
        worst = max(relative_difference(p, q) for p, q in zip(a, b))
        self.assertLessEqual(worst, 1e-5, f"{what}: worst relative difference {worst:.3g}\n{a}\n{b}")

    def test_one_device_and_pipeline(self):
        one = self.curve("--seed", 7)
        single = self.curve("--seed", 7, "--cluster", cluster(), "--strategy", "single:cpu0")
        pipeline = self.curve("--seed", 7, "--cluster", cluster(), "--strategy", "pipeline",
                              devices=["cpu0", "cpu1"])
        heft = self.curve("--seed", 7, "--cluster", cluster(), "--strategy", "heft")
        self.assert_same(one, single, "no cluster against single:cpu0")
        self.assert_same(single, pipeline, "single:cpu0 against the 2-stage pipeline")
        self.assert_same(single, heft, "single:cpu0 against heft")
        self.assertLess(np.mean(pipeline[-5:]), np.mean(pipeline[:5]), f"the loss does not fall: {pipeline}")
        other = self.curve("--seed", 8)
        self.assertGreater(max(relative_difference(p, q) for p, q in zip(one, other)), 1e-3,
                           "--seed 8 gives the curve of --seed 7: the shuffle ignores the seed")

    def test_no_shuffle_is_file_order(self):
        run = train(self, zoo_model("digits_cnn"), self.data, "--no-shuffle", "--steps", 1, "--batch", 32)
        x = np.load(os.path.join(self.data, "train", "x.npy"))
        y = np.load(os.path.join(self.data, "train", "y.npy"))
        _, losses = torch_train(zoo_entry("digits_cnn"), zoo_model("digits_cnn"), {"x": x}, y, batch=32, steps=1)
        self.assertLessEqual(relative_difference(run.losses[0], losses[0]), LOSS_RTOL,
                             f"first loss {run.losses[0]}, torch on the first 32 samples {losses[0]}")

    def test_shards_are_concatenated_in_name_order(self):
        # x-0.npy ... x-4.npy (of unequal sizes) and y-0.npy ... as one x.npy and one y.npy
        x = np.load(os.path.join(self.data, "train", "x.npy"))[:96]
        y = np.load(os.path.join(self.data, "train", "y.npy"))[:96]
        whole = self.path("whole")
        write_split(os.path.join(whole, "train"), {"x": x, "y": y})
        sharded = self.path("sharded")
        cuts = [0, 5, 29, 30, 71, 96]
        write_split(os.path.join(sharded, "train"),
                    {f"{stem}-{i}": a[cuts[i]:cuts[i + 1]] for i in range(5) for stem, a in (("x", x), ("y", y))})
        args = ("--no-shuffle", "--batch", 8, "--epochs", 1, "--optimizer", "sgd", "--lr", 0.05)
        a = train(self, zoo_model("digits_cnn"), whole, *args).losses
        b = train(self, zoo_model("digits_cnn"), sharded, *args).losses
        self.assertEqual(len(a), 12)
        self.assert_same(a, b, "x.npy against 5 shards")


# ---------------------------------------------------------------------------------------------
# the batch split (micro-batches, data-parallel shares), recomputation, the PJRT device
# ---------------------------------------------------------------------------------------------

def worst_relative(a, b):
    return max(relative_difference(p, q) for p, q in zip(a, b))


class SplitBatch(TrainTest):
    """A batch split into 4 micro-batches on cpu-split.yaml's 2-stage pipeline, or into
    data-parallel shares on its two devices, gives the single device's loss curve where no
    BatchNorm sees the pieces (each piece's loss is scaled by 1/batch, the gradients summed on the
    host before one update): the pieces' sums reassociate, so within 1e-5 (measured: 1.2e-7 at
    most over these 8 steps). The pipeline's two schedules (--schedule 1f1b, the default, and
    gpipe) run the same pieces in another order and sum them in piece order: the same curve, bit
    for bit. The digits CNN's BatchNorm normalises each piece by its own
    statistics (as DDP without SyncBN), so its curve differs from the single device's, and still
    falls. --recompute recomputes activations instead of keeping them: the same arithmetic, so the
    same curve (1e-6; measured: equal)."""
    ARGS = ("--epochs", 2, "--batch", 16, "--optimizer", "adam", "--lr", 0.01, "--seed", 3)

    def run_split(self, model, data, *args, devices=("cpu0", "cpu1"), microbatches=None, strategy=None,
                  extra=()):
        run = train(self, zoo_model(model), data, "--cluster", cluster(), *args, *extra)
        start = run.events[0]
        self.assertEqual(start["event"], "start", run.events[0])
        if strategy is not None:
            self.assertEqual(start["strategy"], strategy, start)
        if microbatches is not None:
            self.assertEqual(start["microbatches"], microbatches, start)
        # the plan of the gradient graph really spans both devices
        self.assertEqual(sorted(run.done[0]["simulated_peak_memory_bytes"]), sorted(devices), run.done[0])
        return run.losses

    def random_data(self, model, n=64, seed=5):
        data, _, _ = self.dataset(f"split-{model}", zoo_entry(model), n, seed)
        return data

    def test_pieces_give_the_single_device_curve(self):
        for model in ("mlp", "tiny_transformer"):
            with self.subTest(model=model):
                data = self.random_data(model)
                single = self.run_split(model, data, "--strategy", "single:cpu0", *self.ARGS, devices=["cpu0"])
                self.assertEqual(len(single), 8)
                pipeline = self.run_split(model, data, "--strategy", "pipeline", "--microbatches", 4, *self.ARGS,
                                          strategy="pipeline", microbatches=4)
                # the default 1F1B order and GPipe's: the same pieces summed in piece order
                gpipe = self.run_split(model, data, "--strategy", "pipeline", "--microbatches", 4, "--schedule",
                                       "gpipe", *self.ARGS, strategy="pipeline", microbatches=4)
                self.assertEqual(gpipe, pipeline, f"{model}: --schedule gpipe against 1f1b")
                shares = self.run_split(model, data, "--strategy", "data-parallel", *self.ARGS,
                                        strategy="data-parallel")
                for name, curve in (("4 micro-batches on the pipeline", pipeline), ("data-parallel", shares)):
                    self.assertEqual(len(curve), len(single), name)
                    worst = worst_relative(single, curve)
                    self.assertLessEqual(worst, 1e-5, f"{model}, {name} against single:cpu0: worst relative "
                                                      f"difference {worst:.3g}\n{single}\n{curve}")

    def test_batchnorm_pieces_still_learn_the_digits(self):
        data = os.path.join(self.tmp, "digits")
        make_digits.write_digits(data)
        args = ("--steps", 15, "--batch", 32, "--optimizer", "adam", "--lr", 0.01, "--seed", 3)
        single = self.run_split("digits_cnn", data, "--strategy", "single:cpu0", *args, devices=["cpu0"])
        for name, split in (("4 micro-batches on the pipeline", ("--strategy", "pipeline", "--microbatches", 4)),
                            ("data-parallel", ("--strategy", "data-parallel"))):
            with self.subTest(split=name):
                curve = self.run_split("digits_cnn", data, *split, *args)
                self.assertEqual(len(curve), 15)
                # the first forward pass already normalises by each piece's statistics
                first = relative_difference(curve[0], single[0])
                self.assertGreater(first, 1e-6, f"{name}: the first loss is the whole batch's ({curve[0]} "
                                                f"against {single[0]}): were the pieces run at all?")
                self.assertLess(first, 1e-2, f"{name}: first loss {curve[0]}, single device {single[0]}")
                # measured: 2.35 -> about 1.2-1.3 over 15 steps, as on one device
                self.assertLess(np.mean(curve[-5:]), 0.8 * np.mean(curve[:5]), f"{name}: the loss does not fall: {curve}")

    def test_recompute_gives_the_same_curve(self):
        digits = os.path.join(self.tmp, "digits-recompute")
        make_digits.write_digits(digits)
        cases = (("tiny_transformer", self.random_data("tiny_transformer", seed=6), ()),
                 ("digits_cnn", digits, ("--steps", 10)),
                 ("mixed_ops", self.random_data("mixed_ops", seed=7), ()))
        for model, data, extra in cases:
            with self.subTest(model=model):
                kept = train(self, zoo_model(model), data, *self.ARGS, *extra).losses
                recomputed = train(self, zoo_model(model), data, *self.ARGS, *extra, "--recompute").losses
                self.assertEqual(len(kept), len(recomputed))
                self.assertGreaterEqual(len(kept), 8)
                worst = worst_relative(kept, recomputed)
                self.assertLessEqual(worst, 1e-6, f"{model}: --recompute against without: worst relative "
                                                  f"difference {worst:.3g}\n{kept}\n{recomputed}")


class OnPjrt(TrainTest):
    """A training step on the PJRT device (examples/clusters/cpu-pjrt.yaml's pjrt0: the gradient
    graph compiled whole by XLA through the CPU plugin) against the CPU backend (its cpu0): three
    Adam steps in file order, the same losses (1e-5 relative) and saved weights (|pjrt - cpu| <=
    1e-4 |cpu| + 1e-5 max|initial|). --eps 1e-3 as in Optimizers: with Adam's default 1e-8 a
    gradient that is float32 noise around zero (the transformer's k.bias) is amplified to a step
    of lr on both sides alike, which says nothing of the backends. Measured: losses within 1.1e-7,
    weights within 0.11 of the tolerance. Each PJRT run compiles its programs (3-4 s; the
    executable cache is off, so nothing is written to the home folder): 13-25 s in all on 2
    cores. Skipped only in a build without the PJRT backend."""
    MODELS = ("digits_cnn", "mixed_ops", "tiny_transformer")
    ENV = {"TANDEM_CACHE_DIR": "off"}

    @classmethod
    def setUpClass(cls):
        # A build without the backend says so by name when asked to load the cluster's plugin;
        # any other failure (no plugin found, say) is left to fail the test below.
        probe = tandem("devices", "--cluster", cluster("cpu-pjrt.yaml"), "--probe", timeout=120, env=cls.ENV)
        if probe.returncode != 0 and "has no PJRT backend" in probe.stderr:
            raise unittest.SkipTest("this tandem was built without the PJRT backend (`tandem devices --probe`: "
                                    + probe.stderr.strip() + ")")
        super().setUpClass()

    def test_step_on_pjrt_matches_the_cpu_backend(self):
        for model in self.MODELS:
            with self.subTest(model=model):
                entry = zoo_entry(model)
                data, _, _ = self.dataset(f"pjrt-{model}", entry, 24, 31)
                saved, losses = {}, {}
                for device in ("cpu0", "pjrt0"):
                    saved[device] = self.path(f"pjrt-{model}-{device}.onnx")
                    run = train(self, zoo_model(model), data, "--cluster", cluster("cpu-pjrt.yaml"),
                                "--strategy", f"single:{device}", "--steps", 3, "--batch", 8, "--no-shuffle",
                                "--optimizer", "adam", "--lr", 0.01, "--eps", 1e-3, "--save", saved[device],
                                env=self.ENV)
                    self.assertEqual(len(run.steps), 3)
                    self.assertEqual(list(run.done[0]["simulated_peak_memory_bytes"]), [device],
                                     f"the gradient graph's plan is not all on {device}: {run.done[0]}")
                    losses[device] = run.losses
                worst = worst_relative(losses["cpu0"], losses["pjrt0"])
                self.assertLessEqual(worst, LOSS_RTOL, f"{model}: losses on pjrt0 {losses['pjrt0']}, on cpu0 "
                                                       f"{losses['cpu0']}")
                initial = make_train_zoo.read_initializers(zoo_model(model))
                cpu = make_train_zoo.read_initializers(saved["cpu0"])
                pjrt = make_train_zoo.read_initializers(saved["pjrt0"])
                self.assertEqual(sorted(cpu), sorted(pjrt))
                moved = 0
                for name, value in cpu.items():
                    if value.dtype.kind != "f":
                        np.testing.assert_array_equal(pjrt[name], value, err_msg=name)
                        continue
                    moved += not np.array_equal(value, initial[name])
                    scale = max(float(np.max(np.abs(initial[name]))), 1e-30) if initial[name].size else 1.0
                    np.testing.assert_allclose(pjrt[name], value, rtol=RTOL, atol=ATOL * scale,
                                               err_msg=f"{model}: {name} trained on pjrt0 against cpu0")
                self.assertGreater(moved, 0, f"{model}: training moved no weight")


# ---------------------------------------------------------------------------------------------
# bad input: exit 2 and one line `tandem: error: <file>: <what>`
# ---------------------------------------------------------------------------------------------

def non_classifier(path):
    """x [batch, 64] -> Gemm -> Reshape to [batch, 2, 5]: not [N, C] logits."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((10, 64)).astype(np.float32) * 0.1, "w")
    shape = numpy_helper.from_array(np.array([-1, 2, 5], dtype=np.int64), "shape")
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w"], ["h"], transB=1), helper.make_node("Reshape", ["h", "shape"], ["out"])],
        "non_classifier", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", 2, 5])], [w, shape])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


class BadInput(TrainTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        entry = zoo_entry("mlp")
        rng = np.random.default_rng(3)
        cls.x = rng.standard_normal((20, 64), dtype=np.float32)
        cls.y = rng.integers(0, 10, 20).astype(np.int64)
        cls.good = os.path.join(cls.tmp, "good")
        write_split(os.path.join(cls.good, "train"), {"x": cls.x, "y": cls.y})
        cls.mlp = zoo_model(entry["name"])

    def bad(self, model, data, *args):
        """A run expected to fail; --batch 4, so that the 20 samples hold batches."""
        return train(self, model, data, "--batch", 4, *args, expect_ok=False)

    def bad_data(self, name, **arrays):
        folder = self.path(name)
        write_split(os.path.join(folder, "train"), arrays)
        return folder

    def test_the_good_case_trains(self):
        # the baseline the cases below break one thing of
        train(self, self.mlp, self.good, "--batch", 4)

    def test_pieces_of_one_sample_that_change_the_gradient_graph(self):
        # y = (x + p) W^T with p [1, 64] broadcast over the batch: a piece of one sample cannot
        # tell that broadcast from its batch of one, and its gradient graph has other nodes.
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])
        out = helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", 10])
        rng = np.random.default_rng(4)
        p = numpy_helper.from_array(rng.standard_normal((1, 64)).astype(np.float32), "p")
        w = numpy_helper.from_array(rng.standard_normal((10, 64)).astype(np.float32), "w")
        graph = helper.make_graph([helper.make_node("Add", ["x", "p"], ["shifted"]),
                                   helper.make_node("Gemm", ["shifted", "w"], ["out"], transB=1)],
                                  "broadcast", [x], [out], [p, w])
        model = self.path("broadcast.onnx")
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model)
        split = ["--cluster", cluster("cpu-split.yaml"), "--strategy", "data-parallel"]
        result = train(self, model, self.good, "--batch", 2, *split, expect_ok=False)
        one_line_error(self, result, "", "2 or more samples")
        train(self, model, self.good, "--batch", 4, "--steps", 2, *split)  # shares of 2: fine

    def test_missing_data(self):
        one_line_error(self, tandem("train", self.mlp), "", "--data")

    def test_data_without_train(self):
        folder = self.path("no-train")
        write_split(os.path.join(folder, "test"), {"x": self.x, "y": self.y})
        one_line_error(self, self.bad(self.mlp, folder), folder, "train")

    def test_data_that_is_no_folder(self):
        missing = self.path("no-such-folder")
        one_line_error(self, self.bad(self.mlp, missing), missing)

    def test_x_and_y_of_different_lengths(self):
        folder = self.bad_data("lengths", x=self.x, y=self.y[:17])
        one_line_error(self, self.bad(self.mlp, folder), os.path.join(folder, "train"),
                       "20", "17")

    def test_labels_out_of_range(self):
        y = self.y.copy()
        y[7] = 10  # 10 classes: 0..9
        folder = self.bad_data("labels", x=self.x, y=y)
        one_line_error(self, self.bad(self.mlp, folder), os.path.join(folder, "train"),
                       "10")
        y[7] = -1
        folder = self.bad_data("negative-labels", x=self.x, y=y)
        one_line_error(self, self.bad(self.mlp, folder), os.path.join(folder, "train"),
                       "-1")

    def test_x_of_the_wrong_shape(self):
        folder = self.bad_data("shape", x=self.x[:, :60].copy(), y=self.y)
        one_line_error(self, self.bad(self.mlp, folder), os.path.join(folder, "train"),
                       "64", "60")

    def test_missing_y(self):
        folder = self.bad_data("no-y", x=self.x)
        one_line_error(self, self.bad(self.mlp, folder), os.path.join(folder, "train"), "y")

    def test_unknown_optimizer(self):
        one_line_error(self, self.bad(self.mlp, self.good, "--optimizer", "adamax"), "",
                       "--optimizer")

    def test_unknown_loss(self):
        one_line_error(self, self.bad(self.mlp, self.good, "--loss", "hinge"), "", "--loss")

    def test_fewer_samples_than_one_batch(self):
        one_line_error(self, train(self, self.mlp, self.good, "--batch", 32, expect_ok=False),
                       os.path.join(self.good, "train"), "32")

    def test_batch_zero(self):
        one_line_error(self, train(self, self.mlp, self.good, "--batch", 0, expect_ok=False), "", "--batch")

    def test_output_not_logits_for_cross_entropy(self):
        model = self.path("non_classifier.onnx")
        non_classifier(model)
        one_line_error(self, self.bad(model, self.good), model, "[N, C]", "cross-entropy",
                       "logits")

    def test_mse_targets_of_the_wrong_shape(self):
        folder = self.bad_data("mse-shape", x=self.x, y=np.zeros((20, 3), np.float32))
        one_line_error(self, self.bad(self.mlp, folder, "--loss", "mse"),
                       os.path.join(folder, "train"), "10", "3")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tandem", default=TANDEM)
    parser.add_argument("--zoo", default=ZOO, help="zoo/train")
    parser.add_argument("--examples", default=EXAMPLES, help="examples/clusters")
    parser.add_argument("--sanitized", action="store_true",
                        help="a sanitizer build: leave out the digits' 30 epochs (the same code as "
                             "the other classes, 10x slower there) and the PJRT steps (PJRT runs "
                             "under the sanitizers in pjrt_tests)")
    args, rest = parser.parse_known_args()
    if args.sanitized:
        for left_out in ("Digits", "OnPjrt"):
            setattr(sys.modules[__name__], left_out,
                    unittest.skip("left out in a sanitizer build (--sanitized)")(globals()[left_out]))
    TANDEM, ZOO, EXAMPLES = os.path.abspath(args.tandem), os.path.abspath(args.zoo), os.path.abspath(args.examples)
    unittest.main(argv=[sys.argv[0], *rest])
