#!/usr/bin/env python3
"""Convert sample Keras models with coremltools into golden `.mlmodel` fixtures.

Run in the tfkeras215 venv (tf.keras 2.15 + coremltools 9.0, see requirements-tfkeras215.txt), after
`make_fixtures.py --dialect tfkeras215`, `make_digits.py` and `make_layer_fixtures.py --dialect tfkeras215`:

    python make_coreml_golden.py --fixtures Samples/Fixtures --digits Samples/Digits --out Samples/Fixtures/coremltools

These files tie our Core ML reader to what Apple's own converter writes: coremltools 9 with
`convert_to="neuralnetwork"` emits the MIL-era layers (`transpose`, `reshapeStatic`, `softmaxND`, ...), exact
shape mappings, `ImageType` preprocessing and classifier fields. For each golden model `<name>`:

- `<name>.mlmodel`: written by `coremltools.convert` (features renamed with `ct.utils.rename_feature`);
- `<name>.reference.h5`: `inputs/<i>` as fed to Keras, `pixels/<i>` (0-255, channels-last, RGB order) for image
  inputs, `outputs/<i>` = the Keras outputs, root attrs `source` (the Keras file, relative to the fixtures
  folder), `coremltools_version`, `keras_version`, `labels` for classifiers, and for quantized variants
  `dequantized/<k>/<field>` (attribute `layer` names the layer) = the weights as coremltools itself dequantizes them.
- `rgb_classifier.h5`: a small RGB model made here (BGR input, scale 1/127.5, bias -1) used by several goldens;
  `rgb_classifier_{fp16,linear8,lut4}` are its weights stored as float16, 8-bit linear and 4-bit lookup-table
  quantized by `quantization_utils.quantize_weights`.
- `sequential_plain.mlpackage`: an ML Program (read by the ML Program reader; more in make_mlpackage_golden.py).

Everything is seeded, so reruns give the same files.
"""

import argparse
import json
import os
import shutil

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("PYTHONHASHSEED", "0")
os.environ.setdefault("TF_DETERMINISTIC_OPS", "1")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
import h5py  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow import keras  # noqa: E402
import coremltools as ct  # noqa: E402
from coremltools.models.neural_network import quantization_utils  # noqa: E402

KERAS_VERSION = keras.__internal__.__dict__.get("__version__") or __import__("keras").__version__
RGB_LABELS = ["cat", "dog", "bird", "fish", "frog"]


def keras_input_name(model, index=0):
    return model.inputs[index].name.split(":")[0]


def rgb_classifier(path):
    """A small seeded RGB classifier trained for a few steps so its outputs are not uniform."""
    keras.utils.set_random_seed(7)
    inputs = keras.Input((16, 16, 3), name="photo")
    x = keras.layers.Conv2D(8, 3, strides=2, padding="same", name="stem")(inputs)
    x = keras.layers.BatchNormalization(name="stem_bn")(x)
    x = keras.layers.ReLU(max_value=6.0, name="stem_relu6")(x)
    x = keras.layers.DepthwiseConv2D(3, padding="same", name="dw")(x)
    x = keras.layers.Activation("relu", name="dw_relu")(x)
    x = keras.layers.Conv2D(12, 1, name="pw")(x)
    x = keras.layers.MaxPooling2D(2, name="pool")(x)
    x = keras.layers.Flatten(name="flat")(x)
    x = keras.layers.Dense(16, activation="tanh", name="hidden")(x)
    outputs = keras.layers.Dense(len(RGB_LABELS), activation="softmax", name="probs")(x)
    model = keras.Model(inputs, outputs, name="rgb_classifier")
    rng = np.random.default_rng(7)
    pixels = rng.integers(0, 256, size=(64, 16, 16, 3)).astype(np.float32)
    labels = rng.integers(0, len(RGB_LABELS), size=64)
    model.compile("adam", "sparse_categorical_crossentropy")
    model.fit(bgr_preprocess(pixels), labels, epochs=3, verbose=0, shuffle=False)
    model.save(path, save_format="h5")
    return model


