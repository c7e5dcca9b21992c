#!/usr/bin/env python3
"""TensorFlow Lite fixtures (issue 39): small tf_keras models converted by TensorFlow's own TFLiteConverter, in
float32, dynamic-range (int8 weights), float16 (float16 weights behind DEQUANTIZE) and full-integer (int8
activations) forms, with LiteRT's outputs. Run by hand, not in CI, in the keras3 venv of
Samples/requirements-keras3.txt plus LiteRT (ai-edge-litert 2.3.0, the interpreter that replaces tf.lite's):

    /tmp/venv-keras3/bin/pip install ai-edge-litert==2.3.0
    /tmp/venv-keras3/bin/python Samples/make_tflite_fixtures.py --out Samples/Fixtures/tflite \
        --mediapipe-metadata /tmp/mediapipe/mediapipe/tasks/metadata

Writes `<model>_<form>.tflite`, `<model>_<form>.reference.h5` and `expected.json` (per file, what LiteRT's interpreter
reads: its operators in order, each input's and output's tensor name, shape, type and quantization), and (2 seeded samples: inputs/0 as the model takes
them, outputs/0 as LiteRT computed them, root attribute computed_by). Models (tf_keras 2.21, seeded weights;
BatchNormalization statistics seeded so that folding them is visible):

| model | layers |
|---|---|
| `small_cnn` | Input 32x32x3, Conv2D 8 3x3 same + ReLU, DepthwiseConv2D 3x3 stride 2 same, BatchNormalization, ReLU6, Conv2D 12 1x1, MaxPooling2D 2, AveragePooling2D 2 (valid), Flatten, Dense 16 ReLU (3072 weights: the dynamic-range form quantizes weights of 1024 elements or more), Dense 5 softmax |
| `mixed_ops` | Input 16x16x4, two Conv2D branches added, multiplied by a constant, concatenated with the input, ZeroPadding2D, LeakyReLU(0.2), hard swish, UpSampling2D bilinear, Conv2D, GlobalAveragePooling2D, Dense 3, tanh |
| `space_sparse` | Input 8x8x16, depth_to_space 2 (DEPTH_TO_SPACE), Conv2D 32 3x3 same + ReLU with 85% of its weights zero (form `sparse`: `optimizations=[EXPERIMENTAL_SPARSITY]`, stored sparse), GlobalAveragePooling2D, Dense 4 |
| `upsample_embed` | two inputs: an 8x8x4 image through Conv2DTranspose 6 3x3 stride 2 same + ReLU (TRANSPOSE_CONV), Conv2D 2 1x1 and GlobalAveragePooling2D; 10 int32 token ids through Embedding(30, 8) (GATHER), GlobalAveragePooling1D and Dense 2; the two added |
| `elementwise` | 16 values through where(x > 0.1, exp, sqrt(abs)), maximum with the square, minimum of rsqrt and -x + 2, log, a cast comparison (GREATER, SELECT_V2, EXP, SQRT, ABS, MAXIMUM, SQUARE, RSQRT, MINIMUM, NEG/MUL, LOG, LESS_EQUAL, CAST...) |
| `lstm` | Input (10, 6) with a batch of 1 (so that the converter fuses the LSTM), LSTM 20 (its recurrent kernel large enough to be quantized), Dense 3 |

`classifier_with_metadata.tflite` (with `--mediapipe-metadata DIR`: the two generated Python files of
`mediapipe/tasks/metadata/` from mediapipe 0.10.14's wheel, `pip download mediapipe==0.10.14 --no-deps`): a
Teachable Machine-style classifier whose TFLite Model Metadata says the input is an RGB image normalized by mean 127.5
and std 127.5 and names the output's labels in a `labels.txt` zipped onto the file; its reference holds the pixels
too.

`unsupported_ops.tflite` (SIN then FLOOR, operators the converter does not handle) has no reference.

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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="Samples/Fixtures/tflite")
    parser.add_argument("--mediapipe-metadata", help="folder holding metadata_schema_py_generated.py and "
                        "schema_py_generated.py from mediapipe 0.10.14's wheel (mediapipe/tasks/metadata/)")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    import h5py
    import tensorflow as tf
    import tf_keras as keras
    import ai_edge_litert
    keras.utils.set_random_seed(39)
    facts = {}
    for name in ("small_cnn", "mixed_ops", "lstm", "space_sparse", "upsample_embed", "elementwise"):
        model = build(keras, name)
        # (The other models' weights are too small for the dynamic-range form to quantize: it equals float32.)
        forms = ("float32", "dynamic", "float16", "int8") if name == "small_cnn" else \
            ("sparse",) if name == "space_sparse" else ("float32",)
        for form in forms:
            path = os.path.join(args.out, "%s_%s.tflite" % (name, form))
            with open(path, "wb") as handle:
                handle.write(convert(tf, model, form))
            given, outputs = run_litert(path, samples(model, 2, 1000), [t.name.split(":")[0] for t in model.inputs]
                                        if len(model.inputs) > 1 else None)
            with h5py.File(path.replace(".tflite", ".reference.h5"), "w") as f:
                for i, values in enumerate(given):
                    f.create_dataset("inputs/%d" % i, data=values.astype(np.float32))
                f.create_dataset("outputs/0", data=outputs.astype(np.float32))
                f.attrs["computed_by"] = "ai-edge-litert %s (tensorflow %s converter)" % (
                    getattr(ai_edge_litert, "__version__", "?"), tf.__version__)
            print(path, os.path.getsize(path))
            facts[os.path.basename(path)] = litert_facts(path)
    if args.mediapipe_metadata:
        classifier_with_metadata(tf, keras, args.out, args.mediapipe_metadata)
        facts["classifier_with_metadata.tflite"] = litert_facts(
            os.path.join(args.out, "classifier_with_metadata.tflite"))
    # Operators the converter does not handle: SIN and FLOOR, named at once in its error.
    x = keras.Input((4,), name="values")
    y = keras.layers.Lambda(lambda t: tf.math.floor(tf.math.sin(t)))(x)
    with open(os.path.join(args.out, "unsupported_ops.tflite"), "wb") as handle:
        handle.write(tf.lite.TFLiteConverter.from_keras_model(keras.Model(x, y)).convert())
    import json
    with open(os.path.join(args.out, "expected.json"), "w") as handle:
        json.dump({"computedBy": "ai-edge-litert %s" % getattr(ai_edge_litert, "__version__", "?"), "models": facts},
                  handle, indent=1, sort_keys=True)
        handle.write("\n")


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
