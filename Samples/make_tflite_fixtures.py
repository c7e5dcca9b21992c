#!/usr/bin/env python3
"""TensorFlow Lite fixtures (issue 39): small tf_keras models converted by TensorFlow's own TFLiteConverter, in
float32, dynamic-range (int8 weights), float16 (float16 weights behind DEQUANTIZE) and full-integer (int8
activations) forms, with LiteRT's outputs. Run by hand, not in CI, in the keras3 venv of
Samples/requirements-keras3.txt plus LiteRT (ai-edge-litert 2.3.0, the interpreter that replaces tf.lite's):

    /tmp/venv-keras3/bin/pip install ai-edge-litert==2.3.0
    /tmp/venv-keras3/bin/python Samples/make_tflite_fixtures.py --out Samples/Fixtures/tflite \
        --mediapipe-metadata /tmp/mediapipe/mediapipe/tasks/metadata

`--only NAME[,NAME...]` (the file names without `.tflite`: `small_cnn_int8`, `streaming_int8`, ...) writes only
those fixtures and merges their entries into the existing `expected.json`, the other entries and files as they
are (every tf_keras model is still built, in order, so that its seeded weights and layer names are the same as in a
full run: a fixture written alone is byte for byte the one a full run writes). Without `--only`, `expected.json`
is written anew from what the run wrote (leave out `--mediapipe-metadata` and it loses
`classifier_with_metadata` and `transpose_bias_custom`).

Writes `<model>_<form>.tflite`, `<model>_<form>.reference.h5` and `expected.json` (per file, what LiteRT's interpreter
reads: its operators in order, each input's and output's tensor name, shape, type and quantization), and (2 seeded samples: inputs/0 as the model takes
them, outputs/0 as LiteRT computed them, root attribute computed_by; `streaming_int8`'s reference is a stream of 6
steps, below). Models (tf_keras 2.21, seeded weights;
BatchNormalization statistics seeded so that folding them is visible):

| model | layers |
|---|---|
| `small_cnn` | Input 32x32x3, Conv2D 8 3x3 same + ReLU, DepthwiseConv2D 3x3 stride 2 same, BatchNormalization, ReLU6, Conv2D 12 1x1, MaxPooling2D 2, AveragePooling2D 2 (valid), Flatten, Dense 16 ReLU (3072 weights: the dynamic-range form quantizes weights of 1024 elements or more), Dense 5 softmax |
| `mixed_ops` | Input 16x16x4, two Conv2D branches added, multiplied by a constant, concatenated with the input, ZeroPadding2D, LeakyReLU(0.2), hard swish, UpSampling2D bilinear, Conv2D, GlobalAveragePooling2D, Dense 3, tanh |
| `space_sparse` | Input 8x8x16, depth_to_space 2 (DEPTH_TO_SPACE), Conv2D 32 3x3 same + ReLU with 85% of its weights zero (form `sparse`: `optimizations=[EXPERIMENTAL_SPARSITY]`, stored sparse), GlobalAveragePooling2D, Dense 4 |
| `upsample_embed` | two inputs: an 8x8x4 image through Conv2DTranspose 6 3x3 stride 2 same + ReLU (TRANSPOSE_CONV), Conv2D 2 1x1 and GlobalAveragePooling2D; 10 int32 token ids through Embedding(30, 8) (GATHER), GlobalAveragePooling1D and Dense 2; the two added |
| `elementwise` | 16 values through where(x > 0.1, exp, sqrt(abs)), maximum with the square, minimum of rsqrt and -x + 2, log, a cast comparison (GREATER, SELECT_V2, EXP, SQRT, ABS, MAXIMUM, SQUARE, RSQRT, MINIMUM, NEG/MUL, LOG, LESS_EQUAL, CAST...) |
| `lstm` | Input (10, 6) with a batch of 1 (so that the converter fuses the LSTM), LSTM 20 (its recurrent kernel large enough to be quantized), Dense 3 |
| `spectrogram` | (a tf.Module, not tf_keras: `spectrogram_float32.tflite`, below) a float32 signal [None, 4000] normalized by its own min and max, two tf.signal.stft branches (real part by CAST, magnitude by COMPLEX_ABS), each through a mel-like matrix, squared, POW 0.25, REVERSE_V2, transposed and expanded; concatenated, Conv2D 4 3x3 same + ReLU, global average, Dense 4 |

`classifier_with_metadata.tflite` (with `--mediapipe-metadata DIR`: the two generated Python files of
`mediapipe/tasks/metadata/` from mediapipe 0.10.14's wheel, `pip download mediapipe==0.10.14 --no-deps`): a
Teachable Machine-style classifier whose TFLite Model Metadata says the input is an RGB image normalized by mean 127.5
and std 127.5 and names the output's labels in a `labels.txt` zipped onto the file; its reference holds the pixels
too.

`transpose_bias_custom.tflite` (6176 bytes; with `--mediapipe-metadata DIR`, whose `schema_py_generated.py`
Samples/tflite_rewrite.py uses): MediaPipe's custom transposed convolution, as its segmentation models
(selfie_segmentation*.tflite) hold it: CUSTOM with custom_code `Convolution2DTransposeBias`, inputs (input NHWC,
weights [O, KH, KW, I], bias [O]), custom_options the 12 bytes of C's TfLiteTransposeConvParams (little-endian
int32 padding 1 = SAME / 2 = VALID, stride_width, stride_height), the output shape computed by TRANSPOSE_CONV's
rule. A tf_keras model (layers named, weights set from numpy, seed 39, biases nonzero): Input 8x8x4 (`image`,
batch 1), Conv2D 8 3x3 same + ReLU, Conv2DTranspose 6 3x3 stride 2 same (16x16), LeakyReLU(0.2) (a ReLU would be
fused into the TRANSPOSE_CONV, which the custom operator cannot hold), Conv2DTranspose 3 3x2 strides (1, 2) valid
(18x32; custom options (2, 2, 1): stride_width 2, stride_height 1), sigmoid; output `StatefulPartitionedCall:0`
[1, 18, 32, 3]. TensorFlow's converter writes two builtin TRANSPOSE_CONV (version 3, bias as input 3;
CONV_2D, TRANSPOSE_CONV, LEAKY_RELU, TRANSPOSE_CONV, LOGISTIC; 6356 bytes), which Samples/tflite_rewrite.py rewrites
into the custom operator (CONV_2D, CUSTOM(Convolution2DTransposeBias), LEAKY_RELU, CUSTOM(Convolution2DTransposeBias),
LOGISTIC; the output_shape constants dropped). Its reference is LiteRT's outputs on the builtin form (2 seeded
samples uniform in [-1, 1), seed 1000, as the float fixtures; `computed_by` says so); its `expected.json` entry is
what LiteRT reads of the builtin form with each TRANSPOSE_CONV named as the Swift reader names the custom operator,
`CUSTOM(Convolution2DTransposeBias)`. (LiteRT reads the custom file too, naming the operator
`Convolution2DTransposeBias`, and runs it only through its default XNNPACK delegate, which implements MediaPipe's
operator: the same outputs to the bit. Without default delegates it refuses it, "Encountered unresolved custom op".)
The script checks that the file holds 2 custom operators with 3 inputs and 12 bytes of options each, and that the
custom file rewritten back to the builtin form computes the same outputs.

`unsupported_ops.tflite` has no reference and no entry in `expected.json`: 16 float32 values
(`serving_default_values:0`, [1, 16]) through a running sum and the 3 largest of it (`top_k(cumsum(x), 3)`: CUMSUM,
TOPK_V2), operators the converter does not handle, named at once in its error. (Earlier forms held SIN then
FLOOR, then an FFT's magnitude, which the converter now handles.)

`columns_float32.tflite`: BirdNET's metadata model's front, small: 3 values with an open batch (`position`,
[-1, 3]), each column alone (`x[:, i]`: STRIDED_SLICE with a shrunk axis, a tensor of the batch axis alone), through
MUL, ADD, SUB, SIN, COS and FLOOR, EXPAND_DIMS back to columns, CONCATENATION, a seeded Dense 4 (FULLY_CONNECTED)
and LOGISTIC; LiteRT's outputs on 2 seeded samples.

`prelu_pad_float32.tflite`: MediaPipe's blocks, small: Conv2D, PRELU with slopes `[1, 1, C]` (one per channel),
a PAD of the channels (MediaPipe's channel_padding), Conv2D 1x1, MEAN, FULLY_CONNECTED; LiteRT's outputs on 2 seeded
samples (written last, its layers named and weights from its own generator).

`trig_float32.tflite`: 16 float32 values (`serving_default_values:0`, [1, 16]) through
`floor(3x) + sin(x) * cos(2x)` (a tf.function, no weights), which the file holds as SIN, MUL, FLOOR, MUL, COS,
MUL, ADD; output `PartitionedCall:0` [1, 16] float32. Its reference is as the float models' (2 seeded samples
uniform in [-1, 1), seed 1000; every 3x at least 0.0199 from an integer, so that floor's steps are not within a
float16 rounding of a sample).

`streaming_int8.tflite` (9448 bytes): a streaming, stateful, full-integer model like microWakeWord's wake-word
models (pymicro-wakeword 2.5.0's `okay_nabu`, `hey_jarvis`): a tf.Module whose tf.function takes 3 new frames of 8
features (`input_audio`, [1, 3, 8]) and keeps the frames its convolutions need in three tf.Variable ring buffers,
zeros at first; weights are seeded constants (numpy, seed 39), so that the only variables are the states:

| step | layers |
|---|---|
| input | reshape to [1, 3, 1, 8]; `stream_input/states` [1, 2, 1, 8] concatenated before it on axis 1 (5 frames); its last 2 frames assigned back; Conv2D 6 5x1 stride 3 valid + ReLU: 1 frame |
| mix | `stream_mix/states` [1, 4, 1, 6] concatenated before that frame; last 4 frames assigned back; split 2 + 4 channels (tf.split, SPLIT_V); the first part's last 3 frames through DepthwiseConv2D 3x1, the second part's 5 through DepthwiseConv2D 5x1 (both valid, with bias); the two concatenated on channels; Conv2D 8 1x1 + ReLU: 1 frame |
| out | `stream_out/states` [1, 2, 1, 8] concatenated before that frame; last 2 frames assigned back; the 3 frames flattened (24), Dense 1, sigmoid |

Converted as microWakeWord converts its models: `experimental_enable_resource_variables = True`,
`_experimental_variable_quantization = True` (the variables int8 too, no QUANTIZE/DEQUANTIZE around them),
`optimizations=[DEFAULT]`, a representative dataset of 32 seeded steps of features uniform in [0, 26] (seed 7;
one step holds 0 and 26 so that the input's range is microWakeWord's), `TFLITE_BUILTINS_INT8`, int8 input, uint8
output. The file has two subgraphs. Subgraph 0 (LiteRT's list, as `expected.json` has it): CALL_ONCE (of subgraph
1), VAR_HANDLE x3 (`stream_out/states`, `stream_mix/states`, `stream_input/states`), READ_VARIABLE x3, RESHAPE,
CONCATENATION, CONV_2D, CONCATENATION, SPLIT_V, DEPTHWISE_CONV_2D, STRIDED_SLICE, ASSIGN_VARIABLE, STRIDED_SLICE,
ASSIGN_VARIABLE, STRIDED_SLICE, DEPTHWISE_CONV_2D, CONCATENATION, CONV_2D, CONCATENATION, RESHAPE,
FULLY_CONNECTED, LOGISTIC, STRIDED_SLICE, ASSIGN_VARIABLE, QUANTIZE. Subgraph 1 (`NoOp`, no inputs or outputs)
initializes the variables: VAR_HANDLE then ASSIGN_VARIABLE of an int8 constant, for each (VAR_HANDLE's
`shared_name` names the variable in both subgraphs); every constant is all -128, the variable's zero point, i.e.
0.0. Tensors: input `serving_default_input_audio:0` int8 [1, 3, 8], scale 26/255 (0.10196078), zero point -128;
output `StatefulPartitionedCall:0` uint8 [1, 1], scale 1/256, zero point 0 (LOGISTIC's int8 output, scale 1/256,
zero point -128, through QUANTIZE); the variables (RESOURCE tensors, shape [], no quantization) read and assigned
as int8, each with the scale of the concatenation it feeds and zero point -128: `stream_input/states`
[1, 2, 1, 8] scale 0.10196078 (the input's), `stream_mix/states` [1, 4, 1, 6] scale 0.33735013,
`stream_out/states` [1, 2, 1, 8] scale 0.04127220. Its reference is a stream: `inputs/0` [6, 3, 8] the int8 integers given to LiteRT (6
seeded steps of features uniform in [0, 26), seed 1000, quantized), `outputs/0` [6, 1] LiteRT's uint8 integers
(149, 109, 74, 90, 161, 139), both float32; root attributes `computed_by` and `streaming` = 1: the steps are
invoked in order on one interpreter, each carrying the model's variables to the next, the first starting from
their initial values (a fresh interpreter: its first invocation runs CALL_ONCE; LiteRT's reset_all_variables()
does not reset resource variables). Each step alone, from the initial values, gives 149, 121, 99, 130, 139, 81.
LiteRT's default CPU kernels (XNNPACK) computed them, as the other references; its builtin kernels
(`BUILTIN_WITHOUT_DEFAULT_DELEGATES`, or `BUILTIN_REF`) give 140 for the last step.

`spectrogram_float32.tflite` (29264 bytes): BirdNET's audio front end (BirdNET_GLOBAL_6K_V2.4_Model_FP32.tflite's
first 95 operators), small: a tf.Module (spectrogram_module, weights seeded numpy constants, seed 39) whose
tf.function takes `signal` float32 [None, 4000] (`serving_default_signal:0`, shape [1, 4000], shape_signature
[-1, 4000]; output `PartitionedCall:0` [1, 4], signature [-1, 4]). The open batch makes the converter leave the
framing's shape arithmetic in the file as in BirdNET, and the frame counts unknown in it (shape_signature -1,
shape 1: LiteRT computes 38 when it allocates). The operators (LiteRT's list, 96):

| step | operators |
|---|---|
| normalization, (x - min) / (max + 1e-6), then (. - 0.5) * 2 | REDUCE_MIN, SUB, REDUCE_MAX, ADD, DIV, SUB, MUL |
| branch A framing: stft 256/100/256 (the signal as [batch, 1000, 4] subframes, 38 frames of 64 gathered) | SHAPE, SPLIT_V, RESHAPE, FLOOR_DIV, PACK, CONCATENATION, MUL, RESHAPE, CONCATENATION, STRIDED_SLICE, RESHAPE, SUB, FLOOR_DIV, ADD, MAXIMUM, PACK, PACK, CONCATENATION, RANGE, MUL, RESHAPE, ADD, GATHER, RESHAPE |
| branch A spectrum: Hann window, FFT, real part (tf.cast) | MUL, EXPAND_DIMS, RFFT2D [.., 129], SQUEEZE, CAST (complex64 to float32) |
| tensordot's reshape to [batch * frames, 129] | SHAPE, GATHER, REDUCE_PROD, CONCATENATION, GATHER, REDUCE_PROD, PACK, RESHAPE |
| branch B framing: stft 128/104/128 ([batch, 500, 8] subframes, 38 frames of 16) | FLOOR_DIV, PACK, CONCATENATION, MUL, RESHAPE, CONCATENATION, STRIDED_SLICE, RESHAPE, SUB, FLOOR_DIV, ADD, MAXIMUM, PACK, PACK, CONCATENATION, RANGE, MUL, RESHAPE, ADD, GATHER, RESHAPE |
| branch B spectrum, magnitude (tf.abs) | MUL, EXPAND_DIMS, RFFT2D [.., 65], SQUEEZE, COMPLEX_ABS, then SHAPE, GATHER, REDUCE_PROD, CONCATENATION, GATHER, REDUCE_PROD, PACK, RESHAPE |
| branch B bands: mel-like [65, 12] (FULLY_CONNECTED without bias), x * x, x^0.25, bands reversed | FULLY_CONNECTED, RESHAPE, MUL, POW, REVERSE_V2 |
| branch A bands: mel-like [129, 12] | FULLY_CONNECTED, RESHAPE, MUL, POW, REVERSE_V2 |
| both to [batch, 12, 38, 1] (A, then B), concatenated on the last axis (A first) | TRANSPOSE, EXPAND_DIMS, TRANSPOSE, EXPAND_DIMS, CONCATENATION |
| Conv2D 4 3x3 same + ReLU, mean over [12, 38], Dense 4 | CONV_2D, MEAN, FULLY_CONNECTED |

Its reference is as the float models' (2 seeded signals uniform in [-1, 1), seed 1000, LiteRT given one signal
at a time in its [1, 4000]; TensorFlow's own outputs differ by 6e-8).

Forms: `float32` (the converter's defaults), `dynamic` (`optimizations=[DEFAULT]`: int8 weights, float compute),
`float16` (`optimizations=[DEFAULT]`, `supported_types=[float16]`), `int8` (full integer: a representative dataset
of 32 seeded samples, int8 input and output; small_cnn only).
"""

