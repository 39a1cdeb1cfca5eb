#!/usr/bin/env python3
"""Write bad-input fixtures: files that a model/tensor loader must reject with a clean error.

    .venv/bin/python tools/make_bad_inputs.py --out zoo/bad [--zoo zoo]

<out>/cases.json lists every case:
    {"name", "file" (relative to <out>), "kind": "model" | "npy",
     "expect": lowercase substring the error message should contain (compare case-insensitively),
     "model"/"input" (npy cases: the zoo model and input the array is fed to, "model" is the
                      model's folder under the zoo root, e.g. "mlp"),
     "why": what is wrong, "ort": what onnxruntime 1.20.1 / numpy says about it (for reference)}

Everything is deterministic; nothing needs the rest of the zoo except that npy cases
name the mlp model (input "x", float32 [batch, 256]).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zoo_common import ensure_dir, ir_for_opset, write_json  # noqa: E402

F = TensorProto.FLOAT


def tiny_model(opset=17, op="Relu", domain="", name="tiny"):
    """y = op(x), x/y float [2, 4]; a valid baseline to break in small ways."""
    node = helper.make_node(op, ["x"], ["y"], name=f"{op.lower()}_0", domain=domain or None)
    g = helper.make_graph([node], name, [helper.make_tensor_value_info("x", F, [2, 4])],
                          [helper.make_tensor_value_info("y", F, [2, 4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="tandem-bad-inputs")
    m.ir_version = ir_for_opset(min(max(opset, 13), 21))
    return m


def valid_mlp_bytes():
    """A small valid model (Gemm + Relu) with enough weight bytes to truncate meaningfully."""
    rng = np.random.default_rng(7)
    w = numpy_helper.from_array(rng.standard_normal((64, 32)).astype(np.float32), "w")
    b = numpy_helper.from_array(np.zeros(32, np.float32), "b")
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["h"], name="gemm"),
             helper.make_node("Relu", ["h"], ["y"], name="relu")]
    g = helper.make_graph(nodes, "valid_mlp", [helper.make_tensor_value_info("x", F, ["batch", 64])],
                          [helper.make_tensor_value_info("y", F, ["batch", 32])], initializer=[w, b])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = ir_for_opset(17)
    onnx.checker.check_model(m, full_check=True)
    return m.SerializeToString()


def parses(data: bytes) -> bool:
    try:
        onnx.ModelProto().ParseFromString(data)
        return True
    except Exception:
        return False


def external_model(location: str, offset: int = 0, length: int = 64):
    """y = MatMul(x [1,4], w [4,4]) with w stored as external data at `location`."""
    w = TensorProto()
    w.name = "w"
    w.data_type = F
    w.dims.extend([4, 4])
    w.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", str(offset)), ("length", str(length))):
        e = w.external_data.add()
        e.key, e.value = k, v
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul")
    g = helper.make_graph([node], "external", [helper.make_tensor_value_info("x", F, [1, 4])],
                          [helper.make_tensor_value_info("y", F, [1, 4])], initializer=[w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="tandem-bad-inputs")
    m.ir_version = ir_for_opset(17)
    return m


WEIGHTS = np.arange(16, dtype=np.float32).tobytes()  # 64 bytes: a valid 4x4 float tensor


def build_cases(out: str):
    cases = []

    def model_case(name, fname, expect, why, data=None, model=None):
        path = os.path.join(out, fname)
        ensure_dir(os.path.dirname(path))
        if model is not None:
            data = model.SerializeToString()
        with open(path, "wb") as f:
            f.write(data)
        cases.append({"name": name, "file": fname, "kind": "model", "expect": expect, "why": why})

    # -- not a model at all ---------------------------------------------------
    text = b"This is not an ONNX model, just a text file.\n"
    assert not parses(text)
    model_case("not_onnx", "not_onnx.onnx", "not an onnx model", "plain text file named .onnx", data=text)
    model_case("empty_file", "empty.onnx", "empty", "zero-byte file (parses as an empty ModelProto)", data=b"")
    good = valid_mlp_bytes()
    half = good[: len(good) // 2]
    assert not parses(half), "half of the valid model unexpectedly parses"
    model_case("truncated_protobuf", "truncated.onnx", "not an onnx model", f"first {len(half)} of {len(good)} bytes of a valid model",
               data=half)
    rng = np.random.default_rng(1234)
    for _ in range(100):
        junk = rng.integers(0, 256, size=4096, dtype=np.uint8).tobytes()
        if not parses(junk):
            break
    assert not parses(junk)
    model_case("corrupt_protobuf", "corrupt.onnx", "not an onnx model", "4096 random bytes", data=junk)

    # -- structurally invalid graphs ------------------------------------------
    nodes = [helper.make_node("Add", ["x", "b_out"], ["a_out"], name="node_a"),
             helper.make_node("Relu", ["a_out"], ["b_out"], name="node_b")]
    g = helper.make_graph(nodes, "cycle", [helper.make_tensor_value_info("x", F, [2, 4])],
                          [helper.make_tensor_value_info("b_out", F, [2, 4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = ir_for_opset(17)
    model_case("cycle", "cycle.onnx", "cycle", "node_a and node_b feed each other (a_out <-> b_out)", model=m)

    model_case("unknown_op", "unknown_op.onnx", "foobar", "op type FooBar in the default domain",
               model=tiny_model(op="FooBar"))
    model_case("opset_too_old", "opset_too_old.onnx", "opset", "default-domain opset 7",
               model=tiny_model(opset=7))
    model_case("opset_too_new", "opset_too_new.onnx", "opset", "default-domain opset 30",
               model=tiny_model(opset=30))

    node = helper.make_node("MatMul", ["a", "b"], ["y"], name="bad_matmul")
    g = helper.make_graph([node], "shape_mismatch",
                          [helper.make_tensor_value_info("a", F, [2, 3]), helper.make_tensor_value_info("b", F, [4, 5])],
                          [helper.make_tensor_value_info("y", F, [2, 5])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = ir_for_opset(17)
    model_case("shape_mismatch", "shape_mismatch.onnx", "shape", "MatMul of static [2,3] by [4,5] (node bad_matmul)",
               model=m)

    m = tiny_model(name="negative_dim")
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_value = -3
    model_case("negative_dim", "negative_dim.onnx", "dim", "input x declared with dim_value -3", model=m)

    m = tiny_model(name="absurd_dim")
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 1 << 40
    m.graph.output[0].type.tensor_type.shape.dim[0].dim_value = 1 << 40
    model_case("absurd_input_dim", "absurd_input_dim.onnx", "dim", "input x declared [2^40, 4]", model=m)

    big = TensorProto()
    big.name = "huge_weight"
    big.data_type = F
    big.dims.extend([1 << 20, 1 << 20])  # 2^40 elements claimed ...
    big.raw_data = b"\0" * 16            # ... 16 bytes given
    node = helper.make_node("Add", ["x", "huge_weight"], ["y"], name="add_huge")
    g = helper.make_graph([node], "absurd_initializer", [helper.make_tensor_value_info("x", F, [1, 1])],
                          [helper.make_tensor_value_info("y", F, None)], initializer=[big])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = ir_for_opset(17)
    model_case("absurd_initializer", "absurd_initializer.onnx", "huge_weight",
               "initializer huge_weight claims [2^20, 2^20] floats with 16 bytes of raw_data", model=m)

    # -- external data ----------------------------------------------------------
    # escape.bin really exists next to the case folders, so only the path check can stop it.
    with open(os.path.join(out, "escape.bin"), "wb") as f:
        f.write(WEIGHTS)
    model_case("external_escape", "ext_escape/model.onnx", "external data",
               "external data location '../escape.bin' leaves the model folder", model=external_model("../escape.bin"))
    model_case("external_absolute", "ext_absolute/model.onnx", "external data",
               "external data location '/etc/passwd' is absolute", model=external_model("/etc/passwd"))
    ensure_dir(os.path.join(out, "ext_outside"))
    with open(os.path.join(out, "ext_outside", "secret.bin"), "wb") as f:
        f.write(WEIGHTS)
    ensure_dir(os.path.join(out, "ext_symlink"))
    link = os.path.join(out, "ext_symlink", "weights.bin")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink("../ext_outside/secret.bin", link)
    model_case("external_symlink", "ext_symlink/model.onnx", "external data",
               "location 'weights.bin' is a symlink to ../ext_outside/secret.bin (outside the model folder)",
               model=external_model("weights.bin"))
    ensure_dir(os.path.join(out, "ext_range"))
    with open(os.path.join(out, "ext_range", "weights.bin"), "wb") as f:
        f.write(WEIGHTS)  # 64 bytes
    model_case("external_out_of_range", "ext_range/model.onnx", "external data",
               "offset 32 + length 64 > 64-byte file weights.bin", model=external_model("weights.bin", 32, 64))

    # -- .npy inputs for zoo model mlp, input x: float32 [batch, 256] -----------
    def npy_case(name, fname, expect, why, arr=None, data=None):
        path = os.path.join(out, fname)
        if arr is not None:
            np.save(path, arr)
        else:
            with open(path, "wb") as f:
                f.write(data)
        cases.append({"name": name, "file": fname, "kind": "npy", "expect": expect, "model": "mlp",
                      "input": "x", "why": why})

    rng = np.random.default_rng(99)
    npy_case("npy_wrong_dtype", "x_int32.npy", "dtype", "int32 [2,256] fed to float32 input x",
             arr=rng.integers(0, 10, size=(2, 256), dtype=np.int32))
    npy_case("npy_wrong_shape", "x_2x255.npy", "shape", "float32 [2,255] fed to input x [batch,256]",
             arr=rng.standard_normal((2, 255)).astype(np.float32))
    full = os.path.join(out, "x_full.npy")
    np.save(full, rng.standard_normal((2, 256)).astype(np.float32))
    with open(full, "rb") as f:
        data = f.read()
    os.remove(full)
    npy_case("npy_truncated", "x_truncated.npy", "truncated",
             f"valid header for float32 [2,256], {len(data) // 2} of {len(data)} bytes", data=data[: len(data) // 2])
    npy_case("npy_not_npy", "x_garbage.npy", "not a .npy file", "a text file, no \\x93NUMPY magic",
             data=b"x = [1.0, 2.0, 3.0]\n")
    return cases


def ort_verdict(case, out, zoo):
    """What onnxruntime (models) or numpy (npy) says: a reference for the C++ wording."""
    path = os.path.join(out, case["file"])
    try:
        if case["kind"] == "model":
            import onnxruntime as ort
            so = ort.SessionOptions()
            so.log_severity_level = 4
            so.intra_op_num_threads = 1
            sess = ort.InferenceSession(path, sess_options=so, providers=["CPUExecutionProvider"])
            if case["name"] in ("negative_dim", "absurd_input_dim"):
                return "loads (onnxruntime only rejects it when fed)"
            _ = sess
            return "loads"
        arr = np.load(path, allow_pickle=False)
        model_in = None
        if zoo and os.path.exists(os.path.join(zoo, case["model"], "model.onnx")):
            model_in = onnx.load(os.path.join(zoo, case["model"], "model.onnx"), load_external_data=False)
        if model_in is not None:
            import onnxruntime as ort
            sess = ort.InferenceSession(os.path.join(zoo, case["model"], "model.onnx"),
                                        providers=["CPUExecutionProvider"])
            sess.run(None, {case["input"]: arr})
            return "runs"
        return f"numpy loads {arr.dtype} {list(arr.shape)}"
    except Exception as e:  # noqa: BLE001
        msg = " ".join(str(e).split())
        for root in {os.path.abspath(out), out}:
            msg = msg.replace(root + os.sep, "<out>/")
        return f"{type(e).__name__}: {msg[:300]}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="zoo/bad", help="output folder (default: zoo/bad)")
    ap.add_argument("--zoo", default=None, help="zoo root holding mlp/ (default: parent of --out)")
    ap.add_argument("--no-ort", action="store_true", help="skip recording onnxruntime's verdicts")
    args = ap.parse_args(argv)
    out = args.out
    zoo = args.zoo if args.zoo is not None else os.path.dirname(os.path.abspath(out))
    if os.path.exists(out):
        shutil.rmtree(out)
    ensure_dir(out)
    cases = build_cases(out)
    for c in cases:
        if not args.no_ort:
            c["ort"] = ort_verdict(c, out, zoo)
        print(f"make_bad_inputs: {c['name']:22s} {c['kind']:5s} expect {c['expect']!r:16s} {c['file']}"
              + (f"  [ort: {c['ort'][:90]}]" if "ort" in c else ""))
    write_json(os.path.join(out, "cases.json"), cases)
    print(f"make_bad_inputs: {len(cases)} cases written to {out}")


if __name__ == "__main__":
    main()
