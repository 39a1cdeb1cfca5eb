#!/usr/bin/env python3
"""Models for `tandem train`: small PyTorch modules exported to ONNX, with the map from every
ONNX initializer back to the module's parameter or buffer, so that a test can train the same
module in PyTorch from the same weights and compare.

    .venv/bin/python tools/make_train_zoo.py [--out zoo/train] [--only mlp,digits_cnn]

<out>/<name>.onnx (torch.onnx.export: opset 17, eval mode with BatchNormalization kept as a node,
constant folding, the batch axis named "batch") and <out>/manifest.json. Every module is built
under a fixed seed and its norm layers' affine weights and running statistics are drawn at random
too, so no two initializers hold the same values (the map is found by value) and none of them is
the trivial 1 or 0 that would hide a missing term in a gradient.

The files are small and committed: tests/cli/test_train_cli.py reads them and imports this file
for the modules (`build`, `module_from_onnx`, `expected_initializers`).

  digits_cnn        Conv-BatchNorm-Relu-MaxPool, Conv-Relu-MaxPool, Flatten, Gemm-Relu-Gemm on [batch,1,8,8]
  mlp               Gemm-Relu-Gemm-Tanh-Gemm on [batch,64]
  tiny_transformer  LayerNorm, 2-head self-attention (MatMul, Softmax), residuals, MatMul-GELU(Erf)-MatMul,
                    ReduceMean over the sequence, Gemm, on [batch,8,32]
  two_inputs        inputs image [batch,1,8,8] and features [batch,16]: Conv-Relu, Gemm-Sigmoid, Concat, Gemm
  mixed_ops         Conv-Relu, GlobalAveragePool-Sigmoid gate (Mul broadcast), AveragePool, Slice, Sub,
                    Div by a parameter (broadcast), Concat, ReduceMean-Sub, Transpose, Reshape,
                    Gemm (transB), Mul by a parameter, on [batch,1,8,8]
"""

from __future__ import annotations

import io
import math
import os
import sys
import warnings

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zoo_common import collect_ops, generator_main, legacy_export_options, write_json  # noqa: E402,F401

OPSET = 17
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _modules():
    """The module classes (torch imported only when asked for)."""
    import torch
    from torch import nn

    class DigitsCNN(nn.Module):
        def __init__(self):
            super().__init__()
            # no bias before BatchNorm: its gradient is zero in exact arithmetic, rounding noise in
            # practice, and Adam would turn that noise into full-size steps
            self.conv1 = nn.Conv2d(1, 16, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(16)
            self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
            self.flatten = nn.Flatten()
            self.fc1 = nn.Linear(128, 64)
            self.fc2 = nn.Linear(64, 10)

        def forward(self, x):
            h = torch.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 2)
            h = torch.max_pool2d(torch.relu(self.conv2(h)), 2)
            return self.fc2(torch.relu(self.fc1(self.flatten(h))))

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(64, 64)
            self.fc2 = nn.Linear(64, 32)
            self.fc3 = nn.Linear(32, 10)

        def forward(self, x):
            return self.fc3(torch.tanh(self.fc2(torch.relu(self.fc1(x)))))

    class TinyTransformer(nn.Module):
        SEQ, D, HEADS, FF = 8, 32, 2, 64

        def __init__(self):
            super().__init__()
            d = self.D
            self.ln1 = nn.LayerNorm(d)
            self.q = nn.Linear(d, d)
            self.k = nn.Linear(d, d)
            self.v = nn.Linear(d, d)
            self.proj = nn.Linear(d, d)
            self.ln2 = nn.LayerNorm(d)
            self.ff1 = nn.Linear(d, self.FF)
            self.ff2 = nn.Linear(self.FF, d)
            self.head = nn.Linear(d, 10)

        def forward(self, x):
            s, d, nh = self.SEQ, self.D, self.HEADS
            hd = d // nh
            h = self.ln1(x)
            # reshape with -1 for the batch: a constant shape, no Shape-Gather chain
            q = self.q(h).reshape(-1, s, nh, hd).transpose(1, 2)
            k = self.k(h).reshape(-1, s, nh, hd).transpose(1, 2)
            v = self.v(h).reshape(-1, s, nh, hd).transpose(1, 2)
            att = torch.softmax(torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(hd), dim=-1)
            o = torch.matmul(att, v).transpose(1, 2).reshape(-1, s, d)
            x = x + self.proj(o)
            x = x + self.ff2(nn.functional.gelu(self.ff1(self.ln2(x))))
            return self.head(x.mean(dim=1))

    class MixedOps(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 8, 3, padding=1)
            self.div = nn.Parameter(2.0 + 0.2 * torch.rand(1, 4, 1, 1))
            self.fc = nn.Linear(128, 10)
            self.scale = nn.Parameter(1.0 + 0.1 * torch.randn(10))

        def forward(self, x):
            h = torch.relu(self.conv(x))                                       # [N,8,8,8]
            h = h * torch.sigmoid(nn.functional.adaptive_avg_pool2d(h, 1))     # GlobalAveragePool
            p = nn.functional.avg_pool2d(h, 2)                                 # [N,8,4,4]
            a, b = p[:, :4], p[:, 4:]                                          # Slice
            c = torch.cat([a - b, b / self.div], dim=1)                        # Sub, Div, Concat
            c = c - c.mean(dim=(2, 3), keepdim=True)                           # ReduceMean, Sub
            f = c.permute(0, 2, 3, 1).reshape(-1, 128)                         # Transpose, Reshape
            return self.fc(f) * self.scale                                     # Gemm, Mul

    class TwoInputs(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 4, 3, stride=2, padding=1)
            self.fc_features = nn.Linear(16, 16)
            self.head = nn.Linear(80, 10)

        def forward(self, image, features):
            a = torch.relu(self.conv(image)).flatten(1)                       # [N,64]
            b = torch.sigmoid(self.fc_features(features))                     # [N,16]
            return self.head(torch.cat([a, b], dim=1))

    return {"digits_cnn": DigitsCNN, "mlp": MLP, "tiny_transformer": TinyTransformer,
            "mixed_ops": MixedOps, "two_inputs": TwoInputs}