import argparse
import os

import numpy as np


def build(keras, name):
    rng = np.random.default_rng(39)
    if name == "small_cnn":
        x = keras.Input((32, 32, 3), name="image")
        y = keras.layers.Conv2D(8, 3, padding="same", activation="relu")(x)
        y = keras.layers.DepthwiseConv2D(3, strides=2, padding="same")(y)
        y = keras.layers.BatchNormalization()(y)
        y = keras.layers.ReLU(6.0)(y)
        y = keras.layers.Conv2D(12, 1)(y)
        y = keras.layers.MaxPooling2D(2)(y)
        y = keras.layers.AveragePooling2D(2)(y)
        y = keras.layers.Flatten()(y)
        y = keras.layers.Dense(16, activation="relu")(y)
        y = keras.layers.Dense(5, activation="softmax")(y)
        model = keras.Model(x, y, name=name)
    elif name == "mixed_ops":
        x = keras.Input((16, 16, 4), name="features")
        a = keras.layers.Conv2D(4, 3, padding="same")(x)
        b = keras.layers.Conv2D(4, 1)(x)
        y = keras.layers.Add()([a, b])
        y = keras.layers.Lambda(lambda t: t * 0.5)(y)
        y = keras.layers.Concatenate()([y, x])
        y = keras.layers.ZeroPadding2D(1)(y)
        y = keras.layers.LeakyReLU(0.2)(y)
        y = keras.layers.Activation("hard_swish")(y) if hasattr(keras.activations, "hard_swish") else \
            keras.layers.Lambda(lambda t: t * keras.backend.clip(t + 3, 0, 6) / 6)(y)
        y = keras.layers.UpSampling2D(2, interpolation="bilinear")(y)
        y = keras.layers.Conv2D(6, 3, strides=2)(y)
        y = keras.layers.GlobalAveragePooling2D()(y)
        y = keras.layers.Dense(3, activation="tanh")(y)
        model = keras.Model(x, y, name=name)
    elif name == "upsample_embed":
        # Two inputs: an image upsampled by a transposed convolution, and token ids looked up in a table.
        # (A fixed batch of 1, so that the transposed convolution's output shape is a constant.)
        x = keras.Input((8, 8, 4), batch_size=1, name="image")
        y = keras.layers.Conv2DTranspose(6, 3, strides=2, padding="same", activation="relu")(x)
        y = keras.layers.Conv2D(2, 1)(y)
        y = keras.layers.GlobalAveragePooling2D()(y)
        t = keras.Input((10,), batch_size=1, dtype="int32", name="tokens")
        z = keras.layers.Embedding(30, 8)(t)
        z = keras.layers.GlobalAveragePooling1D()(z)
        z = keras.layers.Dense(2)(z)
        model = keras.Model([x, t], [keras.layers.Add()([y, z])], name=name)
    elif name == "elementwise":
        import tensorflow as tf
        x = keras.Input((16,), batch_size=1, name="values")
        def body(t):
            chosen = tf.where(t > 0.1, tf.exp(t), tf.sqrt(tf.abs(t)))
            larger = tf.maximum(chosen, tf.square(t))
            smaller = tf.minimum(tf.math.rsqrt(larger + 1.0), -t + 2.0)
            return tf.math.log(smaller + 2.0) + tf.cast(t <= 0.5, tf.float32)
        y = keras.layers.Lambda(body)(x)
        y = keras.layers.Reshape((16, 1))(y)
        model = keras.Model(x, y, name=name)
    elif name == "space_sparse":
        import tensorflow as tf
        x = keras.Input((8, 8, 16), name="features")
        y = keras.layers.Lambda(lambda t: tf.nn.depth_to_space(t, 2))(x)
        y = keras.layers.Conv2D(32, 3, padding="same", activation="relu")(y)
        y = keras.layers.GlobalAveragePooling2D()(y)
        y = keras.layers.Dense(4)(y)
        model = keras.Model(x, y, name=name)
        # Most of the convolution's weights zero, so that the sparsity optimization stores them sparse.
        conv = [layer for layer in model.layers if isinstance(layer, keras.layers.Conv2D)][0]
        kernel, bias = conv.get_weights()
        kernel[rng.uniform(size=kernel.shape) < 0.85] = 0
        conv.set_weights([kernel, bias])
    else:
        # A fixed batch of 1 lets the converter fuse the LSTM into UNIDIRECTIONAL_SEQUENCE_LSTM.
        x = keras.Input((10, 6), batch_size=1, name="sequence")
        y = keras.layers.LSTM(20)(x)
        y = keras.layers.Dense(3)(y)
        model = keras.Model(x, y, name=name)
    for layer in model.layers:
        if isinstance(layer, keras.layers.BatchNormalization):
            gamma, beta, mean, var = layer.get_weights()
            layer.set_weights([rng.uniform(0.5, 1.5, gamma.shape), rng.normal(0, 0.1, beta.shape),
                               rng.normal(0, 0.1, mean.shape), rng.uniform(0.5, 1.5, var.shape)])
    return model


