#!/usr/bin/env python3
"""Write small classic Core ML networks as 2017-2019 converters wrote them, for `LegacyCoreMLSourceTests`.

Run by hand (not in CI), in a venv with the pins below:

    python3 -m venv /tmp/venv-ct
    /tmp/venv-ct/bin/pip install "coremltools==9.0" "numpy<2" "protobuf<5"
    /tmp/venv-ct/bin/python Samples/make_legacy_coreml.py --out Samples/Fixtures/legacy_coreml

Every model is built with coremltools' old `NeuralNetworkBuilder` API (`add_convolution`, `add_gru`, ...) in the
classic rank-5 mapping (no `arrayInputShapeMapping`, (C) and (C, H, W) arrays, DOUBLE multiarrays as the old
converters declared them), with `specificationVersion` set back to 1 (4 for the updatable model, the first
version that has them). Recurrent models look like the Keras 1/2 converter's: the state inputs `<layer>_h_in`
(optional) and the state outputs `<layer>_h_out`. Weights are seeded numpy values, so reruns give the same files.

`gray_cnn.reference.json` and `gru_text.reference.json` hold seeded inputs and the outputs of the model's
forward pass computed here in numpy from the same weights (not by Core ML): the source side's independent
check. Inputs and outputs are flat lists in Core ML's element order ((C, H, W) for images, pixel values 0-255).
The recurrent references (`gru_text`, `lstm_cell_state`) have three samples that leave the optional state inputs
out (Core ML reads zeros) and three that give them.
"""

import argparse
import json
import os

import numpy as np
import coremltools as ct
from coremltools.models import datatypes
from coremltools.models.neural_network import NeuralNetworkBuilder, SgdParams

PINS = {"coremltools": "9.0"}
assert ct.__version__ == PINS["coremltools"], ct.__version__


def rng(seed):
    return np.random.RandomState(seed)


def normal(r, *shape, scale=None):
    fan_in = int(np.prod(shape[:-1])) if scale is None and len(shape) > 1 else 1
    return (r.standard_normal(shape) * (scale if scale is not None else 1 / np.sqrt(fan_in))).astype(np.float32)


def save(builder, out, name, version=1, description=None):
    spec = builder.spec
    spec.specificationVersion = version
    spec.description.metadata.author = "ModelConverter Samples/make_legacy_coreml.py"
    spec.description.metadata.shortDescription = description or name
    path = os.path.join(out, name + ".mlmodel")
    ct.utils.save_spec(spec, path)
    print(f"{path}: {os.path.getsize(path)} bytes, spec {spec.specificationVersion}")
    return path


def optional(builder, *names):
    for feature in builder.spec.description.input:
        if feature.name in names:
            feature.type.isOptional = True


# ---------- numpy forward passes (Core ML's formulas) ----------

def conv_valid(x, w, b):
    """x (C, H, W), w (kh, kw, C, O) as given to add_convolution -> (O, H-kh+1, W-kw+1)."""
    kh, kw, _, o = w.shape
    c, h, wd = x.shape
    out = np.zeros((o, h - kh + 1, wd - kw + 1), dtype=np.float64)
    for i in range(kh):
        for j in range(kw):
            patch = x[:, i:i + h - kh + 1, j:j + wd - kw + 1]
            out += np.einsum("chw,co->ohw", patch, w[i, j].astype(np.float64))
    return out + b.astype(np.float64)[:, None, None]


