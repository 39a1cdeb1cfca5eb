"""Graph rewrites for inference (ir/fuse.h) as `tandem run` applies them: a `Loop` that computes
embedding bags one at a time, as PyTorch exports nn.EmbeddingBag with offsets, becomes one
EmbeddingBag node, and its outputs stay ONNX Runtime's; loops of any other shape are left alone."""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

TANDEM = ""
ROWS, WIDTH = 20, 4


def bag_loop_model(path, reduce="ReduceSum", extra_mul=False, opset=17):
    """out[b] = reduce(table[indices[starts[b]:ends[b]]]) as a Loop over the bags."""
    table = np.random.default_rng(3).standard_normal((ROWS, WIDTH)).astype(np.float32)
    iteration = helper.make_tensor_value_info("i", TensorProto.INT64, [])
    cond_in = helper.make_tensor_value_info("cond_in", TensorProto.BOOL, [])
    nodes = [
        helper.make_node("Gather", ["starts", "i"], ["start"], axis=0),
        helper.make_node("Gather", ["ends", "i"], ["end"], axis=0),
        helper.make_node("Unsqueeze", ["start", "zero"], ["start1"]),
        helper.make_node("Unsqueeze", ["end", "zero"], ["end1"]),
        helper.make_node("Slice", ["indices", "start1", "end1", "zero"], ["bag_indices"]),
        helper.make_node("Gather", ["table", "bag_indices"], ["rows"], axis=0),
    ]
    rows = "rows"
    if extra_mul:
        nodes.append(helper.make_node("Mul", ["rows", "two"], ["scaled"]))
        rows = "scaled"
    if reduce == "ReduceSum":
        nodes.append(helper.make_node("ReduceSum", [rows, "zero"], ["bag"], keepdims=0))
    else:
        nodes.append(helper.make_node(reduce, [rows], ["bag"], axes=[0], keepdims=0))
    nodes.append(helper.make_node("Cast", ["always"], ["cond_out"], to=TensorProto.BOOL))
    body = helper.make_graph(
        nodes, "bag_body", [iteration, cond_in],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("bag", TensorProto.FLOAT, [WIDTH])])
    graph = helper.make_graph(
        [helper.make_node("Shape", ["starts"], ["starts_shape"]),
         helper.make_node("Gather", ["starts_shape", "zero_scalar"], ["trips"], axis=0),
         helper.make_node("Loop", ["trips", "always"], ["bags"], body=body)],
        "bags",
        [helper.make_tensor_value_info("indices", TensorProto.INT64, ["lookups"]),
         helper.make_tensor_value_info("starts", TensorProto.INT64, ["batch"]),
         helper.make_tensor_value_info("ends", TensorProto.INT64, ["batch"])],
        [helper.make_tensor_value_info("bags", TensorProto.FLOAT, ["batch", WIDTH])],
        [numpy_helper.from_array(table, "table"),
         numpy_helper.from_array(np.array([0], np.int64), "zero"),
         numpy_helper.from_array(np.array(0, np.int64), "zero_scalar"),
         numpy_helper.from_array(np.array(True), "always")])
    if extra_mul:
        graph.initializer.append(numpy_helper.from_array(np.array(2.0, np.float32), "two"))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


def tandem(*args):
    return subprocess.run([TANDEM, *args], capture_output=True, text=True, timeout=60)


class EmbeddingBagLoop(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.TemporaryDirectory()
        self.dir = self.folder.name

    def tearDown(self):
        self.folder.cleanup()

    def feeds(self, indices, starts, ends):
        feeds = {"indices": np.array(indices, np.int64), "starts": np.array(starts, np.int64),
                 "ends": np.array(ends, np.int64)}
        args = []
        for name, value in feeds.items():
            file = os.path.join(self.dir, name + ".npy")
            np.save(file, value)
            args += ["--input", f"{name}={file}"]
        return feeds, args

    def run_tandem(self, model, input_args, *more):
        out = os.path.join(self.dir, "out" + str(len(more)))
        result = tandem("run", model, *input_args, "--output-dir", out, "--iterations", "1",
                        "-v", *more)
        fused = re.search(r"(\d+) embedding-bag Loops as EmbeddingBag", result.stderr)
        value = np.load(os.path.join(out, "bags.npy")) if result.returncode == 0 else None
        return result, (int(fused.group(1)) if fused else None), value

    def check(self, model, indices, starts, ends, fused_expected):
        feeds, args = self.feeds(indices, starts, ends)
        reference = ort.InferenceSession(model).run(None, feeds)[0]
        result, fused, value = self.run_tandem(model, args)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(fused, fused_expected, result.stderr)
        np.testing.assert_allclose(value, reference, rtol=1e-6, atol=1e-6)
        unfused_result, _, unfused = self.run_tandem(model, args, "--no-fusion")
        self.assertEqual(unfused_result.returncode, 0, unfused_result.stderr)
        np.testing.assert_allclose(value, unfused, rtol=1e-6, atol=1e-6)

    def test_sum_bags_with_empty_repeated_and_negative_indices_match_onnx_runtime(self):
        model = os.path.join(self.dir, "sum.onnx")
        bag_loop_model(model)
        # Bags: [0,3), empty [3,3), [3,7) with a repeated and a negative index, a clamped end,
        # and a negative start counted from the end (Slice's rules).
        self.check(model, [1, 5, 19, 7, 7, -2, 0], [0, 3, 3, -2], [3, 3, 7, 100], 1)

    def test_mean_bags_match_onnx_runtime(self):
        model = os.path.join(self.dir, "mean.onnx")
        bag_loop_model(model, reduce="ReduceMean")
        self.check(model, [4, 9, 12, 3, 3], [0, 2, 1], [2, 5, 4], 1)

    def test_an_index_no_bag_reads_is_never_checked(self):
        model = os.path.join(self.dir, "sum.onnx")
        bag_loop_model(model)
        self.check(model, [1, 2, 999], [0, 1], [1, 2], 1)

    def test_an_index_out_of_range_in_a_bag_is_refused_as_the_loop_refuses_it(self):
        model = os.path.join(self.dir, "sum.onnx")
        bag_loop_model(model)
        _, args = self.feeds([1, 999], [0], [2])
        for more in ([], ["--no-fusion"]):
            result, _, _ = self.run_tandem(model, args, *more)
            self.assertEqual(result.returncode, 2, result.stdout)
            self.assertIn("index 999 is out of range for a dim of 20", result.stderr)

    def test_other_loops_are_left_alone(self):
        for name, options in (("max", {"reduce": "ReduceMax"}), ("weighted", {"extra_mul": True})):
            model = os.path.join(self.dir, name + ".onnx")
            bag_loop_model(model, **options)
            self.check(model, [1, 5, 19, 7], [0, 2], [2, 4], 0)

    def test_a_model_file_cannot_name_the_internal_op(self):
        model = os.path.join(self.dir, "internal.onnx")
        graph = helper.make_graph(
            [helper.make_node("EmbeddingBag", ["t", "i", "s", "e"], ["y"], mode="sum", bags=1)],
            "internal",
            [helper.make_tensor_value_info(n, TensorProto.INT64, [1]) for n in "ise"],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])],
            [numpy_helper.from_array(np.zeros((3, 2), np.float32), "t")])
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]), model)
        result = tandem("run", model)
        self.assertEqual(result.returncode, 2, result.stdout)
        self.assertIn("unsupported op 'EmbeddingBag'", result.stderr)
        self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--tandem", required=True)
    args, rest = parser.parse_known_args()
    TANDEM = os.path.abspath(args.tandem)
    unittest.main(argv=[sys.argv[0], *rest])
