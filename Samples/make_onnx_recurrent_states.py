#!/usr/bin/env python3
"""ONNX recurrent nodes that expose their final states (`Y_h`, an LSTM's `Y_c`) as graph outputs, built with
onnx.helper (no training framework), with onnxruntime's outputs saved beside them.

Run by hand (not in CI), Python 3.11:

    python3 -m venv /tmp/venv-onnx
    /tmp/venv-onnx/bin/pip install onnx==1.17.0 onnxruntime==1.20.1 numpy==1.26.4 h5py==3.16.0
    /tmp/venv-onnx/bin/python Samples/make_onnx_recurrent_states.py --out Samples/Fixtures/onnx/recurrent

Writes, for each model below, `NAME.onnx`, `NAME.reference.json` and `NAME.reference.h5` (the formats of
make_onnx_fixtures.py's `write_references`: 3 seeded samples uniform(-1, 1), inputs as the model declares
them, outputs as onnxruntime computes them):

- `lstm_states`: a forward LSTM (opset 14, layout 0) over X [5, 2, 3] (5 steps, batch 2), hidden 4, with
  Y (reshaped to Y_flat [5, 8]), Y_h [1, 2, 4] and Y_c [1, 2, 4] all graph outputs.
- `bilstm_states`: a bidirectional LSTM over X [6, 1, 3], hidden 3, outputs Y_h and Y_c [2, 1, 3] only
  (tf2onnx's Bidirectional LSTM export reads them).
- `lstm_reverse_cell`: a reverse LSTM over X [4, 1, 2], hidden 3, output Y_c only. (onnxruntime 1.20 refuses
  LSTM's layout 1, so no batch-first case is here.)
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


def lstm_model(name, steps_batch_input, hidden, direction, layout, outputs, seed):
    r = np.random.RandomState(seed)
    directions = 2 if direction == "bidirectional" else 1
    inputs = steps_batch_input[2]
    w = (r.standard_normal((directions, 4 * hidden, inputs)) * 0.6).astype(np.float32)
    rr = (r.standard_normal((directions, 4 * hidden, hidden)) * 0.6).astype(np.float32)
    b = (r.standard_normal((directions, 8 * hidden)) * 0.3).astype(np.float32)
    x_shape = list(steps_batch_input)
    if layout == 1:
        x_shape = [x_shape[1], x_shape[0], x_shape[2]]
    steps, batch = steps_batch_input[0], steps_batch_input[1]
    shapes = {"Y": [steps, directions, batch, hidden], "Y_h": [directions, batch, hidden], "Y_c": [directions, batch, hidden]}
    if layout == 1:
        shapes = {"Y": [batch, steps, directions, hidden], "Y_h": [batch, directions, hidden], "Y_c": [batch, directions, hidden]}
    node_outputs = [k if k in outputs else "" for k in ["Y", "Y_h", "Y_c"]]
    while node_outputs and node_outputs[-1] == "":
        node_outputs.pop()
    attributes = {"hidden_size": hidden, "direction": direction}
    if layout:
        attributes["layout"] = layout
    nodes = [helper.make_node("LSTM", ["X", "W", "R", "B"], node_outputs, name="lstm", **attributes)]
    initializers = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(rr, "R"), numpy_helper.from_array(b, "B")]
    declared = [helper.make_tensor_value_info(k, TensorProto.FLOAT, shapes[k]) for k in outputs if k != "Y"]
    if "Y" in outputs:
        # As exporters do, Y [T, directions, batch, hidden] is reshaped before it leaves the graph: [T, directions * batch * hidden].
        flat = [steps, directions * batch * hidden]
        initializers.append(numpy_helper.from_array(np.array(flat, np.int64), "Y_shape"))
        nodes.append(helper.make_node("Reshape", ["Y", "Y_shape"], ["Y_flat"], name="flatten_steps"))
        declared.insert(0, helper.make_tensor_value_info("Y_flat", TensorProto.FLOAT, flat))
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("X", TensorProto.FLOAT, x_shape)], declared, initializers)
    model = helper.make_model(graph, producer_name="onnx.helper", opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model, x_shape


MODELS = [
    # name, (steps, batch, inputs), hidden, direction, layout, graph outputs, seed
    ("lstm_states", (5, 2, 3), 4, "forward", 0, ["Y", "Y_h", "Y_c"], 31),
    ("bilstm_states", (6, 1, 3), 3, "bidirectional", 0, ["Y_h", "Y_c"], 32),
    ("lstm_reverse_cell", (4, 1, 2), 3, "reverse", 0, ["Y_c"], 33),
]


def shortest(values):
    return [float(np.format_float_positional(v, unique=True, trim="-")) for v in np.asarray(values, np.float32).reshape(-1)]


def write(folder, name, model, x_shape, seed):
    path = os.path.join(folder, name + ".onnx")
    onnx.save(model, path)
    data = np.random.RandomState(seed + 1000)
    inputs = [data.uniform(-1, 1, x_shape).astype(np.float32) for _ in range(3)]
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    results = [session.run(names, {"X": x}) for x in inputs]
    dims = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in list(model.graph.input) + list(model.graph.output)}
    assert names == [o.name for o in model.graph.output]
    doc = {"computedBy": f"onnxruntime {ort.__version__}", "producer": "onnx.helper", "opset": 14, "layout": "row-major",
           "inputs": {"X": dims["X"]}, "outputs": {n: dims[n] for n in names},
           "samples": [{"inputs": {"X": shortest(x)}, "outputs": {n: shortest(y) for n, y in zip(names, ys)}}
                       for x, ys in zip(inputs, results)]}
    with open(os.path.join(folder, name + ".reference.json"), "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")
    # The verifier's HDF5 layout: samples stacked on a new first axis (no batch axis of 1 to replace here:
    # the ONNX axes are kept whole).
    with h5py.File(os.path.join(folder, name + ".reference.h5"), "w", libver="earliest", track_order=True) as f:
        f.attrs["onnxruntime_version"] = ort.__version__
        f.attrs["producer"] = "onnx.helper"
        f.attrs["opset"] = 14
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
    for name, sbi, hidden, direction, layout, outputs, seed in MODELS:
        model, x_shape = lstm_model(name, sbi, hidden, direction, layout, outputs, seed)
        write(args.out, name, model, x_shape, seed)
        print(name, x_shape, [o.name for o in model.graph.output])


if __name__ == "__main__":
    main()
