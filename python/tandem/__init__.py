"""Tandem from Python: load a model, plan it on a cluster of GPUs, TPUs and CPUs, say how fast
it will run, and run it (docs/PYTHON.md).

    import numpy as np, tandem
    model = tandem.load("resnet18.onnx")
    plan = model.plan(tandem.Cluster.from_file("examples/clusters/cpu-split.yaml"))
    print(plan.summary())
    outputs = plan.run({"input": np.zeros((1, 3, 224, 224), np.float32)})
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

# An installed package carries its presets; a build tree's module reads the source tree's.
_PRESETS = Path(__file__).resolve().parent / "data" / "presets"
if _PRESETS.is_dir():
    os.environ.setdefault("TANDEM_PRESETS", str(_PRESETS))

from ._tandem import (  # noqa: E402  (after the presets are set)
    Cluster,
    DeviceError,
    DeviceFigure,
    DeviceInfo,
    Error,
    InputError,
    Model,
    Plan,
    Segment,
    SimulatedDevice,
    Simulation,
    StrategyFigure,
    TensorInfo,
    __version__,
    json_schema_version,
    set_threads,
    threads,
)
from . import _tandem

__all__ = [
    "Cluster",
    "DeviceError",
    "DeviceFigure",
    "DeviceInfo",
    "Error",
    "InputError",
    "Model",
    "Plan",
    "Segment",
    "Session",
    "SimulatedDevice",
    "Simulation",
    "StrategyFigure",
    "TensorInfo",
    "from_keras",
    "from_saved_model",
    "from_torch",
    "load",
    "set_threads",
    "threads",
]

ModelSource = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview]


def cache_dir() -> Path:
    """Where Tandem keeps what it writes for later: $TANDEM_CACHE_DIR, else
    $XDG_CACHE_HOME/tandem, else ~/.cache/tandem (as the PJRT executable cache)."""
    if os.environ.get("TANDEM_CACHE_DIR"):
        return Path(os.environ["TANDEM_CACHE_DIR"])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "tandem"
    return Path.home() / ".cache" / "tandem"


def _model_file(data: bytes) -> str:
    # Tandem's importer, its batch-split check and plan files all name a model by its file, so
    # bytes get one: content-addressed, written once, atomically.
    digest = hashlib.sha256(data).hexdigest()
    folder = cache_dir() / "models"
    path = folder / f"{digest}.onnx"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, suffix=".part", delete=False) as part:
            part.write(data)
        os.replace(part.name, path)
    return str(path)


def load(
    source: ModelSource,
    *,
    dims: Optional[Mapping[str, int]] = None,
    shapes: Optional[Mapping[str, Sequence[int]]] = None,
    fuse: bool = True,
) -> Model:
    """Imports an ONNX model from a file or from its serialized bytes.

    `dims` binds symbolic dimensions by name ({"batch": 8}), `shapes` whole input shapes by
    input name; dims nothing binds are 1 (as `tandem run` binds them). `fuse` prepares
    the graph for inference as `tandem run` does: constants folded, BatchNormalization folded
    into convolutions, activations and embedding bags fused.
    Raises InputError (a ValueError) with the command's message for a file Tandem cannot use.
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        path = _model_file(bytes(source))
    elif isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
    else:
        raise TypeError(f"load: expected a path or bytes, got {type(source).__name__}")
    given_shapes = {name: [int(d) for d in shape] for name, shape in (shapes or {}).items()}
    return _tandem._load(path, dict(dims or {}), given_shapes, fuse)


ShapeKey = Tuple[Tuple[str, Tuple[int, ...]], ...]


class Session:
    """Serves many calls of one model on one cluster, whatever the input shapes: each new set
    of shapes is planned once (with the options given here) and its plan reused after.

        session = tandem.Session(model, tandem.Cluster.from_file("cluster.yaml"))
        for batch in batches:
            outputs = session.run({"input": batch})
    """

    def __init__(
        self, model: Model, cluster: Optional[Cluster] = None, **plan_options: Any
    ) -> None:
        self.model = model
        self.cluster = cluster if cluster is not None else Cluster.local()
        self.plan_options = plan_options
        self._plans: Dict[ShapeKey, Plan] = {}
        self.hits = 0
        self.misses = 0

    def plan_for(self, inputs: Mapping[str, Any]) -> Plan:
        """The plan for these inputs' shapes: planned on first sight, then reused."""
        arrays = {name: np.asarray(value) for name, value in inputs.items()}
        key: ShapeKey = tuple(sorted((name, tuple(a.shape)) for name, a in arrays.items()))
        plan = self._plans.get(key)
        if plan is not None:
            self.hits += 1
            return plan
        self.misses += 1
        model = self.model
        bound = [tuple(i.bound_shape) for i in model.inputs]
        if [tuple(arrays[i.name].shape) if i.name in arrays else None for i in model.inputs] != bound:
            model = load(
                model.path,
                dims=model.given_dims,
                shapes={name: a.shape for name, a in arrays.items()},
                fuse=model.fused,
            )
        plan = model.plan(self.cluster, **self.plan_options)
        self._plans[key] = plan
        return plan

    def run(self, inputs: Mapping[str, Any]) -> Dict[str, np.ndarray]:
        """Runs the plan for these inputs' shapes; the outputs by name."""
        return self.plan_for(inputs).run(dict(inputs))

    @property
    def plans(self) -> Dict[ShapeKey, Plan]:
        """The plans made so far, by input shapes."""
        return dict(self._plans)


from .frontends import from_keras, from_saved_model, from_torch  # noqa: E402
