"""Reference files and manifest entries for the exporter fixtures (`Fixtures/onnx/exporters/`), without torch.

Used by make_exporter_fixtures_paddle.py and make_exporter_fixtures_savedmodel.py, whose venvs have no torch
(make_onnx_fixtures.py imports it). Writes the formats of make_onnx_fixtures.write_references:

* `<name>.reference.json`: {"computedBy": "onnxruntime <version>", "producer": ..., "opset": n, "layout": ...,
  "inputs": {name: declared dims}, "outputs": {name: declared dims}, "inputTypes": {name: ONNX element type},
  "samples": [{"inputs": {name: [flat]}, "outputs": {name: [flat]}}]}; float values as their shortest float32
  decimal form, integer inputs as JSON integers; flat lists in row-major order of the sample's shape (batch 1).
  Declared dims keep what the exporter wrote: -1, 0 or a symbolic name for an unknown dimension.
* `<name>.reference.h5`: float32 datasets `inputs/0`, `outputs/<j>` of shape [3, ...] (the 3 samples in place
  of the batch axis of 1), attributes `name`, `layout` and, on inputs, `dtype` (the ONNX element type the model
  is fed with). INTEGER INPUTS (token ids) are stored as float32 holding exact small integers (the verifier
  reads every dataset as float32); cast them back to `dtype` before feeding the ONNX model. Root attributes
  `onnxruntime_version`, `producer`, `opset`, `source` (the model's path relative to `Fixtures/`).
"""

import collections
import json
import os
import re

import h5py
import numpy as np
import onnx
import onnxruntime as ort

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def dims(value_info):
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param if d.HasField("dim_param") else None)
            for d in value_info.type.tensor_type.shape.dim]


def elem_type(value_info):
    return onnx.helper.tensor_dtype_to_np_dtype(value_info.type.tensor_type.elem_type).name


def op_histogram(model):
    return dict(sorted(collections.Counter(n.op_type for n in model.graph.node).items()))


def shortest(values):
    """Float32 values as Python floats that print as the shortest decimal that reads back as the same float32."""
    return [float(np.format_float_positional(v, unique=True, trim="-")) if np.isfinite(v) else float(v)
            for v in np.asarray(values, np.float32).reshape(-1)]


def graph_inputs(model):
    initializers = {t.name for t in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in initializers]


def run_onnxruntime(path, inputs):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    in_name = session.get_inputs()[0].name
    names = [o.name for o in session.get_outputs()]
    return names, [session.run(names, {in_name: x}) for x in inputs]


def write_references(folder, name, model_path, inputs, layout="NCHW", framework_outputs=None, root=None,
                     rtol=1e-4, atol=1e-5, labels=None):
    """Runs onnxruntime on `inputs` (3 arrays of batch 1, in the dtype the model takes) and writes
    `<name>.reference.json` and `<name>.reference.h5` into `folder`. `framework_outputs`: per sample, the list
    of outputs the source framework computed, checked against onnxruntime's (assert_allclose). `root`: the
    folder `source` is relative to (default: the `Fixtures/` folder above `folder`)."""
    model = onnx.load(model_path)
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    producer = f"{model.producer_name} {model.producer_version}"
    (in_value,) = graph_inputs(model)
    in_name = in_value.name
    in_info = {in_name: dims(in_value)}
    out_info = {o.name: dims(o) for o in model.graph.output}
    out_names, results = run_onnxruntime(model_path, inputs)
    if framework_outputs is not None:
        for expected, got in zip(framework_outputs, results):
            assert len(expected) == len(got), (name, len(expected), len(got))
            for e, g in zip(expected, got):
                np.testing.assert_allclose(g, np.asarray(e).reshape(g.shape), rtol=rtol, atol=atol, err_msg=name)
    integer = np.issubdtype(inputs[0].dtype, np.integer)

    def flat(x):
        return [int(v) for v in x.reshape(-1)] if integer else shortest(x)

    doc = {"computedBy": f"onnxruntime {ort.__version__}", "producer": producer, "opset": opset, "layout": layout,
           "inputs": in_info, "outputs": out_info, "inputTypes": {in_name: elem_type(in_value)}}
    if labels is not None:
        doc["labels"] = labels
    doc["samples"] = [{"inputs": {in_name: flat(x)}, "outputs": {n: shortest(y) for n, y in zip(out_names, outs)}}
                      for x, outs in zip(inputs, results)]
    with open(os.path.join(folder, name + ".reference.json"), "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")

    def stacked(arrays):
        a = np.stack([np.asarray(v, np.float32) for v in arrays])
        return a.reshape((a.shape[0],) + a.shape[2:]) if a.ndim >= 3 and a.shape[1] == 1 else a

    def rank_layout(rank, default):
        return default if rank == 4 else "row-major"

    root = root or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(folder))))
    with h5py.File(os.path.join(folder, name + ".reference.h5"), "w", libver="earliest", track_order=True) as f:
        f.attrs["onnxruntime_version"] = ort.__version__
        f.attrs["producer"] = producer
        f.attrs["opset"] = opset
        f.attrs["source"] = os.path.relpath(model_path, root)
        if labels is not None:
            f.attrs["labels"] = labels
        d = f.create_group("inputs").create_dataset("0", data=stacked(inputs))
        d.attrs["name"], d.attrs["layout"] = in_name, rank_layout(inputs[0].ndim, layout)
        d.attrs["dtype"] = elem_type(in_value)
        g = f.create_group("outputs")
        for j, n in enumerate(out_names):
            d = g.create_dataset(str(j), data=stacked([r[j] for r in results]))
            d.attrs["name"], d.attrs["layout"] = n, rank_layout(results[0][j].ndim, layout)
    return out_names, results