def nd_layers_model():
    keras.utils.set_random_seed(3)
    inputs = keras.Input((6, 8), name="sequence")
    x = keras.layers.Dense(5, name="per_step")(inputs)
    x = keras.layers.ReLU(max_value=2.0, name="clip2")(x)
    x = keras.layers.Permute((2, 1), name="swap")(x)
    x = keras.layers.Reshape((5, 6, 1), name="to_image")(x)
    x = keras.layers.Conv2D(3, 2, name="conv")(x)
    x = keras.layers.Reshape((-1,), name="flat")(x)
    x = keras.layers.RepeatVector(2, name="repeat")(x)
    x = keras.layers.GlobalAveragePooling1D(name="mean")(x)
    outputs = keras.layers.Dense(4, activation="softmax", name="probs")(x)
    return keras.Model(inputs, outputs, name="nd_layers")


def bgr_preprocess(pixels_rgb):
    """What the rgb_classifier expects: BGR channel order, scaled to [-1, 1]."""
    return (pixels_rgb[..., ::-1] / 127.5 - 1.0).astype(np.float32)


def write_reference(path, source, model, inputs, pixels=None, labels=None, dequantized=None):
    outputs = model.predict(inputs if len(inputs) > 1 else inputs[0], verbose=0)
    if not isinstance(outputs, (list, tuple)):
        outputs = [outputs]
    with h5py.File(path, "w") as f:
        f.attrs["source"] = source
        f.attrs["coremltools_version"] = ct.__version__
        f.attrs["keras_version"] = KERAS_VERSION
        if labels is not None:
            f.attrs["labels"] = [str(label) for label in labels]
        for group, items in (("inputs", inputs), ("outputs", outputs), ("pixels", pixels or [])):
            g = f.create_group(group)
            for i, value in enumerate(items):
                g.create_dataset(str(i), data=np.asarray(value, np.float32))
        # Layer names contain "/", so each layer gets a numbered group with the name as an attribute.
        for index, (layer, fields) in enumerate((dequantized or {}).items()):
            group = f.create_group(f"dequantized/{index}")
            group.attrs["layer"] = layer
            for field, values in fields.items():
                group.create_dataset(field, data=np.asarray(values, np.float32))


def convert(model, inputs, labels=None):
    config = ct.ClassifierConfig(labels) if labels is not None else None
    return ct.convert(model, inputs=inputs, classifier_config=config, convert_to="neuralnetwork", source="tensorflow")


def save_spec(spec, path, renames):
    for old, new in renames.items():
        ct.utils.rename_feature(spec, old, new)
    ct.utils.save_spec(spec, path)


