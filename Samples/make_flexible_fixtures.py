#!/usr/bin/env python3
"""Small models whose input sizes are left open, with the source framework's outputs at several sizes
(issue 38: flexible input shapes). Run by hand, not in CI; the tests read what this writes.

Keras part, in the keras3 venv of Samples/requirements-keras3.txt (tf_keras 2.21, the Keras 2 API):

    python3 -m venv /tmp/venv-keras3 && /tmp/venv-keras3/bin/pip install -r Samples/requirements-keras3.txt
    /tmp/venv-keras3/bin/python Samples/make_flexible_fixtures.py --part keras --out Samples/Fixtures/flexible

ONNX part, in the exporters-torch venv of Samples/requirements-exporters-torch.txt (torch 2.13, torchvision 0.28,
onnx 1.17, onnxruntime 1.20.1; torchvision imported with export_torchvision.py's workaround):

    /tmp/venv-exporters-torch/bin/python Samples/make_flexible_fixtures.py --part onnx --out Samples/Fixtures/flexible

Writes (weights seeded; every Keras reference file holds 2 seeded samples, inputs/0 [2, ...] as the source takes them and
outputs/0 [2, ...] as the framework computed them):

| file | model | sizes left open |
|---|---|---|
| `fully_conv.h5` | tf_keras: Conv2D 3x3 same + ReLU, Conv2D 3x3 stride 2 same, BatchNormalization (seeded statistics), ReLU, DepthwiseConv2D 3x3 same, Conv2D 1x1 to 5, GlobalAveragePooling2D, Softmax | Input (None, None, 3) |
| `text_lstm.h5` | tf_keras: Embedding(50, 8), LSTM(12), Dense(4, softmax) | Input (None,) token ids |
| `conv1d.h5` | tf_keras: Conv1D(8, 3, same, relu), Conv1D(8, 3, causal, dilation 2, relu), GlobalMaxPooling1D, Dense(3) | Input (None, 6) |
| `mobilenet_v3_dynamic.onnx` | torchvision `mobilenet_v3_small(width_mult=0.25, num_classes=10)`, eval, BatchNorm statistics and affine terms and the Linear weights redrawn (seeded) so the logits are of order 1, `torch.onnx.export(dynamo=False, opset 13, dynamic_axes={"input": {2: "height", 3: "width"}})` | input [1, 3, height, width] |

References `<model>.<size>.reference.h5`, at the sizes the tests convert and check (the range's bounds, the odd
size between them that `FlexibleInputShape.checkedShapes` picks, the default, and an enumerated second shape):

* fully_conv: 32x32 (default), 16x16, 64x64, 41x41, 48x40 (inputs [2, H, W, 3], pixels / 255)
* text_lstm: 10 tokens (default), 4, 40, 23, 20 (inputs [2, T] integer ids 0-49 as float)
* conv1d: 16 steps (default), 8, 64, 37, 24 (inputs [2, T, 6], normal)
* mobilenet_v3_dynamic (onnxruntime, CPU, one thread): 64x64 (default), 48x48, 128x128, 89x89, 96x80
  (inputs [1, 3, H, W], normal: one sample each, to keep the files small). The range starts at 48: at 32 the last
  blocks' feature maps are 1x1 and the written program differs there (a broadcast that sizes of 1 make needless),
  which convert refuses by name.
"""

import argparse
import os
import sys

import numpy as np


def write_reference(path, inputs, outputs, computed_by):
    import h5py
    with h5py.File(path, "w") as f:
        f.create_dataset("inputs/0", data=inputs.astype(np.float32))
        f.create_dataset("outputs/0", data=outputs.astype(np.float32))
        f.attrs["computed_by"] = computed_by


KERAS_SIZES = {
    "fully_conv": [(32, 32), (16, 16), (64, 64), (41, 41), (48, 40)],
    "text_lstm": [(10,), (4,), (40,), (23,), (20,)],
    "conv1d": [(16,), (8,), (64,), (37,), (24,)],
}
ONNX_SIZES = [(64, 64), (48, 48), (128, 128), (89, 89), (96, 80)]


def size_name(size):
    return "x".join(str(s) for s in size)


