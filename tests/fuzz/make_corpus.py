#!/usr/bin/env python3
"""Write the fuzz targets' seed corpora (tests/fuzz/corpus/<target>/) and the plan target's model.

    .venv/bin/python tests/fuzz/make_corpus.py --tandem build/src/tandem [--zoo zoo]

Seeds are small real files (and tests/fuzz/data/profile.json, from `tandem calibrate --quick`): zoo models with their large weights replaced by ConstantOfShape
nodes (same graph, a few KiB), hand-built models for the importer's paths (external data in the
model's folder, If, Loop, folding, fusion), the zoo's bad inputs, .npy files of every supported
dtype and header version, the example clusters and variants, and plans that `tandem plan` made
for tests/fuzz/data/plan_model.onnx on examples/clusters/two-hosts.yaml with each strategy.
Files named crash-* / regression-* in a corpus are past findings: this script never touches them.
It also writes each target's libFuzzer dictionary (tests/fuzz/dict/<target>.dict): the string
literals of that reader's sources (keys, op and attribute names, units, messages' words) and
its format's syntax. Needs the zoo (scripts/setup.sh) and a built tandem.
"""

from __future__ import annotations

import argparse
import glob
import io
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
F = TensorProto.FLOAT
MAX_SEED_BYTES = 64 * 1024


def clean(directory):
    """Remove the generated seeds of a corpus, keeping past findings."""
    os.makedirs(directory, exist_ok=True)
    for path in glob.glob(os.path.join(directory, "*")):
        name = os.path.basename(path)
        if not name.startswith(("crash-", "regression-")):
            os.remove(path)


def save_model(model, path):
    data = model.SerializeToString()
    assert len(data) <= MAX_SEED_BYTES, f"{path}: {len(data)} bytes"
    with open(path, "wb") as f:
        f.write(data)


def trimmed(model, max_elements=64):
    """The model with every top-level initializer over `max_elements` elements made by a
    ConstantOfShape node of the same name, dtype and shape: the same graph, without the bytes."""
    graph = model.graph
    keep, nodes = [], []
    for init in graph.initializer:
        count = int(np.prod(init.dims)) if init.dims else 1
        if count <= max_elements:
            keep.append(init)
            continue
        np_dtype = onnx.helper.tensor_dtype_to_np_dtype(init.data_type)
        fill = 0 if np.issubdtype(np_dtype, np.integer) or np_dtype == np.bool_ else 0.01
        shape = numpy_helper.from_array(np.array(list(init.dims), np.int64), init.name + "_shape")
        keep.append(shape)
        nodes.append(helper.make_node(
            "ConstantOfShape", [shape.name], [init.name], name=init.name + "_fill",
            value=numpy_helper.from_array(np.array([fill], np_dtype))))
    del graph.initializer[:]
    graph.initializer.extend(keep)
    existing = list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes + existing)
    return model


def model_of(nodes, inputs, outputs, initializers=(), opset=17, name="seed"):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="tandem-fuzz-seeds")
    model.ir_version = 8
    return model


def tensor(name, shape, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return numpy_helper.from_array(rng.standard_normal(shape).astype(dtype), name)


def plan_model():
    """x [batch, 64] -> MatMul+Add+Relu -> two branches (MatMul+Relu, MatMul+Sigmoid) -> Add ->
    Gemm -> y [batch, 16]: a small graph with a fork, for plans across devices."""
    info = helper.make_tensor_value_info
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h1"], name="fc1"),
        helper.make_node("Add", ["h1", "b1"], ["h2"], name="bias1"),
        helper.make_node("Relu", ["h2"], ["h3"], name="relu1"),
        helper.make_node("MatMul", ["h3", "w2"], ["a1"], name="left_fc"),
        helper.make_node("Relu", ["a1"], ["a2"], name="left_relu"),
        helper.make_node("MatMul", ["h3", "w3"], ["c1"], name="right_fc"),
        helper.make_node("Sigmoid", ["c1"], ["c2"], name="right_sigmoid"),
        helper.make_node("Add", ["a2", "c2"], ["j"], name="join"),
        helper.make_node("Gemm", ["j", "w4", "b4"], ["y"], name="head"),
    ]
    inits = [tensor("w1", (64, 64), 1), tensor("b1", (64,), 2), tensor("w2", (64, 32), 3),
             tensor("w3", (64, 32), 4), tensor("w4", (32, 16), 5), tensor("b4", (16,), 6)]
    return model_of(nodes, [info("x", F, ["batch", 64])], [info("y", F, ["batch", 16])], inits,
                    name="plan_model")