def samples(model, count, seed):
    """Seeded inputs, one array per model input: uniform in [-1, 1), integer ids in [0, 30) for int inputs."""
    rng = np.random.default_rng(seed)
    arrays = []
    for tensor in model.inputs:
        shape = tuple(tensor.shape[1:])
        if tensor.dtype in ("int32", "int64") or "int" in str(tensor.dtype):
            arrays.append(rng.integers(0, 30, (count, *shape)).astype(np.float32))
        else:
            arrays.append(rng.uniform(-1, 1, (count, *shape)).astype(np.float32))
    return arrays if len(arrays) > 1 else arrays[0]


def convert(tf, model, form):
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    if form in ("dynamic", "float16", "int8"):
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if form == "sparse":
        converter.optimizations = [tf.lite.Optimize.EXPERIMENTAL_SPARSITY]
    if form == "float16":
        converter.target_spec.supported_types = [tf.float16]
    if form == "int8":
        data = samples(model, 32, 7)
        converter.representative_dataset = lambda: ([data[i:i + 1]] for i in range(len(data)))
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = tf.int8
        converter.inference_output_type = tf.int8
    return converter.convert()


def run_litert(path, inputs, names=None):
    """LiteRT's outputs for each sample; `inputs` one array (or a list, one per input, matched by the signature's
    input names `names` when given, else in order). Returns the inputs as given and the first output."""
    from ai_edge_litert.interpreter import Interpreter
    interpreter = Interpreter(model_path=path, num_threads=1)
    interpreter.allocate_tensors()
    details = interpreter.get_input_details()
    (out,) = interpreter.get_output_details()
    arrays = inputs if isinstance(inputs, list) else [inputs]
    if names:
        # In the file's input order (the order of the reference's inputs/<i>): LiteRT's tensor names are
        # serving_default_<Keras input name>:0.
        by_name = dict(zip(names, arrays))
        arrays = [by_name[d["name"][len("serving_default_"):].split(":")[0]] for d in details]
    given = [[] for _ in arrays]
    outputs = []
    for sample in range(len(arrays[0])):
        # An LSTM's states are variables that LiteRT carries from one invocation to the next: each sample
        # starts from zeros, as Keras (and the converted model) compute it.
        interpreter.reset_all_variables()
        for i, (inp, array) in enumerate(zip(details, arrays)):
            x = array[sample][None]
            if inp["dtype"] == np.int8:
                scale, zero = inp["quantization"]
                x = np.clip(np.round(x / scale) + zero, -128, 127).astype(np.int8)
            x = x.astype(inp["dtype"])
            given[i].append(x[0])
            interpreter.set_tensor(inp["index"], x)
        interpreter.invoke()
        outputs.append(interpreter.get_tensor(out["index"])[0].copy())
    return [np.stack(g) for g in given], np.stack(outputs)