# name -> (seed, inputs: (name, shape after the batch), description)
MODELS = {
    "digits_cnn": (1801, [("x", [1, 8, 8])], "CNN for the digits: Conv-BatchNorm-Relu-MaxPool, Conv-Relu-MaxPool, "
                                     "Flatten, Gemm-Relu-Gemm"),
    "mlp": (1802, [("x", [64])], "MLP: Gemm-Relu-Gemm-Tanh-Gemm"),
    "tiny_transformer": (1803, [("x", [8, 32])], "one pre-norm transformer block, 2 heads, GELU, mean over the "
                                        "sequence, a classifier"),
    "mixed_ops": (1804, [("x", [1, 8, 8])], "GlobalAveragePool-Sigmoid gate, AveragePool, Slice, Sub/Div/Mul with "
                                   "broadcasting, Concat, ReduceMean, Transpose, Reshape, Gemm transB"),
    "two_inputs": (1805, [("image", [1, 8, 8]), ("features", [16])],
                   "two inputs: a strided Conv-Relu branch and a Gemm-Sigmoid branch, Concat, Gemm"),
}
CLASSES = 10


def build(name: str):
    """The module, freshly initialised under the model's seed (eval mode)."""
    import torch
    seed = MODELS[name][0]
    torch.manual_seed(seed)
    module = _modules()[name]()
    with torch.no_grad():
        for sub in module.modules():
            if isinstance(sub, (torch.nn.BatchNorm2d, torch.nn.LayerNorm)):
                sub.weight.copy_(1.0 + 0.2 * torch.randn_like(sub.weight))
                sub.bias.copy_(0.1 * torch.randn_like(sub.bias))
            if isinstance(sub, torch.nn.BatchNorm2d):
                sub.running_mean.copy_(0.1 * torch.randn_like(sub.running_mean))
                sub.running_var.copy_(1.0 + 0.3 * torch.rand_like(sub.running_var))
    return module.eval()


def export(module, name: str, path: str) -> None:
    import torch
    generator = torch.Generator().manual_seed(0)
    inputs = MODELS[name][1]
    examples = tuple(torch.rand(2, *shape, generator=generator) for _, shape in inputs)
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        # the advice against constant folding is for modules in training mode; this one is in eval
        warnings.filterwarnings("ignore", message="It is recommended that constant folding be turned off")
        _export(torch, module, examples, [n for n, _ in inputs], buffer)
    model = onnx.load_from_string(buffer.getvalue())
    model.doc_string = f"tandem train zoo: {name}: {MODELS[name][2]}"
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)


def _export(torch, module, examples, input_names, buffer) -> None:
    axes = {n: {0: "batch"} for n in input_names + ["logits"]}
    torch.onnx.export(module, examples, buffer, opset_version=OPSET, input_names=input_names,
                      output_names=["logits"], dynamic_axes=axes,
                      do_constant_folding=True,
                      # PRESERVE with the module in eval mode: BatchNormalization stays a node (EVAL
                      # would fold it into the Conv before it), in its inference form
                      training=torch.onnx.TrainingMode.PRESERVE, **legacy_export_options(torch))


