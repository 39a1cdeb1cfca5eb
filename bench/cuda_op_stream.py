"""What one node of each kind costs on the CUDA backend as a run streams it, against the same node
waited for: chains of identical nodes (a few convolution shapes as models hold them, with their
bias and ReLU, matrix products, elementwise ops) run through `tandem run --cluster` on one GPU.

Per chain, the median run of `--short` and of `--long` nodes; a node's cost is the difference over
the nodes between them, so that the run's fixed cost (the inputs' and outputs' copies, the plan's
dispatch) drops out. Twice: as runs go (the host launches while the GPU works) and with
TANDEM_CUDA_SYNC=1 (the host waits for each kernel). Where the streamed cost is near the waited
one, the host's time in the node, not the GPU's, sets the pace.

Usage (on a machine with an NVIDIA GPU, a python with numpy and onnx):
  python3 bench/cuda_op_stream.py --tandem gpu-pack/tandem [--json FILE]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def chain(kind: dict, length: int) -> onnx.ModelProto:
    """`length` nodes of `kind` one after another, each with its own weights."""
    rng = np.random.default_rng(0)
    shape = kind["input"]
    nodes, initializers = [], []
    current = "x"
    for i in range(length):
        out = f"y{i}"
        if kind["op"] == "Conv":
            channels, out_channels = shape[1], kind.get("out", shape[1])
            group = channels if kind.get("depthwise") else 1
            k = kind["kernel"]
            w = (rng.standard_normal((out_channels, channels // group, k, k)) * 0.1).astype(np.float32)
            initializers.append(numpy_helper.from_array(w, f"w{i}"))
            inputs = [current, f"w{i}"]
            if kind.get("bias", True):
                initializers.append(numpy_helper.from_array(np.zeros(out_channels, np.float32), f"b{i}"))
                inputs.append(f"b{i}")
            conv_out = out if not kind.get("relu") else f"c{i}"
            nodes.append(helper.make_node("Conv", inputs, [conv_out], kernel_shape=[k, k],
                                          pads=[k // 2] * 4, group=group))
            if kind.get("relu"):
                nodes.append(helper.make_node("Relu", [conv_out], [out]))
        elif kind["op"] == "MatMul":
            w = (rng.standard_normal((shape[-1], shape[-1])) * 0.1).astype(np.float32)
            initializers.append(numpy_helper.from_array(w, f"w{i}"))
            nodes.append(helper.make_node("MatMul", [current, f"w{i}"], [out]))
        elif kind["op"] == "Add":
            initializers.append(numpy_helper.from_array(np.ones(shape, np.float32), f"c{i}"))
            nodes.append(helper.make_node("Add", [current, f"c{i}"], [out]))
        else:
            nodes.append(helper.make_node(kind["op"], [current], [out]))
        current = out
    graph = helper.make_graph(nodes, kind["name"], [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info(current, TensorProto.FLOAT, shape)], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


KINDS = [
    {"name": "relu_1x16", "op": "Relu", "input": [1, 16]},
    {"name": "add_1x64x28x28", "op": "Add", "input": [1, 64, 28, 28]},
    {"name": "matmul_1x64x64", "op": "MatMul", "input": [1, 64]},
    {"name": "matmul_256x512x512", "op": "MatMul", "input": [256, 512]},
    {"name": "conv3x3_16ch_16x16", "op": "Conv", "input": [1, 16, 16, 16], "kernel": 3, "bias": False},
    {"name": "conv3x3_16ch_16x16_bias", "op": "Conv", "input": [1, 16, 16, 16], "kernel": 3},
    {"name": "conv3x3_16ch_16x16_bias_relu", "op": "Conv", "input": [1, 16, 16, 16], "kernel": 3, "relu": True},
    {"name": "conv3x3_64ch_56x56_bias_relu", "op": "Conv", "input": [1, 64, 56, 56], "kernel": 3, "relu": True},
    {"name": "conv3x3_512ch_7x7_bias_relu", "op": "Conv", "input": [1, 512, 7, 7], "kernel": 3, "relu": True},
    {"name": "pointwise_64ch_28x28_bias", "op": "Conv", "input": [1, 64, 28, 28], "kernel": 1},
    {"name": "pointwise_64ch_28x28_bias_relu", "op": "Conv", "input": [1, 64, 28, 28], "kernel": 1, "relu": True},
    {"name": "depthwise3x3_64ch_28x28_bias_relu", "op": "Conv", "input": [1, 64, 28, 28], "kernel": 3,
     "depthwise": True, "relu": True},
    {"name": "squeeze_excite_1x1_64ch_bias", "op": "Conv", "input": [1, 64, 1, 1], "kernel": 1},
]


def median_run_us(tandem: str, model: str, cluster: str, sync: bool, iterations: int) -> float:
    env = dict(os.environ)
    if sync:
        env["TANDEM_CUDA_SYNC"] = "1"
    result = subprocess.run([tandem, "run", model, "--cluster", cluster, "--strategy", "single:gpu0",
                             "--warmup", "10", "--iterations", str(iterations), "--json"],
                            capture_output=True, text=True, env=env, timeout=120)
    if result.returncode != 0:
        raise RuntimeError(f"{model}: exit {result.returncode}: {result.stderr.strip()[-300:]}")
    return json.loads(result.stdout)["latency"]["median_s"] * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tandem", required=True)
    parser.add_argument("--short", type=int, default=4)
    parser.add_argument("--long", type=int, default=20)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="cuda-op-stream-")
    cluster = os.path.join(folder, "gpu.yaml")
    with open(cluster, "w") as f:
        f.write("hosts: [local]\ndevices:\n  - {id: gpu0, preset: nvidia-h200, host: local, backend: cuda}\n")
    rows = []
    print(f"{'chain':36} {'streamed us/node':>17} {'waited us/node':>15}")
    for kind in KINDS:
        paths = {}
        for length in (args.short, args.long):
            paths[length] = os.path.join(folder, f"{kind['name']}-{length}.onnx")
            onnx.save(chain(kind, length), paths[length])
        row = {"chain": kind["name"]}
        for mode, sync in (("streamed_us", False), ("waited_us", True)):
            short = median_run_us(args.tandem, paths[args.short], cluster, sync, args.iterations)
            long = median_run_us(args.tandem, paths[args.long], cluster, sync, args.iterations)
            row[mode] = (long - short) / (args.long - args.short)
        rows.append(row)
        print(f"{row['chain']:36} {row['streamed_us']:17.1f} {row['waited_us']:15.1f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