# Every file the script writes, by name (`--only` takes these): the tf_keras models in their forms, then the rest.
KERAS_FIXTURES = [("small_cnn", ("float32", "dynamic", "float16", "int8")), ("mixed_ops", ("float32",)),
                  ("lstm", ("float32",)), ("space_sparse", ("sparse",)), ("upsample_embed", ("float32",)),
                  ("elementwise", ("float32",))]
FIXTURES = ["%s_%s" % (name, form) for name, forms in KERAS_FIXTURES for form in forms] + \
    ["classifier_with_metadata", "unsupported_ops", "trig_float32", "streaming_int8", "spectrogram_float32",
     "transpose_bias_custom", "columns_float32", "prelu_pad_float32"]


def write_module(tf, module, path):
    """Converts a tf.Module's `__call__` with TensorFlow's converter (its defaults: float32) to `path`."""
    with open(path, "wb") as handle:
        handle.write(tf.lite.TFLiteConverter.from_concrete_functions(
            [module.__call__.get_concrete_function()], module).convert())


def write_reference(h5py, path, given, outputs, computed_by, **attributes):
    """`<fixture>.reference.h5` beside `path`: `inputs/<i>` as given to LiteRT, `outputs/0` as it computed them
    (float32), root attributes `computed_by` and any others."""
    with h5py.File(path.replace(".tflite", ".reference.h5"), "w") as f:
        for i, values in enumerate(given):
            f.create_dataset("inputs/%d" % i, data=values.astype(np.float32))
        f.create_dataset("outputs/0", data=outputs.astype(np.float32))
        f.attrs["computed_by"] = computed_by
        for key, value in attributes.items():
            f.attrs[key] = value


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="Samples/Fixtures/tflite")
    parser.add_argument("--mediapipe-metadata", help="folder holding metadata_schema_py_generated.py and "
                        "schema_py_generated.py from mediapipe 0.10.14's wheel (mediapipe/tasks/metadata/)")
    parser.add_argument("--only", help="comma-separated fixture names (%s): write only these and merge their "
                        "entries into the existing expected.json" % ", ".join(FIXTURES))
    args = parser.parse_args()
    only = None
    if args.only:
        only = [name.strip() for name in args.only.split(",") if name.strip()]
        unknown = [name for name in only if name not in FIXTURES]
        if unknown:
            parser.error("unknown fixture(s) %s; known: %s" % (", ".join(unknown), ", ".join(FIXTURES)))
        for name in ("classifier_with_metadata", "transpose_bias_custom"):
            if name in only and not args.mediapipe_metadata:
                parser.error("%s needs --mediapipe-metadata" % name)
    wanted = lambda name: only is None or name in only
    os.makedirs(args.out, exist_ok=True)
    import h5py
    import tensorflow as tf
    import tf_keras as keras
    import ai_edge_litert
    computed_by = "ai-edge-litert %s (tensorflow %s converter)" % (
        getattr(ai_edge_litert, "__version__", "?"), tf.__version__)
    keras.utils.set_random_seed(39)
    facts = {}
    for name, forms in KERAS_FIXTURES:
        # Every model is built, in this order, even with --only: their seeded weights and Keras's layer names come
        # from one sequence, so that a fixture written alone is the same file as when all are written.
        model = build(keras, name)
        # (The other models' weights are too small for the dynamic-range form to quantize: it equals float32.)
        for form in forms:
            if not wanted("%s_%s" % (name, form)):
                continue
            path = os.path.join(args.out, "%s_%s.tflite" % (name, form))
            with open(path, "wb") as handle:
                handle.write(convert(tf, model, form))
            given, outputs = run_litert(path, samples(model, 2, 1000), [t.name.split(":")[0] for t in model.inputs]
                                        if len(model.inputs) > 1 else None)
            write_reference(h5py, path, given, outputs, computed_by)
            print(path, os.path.getsize(path))
            facts[os.path.basename(path)] = litert_facts(path)
    if args.mediapipe_metadata and wanted("classifier_with_metadata"):
        classifier_with_metadata(tf, keras, args.out, args.mediapipe_metadata)
        facts["classifier_with_metadata.tflite"] = litert_facts(
            os.path.join(args.out, "classifier_with_metadata.tflite"))
    if wanted("unsupported_ops"):
        unsupported_ops(tf, args.out)
    if wanted("trig_float32"):
        path = trig_float32(tf, h5py, args.out, computed_by)
        facts[os.path.basename(path)] = litert_facts(path)
    if wanted("columns_float32"):
        path = columns_float32(tf, h5py, args.out, computed_by)
        facts[os.path.basename(path)] = litert_facts(path)
    if wanted("streaming_int8"):
        path = streaming_int8(tf, h5py, args.out, computed_by)
        facts[os.path.basename(path)] = litert_facts(path)
    if wanted("spectrogram_float32"):
        path = spectrogram_float32(tf, h5py, args.out, computed_by)
        facts[os.path.basename(path)] = litert_facts(path)
    if args.mediapipe_metadata and wanted("transpose_bias_custom"):
        # Last: its model takes no weights from the seeded sequence (they are set from its own numpy generator).
        path, entry = transpose_bias_custom(
            tf, keras, h5py, args.out, args.mediapipe_metadata,
            "ai-edge-litert %s on the builtin TRANSPOSE_CONV form (tensorflow %s converter)" % (
                getattr(ai_edge_litert, "__version__", "?"), tf.__version__))
        facts[os.path.basename(path)] = entry
    if wanted("prelu_pad_float32"):
        # After every other fixture: its layers are named and its weights set from its own generator.
        path = prelu_pad_float32(tf, keras, h5py, args.out, computed_by)
        facts[os.path.basename(path)] = litert_facts(path)
    import json
    expected = os.path.join(args.out, "expected.json")
    if only is not None and os.path.exists(expected):
        # The other fixtures' entries as they are.
        with open(expected) as handle:
            facts = dict(json.load(handle)["models"], **facts)
    with open(expected, "w") as handle:
        json.dump({"computedBy": "ai-edge-litert %s" % getattr(ai_edge_litert, "__version__", "?"), "models": facts},
                  handle, indent=1, sort_keys=True)
        handle.write("\n")