def onnx_seeds(out, zoo):
    clean(out)
    info = helper.make_tensor_value_info
    # Zoo models, trimmed.
    for name in ("mlp", "resnet", "mobilenet", "bert", "gpt", "dlrm", "loop", "postproc",
                 "torch_embeddingbag", "tv_mobilenet_v3_small", "tv_resnet18"):
        path = os.path.join(zoo, name, "model.onnx")
        if not os.path.exists(path):
            continue
        model = trimmed(onnx.load(path, load_external_data=False))
        data = model.SerializeToString()
        if len(data) > MAX_SEED_BYTES:
            print(f"make_corpus: skipping {name}: {len(data)} bytes trimmed", file=sys.stderr)
            continue
        save_model(model, os.path.join(out, f"zoo_{name}.onnx"))
    # The zoo's bad models (small by construction).
    for path in sorted(glob.glob(os.path.join(zoo, "bad", "*.onnx"))
                       + glob.glob(os.path.join(zoo, "bad", "ext_*", "model.onnx"))):
        name = os.path.relpath(path, os.path.join(zoo, "bad")).replace(os.sep, "_")
        if os.path.getsize(path) <= MAX_SEED_BYTES:
            shutil.copy(path, os.path.join(out, "bad_" + name))

    # External data in the model's folder: the fuzz target writes weights.bin (256 floats).
    def external(name, offset, length, dims):
        w = TensorProto()
        w.name, w.data_type = "w", F
        w.dims.extend(dims)
        w.data_location = TensorProto.EXTERNAL
        for key, value in (("location", name), ("offset", str(offset)), ("length", str(length))):
            entry = w.external_data.add()
            entry.key, entry.value = key, value
        return w
    for label, init in (("external", external("weights.bin", 0, 64, [4, 4])),
                        ("external_offset", external("weights.bin", 960, 64, [4, 4])),
                        ("external_past_end", external("weights.bin", 1000, 64, [4, 4])),
                        ("external_subdir", external("./weights.bin", 0, 64, [4, 4]))):
        save_model(model_of([helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul")],
                            [info("x", F, [1, 4])], [info("y", F, [1, 4])], [init]),
                   os.path.join(out, f"{label}.onnx"))

    # Conv + BatchNormalization + Relu: the fusions.
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1],
                              strides=[1, 1], kernel_shape=[3, 3]),
             helper.make_node("BatchNormalization", ["c", "s", "o", "m", "v"], ["n"], name="bn"),
             helper.make_node("Relu", ["n"], ["y"], name="relu")]
    inits = [tensor("w", (4, 2, 3, 3), 1), tensor("b", (4,), 2), tensor("s", (4,), 3),
             tensor("o", (4,), 4), tensor("m", (4,), 5),
             numpy_helper.from_array(np.ones(4, np.float32), "v")]
    save_model(model_of(nodes, [info("x", F, ["batch", 2, 8, 8])], [info("y", F, ["batch", 4, 8, 8])],
                        inits), os.path.join(out, "conv_bn_relu.onnx"))

    # Shape -> Gather -> Concat -> Reshape: folded at import.
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("Gather", ["s", "zero"], ["n"], name="gather", axis=0),
             helper.make_node("Unsqueeze", ["n", "axes"], ["n1"], name="unsqueeze"),
             helper.make_node("Concat", ["n1", "minus_one"], ["target"], name="concat", axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"], name="reshape")]
    inits = [numpy_helper.from_array(np.array(0, np.int64), "zero"),
             numpy_helper.from_array(np.array([0], np.int64), "axes"),
             numpy_helper.from_array(np.array([-1], np.int64), "minus_one")]
    save_model(model_of(nodes, [info("x", F, ["batch", 3, 4])], [info("y", F, ["batch", 12])], inits),
               os.path.join(out, "shape_folding.onnx"))

    # If with two subgraphs reading an outer value.
    then_graph = helper.make_graph([helper.make_node("Relu", ["x"], ["t"], name="then_relu")], "then",
                                   [], [info("t", F, [2, 4])])
    else_graph = helper.make_graph([helper.make_node("Neg", ["x"], ["e"], name="else_neg")], "else",
                                   [], [info("e", F, [2, 4])])
    nodes = [helper.make_node("ReduceSum", ["x"], ["total"], name="sum", keepdims=0),
             helper.make_node("Greater", ["total", "zero"], ["cond"], name="greater"),
             helper.make_node("If", ["cond"], ["y"], name="if", then_branch=then_graph,
                              else_branch=else_graph)]
    save_model(model_of(nodes, [info("x", F, [2, 4])], [info("y", F, [2, 4])],
                        [numpy_helper.from_array(np.array(0, np.float32), "zero")]),
               os.path.join(out, "if.onnx"))

    # Loop adding x to a carried value three times.
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going"),
         helper.make_node("Add", ["acc_in", "x"], ["acc_out"], name="accumulate")],
        "body",
        [info("i", TensorProto.INT64, []), info("cond_in", TensorProto.BOOL, []),
         info("acc_in", F, [2, 4])],
        [info("cond_out", TensorProto.BOOL, []), info("acc_out", F, [2, 4])])
    nodes = [helper.make_node("Loop", ["trips", "", "start"], ["y"], name="loop", body=body)]
    inits = [numpy_helper.from_array(np.array(3, np.int64), "trips"),
             numpy_helper.from_array(np.zeros((2, 4), np.float32), "start")]
    save_model(model_of(nodes, [info("x", F, [2, 4])], [info("y", F, [2, 4])], inits),
               os.path.join(out, "loop.onnx"))
    # Opset 21 (beyond libonnx's checker) and 13 (the oldest supported).
    for opset in (13, 21):
        save_model(model_of([helper.make_node("Softmax", ["x"], ["y"], name="softmax", axis=-1)],
                            [info("x", F, ["batch", 8])], [info("y", F, ["batch", 8])], opset=opset),
                   os.path.join(out, f"softmax_opset{opset}.onnx"))


