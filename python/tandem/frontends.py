"""Converters from in-memory PyTorch, Keras and TensorFlow SavedModel models to Tandem models.

Each converter exports the model to ONNX in memory and hands the bytes to `tandem.load`. The
frameworks are imported only when a converter is called: importing TensorFlow alone takes seconds.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Optional, Set, Tuple, Union

if TYPE_CHECKING:
    import onnx
    import tensorflow as tf
    import torch

    from . import Model

_TORCH_INSTALL = "pip install torch (or Debian's python3-torch)"
_TF_INSTALL = "pip install tensorflow-cpu==2.15.1 tf2onnx==1.16.1"


def from_torch(
    module: torch.nn.Module,
    example_inputs: Union[torch.Tensor, Tuple[torch.Tensor, ...]],
    *,
    input_names: Optional[Sequence[str]] = None,
    output_names: Optional[Sequence[str]] = None,
    dynamic_axes: Optional[Mapping[str, Union[Mapping[int, str], Sequence[int]]]] = None,
    opset: int = 17,
    **load_options: Any,
) -> Model:
    """Export a PyTorch module to ONNX with `torch.onnx.export` and load it into Tandem.

    Args:
        module: the module to convert; it is traced in eval mode, and every submodule's
            training flag is restored afterwards.
        example_inputs: a tensor, or a tuple of tensors, one per model input; the trace runs on
            them, so their shapes are the model's shapes except where `dynamic_axes` says.
        input_names: the ONNX input names; default `input0`, `input1`, ...
        output_names: the ONNX output names; default `output0`, `output1`, ...
        dynamic_axes: symbolic dimensions by tensor name, as `torch.onnx.export` takes them,
            e.g. `{"input0": {0: "batch"}, "output0": {0: "batch"}}`.
        opset: the ONNX opset to export to.
        **load_options: passed to `tandem.load` (`dims`, `shapes`, `fuse`).

    Raises:
        ImportError: PyTorch is not installed.
        tandem.InputError: `torch.onnx.export` could not convert the module.
    """
    from . import InputError, load

    try:
        import torch
    except ImportError as error:
        raise ImportError(f"from_torch needs PyTorch: {_TORCH_INSTALL}") from error

    inputs = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    modes = [(submodule, submodule.training) for submodule in module.modules()]
    buffer = io.BytesIO()
    try:
        module.eval()
        if input_names is None:
            input_names = [f"input{i}" for i in range(len(inputs))]
        if output_names is None:
            # The names must be known before the export (dynamic_axes may use them), so count
            # the outputs with one forward pass.
            with torch.no_grad():
                output_count = _count_tensors(module(*inputs), torch.Tensor)
            output_names = [f"output{i}" for i in range(output_count)]
        # Under no_grad, eval-mode TransformerEncoderLayer takes a fused fast path that
        # torch.onnx.export cannot export.
        with torch.enable_grad():
            torch.onnx.export(
                module,
                inputs,
                buffer,
                input_names=list(input_names),
                output_names=list(output_names),
                dynamic_axes=dynamic_axes,
                opset_version=opset,
                do_constant_folding=True,
            )
    except Exception as error:
        raise InputError(
            f"from_torch: torch.onnx.export could not convert the module: {_first_line(error)}"
        ) from error
    finally:
        for submodule, training in modes:
            submodule.training = training
    return load(buffer.getvalue(), **load_options)


def from_keras(
    model: tf.keras.Model,
    input_signature: Sequence[tf.TensorSpec],
    *,
    opset: int = 17,
    **load_options: Any,
) -> Model:
    """Convert a Keras model to ONNX with tf2onnx and load it into Tandem.

    Args:
        model: the Keras model to convert.
        input_signature: one `tf.TensorSpec` per model input; the ONNX inputs take the specs'
            names, and a `None` dimension becomes a symbolic one.
        opset: the ONNX opset to convert to.
        **load_options: passed to `tandem.load` (`dims`, `shapes`, `fuse`).

    Raises:
        ImportError: TensorFlow or tf2onnx is not installed.
        tandem.InputError: tf2onnx could not convert the model.
    """
    from . import InputError, load

    _, tf2onnx = _import_tensorflow("from_keras")
    where = "from_keras: tf2onnx could not convert the model"
    try:
        model_proto, _ = tf2onnx.convert.from_keras(
            model, input_signature=list(input_signature), opset=opset
        )
    except Exception as error:
        raise InputError(f"{where}: {_first_line(error)}") from error
    _check_converted(model_proto, where)
    return load(model_proto.SerializeToString(), **load_options)


def from_saved_model(
    path: Union[str, os.PathLike[str]],
    *,
    signature_def: Optional[str] = None,
    tag: Union[str, Sequence[str], None] = None,
    opset: int = 17,
    **load_options: Any,
) -> Model:
    """Convert a TensorFlow SavedModel directory to ONNX with tf2onnx and load it into Tandem.

    Args:
        path: the SavedModel directory (the one holding `saved_model.pb`).
        signature_def: the signature to convert; default the model's first one
            (`serving_default` for a model written by `tf.saved_model.save`).
        tag: the MetaGraph tag, or tags, to load; default `serve`.
        opset: the ONNX opset to convert to.
        **load_options: passed to `tandem.load` (`dims`, `shapes`, `fuse`).

    The ONNX inputs take the signature's argument names and the outputs its output keys
    (sorted, as tf2onnx orders them).

    Raises:
        ImportError: TensorFlow or tf2onnx is not installed.
        tandem.InputError: `path` is not a SavedModel directory, or tf2onnx could not convert it.
    """
    from . import InputError, load

    path = os.fspath(path)
    # Checked before importing TensorFlow, which takes seconds.
    if not os.path.isdir(path):
        raise InputError(f"from_saved_model: {path}: no such directory")
    if not any(os.path.isfile(os.path.join(path, name))
               for name in ("saved_model.pb", "saved_model.pbtxt")):
        raise InputError(
            f"from_saved_model: {path}: not a TensorFlow SavedModel (no saved_model.pb)"
        )

    tf, tf2onnx = _import_tensorflow("from_saved_model")
    where = f"from_saved_model: tf2onnx could not convert {path}"
    try:
        # What tf2onnx's command line does for --saved-model (tf2onnx.convert.main), through its
        # public pieces: from_graph_def would drop the tables and the signature's tensor names.
        graph_def, inputs, outputs, initialized_tables, tensors_to_rename = (
            tf2onnx.tf_loader.from_saved_model(
                path,
                None,
                None,
                tag="serve" if tag is None else tag,
                signatures=[signature_def] if signature_def is not None else None,
                return_initialized_tables=True,
                return_tensors_to_rename=True,
            )
        )
        with tf.device("/cpu:0"), tf.Graph().as_default() as tf_graph:
            tf.import_graph_def(graph_def, name="")
            onnx_graph = tf2onnx.tfonnx.process_tf_graph(
                tf_graph,
                opset=opset,
                input_names=inputs,
                output_names=outputs,
                tensors_to_rename=tensors_to_rename,
                initialized_tables=initialized_tables,
            )
            onnx_graph = tf2onnx.optimizer.optimize_graph(onnx_graph)
            model_proto = onnx_graph.make_model(f"converted from {path}")
    except Exception as error:
        raise InputError(f"{where}: {_first_line(error)}") from error
    _check_converted(model_proto, where)
    return load(model_proto.SerializeToString(), **load_options)


def _import_tensorflow(caller: str) -> Tuple[Any, Any]:
    """Import TensorFlow and tf2onnx, or say which packages `caller` needs."""
    try:
        import tensorflow as tf
        import tf2onnx
    except ImportError as error:
        raise ImportError(f"{caller} needs TensorFlow and tf2onnx: {_TF_INSTALL}") from error
    return tf, tf2onnx


def _check_converted(model_proto: onnx.ModelProto, where: str) -> None:
    """Raise `tandem.InputError` if tf2onnx left TensorFlow ops it could not map in the graph.

    tf2onnx's Python API converts with continue_on_error: an op it has no handler for is only
    logged, and stays in the graph under its TensorFlow name.
    """
    import onnx

    from . import InputError

    unconverted: Set[str] = set()
    graphs = [model_proto.graph]
    while graphs:
        graph = graphs.pop()
        for node in graph.node:
            if node.domain in ("", "ai.onnx") and not onnx.defs.has(node.op_type):
                unconverted.add(node.op_type)
            for attribute in node.attribute:
                if attribute.HasField("g"):
                    graphs.append(attribute.g)
                graphs.extend(attribute.graphs)
    if unconverted:
        raise InputError(
            f"{where}: TensorFlow ops with no ONNX conversion: {', '.join(sorted(unconverted))}"
        )


def _count_tensors(value: Any, tensor_type: type) -> int:
    """Count the tensors in a module's output (a tensor, or nested tuples, lists and dicts)."""
    if isinstance(value, tensor_type):
        return 1
    if isinstance(value, Mapping):
        value = list(value.values())
    if isinstance(value, (tuple, list)):
        return sum(_count_tensors(item, tensor_type) for item in value)
    return 0


def _first_line(error: BaseException) -> str:
    """The first line of an error's message, or its type name if it has none.

    An error raised while TensorFlow traces a function reads "in user code:", a traceback, then
    the original error: for it, the last line.
    """
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    if not lines:
        return type(error).__name__
    return lines[-1] if lines[0] == "in user code:" else lines[0]
