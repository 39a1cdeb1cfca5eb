"""tandem.frontends: PyTorch, Keras and SavedModel models converted to ONNX run in Tandem and give
the framework's own outputs; conversion failures and missing frameworks give clear errors."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import tandem
from tandem.frontends import from_keras, from_saved_model, from_torch


@pytest.fixture(scope="module")
def tf():
    pytest.importorskip("tf2onnx")
    return pytest.importorskip("tensorflow")


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def only_output(outputs):
    assert len(outputs) == 1, list(outputs)
    return next(iter(outputs.values()))


# ---- TensorFlow and Keras ---------------------------------------------------------------------


@pytest.mark.tensorflow
def test_keras_cnn_matches_tensorflow_at_two_batch_sizes(tf):
    tf.keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    layers = tf.keras.layers
    image = tf.keras.Input((32, 32, 3), name="image")
    h = layers.Conv2D(16, 3, padding="same")(image)
    norm = layers.BatchNormalization()
    h = layers.ReLU()(norm(h))
    h = layers.Flatten()(layers.MaxPooling2D()(h))
    keras_model = tf.keras.Model(image, layers.Dense(10)(h))
    # Fresh statistics (mean 0, variance 1) would make the normalization nearly the identity.
    norm.set_weights([rng.uniform(0.5, 1.5, 16), rng.normal(0, 0.1, 16),
                      rng.normal(0, 0.1, 16), rng.uniform(0.5, 2.0, 16)])

    model = from_keras(keras_model, [tf.TensorSpec((None, 32, 32, 3), tf.float32, name="image")])

    assert [i.name for i in model.inputs] == ["image"]
    assert isinstance(model.inputs[0].shape[0], str)
    assert model.inputs[0].shape[1:] == (32, 32, 3)
    for batch in (1, 4):
        x = rng.standard_normal((batch, 32, 32, 3), dtype=np.float32)
        out = only_output(model.run({"image": x}))
        np.testing.assert_allclose(out, keras_model(x).numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.tensorflow
def test_keras_transformer_block_matches_tensorflow(tf):
    tf.keras.utils.set_random_seed(0)
    layers = tf.keras.layers
    tokens = tf.keras.Input((16, 32), name="tokens")
    attention = layers.MultiHeadAttention(num_heads=4, key_dim=8)(tokens, tokens)
    h = layers.LayerNormalization()(layers.Add()([tokens, attention]))
    feed_forward = layers.Dense(32)(layers.Dense(64, activation="gelu")(h))
    out = layers.LayerNormalization()(layers.Add()([h, feed_forward]))
    keras_model = tf.keras.Model(tokens, out)

    model = from_keras(keras_model, [tf.TensorSpec((None, 16, 32), tf.float32, name="tokens")])

    x = np.random.default_rng(1).standard_normal((2, 16, 32), dtype=np.float32)
    np.testing.assert_allclose(only_output(model.run({"tokens": x})), keras_model(x).numpy(),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.tensorflow
def test_keras_op_with_no_onnx_conversion_is_an_input_error(tf):
    x = tf.keras.Input((4,), name="x")
    keras_model = tf.keras.Model(x, tf.keras.layers.Lambda(lambda t: tf.math.igamma(t, t + 1.0))(x))
    with pytest.raises(tandem.InputError,
                       match=r"^from_keras: tf2onnx could not convert the model: .*Igamma"):
        from_keras(keras_model, [tf.TensorSpec((None, 4), tf.float32, name="x")])


@pytest.mark.tensorflow
def test_saved_model_matches_tensorflow(tf, tmp_path):
    rng = np.random.default_rng(0)

    class Classifier(tf.Module):
        def __init__(self):
            super().__init__()
            self.kernel = tf.Variable(rng.standard_normal((8, 5), dtype=np.float32))
            self.bias = tf.Variable(rng.standard_normal(5, dtype=np.float32))

        @tf.function(input_signature=[tf.TensorSpec((None, 8), tf.float32, name="features")])
        def __call__(self, features):
            logits = tf.matmul(features, self.kernel) + self.bias
            return {"probs": tf.nn.softmax(logits), "logits": logits}

    classifier = Classifier()
    path = tmp_path / "classifier"
    signature = classifier.__call__.get_concrete_function()
    tf.saved_model.save(classifier, str(path), signatures=signature)

    model = from_saved_model(path)

    assert [i.name for i in model.inputs] == ["features"]
    assert [o.name for o in model.outputs] == ["logits", "probs"]
    x = rng.standard_normal((3, 8), dtype=np.float32)
    expected = classifier(x)
    outputs = model.run({"features": x})
    for name in ("logits", "probs"):
        np.testing.assert_allclose(outputs[name], expected[name].numpy(), rtol=1e-4, atol=1e-5)


def test_saved_model_bad_path_is_an_input_error_naming_it(tmp_path):
    missing = tmp_path / "missing"
    with pytest.raises(tandem.InputError,
                       match=f"^from_saved_model: {re.escape(str(missing))}: no such directory$"):
        from_saved_model(missing)
    with pytest.raises(tandem.InputError,
                       match=f"^from_saved_model: {re.escape(str(tmp_path))}: not a TensorFlow"):
        from_saved_model(tmp_path)


def test_from_keras_without_tensorflow_names_the_pip_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorflow", None)
    with pytest.raises(ImportError,
                       match=r"pip install tensorflow-cpu==2\.15\.1 tf2onnx==1\.16\.1"):
        from_keras(object(), [])


def test_from_torch_without_torch_names_the_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ImportError, match="pip install torch"):
        from_torch(object(), ())


def test_importing_tandem_imports_no_framework():
    # A fresh interpreter: this one has imported the frameworks for the other tests.
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(tandem.__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [package_root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    result = subprocess.run(
        [sys.executable, "-c", "import sys, tandem, tandem.frontends; "
         "print([m for m in ('tensorflow', 'tf2onnx', 'torch') if m in sys.modules])"],
        env=env, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


# ---- PyTorch ----------------------------------------------------------------------------------


@pytest.mark.torch
def test_torchvision_resnet18_matches_pytorch(torch):
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    net = torchvision.models.resnet18(weights=None).eval()
    # Fresh statistics (mean 0, variance 1) would make every normalization nearly the identity.
    for norm in net.modules():
        if isinstance(norm, torch.nn.BatchNorm2d):
            norm.running_mean.normal_(0, 0.1)
            norm.running_var.uniform_(0.5, 1.5)
            with torch.no_grad():
                norm.weight.uniform_(0.5, 1.5)
                norm.bias.normal_(0, 0.1)
    x = torch.randn(1, 3, 224, 224)

    model = from_torch(net, x)

    assert [(i.name, tuple(i.shape)) for i in model.inputs] == [("input0", (1, 3, 224, 224))]
    assert [o.name for o in model.outputs] == ["output0"]
    with torch.no_grad():
        expected = net(x).numpy()
    out = model.run({"input0": x.numpy()})["output0"]
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.torch
def test_torch_transformer_encoder_layer_with_dynamic_batch(torch):
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(64, 4, dim_feedforward=128, batch_first=True)

    # In training mode, to check that it is restored; under no_grad, where eval mode takes a
    # fused path that has no ONNX export.
    with torch.no_grad():
        model = from_torch(layer, torch.randn(2, 16, 64), input_names=["x"], output_names=["y"],
                           dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})

    assert all(module.training for module in layer.modules())
    assert [(i.name, tuple(i.shape)) for i in model.inputs] == [("x", ("batch", 16, 64))]
    layer.eval()
    for batch in (1, 3):
        x = torch.randn(batch, 16, 64)
        with torch.no_grad():
            expected = layer(x).numpy()
        np.testing.assert_allclose(model.run({"x": x.numpy()})["y"], expected,
                                   rtol=1e-4, atol=1e-4)


@pytest.mark.torch
def test_torch_op_with_no_onnx_export_is_an_input_error(torch):
    class Spectrum(torch.nn.Module):
        def forward(self, x):
            return torch.fft.fft(x).abs()

    with pytest.raises(tandem.InputError, match=r"^from_torch: torch\.onnx\.export could not "
                       r"convert the module: .*aten::fft_fft"):
        from_torch(Spectrum(), torch.randn(2, 8))