def npy_seeds(out, zoo):
    clean(out)
    for path in sorted(glob.glob(os.path.join(zoo, "bad", "*.npy"))):
        shutil.copy(path, os.path.join(out, "bad_" + os.path.basename(path)))
    rng = np.random.default_rng(3)
    arrays = {
        "f4_2x3": rng.standard_normal((2, 3)).astype(np.float32),
        "f8_4": rng.standard_normal(4),
        "f2_2x2": rng.standard_normal((2, 2)).astype(np.float16),
        "i8_3": np.arange(3, dtype=np.int64),
        "i4_2x2x2": np.arange(8, dtype=np.int32).reshape(2, 2, 2),
        "i2_5": np.arange(5, dtype=np.int16),
        "i1_4": np.arange(4, dtype=np.int8),
        "u1_4": np.arange(4, dtype=np.uint8),
        "b1_3": np.array([True, False, True]),
        "scalar": np.array(1.5, np.float32),
        "empty": np.zeros((0, 4), np.float32),
        "big_endian": np.arange(4, dtype=">f4"),
        "fortran": np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)),
        "u2_unsupported": np.arange(3, dtype=np.uint16),
    }
    for name, array in arrays.items():
        np.save(os.path.join(out, name + ".npy"), array)
    for version in ((2, 0), (3, 0)):
        buffer = io.BytesIO()
        np.lib.format.write_array(buffer, np.arange(6, dtype=np.float32).reshape(3, 2), version=version)
        with open(os.path.join(out, f"version{version[0]}.npy"), "wb") as f:
            f.write(buffer.getvalue())