def graph_features(model):
    """The forms a reader has to cope with, found in the graph (for the manifest's notes)."""
    g = model.graph
    names = set()
    for n in g.node:
        names.update(x for x in list(n.input) + list(n.output) if x)
    names.update(v.name for v in list(g.input) + list(g.output))
    names.update(t.name for t in g.initializer)
    ops = collections.Counter(n.op_type for n in g.node)
    features = {
        "non_identifier_names": sorted(n for n in names if not IDENTIFIER.match(n))[:12],
        "non_identifier_name_count": sum(1 for n in names if not IDENTIFIER.match(n)),
        "unknown_dims": {v.name: d for v in list(graph_inputs(model)) + list(g.output)
                         for d in [dims(v)] if any(not isinstance(x, int) or x <= 0 for x in d)},
        "control_flow": {op: ops[op] for op in ("Loop", "If", "Scan") if ops[op]},
        "shape_arithmetic": {op: ops[op] for op in ("Shape", "Slice", "Concat", "Gather", "Unsqueeze", "Squeeze",
                                                     "Reshape", "Expand", "ConstantOfShape", "Range") if ops[op]},
        "constant_nodes": ops["Constant"],
        "initializers": len(g.initializer),
    }
    casts = []
    for n in g.node:
        if n.op_type == "Cast":
            to = next(a.i for a in n.attribute if a.name == "to")
            casts.append(f"{n.input[0]} -> {onnx.TensorProto.DataType.Name(to)}")
    if casts:
        features["casts"] = casts[:12]
    clips = [f"{n.name or n.output[0]}: {len(n.input)} inputs ({', '.join(x or '<empty>' for x in n.input[1:])})"
             if len(n.input) > 1 else f"{n.name or n.output[0]}: attributes {[a.name for a in n.attribute]}"
             for n in g.node if n.op_type == "Clip"]
    if clips:
        features["clip"] = clips
    hard = [f"{n.op_type}({', '.join(f'{a.name}={onnx.helper.get_attribute_value(a)}' for a in n.attribute)})"
            for n in g.node if n.op_type in ("HardSigmoid", "HardSwish")]
    if hard:
        features["hard_activations"] = hard
    resizes = []
    for n in g.node:
        if n.op_type in ("Resize", "Upsample"):
            attrs = {a.name: onnx.helper.get_attribute_value(a) for a in n.attribute}
            attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in attrs.items()}
            resizes.append({"inputs": [x or "<empty>" for x in n.input], **attrs})
    if resizes:
        features["resize"] = resizes
    for sub in (n for n in g.node if n.op_type in ("Loop", "If", "Scan")):
        body = [onnx.helper.get_attribute_value(a) for a in sub.attribute if a.type == onnx.AttributeProto.GRAPH]
        features.setdefault("subgraph_ops", {})[sub.name or sub.output[0]] = [
            dict(sorted(collections.Counter(m.op_type for m in b.node).items())) for b in body]
    return features


