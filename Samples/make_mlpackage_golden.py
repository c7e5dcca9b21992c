#!/usr/bin/env python3
"""Convert sample Keras models with coremltools into golden ML Program (`.mlpackage`) fixtures.

Run in the tfkeras215 venv (tf.keras 2.15 + coremltools 9.0, see requirements-tfkeras215.txt), after
`make_coreml_golden.py` (it makes `rgb_classifier.h5`) and `make_digits.py`:

    python make_mlpackage_golden.py --fixtures Samples/Fixtures --digits Samples/Digits --out Samples/Fixtures/coremltools

These files tie our ML Program reader to what Apple's converter writes with `convert_to="mlprogram"`. For each
golden program `<name>`:

- `<name>.mlpackage`: written by `coremltools.convert` (feature names kept as Keras names them);
- `<name>.reference.h5`: `inputs/<i>` as fed to Keras, `pixels/<i>` (0-255, channels-last, RGB order) for image
  inputs, `outputs/<i>` = the real Keras outputs, root attrs `source`, `coremltools_version`, `keras_version`,
  `labels` for classifiers, `precision` (`float32` or `float16`) and `compression` (`none`, `lut4`, `linear8`).

The programs: the digits CNN (grayscale image, scale 1/255, integer labels) at float32 and float16, the RGB
classifier (BGR, scale 1/127.5, biases -1) at float32 and float16, LSTM and SimpleRNN classifiers, a Conv1D
classifier (LSTM and SimpleRNN unrolled; no GRU, see below), layer fixtures of the Keras fixture sets as
float32 programs (`<fixture>_program`, their Keras sources under `Samples/Fixtures/tfkeras215` and `layers/`),
programs with the fused `lstm`, `gru` and `rnn` operations (built with coremltools' MIL builder), and the RGB classifier compressed three ways: 4-bit palettized (`constexpr_lut_to_dense`, iOS16),
8-bit linear (`constexpr_affine_dequantize`, iOS16) and 8-bit linear for iOS18 (`constexpr_blockwise_shift_scale`).
Compression applies to every weight (`weight_threshold` 0) so the small models exercise it.

Everything is seeded, so reruns give the same Keras outputs. The script adds its entries to `manifest.json`
(under `programs`) without touching the entries `make_coreml_golden.py` wrote.
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
import tensorflow as tf  # noqa: E402
import h5py  # noqa: E402
from tensorflow import keras  # noqa: E402
import coremltools as ct  # noqa: E402
import coremltools.optimize.coreml as cto  # noqa: E402

KERAS_VERSION = __import__("keras").__version__
RGB_LABELS = ["cat", "dog", "bird", "fish", "frog"]
SEQUENCE_LABELS = ["up", "down", "flat"]


def keras_input_name(model, index=0):
    return model.inputs[index].name.split(":")[0]


def bgr_preprocess(pixels_rgb):
    return (pixels_rgb[..., ::-1] / 127.5 - 1.0).astype(np.float32)


def write_reference(path, source, model, inputs, pixels=None, labels=None, precision="float32", compression="none"):
    outputs = model.predict(inputs if len(inputs) > 1 else inputs[0], verbose=0)
    if not isinstance(outputs, (list, tuple)):
        outputs = [outputs]
    with h5py.File(path, "w") as f:
        f.attrs["source"] = source
        f.attrs["coremltools_version"] = ct.__version__
        f.attrs["keras_version"] = KERAS_VERSION
        f.attrs["precision"] = precision
        f.attrs["compression"] = compression
        if labels is not None:
            f.attrs["labels"] = [str(label) for label in labels]
        for group, items in (("inputs", inputs), ("outputs", outputs), ("pixels", pixels or [])):
            g = f.create_group(group)
            for i, value in enumerate(items):
                g.create_dataset(str(i), data=np.asarray(value, np.float32))


def sequence_classifier(kind, seed):
    """A small seeded recurrent classifier trained a few steps so its outputs are not uniform."""
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((6, 4), name="sequence")
    layer = {"lstm": keras.layers.LSTM, "gru": keras.layers.GRU, "rnn": keras.layers.SimpleRNN}[kind]
    x = layer(8, unroll=True, name=kind)(inputs)
    outputs = keras.layers.Dense(len(SEQUENCE_LABELS), activation="softmax", name="probs")(x)
    model = keras.Model(inputs, outputs, name=f"{kind}_classifier")
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((48, 6, 4)).astype(np.float32)
    labels = rng.integers(0, len(SEQUENCE_LABELS), size=48)
    model.compile("adam", "sparse_categorical_crossentropy")
    model.fit(data, labels, epochs=3, verbose=0, shuffle=False)
    return model


def conv1d_classifier(seed):
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((12, 3), name="signal")
    x = keras.layers.Conv1D(6, 3, padding="same", activation="relu", name="conv_a")(inputs)
    x = keras.layers.MaxPooling1D(2, name="pool")(x)
    x = keras.layers.Conv1D(8, 3, padding="valid", dilation_rate=1, name="conv_b")(x)
    x = keras.layers.GlobalAveragePooling1D(name="gap")(x)
    outputs = keras.layers.Dense(len(SEQUENCE_LABELS), activation="softmax", name="probs")(x)
    model = keras.Model(inputs, outputs, name="conv1d_classifier")
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((48, 12, 3)).astype(np.float32)
    labels = rng.integers(0, len(SEQUENCE_LABELS), size=48)
    model.compile("adam", "sparse_categorical_crossentropy")
    model.fit(data, labels, epochs=3, verbose=0, shuffle=False)
    return model


def fused_source(kind, seed):
    """A seeded recurrent classifier (rolled) for the fused-operation programs."""
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((6, 4), name="sequence")
    if kind == "bilstm":
        x = keras.layers.Bidirectional(keras.layers.LSTM(5, name="lstm"), name="bilstm")(inputs)
    else:
        layer = {"lstm": keras.layers.LSTM, "gru": keras.layers.GRU, "rnn": keras.layers.SimpleRNN}[kind]
        x = layer(8, name=kind)(inputs)
    outputs = keras.layers.Dense(len(SEQUENCE_LABELS), activation="softmax", name="probs")(x)
    model = keras.Model(inputs, outputs, name=f"{kind}_fused")
    rng = np.random.default_rng(seed)
    model.compile("adam", "sparse_categorical_crossentropy")
    model.fit(rng.standard_normal((48, 6, 4)).astype(np.float32), rng.integers(0, 3, size=48), epochs=3, verbose=0, shuffle=False)
    if kind == "gru":
        layer = model.get_layer("gru")
        kernel, recurrent, bias = layer.get_weights()
        bias[1] = 0  # the recurrent bias: MIL's gru has none inside the reset gate
        layer.set_weights([kernel, recurrent, bias])
    return model


def fused_program(model, kind):
    """The Keras classifier as a MIL program with a fused recurrent operation."""
    from coremltools.converters.mil import Builder as mb

    dense_kernel, dense_bias = model.get_layer("probs").get_weights()

    def reorder(matrix, units, order):
        # Keras stores [in, gates * units]; MIL [gates * units, in], gates in MIL's order.
        blocks = [matrix[..., g * units:(g + 1) * units] for g in range(matrix.shape[-1] // units)]
        return np.concatenate([blocks[g] for g in order], axis=-1).T.astype(np.float32)

    @mb.program(input_specs=[mb.TensorSpec(shape=(1, 6, 4))], opset_version=ct.target.iOS15)
    def program(sequence):
        x = mb.transpose(x=sequence, perm=[1, 0, 2])  # [s, b, I]
        if kind in ("lstm", "bilstm"):
            layers = [model.get_layer("bilstm").forward_layer, model.get_layer("bilstm").backward_layer] if kind == "bilstm" \
                else [model.get_layer("lstm")]
            units = layers[0].units
            weights = []
            for layer in layers:
                kernel, recurrent, bias = layer.get_weights()
                order = [0, 1, 3, 2]  # Keras i, f, c, o -> MIL i, f, o, z
                weights.append((reorder(kernel, units, order), reorder(recurrent, units, order),
                                reorder(bias[None, :], units, order)[:, 0]))
            zeros = np.zeros((1, units * len(layers)), np.float32)
            extra = {}
            if kind == "bilstm":
                extra = dict(weight_ih_back=weights[1][0], weight_hh_back=weights[1][1], bias_back=weights[1][2],
                             direction="bidirectional")
            _, h, _ = mb.lstm(x=x, initial_h=zeros, initial_c=zeros, weight_ih=weights[0][0], weight_hh=weights[0][1],
                              bias=weights[0][2], output_sequence=False, **extra)
        elif kind == "gru":
            layer = model.get_layer("gru")
            kernel, recurrent, bias = layer.get_weights()
            order = [1, 2, 0]  # Keras z, r, h -> MIL r, o, z
            _, h = mb.gru(x=x, initial_h=np.zeros((1, layer.units), np.float32), weight_ih=reorder(kernel, layer.units, order),
                          weight_hh=reorder(recurrent, layer.units, order),
                          bias=reorder(bias[0][None, :], layer.units, order)[:, 0], output_sequence=False)
        else:
            layer = model.get_layer("rnn")
            kernel, recurrent, bias = layer.get_weights()
            _, h = mb.rnn(x=x, initial_h=np.zeros((1, layer.units), np.float32), weight_ih=kernel.T.astype(np.float32),
                          weight_hh=recurrent.T.astype(np.float32), bias=bias.astype(np.float32), output_sequence=False)
        logits = mb.linear(x=h, weight=dense_kernel.T.astype(np.float32), bias=dense_bias.astype(np.float32))
        return mb.softmax(x=logits, axis=-1)

    return program


def ops_zoo_source():
    """Keras layers whose MIL operations the converted fixtures lack (seeded random weights, not trained)."""
    keras.utils.set_random_seed(31)
    inputs = keras.Input((8, 8, 3), name="tensor")
    x = keras.layers.Conv2D(4, 3, strides=2, padding="same", name="conv_same_s2")(inputs)  # 4x4x4
    x = keras.layers.PReLU(shared_axes=[1, 2], alpha_initializer=keras.initializers.RandomUniform(0.1, 0.5), name="prelu")(x)
    x = keras.layers.UpSampling2D(2, name="upsample")(x)  # 8x8x4
    a = keras.layers.ThresholdedReLU(theta=0.3, name="thresholded")(x)
    b = keras.layers.Activation("hard_sigmoid", name="hard_sigmoid")(x)
    c = keras.layers.Activation("swish", name="swish")(x)
    d = keras.layers.ReLU(max_value=0.8, name="relu_max")(x)
    x = keras.layers.Concatenate(name="concat")([a, b, c, d])  # 8x8x16
    x = keras.layers.Lambda(lambda t: tf.pow(tf.abs(t) + 1.0, 1.5), name="pow")(x)
    x = keras.layers.Lambda(lambda t: tf.gather(t, [3, 0, 7, 7, 12], axis=3), name="gather")(x)  # 8x8x5
    x = keras.layers.Lambda(lambda t: tf.math.l2_normalize(t, axis=[1, 2, 3], epsilon=1e-6), name="l2")(x)
    outputs = keras.layers.Conv2D(3, 2, padding="valid", dilation_rate=2, name="conv_dilated")(x)  # 6x6x3
    model = keras.Model(inputs, outputs, name="ops_zoo")
    prelu = model.get_layer("prelu")
    prelu.set_weights([np.random.default_rng(31).uniform(0.1, 0.5, prelu.get_weights()[0].shape).astype(np.float32)])
    return model


def ops_zoo_program(model):
    """The ops_zoo model as MIL operations, weights moved to MIL's [out, in, kh, kw]."""
    from coremltools.converters.mil import Builder as mb

    def conv_weight(layer):
        kernel, bias = model.get_layer(layer).get_weights()
        return kernel.transpose(3, 2, 0, 1).astype(np.float32), bias.astype(np.float32)

    @mb.program(input_specs=[mb.TensorSpec(shape=(1, 8, 8, 3))], opset_version=ct.target.iOS15)
    def program(tensor):
        x = mb.transpose(x=tensor, perm=[0, 3, 1, 2])
        w, b = conv_weight("conv_same_s2")
        # TensorFlow's "same" for 8 -> 4 with kernel 3, stride 2: 1 padding row/column, at the end.
        x = mb.conv(x=x, weight=w, bias=b, strides=[2, 2], pad_type="custom", pad=[0, 1, 0, 1])
        alpha = model.get_layer("prelu").get_weights()[0].reshape(-1).astype(np.float32)
        x = mb.prelu(x=x, alpha=alpha)
        x = mb.upsample_nearest_neighbor(x=x, scale_factor_height=2, scale_factor_width=2)
        a = mb.thresholded_relu(x=x, alpha=0.3)
        b = mb.sigmoid_hard(x=x, alpha=0.2, beta=0.5)
        c = mb.silu(x=x)
        d = mb.clip(x=x, alpha=0.0, beta=0.8)
        x = mb.concat(values=[a, b, c, d], axis=1)
        x = mb.pow(x=mb.add(x=mb.abs(x=x), y=1.0), y=1.5)
        x = mb.gather(x=x, indices=np.array([3, 0, 7, 7, 12], np.int32), axis=1)
        x = mb.l2_norm(x=x, epsilon=1e-6)
        w, b = conv_weight("conv_dilated")
        x = mb.conv(x=x, weight=w, bias=b, dilations=[2, 2], pad_type="valid")
        return mb.transpose(x=x, perm=[0, 2, 3, 1])

    return program


