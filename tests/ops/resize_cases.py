"""Expected values of tests/ops/tensor_resize_test.cpp's table, from ONNX Runtime.

    .venv/bin/python tests/ops/resize_cases.py             # writes tests/ops/resize_cases.json
    .venv/bin/python tests/ops/resize_cases.py -o FILE     # writes the same table to FILE
    .venv/bin/python tests/ops/resize_cases.py --threaded  # ThreadedMatchesOnnxRuntime's values

Each case runs a one-node Resize model through ONNX Runtime 1.20 (CPU) and the onnx 1.17
reference evaluator. The values are ONNX Runtime's; where ONNX Runtime has no kernel for a case
(cubic other than 2-D, rank 1, linear over a batch axis) they are the reference's. A case's
"note" marks those cases, and the cases where the reference differs from ONNX Runtime: where the
integer output length matters (align_corners and tf_crop_and_resize with a fractional
in * scale, pytorch_half_pixel with a one-element output), the reference uses the fractional
length or -0.5; ONNX Runtime and the spec's formulas use the integer length and 0.

The file is JSON, one case a line, read by the test at run time (MatchesOnnxRuntime): per case
its name, the note (only where there is one), the Resize attributes (a string, an integer, a
float, written with a decimal point, or a list of integers, as ONNX's helper.make_node types
them), the opset, X's shape and values, roi, scales and sizes ([] for an omitted input), and the
expected shape and values. Floats are float32 values written with at most 9 significant digits,
which read back as the same float32.
"""
import argparse
import json
import os
import sys
import warnings

import numpy as np
import onnxruntime as ort
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

warnings.filterwarnings("ignore")


