#!/usr/bin/env python3
"""ONNX fixtures written by tf2onnx from TensorFlow SavedModels (the `--saved-model` route), with references.

Run by hand (not in CI), in the venv of requirements-tf2onnx.txt (Python 3.11; TensorFlow 2.15.1, tf2onnx 1.16.1):

    python3 -m venv /tmp/venv-tf2onnx
    /tmp/venv-tf2onnx/bin/pip install -r Samples/requirements-tf2onnx.txt
    /tmp/venv-tf2onnx/bin/python Samples/make_exporter_fixtures_savedmodel.py

Each model is a small tf.keras 2.15 model with seeded numpy weights (kernels normal/sqrt(fan_in), recurrent
kernels normal/sqrt(units), biases normal*0.5, embeddings normal, BatchNormalization gamma/beta/mean normal and
variance uniform(0.5, 2)), saved as a SavedModel in a temporary folder (`tf.saved_model.save` with an explicit
signature, or Keras' `model.export`) and converted as a user would, with the command line:
`python -m tf2onnx.convert --saved-model DIR --output F.onnx --opset 13`. Every model is built and converted in
a fresh process (Keras numbers layers and models, tf2onnx the nodes it makes, per process), twice. tf2onnx 1.16.1
is not byte-deterministic on the recurrent models even on the same SavedModel with PYTHONHASHSEED fixed: when it
merges duplicate constants (the LSTM's zero h and c states, Slice axes) which copy survives, and so names such as
`const_axes__54`/`__64`, changes from run to run. So the script compares exports by `canonical_form`
(exporter_references.py: every made-up name replaced by what it stands for), asserts the two exports are
equivalent, and keeps an existing `.onnx` that is equivalent to the new export, so a rerun leaves the files as
they are.

Writes into `--out` (default `Fixtures/onnx/exporters/tf_savedmodel/`):

| file | model | saved with |
|---|---|---|
| `sm_gray_cnn.onnx` | input `image` [1,48,48,1] float32 (one-channel, channels last, batch fixed at 1 by the signature): Conv2D 8 3x3 same + BatchNormalization + ReLU, MaxPool 2, Conv2D 16 3x3 stride 2 + BatchNormalization + ReLU, MaxPool 2, Flatten, Dense 7 softmax (labels angry, disgust, fear, happy, sad, surprise, neutral) | `tf.saved_model.save(model, dir, signatures=f.get_concrete_function(TensorSpec([1,48,48,1])))` |
| `sm_text_lstm.onnx` | input `tokens` [unk,12] int32 token ids < 20: Embedding 20x8, LSTM 6, Dense 3 softmax (labels neg, neu, pos) | `tf.saved_model.save(model, dir)` (Keras' own serving signature, batch unknown) |
| `sm_text_rnn_gru.onnx` | input `tokens` [unk,12] int32: Embedding 20x8, SimpleRNN 6 (return_sequences), GRU 5 (reset_after), Dense 3 softmax | `model.export(dir)` (Keras' ExportArchive; output named `output_0`) |
| `sm_text_bilstm_seq.onnx` | input `tokens` [unk,12] int32: Embedding 20x8, Bidirectional(LSTM 4, return_sequences) concat, Dense 3 softmax on every step (a tagger); output [unk,unk,3] | `tf.saved_model.save(model, dir)` |
| `sm_text_float_ids.onnx` | input `tokens` [unk,12] float32 (Keras' default Input dtype; whole-number ids < 20): Embedding 20x8 (its cast to int32 becomes an ONNX Cast), GlobalAveragePooling1D, Dense 2 softmax (labels neg, pos) | `tf.saved_model.save(model, dir)` |
| `*.reference.json`, `*.reference.h5` | 3 seeded samples of batch 1 (the image: uniform [-1, 1], NHWC; tokens: uniform integers 0..19), onnxruntime's outputs, checked against the Keras model and the reloaded SavedModel's signature (rtol 1e-4, atol 1e-5); formats in exporter_references.py: token ids are JSON integers and float32 in the HDF5 file (attribute dtype int32) | |
| `../savedmodel_manifest.json` | per model: exporter and versions, opset, ir_version, declared dims (tf2onnx's `unk__N` symbols kept), op-type histogram, odd forms found (`features`), notes | |
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

PINS = {"tensorflow-cpu": "2.15.1", "tf2onnx": "1.16.1", "onnx": "1.17.0", "onnxruntime": "1.20.1"}
VOCAB, STEPS = 20, 12
# name, seed, labels
FIXTURES = [
    ("sm_gray_cnn", 31, ["angry", "disgust", "fear", "happy", "sad", "surprise", "neutral"]),
    ("sm_text_lstm", 32, ["neg", "neu", "pos"]),
    ("sm_text_rnn_gru", 33, None),
    ("sm_text_bilstm_seq", 34, None),
    ("sm_text_float_ids", 35, ["neg", "pos"]),
]
NOTES = {
    "sm_gray_cnn": "Batch fixed at 1 by the saved signature. tf2onnx keeps the NHWC interface; with one channel the "
                   "NHWC->NCHW step is a Reshape (new_shape__N), not a Transpose, and a Transpose perm [0,2,3,1] goes "
                   "back before Flatten (Reshape). BatchNormalization is folded into the Conv weights (*_fused_bn); "
                   "the stride-2 SAME conv has asymmetric pads [0,0,1,1]; Dense is Gemm. Names are TensorFlow's "
                   "(StatefulPartitionedCall/gray_cnn/conv1/BiasAdd__7:0: '/' and ':').",
    "sm_text_lstm": "Batch is tf2onnx's symbol unk__N on input and output (two different symbols). The int32 token ids "
                    "feed Gather directly (no Cast of the indices; the table is named Func/StatefulPartitionedCall/"
                    "input/_1:0). The zero initial state is built at run time: Shape -> Cast int32 -> Slice -> Concat "
                    "-> Cast int64 -> Expand -> Unsqueeze, one tensor used for both initial_h and initial_c. One ONNX "
                    "LSTM (forward); Y_h and Y_c are unused: the last step is taken from Y by Squeeze -> Slice [-1:] "
                    "-> Squeeze. Dense is MatMul + Add. Opset imports also name ai.onnx.ml 2.",
    "sm_text_rnn_gru": "SimpleRNN stays TensorFlow's while loop, as an ONNX Loop with an empty trip count, a "
                       "condition computed by Less of two constants, the cell weights passed as loop-carried values, "
                       "7 outputs (the scan output is the sequence); body: Gather of step t, MatMul, Add, Tanh, "
                       "Identity, Cast to float and Less for the condition. The GRU is one ONNX GRU "
                       "(linear_before_reset 1 from reset_after), its last step taken from Y like the LSTM's. Keras' "
                       "model.export names the output output_0. Batch symbols unk__N.",
    "sm_text_bilstm_seq": "Bidirectional LSTM returning sequences is one ONNX LSTM direction=bidirectional (one zero "
                          "state Concat'ed for both directions); its Y [T,2,N,H] is split per direction by Slice + "
                          "Squeeze, Concat on axis 2 and Transpose [1,0,2] to [N,T,2H]. The per-step "
                          "Dense is TensorFlow's Tensordot: Shape, Gather, ReduceProd, Concat, Reshape to 2-D, MatMul, "
                          "Reshape back (Casts int32/int64). Output [unk__N, unk__M, 3]: the time axis is unknown too.",
    "sm_text_float_ids": "Keras' default float32 Input: the token ids arrive as floats and tf2onnx writes Keras "
                         "Embedding's own cast as Cast(to INT32) of the computed input before Gather (the form "
                         "tf2onnx exports of Keras text classifiers have). GlobalAveragePooling1D is ReduceMean "
                         "over the steps; Dense is MatMul + Add.",
}


def build(name):
    import tensorflow as tf

    layers = tf.keras.layers
    if name == "sm_gray_cnn":
        image = tf.keras.Input((48, 48, 1), name="image")
        x = layers.Conv2D(8, 3, padding="same", name="conv1")(image)
        x = layers.ReLU(name="relu1")(layers.BatchNormalization(epsilon=1e-3, name="bn1")(x))
        x = layers.MaxPooling2D(2, name="pool1")(x)
        x = layers.Conv2D(16, 3, strides=2, padding="same", name="conv2")(x)
        x = layers.ReLU(name="relu2")(layers.BatchNormalization(name="bn2")(x))
        x = layers.MaxPooling2D(2, name="pool2")(x)
        out = layers.Dense(7, activation="softmax", name="emotion")(layers.Flatten(name="flatten")(x))
        return tf.keras.Model(image, out, name="gray_cnn")
    if name == "sm_text_float_ids":
        # Keras' default Input dtype is float32: Embedding casts the ids to int32 itself.
        tokens = tf.keras.Input((STEPS,), name="tokens")
        x = layers.Embedding(VOCAB, 8, name="embed")(tokens)
        x = layers.GlobalAveragePooling1D(name="pool")(x)
        out = layers.Dense(2, activation="softmax", name="probs")(x)
        return tf.keras.Model(tokens, out, name="text_float_ids")
    tokens = tf.keras.Input((STEPS,), dtype="int32", name="tokens")
    x = layers.Embedding(VOCAB, 8, name="embed")(tokens)
    if name == "sm_text_lstm":
        x = layers.LSTM(6, name="lstm")(x)
        out = layers.Dense(3, activation="softmax", name="sentiment")(x)
    elif name == "sm_text_rnn_gru":
        x = layers.SimpleRNN(6, return_sequences=True, name="rnn")(x)
        x = layers.GRU(5, name="gru")(x)
        out = layers.Dense(3, activation="softmax", name="probs")(x)
    else:
        x = layers.Bidirectional(layers.LSTM(4, return_sequences=True), name="bilstm")(x)
        out = layers.Dense(3, activation="softmax", name="tags")(x)
    return tf.keras.Model(tokens, out, name=name[3:])


def randomize(model, seed):
    rng = np.random.RandomState(seed)
    values = []
    for w in model.weights:
        shape, leaf = tuple(w.shape), w.name.split("/")[-1].split(":")[0]
        if leaf == "moving_variance":
            v = rng.uniform(0.5, 2.0, size=shape)
        elif leaf in ("gamma", "beta", "moving_mean", "embeddings"):
            v = rng.normal(size=shape)
        elif leaf == "recurrent_kernel":
            v = rng.normal(size=shape) / np.sqrt(shape[0])
        elif leaf == "kernel":
            v = rng.normal(size=shape) / np.sqrt(np.prod(shape[:-1]))
        else:
            v = rng.normal(size=shape) * 0.5
        values.append(v.astype(np.float32))
    model.set_weights(values)


def samples(name, seed):
    rng = np.random.RandomState(seed)
    if name == "sm_gray_cnn":
        return [rng.uniform(-1, 1, size=(1, 48, 48, 1)).astype(np.float32) for _ in range(3)]
    ids = [rng.randint(0, VOCAB, size=(1, STEPS)) for _ in range(3)]
    return [x.astype(np.float32 if name == "sm_text_float_ids" else np.int32) for x in ids]


def export_one(name, seed, out_path, outputs_path):
    """In a fresh process: build, save the SavedModel, check its signature against Keras, run tf2onnx's command
    line on it, and save Keras' outputs for the reference samples (np.save) for the parent."""
    import tensorflow as tf

    tf.keras.utils.set_random_seed(seed)
    model = build(name)
    randomize(model, seed)
    inputs = samples(name, seed + 100)
    keras_outputs = np.stack([model(x, training=False).numpy() for x in inputs])
    np.save(outputs_path, keras_outputs)
    with tempfile.TemporaryDirectory() as tmp:
        saved = os.path.join(tmp, "saved_model")
        if name == "sm_gray_cnn":
            spec = tf.TensorSpec([1, 48, 48, 1], tf.float32, name="image")
            serve = tf.function(lambda image: {"emotion": model(image, training=False)})
            tf.saved_model.save(model, saved, signatures=serve.get_concrete_function(spec))
        elif name == "sm_text_rnn_gru":
            model.export(saved)
        else:
            tf.saved_model.save(model, saved)
        signature = tf.saved_model.load(saved).signatures["serving_default"]
        (key,) = signature.structured_input_signature[1]
        for x, y in zip(inputs, keras_outputs):
            (got,) = signature(**{key: tf.constant(x)}).values()
            np.testing.assert_allclose(got.numpy(), y, rtol=1e-5, atol=1e-6)
        # Run from the temporary folder with a relative path: tf2onnx writes the path into the model's doc_string
        # ("converted from saved_model"). PYTHONHASHSEED fixed: tf2onnx's optimizer merges duplicate constants
        # in set order, so which name survives (const_axes__54 or __64) depends on string hashing.
        run = subprocess.run([sys.executable, "-m", "tf2onnx.convert", "--saved-model", "saved_model", "--output",
                              os.path.abspath(out_path), "--opset", "13"], capture_output=True, text=True, cwd=tmp,
                             env=dict(os.environ, PYTHONHASHSEED="0"))
        if run.returncode != 0 or not os.path.exists(out_path):
            sys.exit(f"tf2onnx failed ({run.returncode}):\n{run.stdout}\n{run.stderr}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(HERE, "Fixtures", "onnx", "exporters", "tf_savedmodel"))
    ap.add_argument("--one", nargs=4, metavar=("NAME", "SEED", "OUT", "OUTPUTS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if args.one:
        name, seed, out_path, outputs_path = args.one
        export_one(name, int(seed), out_path, outputs_path)
        return

    import importlib.metadata as md
    for package, version in PINS.items():
        found = md.version(package)
        if found != version:
            sys.exit(f"{package} {found} found, {version} pinned (requirements-tf2onnx.txt)")

    import onnx

    from exporter_references import canonical_form, manifest_entry, write_manifest, write_references

    out = args.out
    os.makedirs(out, exist_ok=True)
    wanted = {name + suffix for name, _, _ in FIXTURES for suffix in (".onnx", ".reference.json", ".reference.h5")}
    for stale in sorted(set(os.listdir(out)) - wanted):
        os.remove(os.path.join(out, stale))
    base = os.path.dirname(out)
    entries = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, seed, labels in FIXTURES:
            path = os.path.join(out, name + ".onnx")
            exported = []
            for attempt in range(2):
                target = os.path.join(tmp, f"{name}.{attempt}.onnx")
                outputs_path = os.path.join(tmp, f"{name}.{attempt}.npy")
                subprocess.run([sys.executable, os.path.abspath(__file__), "--one", name, str(seed), target,
                                outputs_path], check=True)
                with open(target, "rb") as f:
                    exported.append(f.read())
            forms = [canonical_form(onnx.load_from_string(b)) for b in exported]
            assert forms[0] == forms[1], f"{name}: two exports differ beyond the names tf2onnx makes up"
            if os.path.exists(path) and canonical_form(onnx.load(path)) == forms[0]:
                print(f"  {name}: the existing file is an equivalent export, kept" +
                      ("" if open(path, "rb").read() == exported[0] else " (tf2onnx named merged constants differently)"))
            else:
                with open(path, "wb") as f:
                    f.write(exported[0])
            keras_outputs = np.load(outputs_path)
            write_references(out, name, path, samples(name, seed + 100), layout="NHWC",
                             framework_outputs=[[y] for y in keras_outputs], labels=labels)
            entry = manifest_entry(path, base, os.path.join(out, name + ".reference.json"),
                                   f"tf2onnx {PINS['tf2onnx']} (python -m tf2onnx.convert --saved-model DIR --opset 13)",
                                   {"framework": f"tensorflow {PINS['tensorflow-cpu']} (tf.keras 2.15.0)",
                                    "requested_opset": 13, "seed": seed, "notes": NOTES[name]})
            entries.append(entry)
            print(f"  {entry['path']}: opset {entry['opset']}, ir {entry['ir_version']}, {entry['bytes']} bytes, "
                  f"inputs {entry['inputs']}, outputs {entry['outputs']}, ops {entry['op_types']}")
    write_manifest(os.path.join(base, "savedmodel_manifest.json"),
                   "ONNX fixtures written by tf2onnx from TensorFlow SavedModels of seeded tf.keras models "
                   "(Samples/make_exporter_fixtures_savedmodel.py); references hold channels-last (NHWC) float32 "
                   "images, int32 token ids (stored as float32 in the HDF5 files) and float32 token ids of batch 1", entries)


if __name__ == "__main__":
    main()
