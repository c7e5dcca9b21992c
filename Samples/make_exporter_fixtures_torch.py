#!/usr/bin/env python3
"""Write ONNX fixtures made by real exporters from PyTorch: torch's dynamo exporter and Ultralytics' YOLO export.

Run by hand (not in CI), in a venv with the pins of requirements-exporters-torch.txt (Python 3.11):

    python3 -m venv /tmp/venv-exporters-torch
    /tmp/venv-exporters-torch/bin/pip install -r Samples/requirements-exporters-torch.txt
    /tmp/venv-exporters-torch/bin/python Samples/make_exporter_fixtures_torch.py --out Samples/Fixtures/onnx/exporters

(torch was the CPU-only build 2.13.0+cpu from a local wheel folder, as for requirements-onnx.txt. Nothing is
downloaded at run time: Ultralytics builds its models from its packaged yaml files, with `YOLO_OFFLINE=1` and
`YOLO_CONFIG_DIR` set to a temporary folder, so its settings file is not written to the home folder.)

Writes into `--out` (every model also gets `<name>.reference.json` and `<name>.reference.h5`, make_onnx_fixtures'
`write_references`: 3 seeded samples, onnxruntime's outputs (CPU, one thread), checked against the torch
module's own outputs):

`dynamo/`: `torch.onnx.export(model, (x,), path, dynamo=True, opset_version=N, external_data=False)`, eval mode,
weights set by make_onnx_fixtures' seeded `randomize` (BatchNorm statistics included; SmallCNN's `fc` kernel
x10), inputs uniform(-1, 1).

| file | model | export |
|---|---|---|
| `small_cnn_opset18.onnx` | `SmallCNN`, input `x` [1,3,32,32]: Conv 3->8 3x3 (no bias) + BatchNorm + ReLU, depthwise Conv 3x3 stride 2 + BatchNorm + SiLU, Conv 1x1 8->16 + GELU, adaptive average pool, flatten, Linear 16->5, softmax; output `softmax` [1,5] | opset 18, `optimize=True` (the default: BatchNorm folded into the convs, GELU as Erf) |
| `small_cnn_opset18_raw.onnx` | the same model and weights | opset 18, `optimize=False` (what the translation writes before onnxscript's optimizer: BatchNormalization (momentum 0.9), Constant nodes with value_ints, Shape/Expand/CastLike, Reshape allowzero 0 and 1) |
| `small_cnn_opset21.onnx` | the same model and weights | opset 21, `optimize=True` (Gelu op) |
| `tiny_block_opset18.onnx` | `TinyBlock`, input `x` [1,8,16]: pre-norm transformer block: LayerNorm, Linear 16->48 (q, k, v), Reshape [1,8,3,2,8], Transpose, 2-head attention written with MatMul / scale / Softmax / MatMul, Transpose + Reshape back, Linear, residual; LayerNorm + nn.MultiheadAttention (2 heads, batch_first) + residual; LayerNorm, Linear 16->32, GELU, Linear 32->16, residual; output [1,8,16] | opset 18, `optimize=True` |
| `tiny_block_opset18_raw.onnx` | the same model and weights | opset 18, `optimize=False` |
| `tiny_block_opset21.onnx` | the same model and weights | opset 21, `optimize=True` |
| `tiny_block_opset18_dynamic.onnx` | the same model and weights | opset 18, `optimize=True`, `dynamic_shapes={"x": {1: Dim("tokens", min=2, max=64)}}`: input [1,"tokens",16] (Shape/Slice/Concat to build the reshapes' shapes); references at 8 tokens |

The dynamo exporter of torch 2.13.0 with onnxscript 0.7.2 writes no local functions and no `pkg.onnxscript`
domain in these graphs with either `optimize` setting (every node is in the default domain; its version
converter inlines functions). What it does write: IR version 10, graph name `main_graph`, node names like
`node_conv2d`, value_info for the intermediate values, and metadata_props on every node (`namespace`,
`pkg.torch.onnx.class_hierarchy`, `pkg.torch.onnx.fx_node`, `pkg.torch.onnx.name_scopes`,
`pkg.torch.onnx.stack_trace`; after the optimizer also `pkg.onnxscript.rewriter.rule_name`), which make up most
of each file's bytes. The stack traces hold absolute source paths; this script rewrites the folder of this file
to `Samples/` and the venv's site-packages folder to `<site-packages>/` in them (nothing else is changed), so the
bytes do not depend on where the repository or the venv is.

`ultralytics/`: `YOLO(yaml).export(format="onnx", imgsz=64, opset=17, simplify=False, dynamic=...)` (Ultralytics
8.4.x, which calls the TorchScript exporter, `dynamo=False`, after fusing BatchNorm into the convs), weights
Ultralytics' own initialisation after `torch.manual_seed(0)`, then BatchNorm running statistics taken from 32
seeded uniform images in train mode (`calibrate_batchnorm`; with the initial statistics the outputs do not
depend on the input at all). The yaml files are the packaged ones (`yolov8.yaml`,
`yolov8-cls.yaml`) with `nc: 3` and a single scale `n` of depth 0.33 and width 0.0625 (yolov8n has 0.25), written
next to the fixtures. Inputs are image-like: pixels uniform integers 0-255, input = pixels / 255 (uniform in
[0, 1]); the reference files carry the pixels and "preprocessing": {"scale": 1/255, "bias": 0}.

| file | model |
|---|---|
| (`yolov8_tiny_det_64.onnx`, `dynamic=False`: left out to keep the fixtures small; the references of these three are .h5 only) |
| `yolov8_tiny_det_dynamic.onnx` | the same model, `dynamic=True`: input [batch,3,height,width], output [batch,7,anchors]; the anchors and strides are computed in the graph (Shape, Range, Expand, ...); metadata `imgsz` [64, 64]; references at 64x64 |
| `yolov8_tiny_cls_64.onnx` | classifier (yolov8-cls.yaml), input `images` [1,3,64,64], output `output0` [1,3] (softmax); labels the model's names |

Ultralytics writes model metadata_props (description, author, date, version, license, docs, stride, task, head,
batch, imgsz, names, args, channels, end2end); the script replaces `date` (the export time) by
2000-01-01T00:00:00+00:00 so reruns write the same bytes, and changes nothing else.

`torch_manifest.json` lists every file: path, exporter and version, producer, opset imports, IR version, inputs
and outputs with dims as declared (symbolic names as strings), op-type histogram, node domains, local functions,
model metadata keys, node metadata keys, the attributes each op type is written with (`forms`), size, notes.

Each model is exported twice in memory and the bytes compared; reruns write the same bytes (HDF5 files
included: h5py writes no timestamps with `track_order` and `libver="earliest"`).
"""