def keras_part(out):
    import tf_keras as keras
    import tensorflow as tf

    keras.utils.set_random_seed(38)
    x = keras.Input((None, None, 3), name="image")
    y = keras.layers.Conv2D(8, 3, padding="same", activation="relu", name="conv1")(x)
    y = keras.layers.Conv2D(8, 3, strides=2, padding="same", name="conv2")(y)
    y = keras.layers.BatchNormalization(name="bn")(y)
    y = keras.layers.ReLU(name="relu")(y)
    y = keras.layers.DepthwiseConv2D(3, padding="same", name="depthwise")(y)
    y = keras.layers.Conv2D(5, 1, name="classes")(y)
    y = keras.layers.GlobalAveragePooling2D(name="pool")(y)
    y = keras.layers.Softmax(name="probabilities")(y)
    fully_conv = keras.Model(x, y, name="fully_conv")
    bn = fully_conv.get_layer("bn")
    rng = np.random.default_rng(38)
    gamma, beta, mean, var = bn.get_weights()
    bn.set_weights([rng.uniform(0.5, 1.5, gamma.shape), rng.normal(0, 0.1, beta.shape),
                    rng.normal(0, 0.1, mean.shape), rng.uniform(0.5, 1.5, var.shape)])

    t = keras.Input((None,), name="tokens")
    z = keras.layers.Embedding(50, 8, name="embedding")(t)
    z = keras.layers.LSTM(12, name="lstm")(z)
    z = keras.layers.Dense(4, activation="softmax", name="topic")(z)
    text = keras.Model(t, z, name="text_lstm")

    s = keras.Input((None, 6), name="signal")
    w = keras.layers.Conv1D(8, 3, padding="same", activation="relu", name="conv1")(s)
    w = keras.layers.Conv1D(8, 3, padding="causal", dilation_rate=2, activation="relu", name="conv2")(w)
    w = keras.layers.GlobalMaxPooling1D(name="pool")(w)
    w = keras.layers.Dense(3, name="scores")(w)
    conv1d = keras.Model(s, w, name="conv1d")

    for name, model in [("fully_conv", fully_conv), ("text_lstm", text), ("conv1d", conv1d)]:
        model.save(os.path.join(out, f"{name}.h5"))
        for index, size in enumerate(KERAS_SIZES[name]):
            rng = np.random.default_rng(1000 + index)
            if name == "fully_conv":
                inputs = rng.integers(0, 256, (2, *size, 3)).astype(np.float32) / 255
            elif name == "text_lstm":
                inputs = rng.integers(0, 50, (2, *size)).astype(np.float32)
            else:
                inputs = rng.normal(size=(2, *size, 6)).astype(np.float32)
            outputs = model.predict(inputs, verbose=0)
            write_reference(os.path.join(out, f"{name}.{size_name(size)}.reference.h5"), inputs, outputs,
                            f"tf_keras {keras.__version__} (tensorflow {tf.__version__})")


def mobilenet(torch, torchvision):
    """torchvision's mobilenet_v3_small (width 0.25, 10 classes), eval, seeded; also built by
    Benchmarks/flexible.py for coremltools."""
    torch.manual_seed(38)
    model = torchvision.models.mobilenet_v3_small(width_mult=0.25, num_classes=10).eval()
    # Initial BatchNorm statistics (mean 0, variance 1) and torchvision's small initial weights shrink the logits
    # to ~1e-8, which every conversion would match: seeded statistics and a rescaled head give logits of order 1.
    generator = torch.Generator().manual_seed(38)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                n = module.num_features
                module.weight.copy_(torch.rand(n, generator=generator) + 0.5)
                module.bias.copy_(torch.randn(n, generator=generator) * 0.2)
                module.running_mean.copy_(torch.randn(n, generator=generator) * 0.1)
                module.running_var.copy_(torch.rand(n, generator=generator) + 0.5)
            elif isinstance(module, torch.nn.Linear):
                module.weight.copy_(torch.randn(module.weight.shape, generator=generator) / module.in_features ** 0.5)
    return model


def onnx_part(out):
    import onnx
    import onnxruntime as ort
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from export_torchvision import import_torchvision
    torchvision = import_torchvision()

    model = mobilenet(torch, torchvision)
    path = os.path.join(out, "mobilenet_v3_dynamic.onnx")
    torch.onnx.export(model, torch.zeros(1, 3, 64, 64), path, dynamo=False, opset_version=13,
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {2: "height", 3: "width"}}, do_constant_folding=True)
    onnx.checker.check_model(onnx.load(path))
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    for index, size in enumerate(ONNX_SIZES):
        rng = np.random.default_rng(1000 + index)
        inputs = rng.normal(size=(1, 3, *size)).astype(np.float32)
        outputs = session.run(None, {"input": inputs})[0]
        with torch.no_grad():
            np.testing.assert_allclose(model(torch.from_numpy(inputs)).numpy(), outputs, rtol=1e-4, atol=1e-5)
        write_reference(os.path.join(out, f"mobilenet_v3_dynamic.{size_name(size)}.reference.h5"), inputs, outputs,
                        f"onnxruntime {ort.__version__}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--part", choices=["keras", "onnx"], required=True)
    parser.add_argument("--out", default="Samples/Fixtures/flexible")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    (keras_part if args.part == "keras" else onnx_part)(args.out)


if __name__ == "__main__":
    main()