def conv_transpose_source():
    keras.utils.set_random_seed(33)
    inputs = keras.Input((5, 5, 3), name="tensor")
    outputs = keras.layers.Conv2DTranspose(4, 3, strides=2, padding="same", name="upconv")(inputs)  # 10x10x4
    return keras.Model(inputs, outputs, name="conv_transpose_same")


def conv_transpose_program(model, pad_type):
    from coremltools.converters.mil import Builder as mb

    kernel, bias = model.get_layer("upconv").get_weights()  # Keras [kh, kw, out, in]
    weight = kernel.transpose(3, 2, 0, 1).astype(np.float32)  # MIL [in, out, kh, kw]

    @mb.program(input_specs=[mb.TensorSpec(shape=(1, 5, 5, 3))], opset_version=ct.target.iOS15)
    def program(tensor):
        x = mb.transpose(x=tensor, perm=[0, 3, 1, 2])
        extra = dict(pad=[0, 1, 0, 1]) if pad_type == "custom" else {}
        x = mb.conv_transpose(x=x, weight=weight, bias=bias.astype(np.float32), strides=[2, 2], pad_type=pad_type, **extra)
        return mb.transpose(x=x, perm=[0, 2, 3, 1])

    return program


def writer_ops_source():
    keras.utils.set_random_seed(35)
    tokens = keras.Input((5,), name="tokens")
    x = keras.layers.Embedding(10, 3, name="embed")(tokens)  # 5x3
    x = keras.layers.Rescaling(0.5, offset=0.25, name="affine")(x)
    x = keras.layers.Lambda(lambda t: tf.maximum(t, -0.1), name="floor")(x)
    x = keras.layers.Lambda(lambda t: tf.stack([t, t * 2.0], axis=1), name="stack")(x)  # 2x5x3
    flags = keras.layers.Lambda(lambda t: tf.cast(tf.cast(t, tf.bool), tf.float32), name="flags")(x)
    outputs = keras.layers.Multiply(name="masked")([x, flags])
    return keras.Model(tokens, outputs, name="writer_ops")


