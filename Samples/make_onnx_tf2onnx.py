#!/usr/bin/env python3
"""Export existing Keras fixtures to ONNX with tf2onnx, for the ONNX frontend's tests.

Run by hand (not in CI), in a venv with the pins of requirements-tf2onnx.txt (Python 3.11), after
make_onnx_fixtures.py (this script adds its entry to that script's manifest.json):

    python3 -m venv /tmp/venv-tf2onnx
    /tmp/venv-tf2onnx/bin/pip install -r Samples/requirements-tf2onnx.txt
    /tmp/venv-tf2onnx/bin/python Samples/make_onnx_tf2onnx.py --fixtures Samples/Fixtures

Reads each of FIXTURES from `tfkeras215/NAME.h5` with tf.keras 2.15 and writes `onnx/tf2onnx/NAME.onnx`
(opset 13, batch fixed at 1, the input named `image`): `dense_classifier` (Conv2D -> Flatten -> Dense -> Dense
softmax, [6,6,2], labels cat/dog/bird/fish) and the single-output layer fixtures listed below (activations,
batch normalization, depthwise separable convolutions, nested models, reshapes, a plain Sequential CNN;
conv_variants is left out: tf2onnx 1.16 cannot export its grouped convolution, a PartitionedCall). tf2onnx keeps TensorFlow's channels-last interface and wraps each Conv in Transpose nodes, as
real tf2onnx exports do. Each export runs in a fresh process (tf2onnx numbers the nodes it makes with a
per-process counter), so a rerun writes the same bytes.

The reference files (`NAME.reference.json` / `.reference.h5`, the formats of make_onnx_fixtures.py) hold the 3
inputs of `tfkeras215/NAME.reference.h5` and onnxruntime's outputs for them, checked against that file's
Keras outputs (so a test that matches them matches Keras). LAYOUT: the ONNX model's own layout is NHWC
(channels last), so the inputs are exactly those of the Keras reference file ("layout": "NHWC").
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np
import onnx
import onnxruntime as ort
import tensorflow as tf
import tf2onnx

PINS = {"tensorflow": "2.15.1", "tf2onnx": "1.16.1", "onnx": "1.17.0", "onnxruntime": "1.20.1"}
LABELS = {"dense_classifier": ["cat", "dog", "bird", "fish"]}
FIXTURES = ["dense_classifier", "activations", "batchnorm", "depthwise_separable", "nested", "reshape_ops",
            "sequential_plain"]


def export(model, opset):
    spec = [tf.TensorSpec((1,) + tuple(model.input_shape[1:]), tf.float32, name="image")]
    proto, _ = tf2onnx.convert.from_keras(model, input_signature=spec, opset=opset)
    return proto


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fixtures", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "Fixtures"))
    ap.add_argument("--one", help="export this fixture alone (the script runs itself once per fixture)")
    args = ap.parse_args()
    found = {"tensorflow": tf.__version__, "tf2onnx": tf2onnx.__version__, "onnx": onnx.__version__, "onnxruntime": ort.__version__}
    for package, version in PINS.items():
        if found[package] != version:
            sys.exit(f"{package} {found[package]} found, {version} pinned (requirements-tf2onnx.txt)")
    folder = os.path.join(args.fixtures, "onnx", "tf2onnx")
    if args.one:
        export_one(args.fixtures, folder, args.one)
        return
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    for name in FIXTURES:
        subprocess.run([sys.executable, os.path.abspath(__file__), "--fixtures", args.fixtures, "--one", name], check=True)


def export_one(fixtures, folder, name):
    tf.keras.utils.set_random_seed(0)
    source = os.path.join(fixtures, "tfkeras215", name + ".h5")
    with h5py.File(os.path.join(fixtures, "tfkeras215", name + ".reference.h5")) as f:
        inputs = f["inputs/0"][()].astype(np.float32)  # [3, ...]
        keras_outputs = f["outputs/0"][()]
    model = tf.keras.models.load_model(source, compile=False)
    proto = export(model, 13)
    onnx.checker.check_model(proto, full_check=True)
    path = os.path.join(folder, name + ".onnx")
    onnx.save_model(proto, path)

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    (out,) = session.get_outputs()
    outputs = np.concatenate([session.run([out.name], {"image": x[None]})[0] for x in inputs])
    np.testing.assert_allclose(outputs, keras_outputs, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(outputs, model.predict(inputs, verbose=0), rtol=1e-4, atol=1e-5)

    def shortest(values):
        return [float(np.format_float_positional(v, unique=True, trim="-")) for v in np.asarray(values, np.float32).reshape(-1)]

    def dims(v):
        return [d.dim_value if d.HasField("dim_value") else d.dim_param for d in v.type.tensor_type.shape.dim]

    m = onnx.load(path)
    opset = next(o.version for o in m.opset_import if o.domain in ("", "ai.onnx"))
    producer = f"{m.producer_name} {m.producer_version}"
    doc = {"computedBy": f"onnxruntime {ort.__version__}", "producer": producer, "opset": opset, "layout": "NHWC",
           "inputs": {i.name: dims(i) for i in m.graph.input}, "outputs": {o.name: dims(o) for o in m.graph.output}}
    if name in LABELS:
        doc["labels"] = LABELS[name]
    doc["samples"] = [{"inputs": {"image": shortest(x)}, "outputs": {out.name: shortest(y)}} for x, y in zip(inputs, outputs)]
    with open(os.path.join(folder, name + ".reference.json"), "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    with h5py.File(os.path.join(folder, name + ".reference.h5"), "w", libver="earliest", track_order=True) as f:
        f.attrs["onnxruntime_version"] = ort.__version__
        f.attrs["producer"] = producer
        f.attrs["opset"] = opset
        f.attrs["source"] = f"onnx/tf2onnx/{name}.onnx"
        if name in LABELS:
            f.attrs["labels"] = LABELS[name]
        d = f.create_group("inputs").create_dataset("0", data=inputs)
        d.attrs["name"], d.attrs["layout"] = "image", "NHWC"
        d = f.create_group("outputs").create_dataset("0", data=outputs.astype(np.float32))
        d.attrs["name"], d.attrs["layout"] = out.name, "row-major"

    ops = {}
    for n in m.graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    entry = {"path": f"tf2onnx/{name}.onnx", "reference": f"tf2onnx/{name}.reference.json",
             "opset": opset, "ir_version": m.ir_version, "producer": producer,
             "inputs": doc["inputs"], "outputs": doc["outputs"], "initializers": len(m.graph.initializer),
             "op_types": dict(sorted(ops.items())), "bytes": os.path.getsize(path),
             "from": f"tfkeras215/{name}.h5"}
    print(f"  {entry['path']}: opset {opset}, {entry['bytes']} bytes, ops {entry['op_types']}")
    manifest_path = os.path.join(fixtures, "onnx", "manifest.json")
    with open(manifest_path) as f:
        manifest = json.load(f)
    manifest["models"] = [e for e in manifest["models"] if e["path"] != entry["path"]] + [entry]
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
