#!/usr/bin/env python3
"""ONNX control flow as exporters write it, built with onnx.helper, with onnxruntime's outputs saved beside.

Run by hand (not in CI), in the venv of make_onnx_recurrent_states.py (onnx 1.17.0, onnxruntime 1.20.1,
numpy 1.26.4, h5py 3.16.0):

    /tmp/venv-onnx/bin/python Samples/make_onnx_control_flow.py --out Samples/Fixtures/onnx/control_flow

Writes `NAME.onnx`, `NAME.reference.json` and `NAME.reference.h5` (3 seeded samples uniform(-1, 1), the
formats of make_onnx_recurrent_states.py) for:

- `if_shape_test`: opset 13; `If` on `Equal(Gather(Shape(X), 1), 4)` (a test of a size, known once the
  model is read): the then branch computes `Relu(X) * 2` with an initializer of its own, the else branch
  `Neg(X)`; X [1, 4].
- `loop_rnn`: opset 13; a simple RNN written as tf2onnx writes Keras recurrences, a `Loop` with trip count
  5 and condition true: each iteration gathers step `i` of X [5, 1, 2] (the iteration number as index),
  `h = Tanh(x W + h U + b)` with the weights read from the outer scope, the state carried and every step
  a scan output; outputs the final state [1, 3] and the stacked states [5, 1, 3].
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


def if_shape_test():
    then_two = numpy_helper.from_array(np.array([2.0], np.float32), "two")
    then_branch = helper.make_graph(
        [helper.make_node("Relu", ["X"], ["relu"]), helper.make_node("Mul", ["relu", "two"], ["then_out"])], "then",
        [], [helper.make_tensor_value_info("then_out", TensorProto.FLOAT, [1, 4])], [then_two])
    else_branch = helper.make_graph(
        [helper.make_node("Neg", ["X"], ["else_out"])], "else", [], [helper.make_tensor_value_info("else_out", TensorProto.FLOAT, [1, 4])])
    nodes = [
        helper.make_node("Shape", ["X"], ["shape"]),
        helper.make_node("Gather", ["shape", "one"], ["width"], axis=0),
        helper.make_node("Equal", ["width", "four"], ["is_four"]),
        helper.make_node("If", ["is_four"], ["Y"], then_branch=then_branch, else_branch=else_branch),
    ]
    inits = [numpy_helper.from_array(np.array(1, np.int64), "one"), numpy_helper.from_array(np.array(4, np.int64), "four")]
    graph = helper.make_graph(nodes, "if_shape_test", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 4])], inits)
    return graph, [1, 4]


def loop_rnn():
    r = np.random.RandomState(41)
    w = (r.standard_normal((2, 3)) * 0.8).astype(np.float32)
    u = (r.standard_normal((3, 3)) * 0.6).astype(np.float32)
    b = (r.standard_normal((3,)) * 0.3).astype(np.float32)
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Gather", ["X", "i"], ["x_t"], axis=0),
            helper.make_node("MatMul", ["x_t", "W"], ["xw"]),
            helper.make_node("MatMul", ["h_in", "U"], ["hu"]),
            helper.make_node("Add", ["xw", "hu"], ["sum"]),
            helper.make_node("Add", ["sum", "B"], ["pre"]),
            helper.make_node("Tanh", ["pre"], ["h_out"]),
            helper.make_node("Identity", ["h_out"], ["h_scan"]),
        ],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []), helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_in", TensorProto.FLOAT, [1, 3])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), helper.make_tensor_value_info("h_out", TensorProto.FLOAT, [1, 3]),
         helper.make_tensor_value_info("h_scan", TensorProto.FLOAT, [1, 3])])
    nodes = [helper.make_node("Loop", ["M", "cond", "h0"], ["h_final", "h_all"], body=body)]
    inits = [numpy_helper.from_array(np.array(5, np.int64), "M"), numpy_helper.from_array(np.array(True), "cond"),
             numpy_helper.from_array(np.zeros((1, 3), np.float32), "h0"), numpy_helper.from_array(w, "W"),
             numpy_helper.from_array(u, "U"), numpy_helper.from_array(b, "B")]
    graph = helper.make_graph(nodes, "loop_rnn", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [5, 1, 2])],
                              [helper.make_tensor_value_info("h_final", TensorProto.FLOAT, [1, 3]),
                               helper.make_tensor_value_info("h_all", TensorProto.FLOAT, [5, 1, 3])], inits)
    return graph, [5, 1, 2]


def shortest(values):
    return [float(np.format_float_positional(v, unique=True, trim="-")) for v in np.asarray(values, np.float32).reshape(-1)]


def write(folder, name, graph, x_shape, seed):
    model = helper.make_model(graph, producer_name="onnx.helper", opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    path = os.path.join(folder, name + ".onnx")
    onnx.save(model, path)
    data = np.random.RandomState(seed)
    inputs = [data.uniform(-1, 1, x_shape).astype(np.float32) for _ in range(3)]
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    results = [session.run(names, {"X": x}) for x in inputs]
    dims = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in list(graph.input) + list(graph.output)}
    doc = {"computedBy": f"onnxruntime {ort.__version__}", "producer": "onnx.helper", "opset": 13, "layout": "row-major",
           "inputs": {"X": dims["X"]}, "outputs": {n: dims[n] for n in names},
           "samples": [{"inputs": {"X": shortest(x)}, "outputs": {n: shortest(y) for n, y in zip(names, ys)}}
                       for x, ys in zip(inputs, results)]}
    with open(os.path.join(folder, name + ".reference.json"), "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    with h5py.File(os.path.join(folder, name + ".reference.h5"), "w", libver="earliest", track_order=True) as f:
        f.attrs["onnxruntime_version"] = ort.__version__
        f.attrs["producer"] = "onnx.helper"
        f.attrs["opset"] = 13
        f.attrs["source"] = os.path.join(os.path.basename(folder), name + ".onnx")
        d = f.create_group("inputs").create_dataset("0", data=np.stack(inputs))
        d.attrs["name"], d.attrs["layout"] = "X", "row-major"
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
    for name, make, seed in [("if_shape_test", if_shape_test, 51), ("loop_rnn", loop_rnn, 52)]:
        graph, x_shape = make()
        write(args.out, name, graph, x_shape, seed)
        print(name, x_shape)


if __name__ == "__main__":
    main()
