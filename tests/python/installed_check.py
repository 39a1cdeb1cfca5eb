"""Checks a `pip install .` of the package, imported from where pip put it (not the build tree):
the module, its stubs and presets are there, and a zoo model plans and runs against ONNX Runtime."""

import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort

import tandem

repo = Path(sys.argv[1])
package = Path(tandem.__file__).parent
assert not str(package).startswith(str(repo / "build")), f"imported the build tree's {package}"
for name in ("_tandem.pyi", "py.typed", "frontends.py", "data/presets"):
    assert (package / name).exists(), f"{package / name} was not installed"
model_file = repo / "zoo" / "resnet" / "model.onnx"
x = np.random.default_rng(1).standard_normal((2, 3, 64, 64)).astype(np.float32)
plan = tandem.load(model_file, dims={"batch": 2}).plan(
    tandem.Cluster.from_file(repo / "examples" / "clusters" / "h100-4xv5e.yaml"))
assert plan.latency_seconds > 0, "a cluster of presets (read from the installed package) plans"
[output] = tandem.load(model_file).run({"input": x}).values()
[expected] = ort.InferenceSession(str(model_file)).run(None, {"input": x})
np.testing.assert_allclose(output, expected, rtol=1e-4, atol=1e-4)
print(f"installed package {package}: {tandem.__version__}, plans and runs")