def dequantized_weights(spec):
    """Per layer, the quantized weights as coremltools itself dequantizes them (its `_dequantize_wp`)."""
    network = spec.neuralNetworkClassifier if spec.WhichOneof("Type") == "neuralNetworkClassifier" else spec.neuralNetwork
    result = {}
    for layer in network.layers:
        kind = layer.WhichOneof("layer")
        params = getattr(layer, kind)
        if kind == "convolution":
            shape = (params.outputChannels, params.kernelChannels) + tuple(params.kernelSize)
        elif kind == "innerProduct":
            shape = (params.outputChannels, params.inputChannels)
        else:
            continue
        for field in ("weights", "bias"):
            wp = getattr(params, field)
            if wp.quantization.numberOfBits == 0:
                continue
            copy = type(wp)()
            copy.CopyFrom(wp)
            quantization_utils._dequantize_wp(copy, shape if field == "weights" else (shape[0],))
            result.setdefault(layer.name, {})[field] = list(copy.floatValue)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fixtures", required=True)
    parser.add_argument("--digits", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    os.makedirs(args.out)
    out = lambda name: os.path.join(args.out, name)  # noqa: E731
    manifest = []
    skipped = []

    # Tensor-input models from the tfkeras215 fixtures: layer semantics and layouts, no preprocessing.
    for name in ["conv_variants", "depthwise_separable", "batchnorm", "pooling", "sequential_plain", "reshape_ops",
                 "dense_classifier", "activations"]:
        keras_path = os.path.join(args.fixtures, "tfkeras215", name + ".h5")
        model = keras.models.load_model(keras_path, compile=False)
        with h5py.File(os.path.join(args.fixtures, "tfkeras215", name + ".reference.h5"), "r") as ref:
            inputs = [ref["inputs"][k][()] for k in sorted(ref["inputs"], key=int)]
        shape = (1,) + tuple(model.inputs[0].shape[1:])
        try:
            mlmodel = convert(model, [ct.TensorType(name=keras_input_name(model), shape=shape)])
        except Exception as error:  # coremltools cannot convert some layers (grouped convolution, ...)
            skipped.append({"name": name, "reason": f"{type(error).__name__}: {str(error).splitlines()[0]}"})
            continue
        spec = mlmodel.get_spec()
        renames = {keras_input_name(model): "input"}
        for i, output in enumerate(spec.description.output):
            renames[output.name] = f"output{i + 1}"
        save_spec(spec, out(name + ".mlmodel"), renames)
        write_reference(out(name + ".reference.h5"), f"tfkeras215/{name}.h5", model, inputs)
        manifest.append({"name": name, "source": f"tfkeras215/{name}.h5", "input": "tensor"})

    # Layer fixtures coremltools converts into decompositions of its own (deconvolution with an explicit
    # output shape, layer and unit normalization from reductions, TimeDistributed as reshapes).
    for name in ["conv2d_transpose", "conv2d_transpose_output_padding", "layer_norm", "layer_norm_image", "unit_norm",
                 "time_distributed"]:
        relative = f"layers/tfkeras215/{name}.h5"
        model = keras.models.load_model(os.path.join(args.fixtures, relative), compile=False)
        with h5py.File(os.path.join(args.fixtures, "layers", "tfkeras215", name + ".reference.h5"), "r") as ref:
            inputs = [ref["inputs"][k][()] for k in sorted(ref["inputs"], key=int)]
        shape = (1,) + tuple(model.inputs[0].shape[1:])
        try:
            spec = convert(model, [ct.TensorType(name=keras_input_name(model), shape=shape)]).get_spec()
        except Exception as error:
            skipped.append({"name": name, "reason": f"{type(error).__name__}: {str(error).splitlines()[0]}"})
            continue
        renames = {keras_input_name(model): "input"}
        for i, output in enumerate(spec.description.output):
            renames[output.name] = f"output{i + 1}"
        save_spec(spec, out(name + ".mlmodel"), renames)
        write_reference(out(name + ".reference.h5"), relative, model, inputs)
        manifest.append({"name": name, "source": relative, "input": "tensor",
                         "layers": [l.WhichOneof("layer") for l in spec.neuralNetwork.layers]})

    # The trained digits classifier: grayscale image, scale 1/255, integer labels.
    digits = keras.models.load_model(os.path.join(args.digits, "digits_cnn.h5"), compile=False)
    with h5py.File(os.path.join(args.digits, "digits_cnn.reference.h5"), "r") as ref:
        digit_pixels = ref["pixels"][()]
    image = ct.ImageType(name=keras_input_name(digits), shape=(1, 8, 8, 1), scale=1 / 255.0,
                         color_layout=ct.colorlayout.GRAYSCALE)
    spec = convert(digits, [image], labels=list(range(10))).get_spec()
    save_spec(spec, out("digits_cnn.mlmodel"), {keras_input_name(digits): "image"})
    write_reference(out("digits_cnn.reference.h5"), "../Digits/digits_cnn.h5", digits, [digit_pixels / 255.0],
                    pixels=[digit_pixels], labels=list(range(10)))
    manifest.append({"name": "digits_cnn", "source": "../Digits/digits_cnn.h5", "input": "image GRAYSCALE 1/255"})

    # An RGB classifier with BGR order and per-channel bias, plus float16 and quantized variants.
    rgb = rgb_classifier(out("rgb_classifier.h5"))
    rng = np.random.default_rng(11)
    pixels = rng.integers(0, 256, size=(4, 16, 16, 3)).astype(np.float32)
    image = ct.ImageType(name=keras_input_name(rgb), shape=(1, 16, 16, 3), scale=1 / 127.5, bias=[-1.0, -1.0, -1.0],
                         color_layout=ct.colorlayout.BGR)
    spec = convert(rgb, [image], labels=RGB_LABELS).get_spec()
    renames = {keras_input_name(rgb): "image"}
    save_spec(spec, out("rgb_classifier.mlmodel"), dict(renames))
    write_reference(out("rgb_classifier.reference.h5"), "coremltools/rgb_classifier.h5", rgb, [bgr_preprocess(pixels)],
                    pixels=[pixels], labels=RGB_LABELS)
    manifest.append({"name": "rgb_classifier", "source": "coremltools/rgb_classifier.h5", "input": "image BGR 1/127.5 -1"})

    full = ct.models.MLModel(out("rgb_classifier.mlmodel"), skip_model_load=True)
    variants = {
        "rgb_classifier_fp16": dict(nbits=16),
        "rgb_classifier_linear8": dict(nbits=8, quantization_mode="linear"),
        "rgb_classifier_lut4": dict(nbits=4, quantization_mode="linear_lut"),
    }
    for name, options in variants.items():
        quantized = quantization_utils.quantize_weights(full, **options)
        qspec = quantized.get_spec() if hasattr(quantized, "get_spec") else quantized
        ct.utils.save_spec(qspec, out(name + ".mlmodel"))
        write_reference(out(name + ".reference.h5"), "coremltools/rgb_classifier.h5", rgb, [bgr_preprocess(pixels)],
                        pixels=[pixels], labels=RGB_LABELS, dequantized=None if options["nbits"] == 16 else dequantized_weights(qspec))
        manifest.append({"name": name, "source": "coremltools/rgb_classifier.h5", "quantization": options})

    # Layers that coremltools emits for sequence-shaped tensors (batchedMatmul for Dense on rank 3,
    # expandDims and tile for RepeatVector, clip as min/max, transposes and reshapes). The source uses
    # layers our Keras reader does not read yet, so tests compare this file with the saved outputs only.
    nd = nd_layers_model()
    nd.save(out("nd_layers.h5"), save_format="h5")
    rng = np.random.default_rng(5)
    sequences = rng.standard_normal((3, 6, 8)).astype(np.float32)
    spec = convert(nd, [ct.TensorType(name=keras_input_name(nd), shape=(1, 6, 8))]).get_spec()
    renames = {keras_input_name(nd): "sequence"}
    for i, output in enumerate(spec.description.output):
        renames[output.name] = f"output{i + 1}"
    save_spec(spec, out("nd_layers.mlmodel"), renames)
    write_reference(out("nd_layers.reference.h5"), "coremltools/nd_layers.h5", nd, [sequences])
    manifest.append({"name": "nd_layers", "source": "coremltools/nd_layers.h5", "input": "tensor (6, 8)",
                     "layers": [l.WhichOneof("layer") for l in spec.neuralNetwork.layers]})

    # An ML Program (.mlpackage) of the same model; make_mlpackage_golden.py makes the other programs.
    plain = keras.models.load_model(os.path.join(args.fixtures, "tfkeras215", "sequential_plain.h5"), compile=False)
    program = ct.convert(plain, convert_to="mlprogram", source="tensorflow", minimum_deployment_target=ct.target.iOS15,
                         inputs=[ct.TensorType(name=keras_input_name(plain), shape=(1, 7, 7, 1))])
    program.save(out("sequential_plain.mlpackage"))
    manifest.append({"name": "sequential_plain.mlpackage", "source": "tfkeras215/sequential_plain.h5", "type": "mlProgram"})

    with open(out("manifest.json"), "w") as f:
        json.dump({"coremltools_version": ct.__version__, "keras_version": KERAS_VERSION, "models": manifest,
                   "skipped": skipped},
                  f, indent=1)


if __name__ == "__main__":
    main()