def writer_ops_program(model):
    from coremltools.converters.mil import Builder as mb

    table = model.get_layer("embed").get_weights()[0].astype(np.float32)

    @mb.program(input_specs=[mb.TensorSpec(shape=(1, 5))], opset_version=ct.target.iOS15)
    def program(tokens):
        rows = mb.gather(x=table, indices=mb.cast(x=tokens, dtype="int32"), axis=0)  # 1x5x3
        x = mb.linear_activation(x=rows, alpha=0.5, beta=0.25)
        x = mb.threshold(x=x, alpha=-0.1)
        x = mb.stack(values=[x, mb.mul(x=x, y=2.0)], axis=1)  # 1x2x5x3
        flags = mb.cast(x=mb.cast(x=x, dtype="bool"), dtype="fp32")
        return mb.mul(x=x, y=flags)

    return program


def pooling_padding_source():
    keras.utils.set_random_seed(37)
    inputs = keras.Input((7, 7, 2), name="tensor")
    a = keras.layers.AveragePooling2D(3, strides=2, padding="same", name="avg_same")(inputs)
    b = keras.layers.AveragePooling2D(3, strides=2, name="avg_zero_padded")(keras.layers.ZeroPadding2D(1, name="pad1")(inputs))
    c = keras.layers.Conv2D(2, 2, strides=2, name="conv_lower")(keras.layers.ZeroPadding2D(((1, 0), (1, 0)), name="pad_lower")(inputs))
    d = keras.layers.MaxPooling2D(2, strides=2, padding="same", name="max_same")(inputs)
    outputs = keras.layers.Concatenate(name="concat")([a, b, c, d])  # 4x4x8
    return keras.Model(inputs, outputs, name="pooling_padding")


