"""Where a model's prediction misses, piece by piece: a model cut into runs of consecutive nodes,
each run planned whole onto one device of a cluster and measured there, its prediction beside.

A whole model's prediction error is a sum of misses that can cancel. On a device that runs
programs (PJRT) there are no per-op times to join with the cost model's; a piece of a few nodes
is the finest unit that runs as the model runs it. ONNX Runtime computes every intermediate
value of the model once, so that each piece runs on the values it meets in the model (masks and
indices stay valid). A piece pays one program's fixed cost and moves its inputs in and its
outputs out; its prediction prices the same (the plan's run and transfer costs), so the sum of
the pieces is not the model's figure, but each piece's error is its own ops'.

Usage: .venv/bin/python bench/piece_errors.py --zoo zoo/real --model bert_fold
           --cluster CLUSTER.yaml --device pjrt0 [--nodes 8] [--iterations 50] [--rounds 3]
           [--json FILE]

A piece is `--nodes` consecutive nodes of the graph (in its order, which ONNX keeps topological)
with the weights they read; pieces whose nodes are all views (Reshape and the like, no kernel)
are joined to the next. Error is (predicted - measured) / measured; a piece's measured time is
the median over rounds of each round's median.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime
from onnx import helper, numpy_helper

from cluster_checks import run

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VIEWS = {"Reshape", "Unsqueeze", "Squeeze", "Flatten", "Identity", "Shape", "Constant"}


def intermediate_values(model, feeds):
    """Every value the graph computes from `feeds`, by name (ONNX Runtime, no optimisations)."""
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    known = {output.name for output in probe.graph.output}
    for node in probe.graph.node:
        for name in node.output:
            if name and name not in known:
                probe.graph.output.append(onnx.ValueInfoProto(name=name))
                known.add(name)
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = onnxruntime.InferenceSession(probe.SerializeToString(), options,
                                           providers=["CPUExecutionProvider"])
    names = [output.name for output in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds)))


def node_reads(node):
    """The values `node` reads: its inputs, and those its subgraphs (a Loop's body, an If's
    branches) read from the graph around them."""
    reads = [name for name in node.input if name]
    for attribute in node.attribute:
        bodies = ([attribute.g] if attribute.HasField("g") else []) + list(attribute.graphs)
        for body in bodies:
            inner = {value.name for value in body.input}
            inner |= {name for n in body.node for name in n.output}
            inner |= {tensor.name for tensor in body.initializer}
            reads += [name for n in body.node for name in node_reads(n) if name not in inner]
    return reads


def pieces_of(graph, size):
    pieces, current = [], []
    for node in graph.node:
        current.append(node)
        kernels = [n for n in current if n.op_type not in VIEWS]
        if len(kernels) >= size:
            pieces.append(current)
            current = []
    if current:
        pieces.append(current)
    return pieces


def is_shape_value(name, array, graph_inputs):
    """A small integer value the graph computes from shapes (a Reshape's target, a Slice's
    bounds): the model has it as a constant once its dims are bound, so its piece does too. A
    graph input (indices, offsets) stays an input, whatever its size."""
    return name not in graph_inputs and array.dtype.kind in "iu" and array.size <= 16


def piece_model(model, nodes, values, later_reads):
    graph = model.graph
    initializers = {tensor.name: tensor for tensor in graph.initializer}
    graph_inputs = {value.name for value in graph.input}
    produced = {name for node in nodes for name in node.output if name}
    read, used_weights, folded = [], [], []
    for node in nodes:
        for name in node_reads(node):
            if not name or name in produced or name in read or name in used_weights + folded:
                continue
            if name in initializers:
                used_weights.append(name)
            elif is_shape_value(name, values[name], graph_inputs):
                folded.append(name)
            else:
                read.append(name)
    graph_outputs = {output.name for output in graph.output}
    outputs = [name for node in nodes for name in node.output
               if name and (name in later_reads or name in graph_outputs)]
    if not outputs:  # a piece whose values die inside it: keep its last value
        outputs = [nodes[-1].output[0]]

    def info(name):
        array = values[name]
        return helper.make_tensor_value_info(
            name, helper.np_dtype_to_tensor_dtype(array.dtype), list(array.shape))

    piece = helper.make_graph(list(nodes), "piece", [info(name) for name in read],
                              [info(name) for name in outputs],
                              [initializers[name] for name in used_weights] +
                              [numpy_helper.from_array(values[name], name) for name in folded])
    result = helper.make_model(piece, opset_imports=model.opset_import,
                               ir_version=model.ir_version)
    return result, read


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tandem", default=os.path.join(REPO, "build", "src", "tandem"))
    parser.add_argument("--zoo", default=os.path.join(REPO, "zoo", "real"))
    parser.add_argument("--model", required=True, help="a model of the zoo's manifest")
    parser.add_argument("--cluster", required=True)
    parser.add_argument("--device", required=True)
    parser.add_argument("--nodes", type=int, default=8, help="kernel nodes per piece")
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", default="")
    args = parser.parse_args()

    with open(os.path.join(args.zoo, "manifest.json")) as f:
        entry = next((e for e in json.load(f) if e["name"] == args.model), None)
    if entry is None:
        parser.error(f"{args.model}: not in {args.zoo}/manifest.json")
    model = onnx.load(os.path.join(args.zoo, entry["path"]))
    feeds = {spec["name"]: np.load(os.path.join(args.zoo, spec["file"]))
             for spec in entry["inputs"]}
    values = dict(feeds)
    values.update(intermediate_values(model, feeds))

    pieces = pieces_of(model.graph, args.nodes)
    with tempfile.TemporaryDirectory() as folder:
        files, jobs = {}, []
        for index, nodes in enumerate(pieces):
            later_reads = {name for piece in pieces[index + 1:] for node in piece
                           for name in node_reads(node)}
            piece, read = piece_model(model, nodes, values, later_reads)
            path = os.path.join(folder, f"piece{index}.onnx")
            onnx.save(piece, path)
            inputs = []
            for name in read:
                if name not in files:
                    files[name] = os.path.join(folder, f"value{len(files)}.npy")
                    np.save(files[name], values[name])
                inputs += ["--input", f"{name}={files[name]}"]
            label = f"{nodes[0].name or nodes[0].op_type} .. {nodes[-1].name or nodes[-1].op_type}"
            kinds = sorted({node.op_type for node in nodes if node.op_type not in VIEWS})
            jobs.append({"piece": index, "nodes": len(nodes), "label": label, "kinds": kinds,
                         "args": [path, *inputs]})
        measured, predicted, skipped = {}, {}, {}
        for round_index in range(args.rounds):
            for job in jobs:
                if job["piece"] in skipped:
                    continue
                print(f"round {round_index + 1}/{args.rounds}: piece {job['piece']}",
                      file=sys.stderr, flush=True)
                try:
                    report = json.loads(run(
                        [args.tandem, "run", *job["args"], "--cluster", args.cluster,
                         "--strategy", f"single:{args.device}", "--warmup", "3",
                         "--iterations", str(args.iterations), "--json"],
                        f"tandem run piece {job['piece']}"))
                except RuntimeError as error:  # a piece the device cannot take: its reason
                    skipped[job["piece"]] = str(error).splitlines()[-1]
                    continue
                measured.setdefault(job["piece"], []).append(report["latency"]["median_s"])
                predicted[job["piece"]] = report["plan"]["predicted_latency_s"]

    rows = []
    for job in jobs:
        if job["piece"] in skipped:
            print(f"skipped piece {job['piece']} ({job['label']}): {skipped[job['piece']]}")
            continue
        seconds = statistics.median(measured[job["piece"]])
        rows.append({"piece": job["piece"], "label": job["label"], "kinds": job["kinds"],
                     "measured_s": seconds, "predicted_s": predicted[job["piece"]],
                     "error": (predicted[job["piece"]] - seconds) / seconds})
    print(f"{'piece':>5} {'measured us':>11} {'predicted':>10} {'error':>8}  kinds")
    for row in rows:
        print(f"{row['piece']:5} {row['measured_s'] * 1e6:11.1f} {row['predicted_s'] * 1e6:10.1f} "
              f"{row['error']:+8.1%}  {','.join(row['kinds'])}  ({row['label']})")
    total_measured = sum(row["measured_s"] for row in rows)
    total_predicted = sum(row["predicted_s"] for row in rows)
    print(f"sum of pieces: measured {total_measured * 1e3:.3f} ms, predicted "
          f"{total_predicted * 1e3:.3f} ms ({(total_predicted - total_measured) / total_measured:+.1%})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"model": args.model, "device": args.device, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