def max_pool_2x2(x):
    c, h, w = x.shape
    return x[:, :h // 2 * 2, :w // 2 * 2].reshape(c, h // 2, 2, w // 2, 2).max(axis=(2, 4))


def softmax(v):
    e = np.exp(v - v.max())
    return e / e.sum()


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


# ---------- models ----------

def gray_cnn(out):
    """GRAYSCALE 28x28 image classifier, as the Keras 1/2 converter wrote MNIST models (spec 1)."""
    r = rng(1)
    builder = NeuralNetworkBuilder([("image", datatypes.Array(1, 28, 28))], [("probabilities", datatypes.Array(10))], mode="classifier")
    w1, b1 = normal(r, 3, 3, 1, 4), normal(r, 4, scale=0.5)
    builder.add_convolution("conv1", 1, 4, 3, 3, 1, 1, "valid", 1, w1, b1, True, input_name="image", output_name="conv1_out")
    builder.add_activation("conv1_relu", "RELU", "conv1_out", "conv1_relu_out")
    builder.add_pooling("pool1", 2, 2, 2, 2, "MAX", "VALID", "conv1_relu_out", "pool1_out")
    builder.add_flatten("flatten", 0, "pool1_out", "flatten_out")
    w2, b2 = normal(r, 10, 4 * 13 * 13, scale=1 / 26), normal(r, 10, scale=0.5)
    builder.add_inner_product("dense", w2, b2, 4 * 13 * 13, 10, True, "flatten_out", "dense_out")
    builder.add_softmax("softmax", "dense_out", "probabilities")
    labels = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
    builder.set_class_labels(labels, predicted_feature_name="digit", prediction_blob="probabilities")
    builder.set_pre_processing_parameters(image_input_names=["image"], image_scale=1 / 255.0, gray_bias=-0.5)
    save(builder, out, "gray_cnn", description="grayscale digits classifier")

    # The forward pass in numpy, from the same weights.
    samples = []
    data = rng(100)
    for _ in range(3):
        pixels = data.randint(0, 256, size=(1, 28, 28)).astype(np.float64)
        x = pixels * np.float64(np.float32(1 / 255.0)) - 0.5
        y = max_pool_2x2(np.maximum(conv_valid(x, w1, b1), 0))
        logits = w2.astype(np.float64) @ y.reshape(-1) + b2
        samples.append({"inputs": {"image": pixels.reshape(-1).tolist()}, "outputs": {"probabilities": softmax(logits).tolist()}})
    with open(os.path.join(out, "gray_cnn.reference.json"), "w") as f:
        json.dump({"computedBy": "numpy", "labels": labels, "samples": samples}, f)


def rgb_cnn(out):
    """RGB 16x16 image classifier with per-channel biases, batchnorm, leaky ReLU, padding and global pooling."""
    r = rng(2)
    builder = NeuralNetworkBuilder([("photo", datatypes.Array(3, 16, 16))], [("scores", datatypes.Array(5))], mode="classifier")
    builder.add_padding("pad", left=1, right=1, top=1, bottom=1, input_name="photo", output_name="pad_out")
    builder.add_convolution("conv1", 3, 6, 3, 3, 1, 1, "valid", 1, normal(r, 3, 3, 3, 6), normal(r, 6, scale=0.5), True,
                            input_name="pad_out", output_name="conv1_out")
    builder.add_batchnorm("bn", 6, normal(r, 6, scale=0.5) + 1, normal(r, 6, scale=0.5), normal(r, 6, scale=0.5),
                          r.uniform(0.5, 2, 6).astype(np.float32), input_name="conv1_out", output_name="bn_out", epsilon=1e-3)
    builder.add_activation("leaky", "LEAKYRELU", "bn_out", "leaky_out", params=[0.1])
    builder.add_pooling("pool1", 2, 2, 2, 2, "MAX", "SAME", "leaky_out", "pool1_out")
    builder.add_convolution("conv2", 6, 4, 1, 1, 1, 1, "same", 1, normal(r, 1, 1, 6, 4), None, False,
                            input_name="pool1_out", output_name="conv2_out")
    builder.add_activation("conv2_relu", "RELU", "conv2_out", "conv2_relu_out")
    builder.add_pooling("gap", 0, 0, 1, 1, "AVERAGE", "VALID", "conv2_relu_out", "gap_out", is_global=True)
    builder.add_flatten("flatten", 0, "gap_out", "flatten_out")
    builder.add_inner_product("dense", normal(r, 5, 4), normal(r, 5, scale=0.5), 4, 5, True, "flatten_out", "dense_out")
    builder.add_softmax("softmax", "dense_out", "scores")
    builder.set_class_labels(["cat", "dog", "bird", "fish", "frog"], predicted_feature_name="animal", prediction_blob="scores")
    builder.set_pre_processing_parameters(image_input_names=["photo"], image_scale=2 / 255.0, red_bias=-0.9, green_bias=-0.5, blue_bias=-0.1)
    save(builder, out, "rgb_cnn", description="RGB classifier")


def bgr_cnn(out):
    """BGR 12x12 image classifier (as Caffe models were), two branches added and concatenated, int64 labels."""
    r = rng(3)
    builder = NeuralNetworkBuilder([("data", datatypes.Array(3, 12, 12))], [("prob", datatypes.Array(3))], mode="classifier")
    builder.add_convolution("branch_a", 3, 4, 3, 3, 1, 1, "same", 1, normal(r, 3, 3, 3, 4), normal(r, 4, scale=0.5), True,
                            input_name="data", output_name="a_out")
    builder.add_convolution("branch_b", 3, 4, 1, 1, 1, 1, "valid", 1, normal(r, 1, 1, 3, 4), normal(r, 4, scale=0.5), True,
                            input_name="data", output_name="b_out")
    builder.add_elementwise("sum", ["a_out", "b_out"], "sum_out", "ADD")
    builder.add_activation("sum_relu", "RELU", "sum_out", "sum_relu_out")
    builder.add_elementwise("concat", ["sum_relu_out", "b_out"], "concat_out", "CONCAT")
    builder.add_pooling("pool", 2, 2, 2, 2, "AVERAGE", "VALID", "concat_out", "pool_out")
    builder.add_flatten("flatten", 0, "pool_out", "flatten_out")
    builder.add_inner_product("fc", normal(r, 3, 8 * 6 * 6), normal(r, 3, scale=0.5), 8 * 6 * 6, 3, True, "flatten_out", "fc_out")
    builder.add_softmax("prob", "fc_out", "prob")
    builder.set_class_labels([7, 11, 42], prediction_blob="prob")
    builder.set_pre_processing_parameters(image_input_names=["data"], is_bgr=True, image_scale=1 / 255.0,
                                          blue_bias=-0.4, green_bias=-0.45, red_bias=-0.5)
    save(builder, out, "bgr_cnn", description="BGR classifier with int64 labels")


def double_arrays(out):
    """DOUBLE (C, H, W) and (C) multiarray inputs: convolution, upsampling, permute, concat, dense (spec 1)."""
    r = rng(4)
    builder = NeuralNetworkBuilder(
        [("features", datatypes.Array(3, 8, 8)), ("extra", datatypes.Array(5))],
        [("map", datatypes.Array(4, 16, 16)), ("scores", datatypes.Array(2))])
    builder.add_padding("pad", left=1, right=1, top=1, bottom=1, input_name="features", output_name="pad_out")
    builder.add_convolution("conv", 3, 4, 3, 3, 1, 1, "valid", 1, normal(r, 3, 3, 3, 4), normal(r, 4, scale=0.5), True,
                            input_name="pad_out", output_name="conv_out")
    builder.add_activation("tanh", "TANH", "conv_out", "tanh_out")
    builder.add_upsample("up", 2, 2, "tanh_out", "up_out")
    builder.add_permute("swap_hw", (0, 1, 3, 2), "up_out", "map")
    builder.add_pooling("gap", 0, 0, 1, 1, "AVERAGE", "VALID", "tanh_out", "gap_out", is_global=True)
    builder.add_flatten("flatten", 0, "gap_out", "flatten_out")
    builder.add_inner_product("extra_fc", normal(r, 3, 5), normal(r, 3, scale=0.5), 5, 3, True, "extra", "extra_out")
    builder.add_activation("extra_sigmoid", "SIGMOID", "extra_out", "extra_sigmoid_out")
    builder.add_elementwise("joined", ["flatten_out", "extra_sigmoid_out"], "joined_out", "CONCAT")
    builder.add_inner_product("head", normal(r, 2, 7), normal(r, 2, scale=0.5), 7, 2, True, "joined_out", "head_out")
    builder.add_reshape("head_reshape", "head_out", "scores", (2, 1, 1), 0)
    save(builder, out, "double_arrays", description="DOUBLE multiarray inputs")


def gru_weights(r, hidden, inputs):
    return ([normal(r, hidden, hidden, scale=0.5) for _ in range(3)], [normal(r, hidden, inputs, scale=0.5) for _ in range(3)],
            [normal(r, hidden, scale=0.3) for _ in range(3)])


def gru_text(out):
    """A GRU over (D) word vectors with an optional state input and the hidden-state output (spec 1)."""
    r = rng(5)
    hidden, dim = 6, 8
    builder = NeuralNetworkBuilder(
        [("vectors", datatypes.Array(dim)), ("gru_h_in", datatypes.Array(hidden))],
        [("entities", datatypes.Array(4)), ("gru_h_out", datatypes.Array(hidden))])
    w_h, w_x, b = gru_weights(r, hidden, dim)
    builder.add_gru("gru", w_h, w_x, b, hidden, dim, ["vectors", "gru_h_in"], ["gru_out", "gru_h_out"], output_all=True,
                    inner_activation="SIGMOID")
    w_fc, b_fc = normal(r, 4, hidden), normal(r, 4, scale=0.5)
    builder.add_inner_product("fc", w_fc, b_fc, hidden, 4, True, "gru_out", "fc_out")
    builder.add_softmax("entities", "fc_out", "entities")
    optional(builder, "gru_h_in")
    save(builder, out, "gru_text", description="GRU text model")

    # The gates use SIGMOID: add_gru's default SIGMOID_HARD is written without alpha/beta, whose meaning
    # (0.2/0.5 as Keras, or 0/0 as written) is not settled here.
    # One step from the given or a zero state (the sequence axis is 1 in a single prediction), Core ML's GRU formulas:
    # z = f(Wz x + Rz h + bz), r = f(Wr x + Rr h + br), c = tanh(Wo x + Ro (r * h) + bo), h' = (1 - z) c + z h.
    # Three samples leave the optional state out (Core ML reads zeros), three give it (seeded, uniform [-1, 1]).
    samples = []
    data, states = rng(101), rng(103)
    for k in range(6):
        x = data.uniform(-1, 1, dim)
        h = np.zeros(hidden) if k < 3 else states.uniform(-1, 1, hidden)
        given = {} if k < 3 else {"gru_h_in": h.tolist()}
        z = sigmoid(w_x[0] @ x + w_h[0] @ h + b[0])
        rr = sigmoid(w_x[1] @ x + w_h[1] @ h + b[1])
        c = np.tanh(w_x[2] @ x + w_h[2] @ (rr * h) + b[2])
        h = (1 - z) * c + z * h
        samples.append({"inputs": {"vectors": x.tolist(), **given}, "outputs": {"gru_h_out": h.tolist(), "entities": softmax(w_fc @ h + b_fc).tolist()}})
    with open(os.path.join(out, "gru_text.reference.json"), "w") as f:
        json.dump({"computedBy": "numpy", "samples": samples}, f)


def lstm_weights(r, hidden, inputs):
    return ([normal(r, hidden, hidden, scale=0.5) for _ in range(4)], [normal(r, hidden, inputs, scale=0.5) for _ in range(4)],
            [normal(r, hidden, scale=0.3) for _ in range(4)])


def lstm_text(out, name="lstm_text", cell_output=False):
    """A uni-directional LSTM with state inputs and the hidden-state output; `cell_output` also declares `lstm_c_out`."""
    r = rng(6)
    hidden, dim = 5, 4
    outputs = [("scores", datatypes.Array(3)), ("lstm_h_out", datatypes.Array(hidden))]
    if cell_output:
        outputs.append(("lstm_c_out", datatypes.Array(hidden)))
    builder = NeuralNetworkBuilder(
        [("tokens", datatypes.Array(dim)), ("lstm_h_in", datatypes.Array(hidden)), ("lstm_c_in", datatypes.Array(hidden))], outputs)
    w_h, w_x, b = lstm_weights(r, hidden, dim)
    builder.add_unilstm("lstm", w_h, w_x, b, hidden, dim, ["tokens", "lstm_h_in", "lstm_c_in"], ["lstm_out", "lstm_h_out", "lstm_c_out"])
    w_fc, b_fc = normal(r, 3, hidden), normal(r, 3, scale=0.5)
    builder.add_inner_product("fc", w_fc, b_fc, hidden, 3, True, "lstm_out", "fc_out")
    builder.add_activation("scores", "SIGMOID", "fc_out", "scores")
    optional(builder, "lstm_h_in", "lstm_c_in")
    save(builder, out, name, description="LSTM text model")
    if not cell_output:
        return

    # One step from the given or zero states, NeuralNetwork.proto's LSTM formulas (add_unilstm's gate order i, f, o, z;
    # sigmoid gates, tanh cell and output activations, no forget bias):
    # i = s(Wi x + Ri h + bi), f = s(Wf x + Rf h + bf), o = s(Wo x + Ro h + bo), z = tanh(Wz x + Rz h + bz),
    # c' = f c + i z, h' = o tanh(c').
    # Three samples leave the optional states out (Core ML reads zeros), three give both (seeded, uniform [-1, 1]).
    samples = []
    data, states = rng(102), rng(104)
    for k in range(6):
        x = data.uniform(-1, 1, dim)
        if k < 3:
            h, c, given = np.zeros(hidden), np.zeros(hidden), {}
        else:
            h, c = states.uniform(-1, 1, hidden), states.uniform(-1, 1, hidden)
            given = {"lstm_h_in": h.tolist(), "lstm_c_in": c.tolist()}
        i, f, o = (sigmoid(w_x[k] @ x + w_h[k] @ h + b[k]) for k in range(3))
        z = np.tanh(w_x[3] @ x + w_h[3] @ h + b[3])
        c = f * c + i * z
        h = o * np.tanh(c)
        samples.append({"inputs": {"tokens": x.tolist(), **given},
                        "outputs": {"lstm_h_out": h.tolist(), "lstm_c_out": c.tolist(), "scores": sigmoid(w_fc @ h + b_fc).tolist()}})
    with open(os.path.join(out, name + ".reference.json"), "w") as f:
        json.dump({"computedBy": "numpy", "samples": samples}, f)


def recurrent_stack(out):
    """A simple RNN returning its sequence under a bidirectional LSTM (spec 1)."""
    r = rng(7)
    dim, rnn, lstm = 4, 5, 3
    builder = NeuralNetworkBuilder([("steps", datatypes.Array(dim))], [("encoding", datatypes.Array(2 * lstm))])
    builder.add_simple_rnn("rnn", normal(r, rnn, rnn, scale=0.5), normal(r, rnn, dim, scale=0.5), normal(r, rnn, scale=0.3), rnn, dim,
                           "TANH", ["steps"], ["rnn_out"], output_all=True)
    fw, bw = lstm_weights(r, lstm, rnn), lstm_weights(r, lstm, rnn)
    builder.add_bidirlstm("bilstm", fw[0], fw[1], fw[2], bw[0], bw[1], bw[2], lstm, rnn, ["rnn_out"], ["encoding"])
    save(builder, out, "recurrent_stack", description="simple RNN and bidirectional LSTM")


def top_left_conv(out):
    """Convolutions with TOP_LEFT_HEAVY same padding (spec 1), where the odd total padding falls on the
    top/left: a 3x3 kernel at stride 2 over 6x6 (total 1 per axis), then a 2x2 kernel at stride 1 (total 1)."""
    r = rng(12)
    builder = NeuralNetworkBuilder([("x", datatypes.Array(2, 6, 6))], [("y", datatypes.Array(3, 3, 3))])
    w1, b1 = normal(r, 3, 3, 2, 4), normal(r, 4, scale=0.5)
    builder.add_convolution("conv_strided", 2, 4, 3, 3, 2, 2, "same", 1, w1, b1, True, input_name="x", output_name="conv1_out",
                            same_padding_asymmetry_mode="TOP_LEFT_HEAVY")
    w2, b2 = normal(r, 2, 2, 4, 3), normal(r, 3, scale=0.5)
    builder.add_convolution("conv_even_kernel", 4, 3, 2, 2, 1, 1, "same", 1, w2, b2, True, input_name="conv1_out", output_name="y",
                            same_padding_asymmetry_mode="TOP_LEFT_HEAVY")
    save(builder, out, "top_left_conv", description="TOP_LEFT_HEAVY same padding")

    # NeuralNetwork.proto's SamePadding: output ceil(H / stride), total padding max(0, (out - 1) * stride + K - H),
    # TOP_LEFT_HEAVY puts floor(total / 2) on the bottom/right and the rest on the top/left.
    def same_top_left(x, w, b, stride):
        kh, kw = w.shape[0], w.shape[1]
        _, h, wd = x.shape
        oh, ow = -(-h // stride), -(-wd // stride)
        th, tw = max(0, (oh - 1) * stride + kh - h), max(0, (ow - 1) * stride + kw - wd)
        padded = np.pad(x, ((0, 0), (th - th // 2, th // 2), (tw - tw // 2, tw // 2)))
        return conv_valid(padded, w, b)[:, ::stride, ::stride][:, :oh, :ow]

    samples = []
    data = rng(103)
    for _ in range(3):
        x = data.uniform(-1, 1, (2, 6, 6))
        y = same_top_left(same_top_left(x, w1, b1, 2), w2, b2, 1)
        samples.append({"inputs": {"x": x.reshape(-1).tolist()}, "outputs": {"y": y.reshape(-1).tolist()}})
    with open(os.path.join(out, "top_left_conv.reference.json"), "w") as f:
        json.dump({"computedBy": "numpy", "samples": samples}, f)


def regressor(out):
    """A neuralNetworkRegressor over a DOUBLE (C) vector (spec 1)."""
    r = rng(8)
    builder = NeuralNetworkBuilder([("x", datatypes.Array(6))], [("price", datatypes.Array(1))], mode="regressor")
    builder.add_inner_product("hidden", normal(r, 8, 6), normal(r, 8, scale=0.5), 6, 8, True, "x", "hidden_out")
    builder.add_activation("hidden_tanh", "TANH", "hidden_out", "hidden_tanh_out")
    builder.add_batchnorm("bn", 8, normal(r, 8, scale=0.5) + 1, normal(r, 8, scale=0.5), normal(r, 8, scale=0.5),
                          r.uniform(0.5, 2, 8).astype(np.float32), input_name="hidden_tanh_out", output_name="bn_out")
    builder.add_inner_product("price", normal(r, 1, 8), normal(r, 1, scale=0.5), 8, 1, True, "bn_out", "price")
    save(builder, out, "regressor", description="price regressor")


def updatable(out):
    """An updatable classifier (spec 4): a trainable dense layer, cross-entropy loss, SGD optimizer."""
    r = rng(9)
    builder = NeuralNetworkBuilder([("features", datatypes.Array(4))], [("probs", datatypes.Array(3))], mode="classifier")
    builder.add_inner_product("dense", normal(r, 3, 4), normal(r, 3, scale=0.5), 4, 3, True, "features", "dense_out")
    builder.add_softmax("softmax", "dense_out", "probs")
    builder.set_class_labels(["low", "mid", "high"], predicted_feature_name="level", prediction_blob="probs")
    builder.make_updatable(["dense"])
    builder.set_categorical_cross_entropy_loss(name="loss", input="probs")
    builder.set_sgd_optimizer(SgdParams(lr=0.01, batch=4))
    builder.set_epochs(5)
    save(builder, out, "updatable", version=4, description="updatable classifier")


def image_to_image(out):
    """An image-to-image network as style-transfer and segmentation models are shipped: a BGR 8x8 image in,
    a BGR image and a GRAYSCALE mask out (image outputs: Core ML turns the (C, H, W) blobs into pixels)."""
    r = rng(11)
    builder = NeuralNetworkBuilder([("photo", datatypes.Array(3, 8, 8))], [("styled", datatypes.Array(3, 8, 8)), ("mask", datatypes.Array(1, 8, 8))])
    builder.add_convolution("conv", 3, 4, 3, 3, 1, 1, "same", 1, normal(r, 3, 3, 3, 4), normal(r, 4, scale=0.5), True,
                            input_name="photo", output_name="conv_out")
    builder.add_activation("tanh", "TANH", "conv_out", "tanh_out")
    builder.add_convolution("to_rgb", 4, 3, 1, 1, 1, 1, "same", 1, normal(r, 1, 1, 4, 3), None, False,
                            input_name="tanh_out", output_name="rgb_out")
    builder.add_activation("styled", "LINEAR", "rgb_out", "styled", params=[127.5, 127.5])
    builder.add_convolution("to_mask", 4, 1, 1, 1, 1, 1, "same", 1, normal(r, 1, 1, 4, 1), None, False,
                            input_name="tanh_out", output_name="mask_logits")
    builder.add_activation("mask_sigmoid", "SIGMOID", "mask_logits", "mask_probability")
    builder.add_activation("mask", "LINEAR", "mask_probability", "mask", params=[255.0, 0.0])
    builder.set_pre_processing_parameters(image_input_names=["photo"], is_bgr=True, image_scale=1 / 127.5, red_bias=-1, green_bias=-1, blue_bias=-1)
    for feature, space in [(builder.spec.description.output[0], "BGR"), (builder.spec.description.output[1], "GRAYSCALE")]:
        feature.type.imageType.width = 8
        feature.type.imageType.height = 8
        feature.type.imageType.colorSpace = ct.proto.FeatureTypes_pb2.ImageFeatureType.ColorSpace.Value(space)
    save(builder, out, "image_to_image", description="image-to-image network with image outputs")


MODELS = ["gray_cnn", "rgb_cnn", "bgr_cnn", "double_arrays", "gru_text", "lstm_text", "lstm_cell_state", "recurrent_stack",
          "regressor", "updatable", "image_to_image", "top_left_conv"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--only", choices=MODELS, help="write this model alone")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.only:
        if args.only == "lstm_cell_state":
            lstm_text(args.out, name="lstm_cell_state", cell_output=True)
        else:
            globals()[args.only](args.out)
        return
    gray_cnn(args.out)
    rgb_cnn(args.out)
    bgr_cnn(args.out)
    double_arrays(args.out)
    gru_text(args.out)
    lstm_text(args.out)
    lstm_text(args.out, name="lstm_cell_state", cell_output=True)
    recurrent_stack(args.out)
    regressor(args.out)
    updatable(args.out)
    image_to_image(args.out)
    top_left_conv(args.out)


if __name__ == "__main__":
    main()