def canonical_form(model):
    """The graph with every name an exporter makes up replaced by what it stands for: graph inputs and outputs
    keep their names, initializers and Constant values are named by their contents, node outputs by a hash
    of the producing node (its op, attributes and named inputs), Identity outputs by their input (Identity
    nodes only counted), and the nodes are compared as a sorted list: tf2onnx also writes independent nodes
    in a different order from run to run. Two exports with equal canonical forms compute the same thing the same way; used
    where an exporter numbers or picks names nondeterministically (tf2onnx merges duplicate constants in an
    order that changes from run to run)."""
    import hashlib

    from onnx import numpy_helper

    def tensor_key(t):
        a = numpy_helper.to_array(t)
        return f"{a.dtype}{list(a.shape)}:{hashlib.sha1(a.tobytes()).hexdigest()[:16]}"

    def value_dims(v):
        return [d if isinstance(d, int) else "?" for d in dims(v)]

    def graph_form(g, outer):
        names = dict(outer)
        for i in g.input:
            names[i.name] = f"input:{i.name}:{elem_type(i)}{value_dims(i)}" if not outer else f"arg{len(names)}"
        for t in g.initializer:
            names[t.name] = tensor_key(t)
        nodes, identities = [], 0
        for n in g.node:
            if n.op_type == "Identity":  # an alias: tf2onnx moves Identity nodes between loop outputs from run to run
                names[n.output[0]] = names.get(n.input[0], f"unknown:{n.input[0]}")
                identities += 1
                continue
            attrs = []
            for a in sorted(n.attribute, key=lambda a: a.name):
                if a.type == onnx.AttributeProto.GRAPH:
                    attrs.append((a.name, graph_form(a.g, names)))
                elif a.type == onnx.AttributeProto.TENSOR:
                    attrs.append((a.name, tensor_key(a.t)))
                else:
                    attrs.append((a.name, repr(onnx.helper.get_attribute_value(a))))
            ins = tuple(names.get(x, f"unknown:{x}") if x else "" for x in n.input)
            described = (n.op_type, n.domain, ins, tuple(attrs))
            if n.op_type == "Constant":
                for o in n.output:
                    names[o] = f"constant:{attrs}"
            else:
                key = hashlib.sha1(repr(described).encode()).hexdigest()[:16]
                for j, o in enumerate(n.output):
                    names[o] = f"node:{key}:{j}"
            nodes.append(described)
        outs = tuple(names.get(o.name, o.name) for o in g.output)
        return (tuple(sorted(nodes, key=repr)), outs, identities)

    m = model
    return (m.ir_version, tuple((o.domain, o.version) for o in m.opset_import), m.producer_name, m.producer_version,
            tuple(o.name for o in m.graph.output), graph_form(m.graph, {}))


def manifest_entry(path, base, reference, exporter, extra=None):
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    entry = {"path": os.path.relpath(path, base), "reference": os.path.relpath(reference, base),
             "exporter": exporter, "producer": f"{m.producer_name} {m.producer_version}",
             "opset": next(o.version for o in m.opset_import if o.domain in ("", "ai.onnx")),
             "opset_imports": {o.domain or "ai.onnx": o.version for o in m.opset_import},
             "ir_version": m.ir_version,
             "inputs": {i.name: {"dims": dims(i), "type": elem_type(i)} for i in graph_inputs(m)},
             "outputs": {o.name: {"dims": dims(o), "type": elem_type(o)} for o in m.graph.output},
             "op_types": op_histogram(m), "features": graph_features(m), "bytes": os.path.getsize(path)}
    entry.update(extra or {})
    return entry


def write_manifest(path, description, entries):
    with open(path, "w") as f:
        json.dump({"description": description, "models": entries}, f, indent=1)
        f.write("\n")