def make_model(attrs, x, roi, scales, sizes, opset):
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    names, inits = ["X"], []
    for name, value in (("roi", roi), ("scales", scales), ("sizes", sizes)):
        if value is None:
            names.append("")
        else:
            inits.append(numpy_helper.from_array(value, name))
            names.append(name)
    while names[-1] == "":
        names.pop()
    node = helper.make_node("Resize", names, ["Y"], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("X", elem, x.shape)],
                              [helper.make_tensor_value_info("Y", elem, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def evaluate(attrs, x, roi, scales, sizes, opset):
    model = make_model(attrs, x, roi, scales, sizes, opset)
    try:
        reference = ReferenceEvaluator(model).run(None, {"X": x})[0]
    except Exception:  # noqa: BLE001
        reference = None
    try:
        session = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"])
        return session.run(None, {"X": x})[0], "ORT", reference
    except Exception:  # noqa: BLE001
        return reference, "onnx reference", reference


def floats(values):
    """float32 values as Python floats that print with 9 significant digits (exact in float32)."""
    return [float("%.9g" % v) for v in np.asarray(values, np.float64).ravel()]


def ints(values):
    return [int(v) for v in np.asarray(values).ravel()]


CASES = []


def case(name, attrs, x, roi=None, scales=None, sizes=None, opset=19):
    y, source, reference = evaluate(attrs, x, roi, scales, sizes, opset)
    if reference is None:
        agrees = "the onnx reference refuses it"
    elif reference.shape != y.shape or np.abs(reference - y).max() > 1e-4 * max(1, np.abs(y).max()):
        agrees = "the onnx reference differs"
    else:
        agrees = "the onnx reference agrees"
    entry = {"name": name}
    if source != "ORT" or agrees != "the onnx reference agrees":
        entry["note"] = "%s; %s." % (source, agrees)
    entry.update({
        "attributes": {k: floats([v])[0] if isinstance(v, float) else v
                       for k, v in attrs.items()},
        "opset": opset, "shape": ints(x.shape), "x": floats(x),
        "roi": floats([] if roi is None else roi),
        "scales": floats([] if scales is None else scales),
        "sizes": ints([] if sizes is None else sizes), "expected_shape": ints(y.shape),
        "expected": floats(y)})
    CASES.append(entry)


def write(path):
    lines = ",\n".join("    " + json.dumps(c) for c in CASES)
    with open(path, "w") as f:
        f.write('{\n  "about": %s,\n  "cases": [\n%s\n  ]\n}\n' % (json.dumps(
            "Resize cases of tests/ops/tensor_resize_test.cpp (MatchesOnnxRuntime): expected "
            "values from ONNX Runtime 1.20, written by tests/ops/resize_cases.py (its docstring "
            "describes the fields and the notes); regenerate it with that script, do not edit "
            "it by hand."), lines))
    print("resize_cases: %d cases written to %s" % (len(CASES), path))


def threaded():
    """Sum and samples of 1x2x40x50 -> 1x2x64x96 (half_pixel) for each mode."""
    x = ((np.arange(2 * 40 * 50) * 37 % 101) / 10).astype(np.float32).reshape(1, 2, 40, 50)
    samples = [0, 1, 97, 1000, 5000, 6143, 9000, 12287]
    for mode in ["linear", "cubic", "nearest"]:
        y, source, _ = evaluate({"mode": mode}, x, None, None, np.array([1, 2, 64, 96], np.int64),
                                19)
        print("%s (%s): sum %.9g, samples %s" % (mode, source, y.astype(np.float64).sum(),
                                                 floats(y.ravel()[samples])))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                        "resize_cases.json"),
                    help="the JSON file to write (default: resize_cases.json beside this script)")
    ap.add_argument("--threaded", action="store_true",
                    help="print ThreadedMatchesOnnxRuntime's values instead")
    args = ap.parse_args()
    if args.threaded:
        return threaded()
    grid = np.array([[1, 3, 2, 8], [5, 0, 4, 6], [7, 9, 1, 2]], np.float32).reshape(1, 1, 3, 4)
    roi = np.array([0, 0, 0.2, 0.1, 1, 1, 0.9, 1.2], np.float32)
    targets = [("scales", np.array([1, 1, 1.7, 0.6], np.float32), None),
               ("sizes", None, np.array([1, 1, 5, 3], np.int64)),
               ("one_row", None, np.array([1, 1, 1, 6], np.int64))]
    for mode in ["nearest", "linear", "cubic"]:
        for coord in ["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                      "asymmetric", "tf_crop_and_resize"]:
            for kind, scales, sizes in targets:
                attrs = {"mode": mode, "coordinate_transformation_mode": coord}
                crop = coord == "tf_crop_and_resize"
                if crop:
                    attrs["extrapolation_value"] = -1.0
                case("%s_%s_%s" % (mode, coord, kind), attrs, grid, roi if crop else None,
                     scales, sizes)
    up = np.array([1, 1, 2, 2.5], np.float32)
    for nearest in ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]:
        for coord in ["half_pixel", "asymmetric"]:
            case("nearest_%s_%s" % (nearest, coord),
                 {"mode": "nearest", "coordinate_transformation_mode": coord,
                  "nearest_mode": nearest}, grid, None, up)
    for coord in ["half_pixel", "align_corners"]:
        cubic = {"mode": "cubic", "coordinate_transformation_mode": coord, "cubic_coeff_a": -0.5,
                 "exclude_outside": 1}
        case("cubic_exclude_outside_up_" + coord, cubic, grid, None, up)
        case("cubic_exclude_outside_down_" + coord, cubic, grid, None, None,
             np.array([1, 1, 2, 3], np.int64))
    # opset 18: axes and keep_aspect_ratio_policy.
    for policy in ["not_larger", "not_smaller"]:
        case("linear_axes_" + policy,
             {"mode": "linear", "axes": [2, 3], "keep_aspect_ratio_policy": policy}, grid, None,
             None, np.array([5, 5], np.int64), 18)
    case("nearest_axes_last", {"mode": "nearest", "axes": [3]}, grid, None,
         np.array([1.5], np.float32), None, 18)
    case("cubic_axes_crop", {"mode": "cubic", "axes": [3, 2],
                             "coordinate_transformation_mode": "tf_crop_and_resize"},
         grid, np.array([0.25, 0, 1, 0.5], np.float32), None, np.array([3, 4], np.int64), 18)
    # Other ranks and resized batch axes.
    cube = ((np.arange(24) * 7) % 11).astype(np.float32).reshape(2, 3, 4)
    case("trilinear", {"mode": "linear"}, cube, None, np.array([1.5, 0.7, 1.25], np.float32))
    case("tricubic_asymmetric", {"mode": "cubic", "coordinate_transformation_mode": "asymmetric"},
         cube, None, None, np.array([3, 2, 5], np.int64))
    case("linear_batch_axis", {"mode": "linear"}, grid.reshape(3, 4, 1, 1), None,
         np.array([2, 1, 1, 1], np.float32))
    line = np.array([0, 4, 1, 9, 3], np.float32)
    case("cubic_rank1", {"mode": "cubic", "coordinate_transformation_mode": "asymmetric"}, line,
         None, None, np.array([8], np.int64))
    case("linear_rank1_down", {"mode": "linear"}, line, None, np.array([0.5], np.float32))
    write(args.out)


if __name__ == "__main__":
    sys.exit(main())
