"""Shared helpers for tools/make_zoo.py and tools/make_bad_inputs.py.

GraphBuilder keeps hand-built ONNX graphs short:

    g = GraphBuilder("mlp", seed=1)
    x = g.input("x", np.float32, ["batch", 256])
    h = g.op("Relu", [g.op("Gemm", [x, g.weight("w", (256, 64)), g.zeros("b", 64)], transB=0)])
    g.output(h, np.float32, ["batch", 64])
    model = g.model(opset=13)
"""

from __future__ import annotations

import json
import os
from typing import Iterable, Sequence

import numpy as np
import onnx
from onnx import helper, numpy_helper

ORT_THREADS = 2


def legacy_export_options(torch) -> dict:
    """torch.onnx.export's keyword that keeps the TorchScript exporter where newer torch (2.9+)
    defaults to the dynamo one, so the zoo is the same graphs on Debian's torch and on a GPU
    machine's (scripts/gpu-check.sh regenerates the zoo there)."""
    import inspect
    return {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}


def np_to_onnx_dtype(dt) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dt))


def onnx_to_np_dtype(elem_type: int) -> np.dtype:
    return helper.tensor_dtype_to_np_dtype(elem_type)


class GraphBuilder:
    """Minimal imperative builder for ONNX graphs (also usable for subgraphs)."""

    def __init__(self, name: str, seed: int = 0, prefix: str = ""):
        self.name = name
        self.prefix = prefix
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.outputs: list[onnx.ValueInfoProto] = []
        self._counter: dict[str, int] = {}
        self._names: set[str] = set()

    # -- naming -------------------------------------------------------------
    def fresh(self, base: str) -> str:
        base = self.prefix + base
        n = self._counter.get(base, 0)
        while True:
            name = base if n == 0 and base not in self._names else f"{base}_{n}"
            n += 1
            if name not in self._names:
                break
        self._counter[base] = n
        self._names.add(name)
        return name

    # -- graph interface ------------------------------------------------------
    def input(self, name: str, dtype, shape: Sequence) -> str:
        self._names.add(name)
        self.inputs.append(helper.make_tensor_value_info(name, np_to_onnx_dtype(dtype), list(shape)))
        return name

    def output(self, name: str, dtype, shape: Sequence | None) -> str:
        self.outputs.append(helper.make_tensor_value_info(
            name, np_to_onnx_dtype(dtype), None if shape is None else list(shape)))
        return name

    def init(self, name: str, array: np.ndarray) -> str:
        name = self.fresh(name)
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def weight(self, name: str, shape: Sequence[int], fan_in: int | None = None, scale: float = 1.0) -> str:
        """Random normal weight, He-style scaled by fan_in (default: shape[0])."""
        fan_in = fan_in if fan_in is not None else int(shape[0])
        std = scale * np.sqrt(2.0 / max(1, fan_in))
        return self.init(name, (self.rng.standard_normal(shape) * std).astype(np.float32))

    def bias(self, name: str, n: int, scale: float = 0.05) -> str:
        return self.init(name, (self.rng.standard_normal((n,)) * scale).astype(np.float32))

    def const(self, name: str, value, dtype=np.int64) -> str:
        return self.init(name, np.asarray(value, dtype=dtype))

    def op(self, op_type: str, inputs: Iterable[str], n_out: int = 1, name: str | None = None,
           outputs: Sequence[str] | None = None, domain: str = "", **attrs):
        base = name or op_type.lower()
        node_name = self.fresh(base + "_node")
        if outputs is None:
            outputs = [self.fresh(base) for _ in range(n_out)]
        else:
            self._names.update(outputs)
        node = helper.make_node(op_type, list(inputs), list(outputs), name=node_name,
                                domain=domain or None, **attrs)
        self.nodes.append(node)
        return outputs[0] if len(outputs) == 1 else list(outputs)

    # -- assembly -------------------------------------------------------------
    def graph(self) -> onnx.GraphProto:
        return helper.make_graph(self.nodes, self.name, self.inputs, self.outputs,
                                 initializer=self.initializers)

    def model(self, opset: int, ir_version: int | None = None, doc: str = "") -> onnx.ModelProto:
        m = helper.make_model(self.graph(), opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="tandem-make-zoo", producer_version="1")
        # onnxruntime 1.20 accepts IR <= 10; use the minimal IR version for the opset.
        m.ir_version = ir_version if ir_version is not None else ir_for_opset(opset)
        if doc:
            m.doc_string = doc
        return m


def ir_for_opset(opset: int) -> int:
    """Smallest IR version that allows this default-domain opset (what exporters write)."""
    return helper.find_min_ir_version_for([helper.make_opsetid("", opset)])


def collect_ops(graph: onnx.GraphProto, acc: set | None = None) -> set:
    """All op types in a graph, recursing into subgraph attributes (If/Loop/Scan bodies)."""
    acc = set() if acc is None else acc
    for node in graph.node:
        acc.add(node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}")
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                collect_ops(attr.g, acc)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for sg in attr.graphs:
                    collect_ops(sg, acc)
    return acc


def default_opset(model: onnx.ModelProto) -> int:
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return imp.version
    raise ValueError("model has no default-domain opset import")


def graph_shape(vi: onnx.ValueInfoProto):
    """Declared shape of a graph input/output: ints, dim_param strings, or None for unknown."""
    t = vi.type.tensor_type
    if not t.HasField("shape"):
        return None
    out = []
    for d in t.shape.dim:
        if d.HasField("dim_value"):
            out.append(int(d.dim_value))
        elif d.HasField("dim_param"):
            out.append(d.dim_param)
        else:
            out.append(None)
    return out


def ort_session(path: str):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = ORT_THREADS
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    return ort.InferenceSession(path, sess_options=so, providers=["CPUExecutionProvider"])


def write_json(path: str, obj) -> None:
    with open(path, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


def safe_filename(name: str) -> str:
    return "".join(c if (c.isalnum() or c in "._-") else "_" for c in name)


def ensure_dir(path: str) -> str:
    os.makedirs(path, exist_ok=True)
    return path


def generator_main(tool: str, doc: str, default_out: str, names: Sequence[str], make_one,
                   argv=None) -> None:
    """The command line both zoo generators share: --out, --only; every model made by
    make_one(name, out) -> manifest entry, the manifest written (merged with an existing one
    when --only picks a subset)."""
    import argparse
    import time
    ap = argparse.ArgumentParser(prog=tool, description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=default_out, help=f"output folder (default: {default_out})")
    ap.add_argument("--only", default="", help="comma-separated subset of: " + ",".join(names))
    args = ap.parse_args(argv)
    chosen = [n for n in args.only.split(",") if n] or list(names)
    unknown = [n for n in chosen if n not in names]
    if unknown:
        ap.error(f"unknown model(s): {unknown}")
    ensure_dir(args.out)
    t0 = time.time()
    entries = [make_one(n, args.out) for n in chosen]
    manifest_path = os.path.join(args.out, "manifest.json")
    if args.only and os.path.exists(manifest_path):  # merge into an existing manifest
        with open(manifest_path) as f:
            old = {e["name"]: e for e in json.load(f)}
        old.update({e["name"]: e for e in entries})
        entries = [old[n] for n in names if n in old]
    write_json(manifest_path, entries)
    print(f"{tool}: {len(chosen)} models written to {args.out} in {time.time() - t0:.1f} s")
