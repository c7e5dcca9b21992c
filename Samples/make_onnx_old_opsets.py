#!/usr/bin/env python3
"""Operator forms of ONNX's early opsets, as keras2onnx and onnxmltools wrote them (opsets 7-9), built
with onnx.helper, with onnxruntime's outputs saved beside.

Run by hand (not in CI), in the venv of make_onnx_recurrent_states.py (onnx 1.17.0, onnxruntime 1.20.1,
numpy 1.26.4, h5py 3.16.0):

    /tmp/venv-onnx/bin/python Samples/make_onnx_old_opsets.py --out Samples/Fixtures/onnx/old_opsets

Writes `NAME.onnx` and `NAME.reference.json`/`.reference.h5` (3 seeded samples uniform(-1, 1); formats
of make_onnx_recurrent_states.py) for `keras2onnx_opset8`: opset 8, an NHWC image [1, 6, 6, 3] through
Transpose to NCHW, Conv, BatchNormalization-7 with `spatial=1`, Clip-6 with `min`/`max` attributes,
Pad-2 with a `pads` attribute, Upsample-7 with a `scales` attribute (nearest), MaxPool, Slice-1 with
`starts`/`ends`/`axes` attributes, Dropout-7, Flatten, Gemm-7 with `broadcast`... (Gemm-7 broadcasts
always), Unsqueeze-1 with an `axes` attribute and Squeeze-1 back, and Softmax-1 (which flattens from
`axis` on).
"""

import argparse
import json
import os

import h5py
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

PINS = {"onnx": "1.17.0", "onnxruntime": "1.20.1"}


def keras2onnx_opset8():
    r = np.random.RandomState(61)
    f = lambda *shape, s=0.5: (r.standard_normal(shape) * s).astype(np.float32)
    inits = [
        numpy_helper.from_array(f(4, 3, 3, 3), "conv_w"), numpy_helper.from_array(f(4), "conv_b"),
        numpy_helper.from_array(f(4) + 1, "bn_scale"), numpy_helper.from_array(f(4), "bn_bias"),
        numpy_helper.from_array(f(4), "bn_mean"), numpy_helper.from_array(r.uniform(0.5, 2, 4).astype(np.float32), "bn_var"),
        numpy_helper.from_array(f(4 * 4 * 5, 3, s=0.2), "fc_w"), numpy_helper.from_array(f(3), "fc_b"),
    ]
    nodes = [
        helper.make_node("Transpose", ["image"], ["nchw"], perm=[0, 3, 1, 2]),
        helper.make_node("Conv", ["nchw", "conv_w", "conv_b"], ["conv"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["conv", "bn_scale", "bn_bias", "bn_mean", "bn_var"], ["bn"], epsilon=1e-3, spatial=1),
        helper.make_node("Clip", ["bn"], ["clipped"], min=-0.5, max=1.5),
        helper.make_node("Pad", ["clipped"], ["padded"], mode="constant", pads=[0, 0, 1, 0, 0, 0, 1, 0], value=0.25),
        helper.make_node("MaxPool", ["padded"], ["pooled"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Upsample", ["pooled"], ["up"], mode="nearest", scales=[1.0, 1.0, 2.0, 2.0]),
        helper.make_node("Slice", ["up"], ["sliced"], starts=[1, 0], ends=[5, 5], axes=[2, 3]),
        helper.make_node("Dropout", ["sliced"], ["dropped"], ratio=0.3),
        helper.make_node("Flatten", ["dropped"], ["flat"], axis=1),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], transB=0),
        helper.make_node("Unsqueeze", ["logits"], ["logits3"], axes=[2]),
        helper.make_node("Squeeze", ["logits3"], ["logits2"], axes=[2]),
        helper.make_node("Softmax", ["logits2"], ["probs"], axis=1),
    ]
    graph = helper.make_graph(nodes, "keras2onnx_opset8", [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 6, 6, 3])],
                              [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 3])], inits)
    model = helper.make_model(graph, producer_name="onnx.helper (keras2onnx forms)", opset_imports=[helper.make_opsetid("", 8)])
    model.ir_version = 4
    return model, [1, 6, 6, 3]


def shortest(values):
    return [float(np.format_float_positional(v, unique=True, trim="-")) for v in np.asarray(values, np.float32).reshape(-1)]


def write(folder, name, model, x_shape, seed):
    onnx.checker.check_model(model, full_check=True)
    path = os.path.join(folder, name + ".onnx")
    onnx.save(model, path)
    data = np.random.RandomState(seed)
    inputs = [data.uniform(-1, 1, x_shape).astype(np.float32) for _ in range(3)]
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    in_name = session.get_inputs()[0].name
    names = [o.name for o in session.get_outputs()]
    results = [session.run(names, {in_name: x}) for x in inputs]
    graph = model.graph
    dims = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in list(graph.input) + list(graph.output)}
    doc = {"computedBy": f"onnxruntime {ort.__version__}", "producer": model.producer_name, "opset": 8, "layout": "NHWC",
           "inputs": {in_name: dims[in_name]}, "outputs": {n: dims[n] for n in names},
           "samples": [{"inputs": {in_name: shortest(x)}, "outputs": {n: shortest(y) for n, y in zip(names, ys)}}
                       for x, ys in zip(inputs, results)]}
    with open(os.path.join(folder, name + ".reference.json"), "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    with h5py.File(os.path.join(folder, name + ".reference.h5"), "w", libver="earliest", track_order=True) as f:
        f.attrs["onnxruntime_version"] = ort.__version__
        f.attrs["producer"] = model.producer_name
        f.attrs["opset"] = 8
        f.attrs["source"] = os.path.join(os.path.basename(folder), name + ".onnx")
        d = f.create_group("inputs").create_dataset("0", data=np.stack(inputs))
        d.attrs["name"], d.attrs["layout"] = in_name, "NHWC"
        g = f.create_group("outputs")
        for j, n in enumerate(names):
            d = g.create_dataset(str(j), data=np.stack([r[j] for r in results]))
            d.attrs["name"], d.attrs["layout"] = n, "row-major"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    found = {"onnx": onnx.__version__, "onnxruntime": ort.__version__}
    for package, version in PINS.items():
        if found[package] != version:
            raise SystemExit(f"{package} {found[package]} found, {version} pinned")
    os.makedirs(args.out, exist_ok=True)
    model, x_shape = keras2onnx_opset8()
    write(args.out, "keras2onnx_opset8", model, x_shape, 62)
    print("keras2onnx_opset8", x_shape)


if __name__ == "__main__":
    main()