CLUSTER_VARIANTS = {
    "figures.yaml": """\
hosts: [{id: box}]
devices:
  - id: accel
    kind: gpu
    host: box
    figures:
      matrix: {bf16: 400 TFLOP/s, fp16: 400 TFLOP/s}
      vector: {fp32: 40 TFLOP/s}
      memory: 48 GiB
      memory_bandwidth: {value: 1.5 TB/s, source: "our measurement", note: "stream"}
      launch_overhead: 5 us
      step_overhead: 0.2 ms
      price_per_hour: 2.5 USD/h
      matrix_tile: 16
  - id: cpu0
    preset: cpu-generic-avx2
    host: box
    cores: 2
links:
  - {from: accel, to: box, kind: pcie, bandwidth_forward: 25 GB/s, bandwidth_backward: 200 Gb/s, latency: 2 us}
""",
    "between.yaml": """\
hosts: [h0, h1]
devices:
  - {id: tpu, count: 3, preset: google-tpu-v6e, host: h0}
  - {id: gpu0, preset: nvidia-l4, host: h1, host_link: pcie-gen4-x16}
links:
  - {between: [tpu0, tpu1, tpu2], preset: ici-v6e}
  - {from: h0, to: h1, bandwidth: 100 Gb/s}
""",
    "pjrt.yaml": """\
hosts: [local]
devices:
  - {id: cpu0, preset: cpu-generic-avx2, host: local, backend: cpu, cores: 1}
  - {id: pjrt0, kind: cpu, preset: cpu-generic-avx2, host: local, backend: pjrt, plugin: ./plugin.so}
""",
    "profile.yaml": """\
hosts: [local]
devices:
  - {id: cpu0, preset: cpu-generic-avx2, host: local, profile: profile.json}
  - {id: cpu1, kind: cpu, host: local, profile: ./profile.json, figures: {memory: 8 GB}}
""",
    "bad_typo.yaml": """\
hosts: [a]
devices:
  - {id: gpu0, preset: nvidia-h100-sxm, host: a}
links:
  - {from: gpu0, to: a, bandwdith: 25 GB/s}
""",
    "bad_no_path.yaml": """\
hosts: [a, b]
devices:
  - {id: gpu0, preset: nvidia-h100-sxm, host: a}
  - {id: tpu0, preset: google-tpu-v5e, host: b}
""",
    "bad_duplicate.yaml": """\
hosts: [a]
devices:
  - {id: a, preset: nvidia-h100-sxm, host: a}
""",
    "bad_units.yaml": """\
hosts: [a]
devices:
  - id: x
    kind: gpu
    host: a
    figures: {memory_bandwidth: 3 GFLOP/s, launch_overhead: -1 us}
""",
    "bad_syntax.yaml": "hosts: [a\ndevices: {\n",
}


def cluster_seeds(out):
    clean(out)
    for path in sorted(glob.glob(os.path.join(REPO, "examples", "clusters", "*.yaml"))):
        shutil.copy(path, os.path.join(out, "example_" + os.path.basename(path)))
    for name, text in CLUSTER_VARIANTS.items():
        with open(os.path.join(out, name), "w") as f:
            f.write(text)


def plan_seeds(out, tandem, model):
    clean(out)
    # Paths relative to the repository, as the plans record them.
    cluster = os.path.join("examples", "clusters", "two-hosts.yaml")
    model = os.path.relpath(model, REPO)
    runs = {
        "single_gpu0": ["--strategy", "single:gpu0"],
        "greedy": ["--strategy", "greedy"],
        "heft": ["--strategy", "heft"],
        "pipeline": ["--strategy", "pipeline", "--objective", "throughput", "--microbatches", "2"],
        "data_parallel": ["--strategy", "data-parallel", "--objective", "throughput"],
        "auto_cost": ["--strategy", "auto", "--objective", "cost"],
        "pinned": ["--strategy", "heft", "--pin", "left_*=tpu1", "--pin", "head=gpu1"],
    }
    for name, args in runs.items():
        path = os.path.join(out, name + ".json")
        subprocess.run([tandem, "plan", model, "--dim", "batch=2", "--cluster", cluster, *args,
                        "-o", path], check=True, stdout=subprocess.DEVNULL, cwd=REPO)
        assert os.path.getsize(path) <= MAX_SEED_BYTES, path