import argparse
import collections
import copy
import json
import os
import shutil
import sys
import sysconfig
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_onnx_fixtures as mof  # noqa: E402  (reference writer, randomize, samples, dims, op_histogram)
from export_torchvision import import_torchvision  # noqa: E402  (torchvision's CUDA wheel with CPU torch)

PINS = {"torch": "2.13.0", "onnx": "1.17.0", "onnxruntime": "1.20.1", "onnxscript": "0.7.2", "ultralytics": "8.4.190"}
FIXED_DATE = "2000-01-01T00:00:00+00:00"


# MARK: - Models for the dynamo exporter


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.depthwise = nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8)
        self.bn_depthwise = nn.BatchNorm2d(8)
        self.pointwise = nn.Conv2d(8, 16, 1)
        self.fc = nn.Linear(16, 5)

    def forward(self, x):
        x = F.relu(self.bn(self.conv(x)))
        x = F.silu(self.bn_depthwise(self.depthwise(x)))
        x = F.gelu(self.pointwise(x))
        x = torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)
        return torch.softmax(self.fc(x), dim=-1)


class TinyBlock(nn.Module):
    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.mha = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ln3 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 2 * dim)
        self.fc2 = nn.Linear(2 * dim, dim)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).reshape(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scores = torch.softmax(q @ k.transpose(-2, -1) / (d // self.heads) ** 0.5, dim=-1)
        x = x + self.proj((scores @ v).transpose(1, 2).reshape(b, t, d))
        h = self.ln2(x)
        x = x + self.mha(h, h, h, need_weights=False)[0]
        return x + self.fc2(F.gelu(self.fc1(self.ln3(x))))


DYNAMO = [
    # name, builder, seed, input shape, opset, optimize, dynamic shapes (None or {dim: (name, min, max)})
    ("small_cnn_opset18", SmallCNN, 21, (1, 3, 32, 32), 18, True, None),
    ("small_cnn_opset18_raw", SmallCNN, 21, (1, 3, 32, 32), 18, False, None),
    ("small_cnn_opset21", SmallCNN, 21, (1, 3, 32, 32), 21, True, None),
    ("tiny_block_opset18", TinyBlock, 22, (1, 8, 16), 18, True, None),
    ("tiny_block_opset18_raw", TinyBlock, 22, (1, 8, 16), 18, False, None),
    ("tiny_block_opset21", TinyBlock, 22, (1, 8, 16), 21, True, None),
    ("tiny_block_opset18_dynamic", TinyBlock, 22, (1, 8, 16), 18, True, {1: ("tokens", 2, 64)}),
]


def relative_paths(model):
    """Rewrites the absolute source paths in the exporter's stack-trace metadata (see the docstring)."""
    site = sysconfig.get_paths()["purelib"] + os.sep
    here = HERE + os.sep

    def fix(props):
        for p in props:
            if p.key == "pkg.torch.onnx.stack_trace":
                p.value = p.value.replace(here, "Samples/").replace(site, "<site-packages>/")

    graphs = [model.graph] + [f for f in model.functions]
    for g in graphs:
        for n in g.node:
            fix(n.metadata_props)
    for v in list(model.graph.value_info) + list(model.graph.input) + list(model.graph.output):
        fix(v.metadata_props)
    return model


def dynamo_export(builder, seed, shape, opset, optimize, dynamic, folder):
    torch.manual_seed(seed)
    # The classifier's kernel x10: global pooling of iid inputs leaves features that differ little between
    # samples, and the head's biases would decide the softmax alone.
    model = mof.randomize(builder(), seed, {"fc": 10.0})
    shapes = None
    if dynamic:
        shapes = {"x": {axis: torch.export.Dim(name, min=lo, max=hi) for axis, (name, lo, hi) in dynamic.items()}}
    path = os.path.join(folder, "export.onnx")
    torch.onnx.export(model, (torch.zeros(shape),), path, dynamo=True, opset_version=opset, optimize=optimize,
                      external_data=False, dynamic_shapes=shapes)
    data = relative_paths(onnx.load(path)).SerializeToString()
    os.remove(path)
    return model, data


# MARK: - Ultralytics


def ultralytics_yaml(packaged, nc):
    """The packaged yaml with nc classes and a single scale `n` of depth 0.33, width 0.0625, max channels 1024."""
    import yaml
    import ultralytics

    with open(os.path.join(os.path.dirname(ultralytics.__file__), "cfg", "models", "v8", packaged)) as f:
        cfg = yaml.safe_load(f)
    cfg["nc"] = nc
    cfg["scales"] = {"n": [0.33, 0.0625, 1024]}  # the only scale: Ultralytics warns and takes it
    return cfg


def ultralytics_export(stem, cfg, imgsz, dynamic, folder):
    """Builds YOLO from the yaml `cfg` (written as `<folder>/<stem>.yaml`, seeded) and exports it; returns the
    eval-mode torch model and the ONNX bytes (metadata `date` fixed)."""
    import yaml
    from ultralytics import YOLO

    yaml_path = os.path.join(folder, stem + ".yaml")
    with open(yaml_path, "w") as f:
        yaml.safe_dump(cfg, f, sort_keys=False, default_flow_style=None)
    cwd = os.getcwd()
    os.chdir(folder)  # Ultralytics writes `<stem>.onnx` into the current folder
    try:
        torch.manual_seed(0)
        yolo = YOLO(stem + ".yaml")
        calibrate_batchnorm(yolo.model, imgsz, seed=0)
        reference = copy.deepcopy(yolo.model).eval()
        exported = os.path.abspath(yolo.export(format="onnx", imgsz=imgsz, opset=17, simplify=False, dynamic=dynamic,
                                               batch=1, device="cpu", nms=False))
    finally:
        os.chdir(cwd)
    m = onnx.load(exported)
    for p in m.metadata_props:
        if p.key == "date":
            p.value = FIXED_DATE
    os.remove(exported)
    return reference, m.SerializeToString()


def calibrate_batchnorm(model, imgsz, seed):
    """Sets every BatchNorm's running statistics to the batch statistics of 32 seeded images (uniform in [0, 1]):
    with Ultralytics' initialisation (unit running variance, default conv init) the activations shrink layer by
    layer and the outputs do not depend on the input at all; with statistics taken from data, as after training,
    they do."""
    rng = np.random.RandomState(seed)
    norms = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    for m in norms:
        m.reset_running_stats()
        m.momentum = None  # a cumulative average over the batches
    model.train()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the same reductions on every run
    with torch.no_grad():
        for _ in range(4):
            model(torch.from_numpy(rng.uniform(0, 1, size=(8, 3, imgsz, imgsz)).astype(np.float32)))
    torch.set_num_threads(threads)
    for m in norms:
        m.momentum = 0.03  # Ultralytics' value
    model.eval()


class FirstOutput(nn.Module):
    """Ultralytics' eval-mode forward returns (predictions, raw head outputs) for a detector; the ONNX graph
    returns the predictions."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        y = self.model(x)
        return y[0] if isinstance(y, (list, tuple)) else y


# MARK: - Manifest


def attribute_value(a):
    v = onnx.helper.get_attribute_value(a)
    if isinstance(v, onnx.TensorProto):
        return f"<tensor {onnx.TensorProto.DataType.Name(v.data_type)} {list(v.dims)}>"
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, list):
        return [x.decode() if isinstance(x, bytes) else x for x in v]
    if isinstance(v, float):
        return float(np.float32(v))
    return v if isinstance(v, (int, str)) else str(type(v).__name__)


def forms(model):
    """Per op type, the distinct attribute sets it is written with (and its input count), at most 8 each."""
    seen = collections.OrderedDict()
    for n in model.graph.node:
        key = n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}"
        entry = {"inputs": len(n.input), **{a.name: attribute_value(a) for a in sorted(n.attribute, key=lambda a: a.name)}}
        text = json.dumps(entry, sort_keys=True)
        seen.setdefault(key, collections.OrderedDict())
        if len(seen[key]) < 8:
            seen[key].setdefault(text, entry)
    return {k: list(v.values()) for k, v in sorted(seen.items())}


def manifest_entry(path, out, exporter, notes):
    m = onnx.load(path)
    onnx.checker.check_model(path, full_check=True)
    return {
        "path": os.path.relpath(path, out), "reference": os.path.relpath(path, out)[:-5] + ".reference.json",
        "exporter": exporter, "producer": f"{m.producer_name} {m.producer_version}",
        "opset": next(o.version for o in m.opset_import if o.domain in ("", "ai.onnx")),
        "opset_imports": {o.domain or "ai.onnx": o.version for o in m.opset_import},
        "ir_version": m.ir_version, "graph_name": m.graph.name,
        "inputs": {i.name: mof.dims(i) for i in m.graph.input}, "outputs": {o.name: mof.dims(o) for o in m.graph.output},
        "initializers": len(m.graph.initializer), "value_infos": len(m.graph.value_info),
        "op_types": mof.op_histogram(m), "node_domains": sorted({n.domain or "ai.onnx" for n in m.graph.node}),
        "local_functions": [f"{f.domain}:{f.name}" for f in m.functions],
        "metadata_props": {p.key: p.value for p in m.metadata_props},
        "node_metadata_keys": sorted({p.key for n in m.graph.node for p in n.metadata_props}),
        "forms": forms(m), "bytes": os.path.getsize(path), "notes": notes,
    }


# MARK: - Main


def check_pins():
    import onnxscript
    import ultralytics

    found = {"torch": torch.__version__, "onnx": onnx.__version__, "onnxruntime": ort.__version__,
             "onnxscript": onnxscript.__version__, "ultralytics": ultralytics.__version__}
    for package, version in PINS.items():
        if found[package].split("+")[0] != version:
            sys.exit(f"{package} {found[package]} found, {version} pinned (requirements-exporters-torch.txt)")
    return found


def write_model(path, data):
    with open(path, "wb") as f:
        f.write(data)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(HERE, "Fixtures", "onnx", "exporters"))
    args = ap.parse_args()
    # Ultralytics reads these when it is first imported (check_pins): no network check, settings in a temporary folder.
    os.environ["YOLO_OFFLINE"] = "1"
    config_dir = tempfile.mkdtemp(prefix="ultralytics-config-")
    os.environ["YOLO_CONFIG_DIR"] = config_dir
    import_torchvision()  # before Ultralytics imports it
    versions = check_pins()
    torch.use_deterministic_algorithms(True)
    out = os.path.abspath(args.out)
    root = os.path.dirname(os.path.dirname(out))  # the references' `source` is relative to Fixtures/
    entries = []
    work = tempfile.mkdtemp(prefix="exporters-torch-")
    try:
        folder = os.path.join(out, "dynamo")
        os.makedirs(folder, exist_ok=True)
        exporter = {"name": "torch.onnx.export(dynamo=True)", "torch": versions["torch"],
                    "onnxscript": versions["onnxscript"]}
        for name, builder, seed, shape, opset, optimize, dynamic in DYNAMO:
            model, data = dynamo_export(builder, seed, shape, opset, optimize, dynamic, work)
            _, again = dynamo_export(builder, seed, shape, opset, optimize, dynamic, work)
            assert data == again, f"{name}: the export is not deterministic"
            path = os.path.join(folder, name + ".onnx")
            write_model(path, data)
            inputs = mof.uniform_samples(shape, seed + 100)
            mof.write_references(folder, name, path, inputs, torch_model=model, root=root)
            notes = (f"opset {opset}, optimize={optimize}" + (f", dynamic_shapes {dynamic}" if dynamic else "")
                     + "; stack-trace paths made relative (Samples/, <site-packages>/)")
            entries.append(manifest_entry(path, out, dict(exporter, opset_version=opset, optimize=optimize), notes))
            print(f"  {entries[-1]['path']}: {entries[-1]['bytes']} bytes, ops {entries[-1]['op_types']}")

        folder = os.path.join(out, "ultralytics")
        os.makedirs(folder, exist_ok=True)
        exporter = {"name": "ultralytics YOLO.export(format='onnx')", "ultralytics": versions["ultralytics"],
                    "torch": versions["torch"], "torch_exporter": "TorchScript (dynamo=False)"}
        det, cls = ultralytics_yaml("yolov8.yaml", 3), ultralytics_yaml("yolov8-cls.yaml", 3)
        # The fixed-size detector (the same weights, anchors folded) is left out to keep the fixtures small.
        for name, stem, cfg, dynamic, seed in [("yolov8_tiny_det_dynamic", "yolov8-tiny-det", det, True, 31),
                                               ("yolov8_tiny_cls_64", "yolov8-tiny-cls", cls, False, 32)]:
            model, data = ultralytics_export(stem, cfg, 64, dynamic, work)
            _, again = ultralytics_export(stem, cfg, 64, dynamic, work)
            assert data == again, f"{name}: the export is not deterministic"
            path = os.path.join(folder, name + ".onnx")
            write_model(path, data)
            shutil.copyfile(os.path.join(work, stem + ".yaml"), os.path.join(folder, stem + ".yaml"))
            rng = np.random.RandomState(seed)
            pixels = [rng.randint(0, 256, size=(1, 3, 64, 64)).astype(np.float32) for _ in range(3)]
            inputs = [(p / np.float32(255)).astype(np.float32) for p in pixels]
            names = [str(v) for _, v in sorted(model.names.items())]
            mof.write_references(folder, name, path, inputs, pixels, names if "cls" in name else None,
                                 torch_model=FirstOutput(model), root=root,
                                 preprocessing={"scale": 1 / 255, "bias": 0.0}, write_json=False)  # h5 only: small
            notes = (f"{stem}.yaml (nc 3, depth 0.33, width 0.0625), torch.manual_seed(0), imgsz 64, opset 17, "
                     f"simplify=False, dynamic={dynamic}; metadata date fixed to {FIXED_DATE}")
            entries.append(manifest_entry(path, out, dict(exporter, opset=17, dynamic=dynamic), notes))
            print(f"  {entries[-1]['path']}: {entries[-1]['bytes']} bytes, ops {entries[-1]['op_types']}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(config_dir, ignore_errors=True)

    manifest = {"description": "ONNX fixtures written by real PyTorch-based exporters "
                               "(Samples/make_exporter_fixtures_torch.py); dims as declared, symbolic ones as strings; "
                               "references hold NCHW inputs (onnxruntime's outputs)",
                "versions": versions, "models": entries}
    with open(os.path.join(out, "torch_manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