def pooling_padding_program(model):
    from coremltools.converters.mil import Builder as mb

    kernel, bias = model.get_layer("conv_lower").get_weights()

    @mb.program(input_specs=[mb.TensorSpec(shape=(1, 7, 7, 2))], opset_version=ct.target.iOS16)  # same_lower: iOS 16
    def program(tensor):
        x = mb.transpose(x=tensor, perm=[0, 3, 1, 2])
        a = mb.avg_pool(x=x, kernel_sizes=[3, 3], strides=[2, 2], pad_type="same", exclude_padding_from_average=True)
        b = mb.avg_pool(x=x, kernel_sizes=[3, 3], strides=[2, 2], pad_type="custom", pad=[1, 1, 1, 1],
                        exclude_padding_from_average=False)
        c = mb.conv(x=x, weight=kernel.transpose(3, 2, 0, 1).astype(np.float32), bias=bias.astype(np.float32), strides=[2, 2],
                    pad_type="same_lower")
        d = mb.max_pool(x=x, kernel_sizes=[2, 2], strides=[2, 2], pad_type="same")
        return mb.transpose(x=mb.concat(values=[a, b, c, d], axis=1), perm=[0, 2, 3, 1])

    return program


def precision_of(name):
    return ct.precision.FLOAT16 if name == "float16" else ct.precision.FLOAT32


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fixtures", required=True)
    parser.add_argument("--digits", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    out = lambda name: os.path.join(args.out, name)  # noqa: E731
    programs = []

    def save(mlmodel, name):
        shutil.rmtree(out(name + ".mlpackage"), ignore_errors=True)
        mlmodel.save(out(name + ".mlpackage"))

    # The digits CNN: grayscale image, scale 1/255, integer labels; float32 and float16.
    digits = keras.models.load_model(os.path.join(args.digits, "digits_cnn.h5"), compile=False)
    with h5py.File(os.path.join(args.digits, "digits_cnn.reference.h5"), "r") as ref:
        digit_pixels = ref["pixels"][()]
    for precision in ["float32", "float16"]:
        name = "digits_cnn_program" + ("_fp16" if precision == "float16" else "")
        image = ct.ImageType(name=keras_input_name(digits), shape=(1, 8, 8, 1), scale=1 / 255.0,
                             color_layout=ct.colorlayout.GRAYSCALE)
        mlmodel = ct.convert(digits, inputs=[image], classifier_config=ct.ClassifierConfig(list(range(10))),
                             convert_to="mlprogram", source="tensorflow", minimum_deployment_target=ct.target.iOS15,
                             compute_precision=precision_of(precision))
        save(mlmodel, name)
        write_reference(out(name + ".reference.h5"), "../Digits/digits_cnn.h5", digits, [digit_pixels / 255.0],
                        pixels=[digit_pixels], labels=list(range(10)), precision=precision)
        programs.append({"name": name + ".mlpackage", "source": "../Digits/digits_cnn.h5",
                         "input": "image GRAYSCALE 1/255", "precision": precision})

    # The RGB classifier: BGR, scale 1/127.5, biases -1; float32, float16 and compressed.
    rgb = keras.models.load_model(out("rgb_classifier.h5"), compile=False)
    rng = np.random.default_rng(11)
    pixels = rng.integers(0, 256, size=(4, 16, 16, 3)).astype(np.float32)

    def rgb_program(precision, target=ct.target.iOS15):
        image = ct.ImageType(name=keras_input_name(rgb), shape=(1, 16, 16, 3), scale=1 / 127.5,
                             bias=[-1.0, -1.0, -1.0], color_layout=ct.colorlayout.BGR)
        return ct.convert(rgb, inputs=[image], classifier_config=ct.ClassifierConfig(RGB_LABELS),
                          convert_to="mlprogram", source="tensorflow", minimum_deployment_target=target,
                          compute_precision=precision_of(precision))

    for precision in ["float32", "float16"]:
        name = "rgb_classifier_program" + ("_fp16" if precision == "float16" else "")
        save(rgb_program(precision), name)
        write_reference(out(name + ".reference.h5"), "coremltools/rgb_classifier.h5", rgb, [bgr_preprocess(pixels)],
                        pixels=[pixels], labels=RGB_LABELS, precision=precision)
        programs.append({"name": name + ".mlpackage", "source": "coremltools/rgb_classifier.h5",
                         "input": "image BGR 1/127.5 -1", "precision": precision})

    compressed = {
        "rgb_classifier_program_lut4": (ct.target.iOS16, "lut4", lambda m: cto.palettize_weights(
            m, cto.OptimizationConfig(global_config=cto.OpPalettizerConfig(mode="kmeans", nbits=4, weight_threshold=0)))),
        "rgb_classifier_program_linear8": (ct.target.iOS16, "linear8", lambda m: cto.linear_quantize_weights(
            m, cto.OptimizationConfig(global_config=cto.OpLinearQuantizerConfig(mode="linear_symmetric", weight_threshold=0)))),
        "rgb_classifier_program_linear8_ios18": (ct.target.iOS18, "linear8", lambda m: cto.linear_quantize_weights(
            m, cto.OptimizationConfig(global_config=cto.OpLinearQuantizerConfig(mode="linear", weight_threshold=0)))),
    }
    for name, (target, compression, compress) in compressed.items():
        save(compress(rgb_program("float32", target)), name)
        write_reference(out(name + ".reference.h5"), "coremltools/rgb_classifier.h5", rgb, [bgr_preprocess(pixels)],
                        pixels=[pixels], labels=RGB_LABELS, compression=compression)
        programs.append({"name": name + ".mlpackage", "source": "coremltools/rgb_classifier.h5",
                         "input": "image BGR 1/127.5 -1", "precision": "float32", "compression": compression})

    # Sequence classifiers: LSTM, SimpleRNN and Conv1D (made here, seeded; sources saved beside them). The
    # recurrent layers use `unroll=True`: coremltools 9 turns a rolled tf.keras RNN into `while_loop` with tensor
    # lists, and the unrolled form into plain `matmul`/`split`/activation ops. A GRU is left out: coremltools 9
    # fails to convert an unrolled tf.keras GRU (either `reset_after`), and its rolled form is a `while_loop` too.
    rng = np.random.default_rng(13)
    for kind, seed in [("lstm", 21), ("rnn", 23), ("conv1d", 24)]:
        model = conv1d_classifier(seed) if kind == "conv1d" else sequence_classifier(kind, seed)
        name = f"{kind}_classifier_program"
        model.save(out(f"{kind}_classifier.h5"), save_format="h5")
        shape = (1,) + tuple(model.inputs[0].shape[1:])
        data = rng.standard_normal((3,) + shape[1:]).astype(np.float32)
        mlmodel = ct.convert(model, inputs=[ct.TensorType(name=keras_input_name(model), shape=shape)],
                             classifier_config=ct.ClassifierConfig(SEQUENCE_LABELS), convert_to="mlprogram",
                             source="tensorflow", minimum_deployment_target=ct.target.iOS15,
                             compute_precision=ct.precision.FLOAT32)
        save(mlmodel, name)
        write_reference(out(name + ".reference.h5"), f"coremltools/{kind}_classifier.h5", model, [data],
                        labels=SEQUENCE_LABELS)
        programs.append({"name": name + ".mlpackage", "source": f"coremltools/{kind}_classifier.h5",
                         "input": f"tensor {shape[1:]}", "precision": "float32"})

    # The fused recurrent operations (`lstm`, `gru`, `rnn`), which coremltools' TF2 frontend does not emit for
    # tf.keras layers: programs built with coremltools' MIL builder from the Keras classifiers' weights, moved to
    # MIL's gate orders as its operation documentation gives them (LSTM i, f, o, z; GRU r, o, z). MIL's `gru`
    # has one bias, added outside the reset gate, so the Keras GRU (reset_after) gets a zero recurrent bias
    # before its outputs are saved.
    for kind, seed in [("lstm", 21), ("gru", 22), ("rnn", 23), ("bilstm", 25)]:
        name = f"{kind}_fused_program"
        model = fused_source(kind, seed)
        model.save(out(f"{kind}_fused.h5"), save_format="h5")
        data = rng.standard_normal((3, 6, 4)).astype(np.float32)
        mlmodel = ct.convert(fused_program(model, kind), convert_to="mlprogram", minimum_deployment_target=ct.target.iOS15,
                             compute_precision=ct.precision.FLOAT32,
                             classifier_config=ct.ClassifierConfig(SEQUENCE_LABELS))
        save(mlmodel, name)
        write_reference(out(name + ".reference.h5"), f"coremltools/{kind}_fused.h5", model, [data], labels=SEQUENCE_LABELS)
        programs.append({"name": name + ".mlpackage", "source": f"coremltools/{kind}_fused.h5", "input": "tensor (6, 4)",
                         "precision": "float32", "operation": "lstm" if kind == "bilstm" else kind})

    # Operations the ML Program writer emits that no converted fixture has: a Keras model of matching layers and
    # a MIL-builder program of the documented operations with its weights (NCHW inside, NHWC at both ends).
    zoo = ops_zoo_source()
    zoo.save(out("ops_zoo.h5"), save_format="h5")
    data = rng.standard_normal((3, 8, 8, 3)).astype(np.float32)
    save(ct.convert(ops_zoo_program(zoo), convert_to="mlprogram", minimum_deployment_target=ct.target.iOS15,
                    compute_precision=ct.precision.FLOAT32), "ops_zoo_program")
    write_reference(out("ops_zoo_program.reference.h5"), "coremltools/ops_zoo.h5", zoo, [data])
    programs.append({"name": "ops_zoo_program.mlpackage", "source": "coremltools/ops_zoo.h5", "input": "tensor (8, 8, 3)",
                     "precision": "float32"})

    # A strided "same" Conv2DTranspose as MIL's conv_transpose twice: pad_type "custom" with TensorFlow's crop
    # (none before, kernel - stride after) and pad_type "same".
    upconv = conv_transpose_source()
    upconv.save(out("conv_transpose_same.h5"), save_format="h5")
    data = rng.standard_normal((3, 5, 5, 3)).astype(np.float32)
    for pad_type in ["custom", "same"]:
        name = f"conv_transpose_{pad_type}_program"
        save(ct.convert(conv_transpose_program(upconv, pad_type), convert_to="mlprogram",
                        minimum_deployment_target=ct.target.iOS15, compute_precision=ct.precision.FLOAT32), name)
        write_reference(out(name + ".reference.h5"), "coremltools/conv_transpose_same.h5", upconv, [data])
        programs.append({"name": name + ".mlpackage", "source": "coremltools/conv_transpose_same.h5",
                         "input": "tensor (5, 5, 3)", "precision": "float32"})

    # Operations our ML Program writer emits that coremltools' converter does not: cast to int32 and bool,
    # gather of table rows by computed indices, linear_activation, threshold, stack.
    writer_ops = writer_ops_source()
    writer_ops.save(out("writer_ops.h5"), save_format="h5")
    tokens = rng.integers(0, 10, size=(3, 5)).astype(np.float32)
    save(ct.convert(writer_ops_program(writer_ops), convert_to="mlprogram", minimum_deployment_target=ct.target.iOS15,
                    compute_precision=ct.precision.FLOAT32), "writer_ops_program")
    write_reference(out("writer_ops_program.reference.h5"), "coremltools/writer_ops.h5", writer_ops, [tokens])
    programs.append({"name": "writer_ops_program.mlpackage", "source": "coremltools/writer_ops.h5", "input": "tensor (5,)",
                     "precision": "float32"})

    # Pooling and convolution padding: avg_pool "same" excluding the padding, avg_pool with custom zero padding
    # counted, conv "same_lower" (the odd padding row first, from iOS 16), max_pool "same".
    pooling = pooling_padding_source()
    pooling.save(out("pooling_padding.h5"), save_format="h5")
    data = rng.standard_normal((3, 7, 7, 2)).astype(np.float32)
    save(ct.convert(pooling_padding_program(pooling), convert_to="mlprogram", minimum_deployment_target=ct.target.iOS16,
                    compute_precision=ct.precision.FLOAT32), "pooling_padding_program")
    write_reference(out("pooling_padding_program.reference.h5"), "coremltools/pooling_padding.h5", pooling, [data])
    programs.append({"name": "pooling_padding_program.mlpackage", "source": "coremltools/pooling_padding.h5",
                     "input": "tensor (7, 7, 2)", "precision": "float32"})

    # Layer fixtures (tensor input, float32): the operations coremltools writes for CNN, pooling, transposed
    # convolution, normalization, reshaping and sequence layers, each against the Keras outputs the fixture
    # scripts saved. A model coremltools cannot convert is listed under `programs_skipped`.
    skipped = []
    layer_fixtures = [(f"tfkeras215/{name}", name) for name in [
        "activations", "batchnorm", "depthwise_separable", "pooling", "reshape_ops", "conv_variants", "dense_classifier"]]
    layer_fixtures += [(f"layers/tfkeras215/{name}", name) for name in [
        "conv2d_transpose", "conv2d_transpose_output_padding", "layer_norm", "layer_norm_image", "unit_norm", "unit_norm_image",
        "time_distributed", "time_distributed_pooling", "conv1d_variants", "pooling1d", "repeat_vector", "dense_rank3_4",
        "dense_rank4", "flatten_rank3", "reshape_ranks", "rescaling_image", "normalization_image", "sequence_reshape"]]
    for relative, base in layer_fixtures:
        model = keras.models.load_model(os.path.join(args.fixtures, relative + ".h5"), compile=False)
        if len(model.inputs) != 1:
            continue
        with h5py.File(os.path.join(args.fixtures, relative + ".reference.h5"), "r") as ref:
            inputs = [ref["inputs"][k][()] for k in sorted(ref["inputs"], key=int)]
        name = f"{base}_program"
        shape = (1,) + tuple(model.inputs[0].shape[1:])
        try:
            mlmodel = ct.convert(model, inputs=[ct.TensorType(name=keras_input_name(model), shape=shape)],
                                 convert_to="mlprogram", source="tensorflow", minimum_deployment_target=ct.target.iOS15,
                                 compute_precision=ct.precision.FLOAT32)
        except Exception as error:  # noqa: BLE001 - coremltools cannot convert some layers
            skipped.append({"name": name, "reason": f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"})
            continue
        save(mlmodel, name)
        write_reference(out(name + ".reference.h5"), relative + ".h5", model, inputs)
        programs.append({"name": name + ".mlpackage", "source": relative + ".h5", "input": "tensor", "precision": "float32"})

    manifest_path = out("manifest.json")
    with open(manifest_path) as f:
        manifest = json.load(f)
    manifest["programs"] = programs
    manifest["programs_skipped"] = skipped
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