def prelu_pad_float32(tf, keras, h5py, out, computed_by):
    """MediaPipe's blocks, small: an 8x8x3 image through Conv2D 6 3x3 same, PReLU with one slope per channel
    (shared_axes H and W: PRELU with slopes [1, 1, 6], as MediaPipe stores them), a zero padding of the channels
    to 8 (PAD on the last axis, MediaPipe's channel_padding), Conv2D 4 1x1, GlobalAveragePooling2D (MEAN) and
    Dense 3; named layers, weights from a numpy generator (seed 39); LiteRT's outputs on 2 seeded samples."""
    rng = np.random.default_rng(39)
    x = keras.Input((8, 8, 3), name="image")
    conv = keras.layers.Conv2D(6, 3, padding="same", name="conv")
    prelu = keras.layers.PReLU(shared_axes=[1, 2], name="prelu")
    pad = keras.layers.Lambda(lambda t: tf.pad(t, [[0, 0], [0, 0], [0, 0], [0, 2]]), name="channel_padding")
    conv2 = keras.layers.Conv2D(4, 1, name="conv2")
    dense = keras.layers.Dense(3, name="dense")
    y = dense(keras.layers.GlobalAveragePooling2D(name="pool")(conv2(pad(prelu(conv(x))))))
    model = keras.Model(x, y, name="prelu_pad")
    for layer in (conv, prelu, conv2, dense):
        layer.set_weights([rng.normal(0, 0.5, w.shape).astype(np.float32) for w in layer.get_weights()])
    path = os.path.join(out, "prelu_pad_float32.tflite")
    with open(path, "wb") as handle:
        handle.write(tf.lite.TFLiteConverter.from_keras_model(model).convert())
    values = np.random.default_rng(1000).uniform(-1, 1, (2, 8, 8, 3)).astype(np.float32)
    given, outputs = run_litert(path, values)
    write_reference(h5py, path, given[:1], outputs, computed_by)
    print(path, os.path.getsize(path), litert_facts(path)["operators"])
    return path


def unsupported_ops(tf, out):
    """Operators the converter does not handle, named at once in its error: a running sum over 16 values and
    its 3 largest (`top_k(cumsum(x), 3)`: CUMSUM, TOPK_V2)."""
    class Unsupported(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec((1, 16), tf.float32, name="values")])
        def __call__(self, values):
            return {"largest": tf.math.top_k(tf.math.cumsum(values, axis=1), 3).values}
    module = Unsupported()
    path = os.path.join(out, "unsupported_ops.tflite")
    write_module(tf, module, path)
    print(path, os.path.getsize(path), litert_facts(path)["operators"])


def trig_float32(tf, h5py, out, computed_by):
    """16 values through floor(3x) + sin(x) * cos(2x) (SIN, MUL, FLOOR, MUL, COS, MUL, ADD), float32, with LiteRT's
    outputs on 2 seeded samples as the float fixtures."""
    class Trig(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec((1, 16), tf.float32, name="values")])
        def __call__(self, values):
            return {"result": tf.math.floor(3.0 * values) + tf.math.sin(values) * tf.math.cos(2.0 * values)}
    module = Trig()
    path = os.path.join(out, "trig_float32.tflite")
    write_module(tf, module, path)
    values = np.random.default_rng(1000).uniform(-1, 1, (2, 16)).astype(np.float32)
    given, outputs = run_litert(path, values)
    write_reference(h5py, path, given[:1], outputs, computed_by)
    print(path, os.path.getsize(path), litert_facts(path)["operators"])
    return path


def columns_float32(tf, h5py, out, computed_by):
    """BirdNET's metadata model's front, small: 3 values with an open batch, each column taken alone (`x[:, i]`:
    STRIDED_SLICE with a shrunk axis, a tensor of the batch axis alone), scaled, through sin and floor, expanded
    back and concatenated, then a seeded Dense 4 (FULLY_CONNECTED) and a sigmoid; LiteRT's outputs on 2 seeded
    samples."""
    rng = np.random.default_rng(39)
    kernel = rng.normal(0, 0.5, (6, 4)).astype(np.float32)

    class Columns(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec((None, 3), tf.float32, name="position")])
        def __call__(self, position):
            a, b, c = position[:, 0], position[:, 1], position[:, 2]
            parts = [tf.math.sin(a * 1.5), tf.math.sin(b * 0.5 + 0.25), tf.math.floor(c * 4.0 + 0.5) / 4.0,
                     a * b, b - c, tf.math.cos(c * 2.0)]
            features = tf.concat([tf.expand_dims(p, -1) for p in parts], axis=1)
            return {"score": tf.math.sigmoid(tf.matmul(features, kernel))}
    module = Columns()
    path = os.path.join(out, "columns_float32.tflite")
    write_module(tf, module, path)
    values = np.random.default_rng(1000).uniform(-1, 1, (2, 3)).astype(np.float32)
    given, outputs = run_litert(path, values)
    write_reference(h5py, path, given[:1], outputs, computed_by)
    print(path, os.path.getsize(path), litert_facts(path)["operators"])
    return path


SPECTROGRAM_SAMPLES, SPECTROGRAM_BANDS = 4000, 12
# Per branch: name, frame_length, frame_step, fft_length, how the complex STFT becomes real. Both give 38 frames
# of the 4000 samples (1 + (4000 - 256) // 100 = 1 + (4000 - 128) // 104 = 38), so that they concatenate.
SPECTROGRAM_BRANCHES = [("real", 256, 100, 256, "cast"), ("magnitude", 128, 104, 128, "abs")]