def initializer_map(module, model: onnx.ModelProto):
    """For every ONNX initializer: the state-dict entry it holds (by value, as is or transposed),
    else None (a constant the exporter made)."""
    state = {k: v.detach().numpy() for k, v in module.state_dict().items() if v.dtype.is_floating_point}
    out = []
    for init in model.graph.initializer:
        value = numpy_helper.to_array(init)
        found = None
        if value.dtype == np.float32:
            for key, tensor in state.items():
                if tensor.shape == value.shape and np.array_equal(tensor, value):
                    found = (key, "identity")
                elif tensor.ndim == 2 and tensor.T.shape == value.shape and np.array_equal(tensor.T, value):
                    found = (key, "transpose")
                if found:
                    break
        out.append((init.name, value, found))
    return out


def make_one(name: str, out: str) -> dict:
    module = build(name)
    path = os.path.join(out, f"{name}.onnx")
    export(module, name, path)
    model = onnx.load(path)
    params = {k for k, _ in module.named_parameters()}
    buffers = {k for k, _ in module.named_buffers()}
    parameters, buffers_out, constants = [], [], []
    for init_name, value, found in initializer_map(module, model):
        if found is None:
            constants.append({"initializer": init_name, "dtype": str(value.dtype), "shape": list(value.shape)})
            continue
        key, transform = found
        row = {"initializer": init_name, "torch": key, "transform": transform, "shape": list(value.shape)}
        (parameters if key in params else buffers_out).append(row)
        assert key in params or key in buffers, key
    missing = params - {p["torch"] for p in parameters}
    if missing:
        raise RuntimeError(f"{name}: parameters with no initializer in the export: {sorted(missing)}")
    float_constants = [c for c in constants if c["dtype"] == "float32"]
    if float_constants:
        # they would be trained as parameters (every float initializer is one)
        raise RuntimeError(f"{name}: float initializers that are no parameter: {float_constants}")
    declared = [i.name for i in model.graph.input]
    if declared != [n for n, _ in MODELS[name][1]] or [o.name for o in model.graph.output] != ["logits"]:
        raise RuntimeError(f"{name}: exported inputs {declared}")
    entry = {
        "name": name,
        "path": f"{name}.onnx",
        "doc": MODELS[name][2],
        "seed": MODELS[name][0],
        "opset": OPSET,
        "inputs": [{"name": n, "shape": ["batch"] + shape, "dtype": "float32"} for n, shape in MODELS[name][1]],
        "output": {"name": "logits", "shape": ["batch", CLASSES], "dtype": "float32"},
        "classes": CLASSES,
        "ops": sorted(collect_ops(model.graph)),
        "parameter_count": int(sum(int(np.prod(p["shape"])) for p in parameters)),
        "parameters": parameters,
        "buffers": buffers_out,
        "constants": constants,
    }
    print(f"  {name}: {entry['parameter_count']} parameters in {len(parameters)} initializers, "
          f"{os.path.getsize(path)} bytes; ops {', '.join(entry['ops'])}")
    return entry


# ---------------------------------------------------------------------------------------------
# for the tests and the benchmark
# ---------------------------------------------------------------------------------------------

def manifest(zoo: str | None = None) -> dict:
    import json
    zoo = zoo or os.path.join(REPO, "zoo", "train")
    with open(os.path.join(zoo, "manifest.json")) as f:
        return {e["name"]: e for e in json.load(f)}


def read_initializers(path: str) -> dict:
    return {i.name: numpy_helper.to_array(i) for i in onnx.load(path).graph.initializer}


def module_from_onnx(entry: dict, path: str):
    """The model's module holding the weights (and BatchNorm statistics) of the ONNX file."""
    import torch
    module = build(entry["name"])
    values = read_initializers(path)
    state = module.state_dict()
    for row in entry["parameters"] + entry["buffers"]:
        value = values[row["initializer"]]
        if row["transform"] == "transpose":
            value = value.T
        state[row["torch"]] = torch.from_numpy(np.array(value))
    module.load_state_dict(state)
    return module


def expected_initializers(entry: dict, module) -> dict:
    """The module's parameters and buffers as the ONNX file's initializers would hold them."""
    state = {k: v.detach().numpy() for k, v in module.state_dict().items()}
    out = {}
    for row in entry["parameters"] + entry["buffers"]:
        value = state[row["torch"]]
        out[row["initializer"]] = np.ascontiguousarray(value.T if row["transform"] == "transpose" else value)
    return out


if __name__ == "__main__":
    generator_main("make_train_zoo", __doc__, os.path.join(REPO, "zoo", "train"), list(MODELS), make_one)