# Syntax and edge values of each format, beside the literals of the reader's sources.
FORMAT_TOKENS = {
    "onnx": ["ai.onnx", "location", "offset", "length", "weights.bin", "../weights.bin",
             "/etc/passwd", "batch", "\x08\x07", "\x08\x15", "\xff\xff\xff\xff\x0f"],
    "npy": ["\x93NUMPY\x01\x00", "\x93NUMPY\x02\x00", "\x93NUMPY\x03\x00", "'descr': ",
            "'fortran_order': ", "'shape': ", "True", "False", "(", ")", ",)", ", ", "{", "}", "\n",
            "999999999999999", "4294967296", "0"],
    "cluster": ["- ", ": ", "{", "}", "[", "]", "&a ", "*a", "<<: ", "!!str ", "!!map ", "? ", "---",
                "...", "|", ">", "#", "~", "null", "''", "-1", "0", "1e400", ".inf", ".nan", "0x10",
                "65537", "2147483648", "100001", "\n  - ", "\n    "],
    "plan": ["{", "}", "[", "]", ":", ",", "\"\"", "{}", "[]", "null", "true", "false", "-1", "0",
             "0.5", "1e308", "1e400", "2147483648", "9223372036854775808", "-9223372036854775809",
             "gpu0", "gpu1", "tpu0", "tpu3", "gpu-host", "tpu-host"],
}
DICT_SOURCES = {
    "onnx": ["src/onnx/*.cpp", "src/ir/ops/*.cpp", "src/ir/infer.cpp", "src/ir/fuse.cpp"],
    "npy": ["src/util/npy.cpp"],
    "cluster": ["src/devices/cluster_file.cpp", "src/devices/figures_yaml.cpp",
                "src/devices/units.cpp", "src/devices/profile.cpp", "data/presets/*.yaml"],
    "plan": ["src/plan/plan_json.cpp", "src/plan/problem.cpp"],
}


def write_dicts(out):
    """A dictionary per target: its format's tokens, and the short literals of its sources
    (preset files: the presets' names)."""
    os.makedirs(out, exist_ok=True)
    for target, patterns in DICT_SOURCES.items():
        tokens = set(FORMAT_TOKENS[target])
        for pattern in patterns:
            for path in sorted(glob.glob(os.path.join(REPO, pattern))):
                text = open(path, encoding="utf-8").read()
                if path.endswith(".yaml"):
                    tokens.update(re.findall(r"^  ([a-z0-9][\w.-]+):$", text, re.M))
                    continue
                for literal in re.findall(r'"((?:[^"\\\n]|\\.)*)"', text):
                    if 2 <= len(literal) <= 40 and "\\" not in literal and literal.isascii():
                        tokens.add(literal)

        def entry(token):
            # Dictionary entries are quoted, with \\, \" and \xNN escapes (tokens are bytes).
            text = ""
            for byte in token.encode("latin-1"):
                char = chr(byte)
                text += "\\" + char if char in '"\\' else char if 32 <= byte < 127 else f"\\x{byte:02X}"
            return '"' + text + '"'
        with open(os.path.join(out, target + ".dict"), "w") as f:
            f.write(f"# libFuzzer dictionary for fuzz_{target}: written by tests/fuzz/make_corpus.py\n")
            for token in sorted(tokens):
                f.write(entry(token) + "\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tandem", required=True)
    parser.add_argument("--zoo", default=os.path.join(REPO, "zoo"))
    args = parser.parse_args()
    data = os.path.join(HERE, "data")
    os.makedirs(data, exist_ok=True)
    model = os.path.join(data, "plan_model.onnx")
    save_model(plan_model(), model)
    # The profile the cluster seeds name (fuzz_cluster copies it beside the file under test).
    subprocess.run([os.path.abspath(args.tandem), "calibrate", "--quick", "-o",
                    os.path.relpath(os.path.join(data, "profile.json"), REPO)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO)
    corpus = os.path.join(HERE, "corpus")
    onnx_seeds(os.path.join(corpus, "onnx"), args.zoo)
    npy_seeds(os.path.join(corpus, "npy"), args.zoo)
    cluster_seeds(os.path.join(corpus, "cluster"))
    plan_seeds(os.path.join(corpus, "plan"), os.path.abspath(args.tandem), model)
    write_dicts(os.path.join(HERE, "dict"))
    for target in sorted(os.listdir(corpus)):
        files = os.listdir(os.path.join(corpus, target))
        size = sum(os.path.getsize(os.path.join(corpus, target, f)) for f in files)
        print(f"make_corpus: {target}: {len(files)} files, {size} bytes")


if __name__ == "__main__":
    main()