def spectrogram_module(tf):
    """BirdNET's audio front end, small: a float32 signal of 4000 samples with an open batch (so that the converter
    leaves the framing's shape arithmetic in the file, as in BirdNET: SHAPE, SPLIT_V, FLOOR_DIV, PACK, RANGE,
    GATHER, REDUCE_PROD) normalized by its own min and max to [-1, 1], two tf.signal.stft branches (Hann window;
    the first one's real part by tf.cast, CAST of complex64, as BirdNET; the second one's magnitude by tf.abs,
    COMPLEX_ABS), each through a seeded nonnegative mel-like matrix [bins, 12] (tf.tensordot: FULLY_CONNECTED),
    squared (x * x), to the power 0.25 (POW), reversed on the bands (REVERSE_V2), transposed to
    [batch, 12, frames] and expanded; the two concatenated on the last axis, a Conv2D 4 3x3 same + ReLU, a global
    average (MEAN) and a Dense 4. Weights are seeded constants (numpy, seed 39)."""
    class Spectrogram(tf.Module):
        def __init__(self):
            super().__init__(name="spectrogram")
            rng = np.random.default_rng(39)
            self.mel = [tf.constant((rng.uniform(0, 1, (fft // 2 + 1, SPECTROGRAM_BANDS)) / (fft // 2 + 1))
                                    .astype(np.float32)) for _, _, _, fft, _ in SPECTROGRAM_BRANCHES]
            self.conv = tf.constant(rng.normal(0, 0.3, (3, 3, len(SPECTROGRAM_BRANCHES), 4)).astype(np.float32))
            self.conv_bias = tf.constant(rng.normal(0, 0.1, (4,)).astype(np.float32))
            self.dense = tf.constant(rng.normal(0, 0.3, (4, 4)).astype(np.float32))
            self.dense_bias = tf.constant(rng.normal(0, 0.1, (4,)).astype(np.float32))

        @tf.function(input_signature=[tf.TensorSpec((None, SPECTROGRAM_SAMPLES), tf.float32, name="signal")])
        def __call__(self, signal):
            x = signal - tf.reduce_min(signal, axis=1, keepdims=True)
            x = x / (tf.reduce_max(x, axis=1, keepdims=True) + 1e-6)
            x = (x - 0.5) * 2.0
            branches = []
            for (_, length, step, fft, real), mel in zip(SPECTROGRAM_BRANCHES, self.mel):
                spectrum = tf.signal.stft(x, length, step, fft, window_fn=tf.signal.hann_window)
                # TensorFlow's cast of a complex tensor to float keeps its real part (BirdNET's CAST).
                spectrum = tf.cast(spectrum, tf.float32) if real == "cast" else tf.abs(spectrum)
                bands = tf.tensordot(spectrum, mel, 1)
                bands = tf.pow(bands * bands, 0.25)
                bands = tf.transpose(tf.reverse(bands, [-1]), [0, 2, 1])
                branches.append(tf.expand_dims(bands, -1))
            y = tf.concat(branches, axis=-1)
            y = tf.nn.relu(tf.nn.conv2d(y, self.conv, 1, "SAME") + self.conv_bias)
            y = tf.reduce_mean(y, axis=[1, 2])
            return {"scores": tf.matmul(y, self.dense) + self.dense_bias}

    return Spectrogram()


SPECTROGRAM_OPERATORS = {"REDUCE_MIN", "SUB", "REDUCE_MAX", "ADD", "DIV", "MUL", "SHAPE", "SPLIT_V", "RESHAPE",
                         "FLOOR_DIV", "PACK", "CONCATENATION", "STRIDED_SLICE", "MAXIMUM", "RANGE", "GATHER",
                         "EXPAND_DIMS", "RFFT2D", "SQUEEZE", "CAST", "COMPLEX_ABS", "REDUCE_PROD",
                         "FULLY_CONNECTED", "POW", "REVERSE_V2", "TRANSPOSE", "CONV_2D", "MEAN"}


def spectrogram_float32(tf, h5py, out, computed_by):
    """The spectrogram model (spectrogram_module), float32, with LiteRT's outputs on 2 seeded signals uniform in
    [-1, 1) (seed 1000) as the float fixtures. Its input is [-1, 4000] in the file (shape_signature), which
    LiteRT allocates as [1, 4000]: run_litert gives it one signal at a time, a batch of 1."""
    module = spectrogram_module(tf)
    path = os.path.join(out, "spectrogram_float32.tflite")
    write_module(tf, module, path)
    operators = litert_facts(path)["operators"]
    assert set(operators) == SPECTROGRAM_OPERATORS, sorted(set(operators) ^ SPECTROGRAM_OPERATORS)
    signals = np.random.default_rng(1000).uniform(-1, 1, (2, SPECTROGRAM_SAMPLES)).astype(np.float32)
    given, outputs = run_litert(path, signals)
    write_reference(h5py, path, given[:1], outputs, computed_by)
    print(path, os.path.getsize(path), operators)
    return path


STREAM_FRAMES, STREAM_FEATURES, STREAM_STEPS = 3, 8, 6


def streaming_module(tf):
    """A microWakeWord-style streaming model: each call takes 3 new frames of 8 features, and three tf.Variable
    ring buffers (zeros at first) keep the frames the next call's convolutions need:

    1. `stream_input/states` [1, 2, 1, 8]: concatenated before the 3 new frames (reshaped to [1, 3, 1, 8]); a
       Conv2D 6 5x1 stride 3 valid + ReLU over the 5 frames gives 1 frame; the last 2 of the 5 are kept.
    2. `stream_mix/states` [1, 4, 1, 6]: concatenated before that frame; the 5 frames split 2 + 4 channels
       (tf.split, SPLIT_V); the first part's last 3 frames through a DepthwiseConv2D 3x1, the second part's 5
       through a DepthwiseConv2D 5x1, the two concatenated, a Conv2D 8 1x1 + ReLU; the last 4 frames kept.
    3. `stream_out/states` [1, 2, 1, 8]: concatenated before that frame; the 3 frames flattened (24), Dense 1,
       sigmoid; the last 2 kept.

    Weights are seeded constants (numpy, seed 39), not variables, so that the only variables are the states."""
    frames, features = STREAM_FRAMES, STREAM_FEATURES

    class Streaming(tf.Module):
        def __init__(self):
            super().__init__(name="streaming")
            rng = np.random.default_rng(39)
            const = lambda shape, std: tf.constant(rng.normal(0, std, shape).astype(np.float32))
            self.conv, self.conv_bias = const((5, 1, features, 6), 0.3), const((6,), 0.1)
            self.depthwise_a, self.depthwise_a_bias = const((3, 1, 2, 1), 0.3), const((2,), 0.1)
            self.depthwise_b, self.depthwise_b_bias = const((5, 1, 4, 1), 0.3), const((4,), 0.1)
            self.pointwise, self.pointwise_bias = const((1, 1, 6, 8), 0.3), const((8,), 0.1)
            self.dense, self.dense_bias = const((3 * 8, 1), 0.2), const((1,), 0.1)
            self.input_states = tf.Variable(tf.zeros((1, 2, 1, features)), trainable=False,
                                            name="stream_input/states")
            self.mix_states = tf.Variable(tf.zeros((1, 4, 1, 6)), trainable=False, name="stream_mix/states")
            self.out_states = tf.Variable(tf.zeros((1, 2, 1, 8)), trainable=False, name="stream_out/states")

        @tf.function(input_signature=[tf.TensorSpec((1, frames, features), tf.float32, name="input_audio")])
        def __call__(self, input_audio):
            x = tf.reshape(input_audio, (1, frames, 1, features))
            buffer = tf.concat([self.input_states, x], axis=1)
            self.input_states.assign(buffer[:, -2:])
            y = tf.nn.relu(tf.nn.conv2d(buffer, self.conv, (1, 3, 1, 1), "VALID") + self.conv_bias)
            buffer = tf.concat([self.mix_states, y], axis=1)
            self.mix_states.assign(buffer[:, -4:])
            a, b = tf.split(buffer, [2, 4], axis=3)
            a = tf.nn.depthwise_conv2d(a[:, -3:], self.depthwise_a, (1, 1, 1, 1), "VALID") + self.depthwise_a_bias
            b = tf.nn.depthwise_conv2d(b, self.depthwise_b, (1, 1, 1, 1), "VALID") + self.depthwise_b_bias
            y = tf.nn.relu(tf.nn.conv2d(tf.concat([a, b], axis=3), self.pointwise, (1, 1, 1, 1), "VALID") +
                           self.pointwise_bias)
            buffer = tf.concat([self.out_states, y], axis=1)
            self.out_states.assign(buffer[:, -2:])
            logit = tf.matmul(tf.reshape(buffer, (1, 3 * 8)), self.dense) + self.dense_bias
            return {"probability": tf.sigmoid(logit)}

    return Streaming()


def stream_features(count, seed):
    """Seeded features in [0, 26] (microWakeWord's range: its input scale 26/255), one [3, 8] step each."""
    return np.random.default_rng(seed).uniform(0, 26, (count, STREAM_FRAMES, STREAM_FEATURES)).astype(np.float32)


def streaming_int8(tf, h5py, out, computed_by):
    """The streaming model converted as microWakeWord converts its models: resource variables kept
    (`experimental_enable_resource_variables`) and quantized (`_experimental_variable_quantization`), full
    integer from 32 seeded steps of features (one of them holding 0 and 26 so that the input's scale is 26/255),
    int8 input, uint8 output. LiteRT's outputs on 6 seeded steps in order, its variables carried from one step
    to the next."""
    module = streaming_module(tf)
    converter = tf.lite.TFLiteConverter.from_concrete_functions([module.__call__.get_concrete_function()], module)
    converter.experimental_enable_resource_variables = True
    converter._experimental_variable_quantization = True
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    data = stream_features(32, 7)
    data[0, 0, 0], data[0, 0, 1] = 0, 26
    converter.representative_dataset = lambda: ([step[None]] for step in data)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = tf.int8
    converter.inference_output_type = tf.uint8
    path = os.path.join(out, "streaming_int8.tflite")
    with open(path, "wb") as handle:
        handle.write(converter.convert())
    steps = stream_features(STREAM_STEPS, 1000)
    given, outputs = run_litert_streaming(path, steps)
    # The steps depend on each other: each step alone, from the initial states, gives other outputs.
    alone = np.stack([run_litert_streaming(path, step[None])[1][0] for step in steps])
    assert not np.array_equal(alone[1:], outputs[1:]), "the states change nothing"
    write_reference(h5py, path, given[:1], outputs, computed_by, streaming=1)
    print(path, os.path.getsize(path), litert_facts(path)["operators"])
    print("  streaming outputs", outputs.ravel().tolist(), "each step alone", alone.ravel().tolist())
    return path


def run_litert_streaming(path, steps):
    """LiteRT's outputs for `steps` (one array, a step per row, float; quantized for an int8 input) invoked in
    order on one interpreter, its variables carried from one step to the next. A fresh interpreter starts from
    the variables' initial values: its first invocation runs CALL_ONCE's initializing subgraph, and
    reset_all_variables() does not reset resource variables (VAR_HANDLE), only variable tensors (LSTM states)."""
    from ai_edge_litert.interpreter import Interpreter
    interpreter = Interpreter(model_path=path, num_threads=1)
    interpreter.allocate_tensors()
    interpreter.reset_all_variables()
    (inp,) = interpreter.get_input_details()
    (out,) = interpreter.get_output_details()
    given, outputs = [], []
    for step in steps:
        x = step[None]
        if inp["dtype"] == np.int8:
            scale, zero = inp["quantization"]
            x = np.clip(np.round(x / scale) + zero, -128, 127)
        x = x.astype(inp["dtype"])
        given.append(x[0])
        interpreter.set_tensor(inp["index"], x)
        interpreter.invoke()
        outputs.append(interpreter.get_tensor(out["index"])[0].copy())
    return [np.stack(given)], np.stack(outputs)


LABELS = ["cat", "dog", "bird"]


def classifier_with_metadata(tf, keras, out, generated):
    """A Teachable Machine-style image classifier: pixels normalized by (pixel - 127.5) / 127.5 inside the app,
    softmax over 3 classes, with TFLite Model Metadata as tflite-support's writers make it: the input an RGB image
    with NormalizationOptions mean 127.5 and std 127.5, the output's labels in `labels.txt` (TENSOR_AXIS_LABELS),
    zipped onto the end of the file (stored, as the metadata populator writes it). The metadata FlatBuffer and the
    model are written with the generated Python of MediaPipe's copies of both schemas (pure Python, flatbuffers)."""
    import sys
    import zipfile
    import flatbuffers
    sys.path.insert(0, generated)
    import metadata_schema_py_generated as meta
    import schema_py_generated as schema

    x = keras.Input((32, 32, 3), name="image")
    y = keras.layers.Conv2D(6, 3, strides=2, activation="relu")(x)
    y = keras.layers.GlobalAveragePooling2D()(y)
    y = keras.layers.Dense(len(LABELS), activation="softmax")(y)
    flat = tf.lite.TFLiteConverter.from_keras_model(keras.Model(x, y, name="classifier")).convert()

    image = meta.TensorMetadataT()
    image.name = "image"
    image.content = meta.ContentT()
    image.content.contentPropertiesType = meta.ContentProperties.ImageProperties
    image.content.contentProperties = meta.ImagePropertiesT()
    image.content.contentProperties.colorSpace = meta.ColorSpaceType.RGB
    normalization = meta.ProcessUnitT()
    normalization.optionsType = meta.ProcessUnitOptions.NormalizationOptions
    normalization.options = meta.NormalizationOptionsT()
    normalization.options.mean = [127.5]
    normalization.options.std = [127.5]
    image.processUnits = [normalization]
    probability = meta.TensorMetadataT()
    probability.name = "probability"
    labels = meta.AssociatedFileT()
    labels.name = "labels.txt"
    labels.type = meta.AssociatedFileType.TENSOR_AXIS_LABELS
    probability.associatedFiles = [labels]
    subgraph = meta.SubGraphMetadataT()
    subgraph.inputTensorMetadata = [image]
    subgraph.outputTensorMetadata = [probability]
    model_meta = meta.ModelMetadataT()
    model_meta.name = "classifier"
    model_meta.description = "Cats, dogs and birds (a fixture)"
    model_meta.subgraphMetadata = [subgraph]
    model_meta.minParserVersion = "1.0.0"
    builder = flatbuffers.Builder(0)
    builder.Finish(model_meta.Pack(builder), file_identifier=b"M001")
    metadata_bytes = bytes(builder.Output())

    model = schema.ModelT.InitFromPackedBuf(bytearray(flat), 0)
    buffer = schema.BufferT()
    buffer.data = list(metadata_bytes)
    model.buffers.append(buffer)
    entry = schema.MetadataT()
    entry.name = "TFLITE_METADATA"
    entry.buffer = len(model.buffers) - 1
    model.metadata = (model.metadata or []) + [entry]
    builder = flatbuffers.Builder(0)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    path = os.path.join(out, "classifier_with_metadata.tflite")
    with open(path, "wb") as handle:
        handle.write(bytes(builder.Output()))
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_STORED) as archive:
        info = zipfile.ZipInfo("labels.txt", date_time=(2026, 12, 6, 0, 0, 0))
        archive.writestr(info, "\n".join(LABELS) + "\n")
    # LiteRT's outputs on pixels 0-255 normalized as the metadata says.
    rng = np.random.default_rng(1000)
    pixels = rng.integers(0, 256, (2, 32, 32, 3)).astype(np.float32)
    given, outputs = run_litert(path, (pixels - 127.5) / 127.5)
    import h5py
    with h5py.File(path.replace(".tflite", ".reference.h5"), "w") as f:
        f.create_dataset("inputs/0", data=given[0].astype(np.float32))
        f.create_dataset("outputs/0", data=outputs.astype(np.float32))
        f.create_dataset("pixels/0", data=pixels)
        f.attrs["labels"] = __import__("json").dumps(LABELS)
    print(path, os.path.getsize(path))


def transpose_bias_model(keras):
    """Input 8x8x4 (batch 1, so that the transposed convolutions' output shapes are constants), Conv2D 8 3x3 same +
    ReLU, Conv2DTranspose 6 3x3 stride 2 same (16x16), LeakyReLU(0.2) (not ReLU: the converter would fuse it into
    the TRANSPOSE_CONV, which MediaPipe's custom operator cannot hold), Conv2DTranspose 3 3x2 (KH 3, KW 2) strides
    (1, 2) valid (18x32, so that the custom options' stride_width and stride_height differ), sigmoid. Layers named,
    every weight and bias set from numpy (seed 39, biases nonzero so that the converter keeps them as
    TRANSPOSE_CONV's input 3): the model does not depend on the seeded Keras sequence of the other fixtures."""
    rng = np.random.default_rng(39)
    x = keras.Input((8, 8, 4), batch_size=1, name="image")
    y = keras.layers.Conv2D(8, 3, padding="same", activation="relu", name="conv")(x)
    y = keras.layers.Conv2DTranspose(6, 3, strides=2, padding="same", name="up_same")(y)
    y = keras.layers.LeakyReLU(0.2, name="leaky")(y)
    y = keras.layers.Conv2DTranspose(3, (3, 2), strides=(1, 2), padding="valid", name="up_valid")(y)
    y = keras.layers.Activation("sigmoid", name="mask")(y)
    model = keras.Model(x, y, name="transpose_bias")
    for layer in model.layers:
        weights = layer.get_weights()
        if weights:
            kernel, bias = weights
            layer.set_weights([rng.normal(0, 0.3, kernel.shape).astype(np.float32),
                               rng.normal(0, 0.1, bias.shape).astype(np.float32)])
    return model


# MediaPipe's custom operator as the Swift reader names it; custom options (TfLitePadding: 1 SAME, 2 VALID;
# stride_width, stride_height) of the fixture's two transposed convolutions, in order.
TRANSPOSE_BIAS_CUSTOM = "CUSTOM(Convolution2DTransposeBias)"
TRANSPOSE_BIAS_OPTIONS = [(1, 2, 2), (2, 2, 1)]


def transpose_bias_custom(tf, keras, h5py, out, generated, computed_by):
    """transpose_bias_model converted by TensorFlow's converter (two builtin TRANSPOSE_CONV with a bias), rewritten
    by Samples/tflite_rewrite.py into MediaPipe's Convolution2DTransposeBias custom operator (input, weights, bias;
    12 bytes of custom options), as MediaPipe's segmentation models hold it. The reference is LiteRT's outputs on the
    builtin form (the file as the converter wrote it, in a temporary folder) for 2 seeded samples uniform in [-1, 1)
    (seed 1000), as the float fixtures. The expected.json entry is what LiteRT reads of the builtin form, each
    TRANSPOSE_CONV named as the custom file holds it (CUSTOM(Convolution2DTransposeBias), the Swift reader's name;
    LiteRT's own list of the custom file names it Convolution2DTransposeBias, checked to agree). Returns the path and
    the entry."""
    import struct
    import sys
    import tempfile
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import tflite_rewrite
    schema = tflite_rewrite.load_schema(generated)
    model = transpose_bias_model(keras)
    builtin = tf.lite.TFLiteConverter.from_keras_model(model).convert()
    custom, count = tflite_rewrite.builtin_to_custom(builtin, schema)
    assert count == len(TRANSPOSE_BIAS_OPTIONS), count
    path = os.path.join(out, "transpose_bias_custom.tflite")
    with open(path, "wb") as handle:
        handle.write(custom)
    # The file as read back: the custom operators with their 3 inputs and 12 bytes of options, no TRANSPOSE_CONV.
    read = schema.ModelT.InitFromPackedBuf(bytearray(custom), 0)
    held = []
    for op in read.subgraphs[0].operators:
        code = read.operatorCodes[op.opcodeIndex]
        assert code.builtinCode != schema.BuiltinOperator.TRANSPOSE_CONV
        if code.customCode is not None:
            assert code.customCode == b"Convolution2DTransposeBias" and code.builtinCode == \
                schema.BuiltinOperator.CUSTOM and code.version == 1, vars(code)
            options = np.asarray(op.customOptions, dtype=np.uint8).tobytes()
            assert len(op.inputs) == 3 and len(options) == 12 and op.builtinOptions is None, (op.inputs, options)
            held.append(struct.unpack("<iii", options))
    assert held == TRANSPOSE_BIAS_OPTIONS, held
    with tempfile.TemporaryDirectory() as folder:
        builtin_path = os.path.join(folder, "transpose_bias_builtin.tflite")
        with open(builtin_path, "wb") as handle:
            handle.write(builtin)
        given, outputs = run_litert(builtin_path, samples(model, 2, 1000))
        facts = litert_facts(builtin_path)
        # The custom form rewritten back to the builtin one computes the same.
        again_path = os.path.join(folder, "transpose_bias_again.tflite")
        with open(again_path, "wb") as handle:
            handle.write(tflite_rewrite.custom_to_builtin(custom, schema)[0])
        assert np.array_equal(run_litert(again_path, given[0])[1], outputs)
    builtin_names = facts["operators"]
    facts["operators"] = [TRANSPOSE_BIAS_CUSTOM if name == "TRANSPOSE_CONV" else name for name in builtin_names]
    assert facts["operators"] == tflite_rewrite.operator_names(custom, schema), facts["operators"]
    # LiteRT reads the custom file too (it only cannot run it without its default XNNPACK delegate, which
    # implements MediaPipe's operator).
    direct = litert_facts(path)
    direct["operators"] = [TRANSPOSE_BIAS_CUSTOM if name == "Convolution2DTransposeBias" else name
                           for name in direct["operators"]]
    assert direct == facts, (direct, facts)
    write_reference(h5py, path, given[:1], outputs, computed_by)
    delegated = run_litert(path, given[0])[1]
    print(path, os.path.getsize(path), "bytes (builtin form %d)" % len(builtin), facts["operators"],
          "builtin", builtin_names, "outputs", outputs.shape, float(outputs.min()), float(outputs.max()),
          "custom form under XNNPACK differs by", float(np.abs(delegated - outputs).max()))
    return path, facts


def litert_facts(path):
    """What LiteRT's interpreter reads of the file: its operators in order, and each input's and output's name,
    shape, type and quantization (scale, zero point)."""
    from ai_edge_litert.interpreter import Interpreter
    interpreter = Interpreter(model_path=path)
    def tensor(detail):
        scale, zero = detail["quantization"]
        return {"name": detail["name"], "shape": [int(d) for d in detail["shape"]],
                "type": np.dtype(detail["dtype"]).name, "scale": float(scale), "zeroPoint": int(zero)}
    return {"operators": [op["op_name"] for op in interpreter._get_ops_details()],
            "inputs": [tensor(d) for d in interpreter.get_input_details()],
            "outputs": [tensor(d) for d in interpreter.get_output_details()]}


if __name__ == "__main__":
    main()
