#!/usr/bin/env python3
"""ONNX fixtures written by paddle2onnx from small PaddlePaddle models, with onnxruntime references.

Run by hand (not in CI), in a venv with the pins of requirements-exporters-paddle.txt (Python 3.11):

    python3 -m venv /tmp/venv-exporters-paddle
    /tmp/venv-exporters-paddle/bin/pip install -r Samples/requirements-exporters-paddle.txt
    /tmp/venv-exporters-paddle/bin/python Samples/make_exporter_fixtures_paddle.py

Each model is built in paddle's dygraph mode with seeded numpy weights (conv/linear kernels normal/sqrt(fan_in),
biases normal*0.5, BatchNorm gamma/beta/mean normal, variance uniform(0.5, 2); the layers before hardswish and ReLU6
scaled by SCALES so the reference samples reach both clipped ends, printed at export), saved as an inference model with
`paddle.jit.save` (PaddlePaddle 3 writes the PIR program as `model.json` + `model.pdiparams`) with the batch left
unknown (InputSpec [None, ...]), and converted by the `paddle2onnx` command line with its defaults, as a user
would run it: `paddle2onnx --model_dir DIR --model_filename model.json --params_filename model.pdiparams
--save_file F.onnx --opset_version N`. Every export runs in a fresh process (paddle numbers parameters and ops
with per-process counters such as `conv2d_0.w_0`), so a rerun writes the same bytes; the script exports each
model twice and checks that.

Writes into `--out` (default `Fixtures/onnx/exporters/paddle/`):

| file | model | opset |
|---|---|---|
| `paddle_cnn.onnx` | input `image` [DynamicDimension.0,3,32,32] float32 (paddle2onnx 2 writes the unknown batch as a symbol, not -1): Conv2D 3->8 3x3 s2 + BatchNorm + hardswish, depthwise Conv2D 3x3 (groups 8) + BatchNorm + hardswish, Conv2D 1x1 8->16 + BatchNorm + ReLU6, MaxPool2D 2, AvgPool2D 4 (to [16,2,2]), flatten, Linear 64->5, softmax (labels cat, dog, bird, fish, frog); output `fetch_name_0` [DynamicDimension.0,5] | 11 |
| `paddle_cnn_opset16.onnx` | the same model and weights | 16 |
| `paddle_seg.onnx` | input `image` [DynamicDimension.0,3,32,64] float32 (a text-detection map, DBNet-like in small): Conv 3->8 + BN + ReLU (c1, 32x64), Conv 8->16 s2 + BN + ReLU6 (c2), Conv 16->16 s2 + hardswish (c3), bilinear upsampling of c3 to c2's size read at run time (`paddle.shape`) + 1x1 lateral conv of c2, bilinear upsampling to c1's size + 1x1 lateral conv of c1, Conv 3x3 8->4 + ReLU, Conv 1x1 4->1, sigmoid; output `fetch_name_0` [DynamicDimension.1,1,32,64] | 11 |
| `paddle_seg_opset16.onnx` | the same model and weights | 16 |
| `*.reference.json`, `*.reference.h5` | 3 seeded samples (NCHW, batch 1; uniform [-1, 1] for the CNN, multiples of 1/8 in [-1, 1] for the seg model, to keep its JSON under 200 KB), onnxruntime's outputs, checked against paddle's own dygraph outputs (rtol 1e-4, atol 1e-5); formats in exporter_references.py | |
| `../paddle_manifest.json` | per model: exporter and versions, opset, ir_version, declared input/output dims (unknown dims as written), op-type histogram, the odd forms found in the graph (`features`), paddle2onnx's warnings, notes | |

Known exporter limits met while writing this (paddle 3.3.1 + paddle2onnx 2.1.0): `F.interpolate(...,
scale_factor=2.0)` saves its scale as a float64 array, which paddle2onnx 2.1.0 refuses ("the 0th elementwise MUST be
ir::FloatAttribute"), so the seg model upsamples to sizes instead. Paddle's dygraph-to-static translation (used by
`paddle.jit.save` and `paddle.onnx.export`) needs `forward`'s first parameter to be named `self`: otherwise it fails
with "`forward()` requires `x` arguments, but not found in input `args`". `paddle.onnx.export` runs the same
converter in process; this script uses the command line on a saved inference model instead.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

PINS = {"paddlepaddle": "3.3.1", "paddle2onnx": "2.1.0", "onnx": "1.17.0", "onnxruntime": "1.20.1"}
LABELS = ["cat", "dog", "bird", "fish", "frog"]
# name, model, seed, input shape (batch 1), opset
FIXTURES = [
    ("paddle_cnn", "cnn", 21, (1, 3, 32, 32), 11),
    ("paddle_cnn_opset16", "cnn", 21, (1, 3, 32, 32), 16),
    ("paddle_seg", "seg", 22, (1, 3, 32, 64), 11),
    ("paddle_seg_opset16", "seg", 22, (1, 3, 32, 64), 16),
]
NOTES = {
    "cnn": "producer_name and producer_version are empty. Input and output batch declared as the symbol DynamicDimension.0. hardswish is HardSigmoid(alpha=1/6, "
           "beta=0.5) then Mul at opset 11, HardSwish at 16. ReLU6 is Clip with min/max as initializer inputs "
           "(helper.constant.0/1) between Identity nodes (auto.cast.*). The first conv's bias is a separate Add of a "
           "bias Reshape-folded to [1,C,1,1]; flatten is Shape -> Slice -> Concat -> Reshape; Linear is MatMul + Add; "
           "Softmax axis 1. Names are not identifiers (p2o.pd_op.conv2d.0.0, Add.1, batch_norm2d_0.w_0); output "
           "fetch_name_0. Weights are initializers; value_info for every intermediate (polygraphy's folding pass).",
    "seg": "producer_name and producer_version are empty. paddle2onnx's polygraphy constant folding failed (exporter_warnings), so this is its unfolded graph, without value_info: all weights are Constant nodes (no initializers), every conv bias is Reshape(bias, "
           "Constant [1,-1,1,1]) + Add at run time, 18 Identity nodes. Each bilinear upsampling is Resize(linear, "
           "half_pixel) with empty Constant roi and scales and a sizes input built at run time: Shape(of the target "
           "tensor) -> Slice [2:] -> Cast int32 -> Cast int64, concatenated with Shape(x)[0:2]. ReLU6 is Clip with "
           "Constant min/max inputs, hardswish HardSigmoid + Mul (opset 11) or HardSwish (16). The output batch is a "
           "second symbol, DynamicDimension.1, not the input's DynamicDimension.0.",
}


def build(kind):
    import paddle.nn as nn
    import paddle.nn.functional as F

    class CNN(nn.Layer):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2D(3, 8, 3, stride=2, padding=1)
            self.bn1 = nn.BatchNorm2D(8, epsilon=1e-3)
            self.depthwise = nn.Conv2D(8, 8, 3, padding=1, groups=8, bias_attr=False)
            self.bn2 = nn.BatchNorm2D(8)
            self.pointwise = nn.Conv2D(8, 16, 1, bias_attr=False)
            self.bn3 = nn.BatchNorm2D(16)
            self.pool = nn.MaxPool2D(2)
            self.avg = nn.AvgPool2D(4)
            self.fc = nn.Linear(64, 5)

        def forward(self, image):
            x = F.hardswish(self.bn1(self.conv1(image)))
            x = F.hardswish(self.bn2(self.depthwise(x)))
            x = self.pool(F.relu6(self.bn3(self.pointwise(x))))
            x = self.avg(x).flatten(1)
            return F.softmax(self.fc(x), axis=-1)

    class Seg(nn.Layer):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2D(3, 8, 3, padding=1, bias_attr=False)
            self.bn1 = nn.BatchNorm2D(8)
            self.c2 = nn.Conv2D(8, 16, 3, stride=2, padding=1, bias_attr=False)
            self.bn2 = nn.BatchNorm2D(16)
            self.c3 = nn.Conv2D(16, 16, 3, stride=2, padding=1)
            self.lat2 = nn.Conv2D(16, 16, 1)
            self.reduce = nn.Conv2D(16, 8, 1)
            self.lat1 = nn.Conv2D(8, 8, 1)
            self.head1 = nn.Conv2D(8, 4, 3, padding=1)
            self.head2 = nn.Conv2D(4, 1, 1)

        def forward(self, image):
            import paddle
            c1 = F.relu(self.bn1(self.c1(image)))
            c2 = F.relu6(self.bn2(self.c2(c1)))
            c3 = F.hardswish(self.c3(c2))
            p2 = F.interpolate(c3, size=paddle.shape(c2)[2:], mode="bilinear", align_corners=False) + self.lat2(c2)
            p1 = F.interpolate(self.reduce(p2), size=paddle.shape(c1)[2:], mode="bilinear", align_corners=False)
            p1 = p1 + self.lat1(c1)
            return F.sigmoid(self.head2(F.relu(self.head1(p1))))

    return {"cnn": CNN, "seg": Seg}[kind]()


# Layers whose weight and bias are scaled so the clipped activations after them (hardswish, ReLU6) reach
# both ends of their linear range on the reference samples (printed by the export); the classifier scaled down
# so its softmax is not saturated.
SCALES = {"bn1": 4.0, "bn2": 4.0, "bn3": 6.0, "c3": 5.0, "fc": 0.2}


def randomize(model, seed):
    """Seeded numpy values for every parameter and BatchNorm statistic, in state_dict order."""
    rng = np.random.RandomState(seed)
    for key, tensor in model.state_dict().items():
        shape = tuple(tensor.shape)
        if key.endswith("_variance"):
            value = rng.uniform(0.5, 2.0, size=shape)
        elif key.endswith("_mean") or (key.startswith("bn") and key.endswith(("weight", "bias"))):
            value = rng.normal(size=shape)
        elif key.endswith("weight"):
            fan_in = int(np.prod(shape[1:])) if len(shape) == 4 else shape[0]  # Linear weights are [in, out]
            value = rng.normal(size=shape) / np.sqrt(fan_in)
        else:
            value = rng.normal(size=shape) * 0.5
        if key.endswith(("weight", "bias")):
            value = value * SCALES.get(key.split(".")[0], 1.0)
        tensor.set_value(value.astype(np.float32))
    model.eval()
    return model


def samples(shape, seed, kind):
    """3 seeded inputs in [-1, 1]: uniform for the CNN; for the seg model (18,432 values a sample) multiples of
    1/8, whose short exact decimals keep its reference JSON under 200 KB."""
    rng = np.random.RandomState(seed)
    if kind == "seg":
        return [(rng.randint(-8, 9, size=shape) / 8).astype(np.float32) for _ in range(3)]
    return [rng.uniform(-1, 1, size=shape).astype(np.float32) for _ in range(3)]


def export_one(kind, seed, shape, opset, out_path, outputs_path):
    """In a fresh process: build, save the inference model, convert with the paddle2onnx CLI, and save paddle's
    outputs for the reference samples (np.save) for the parent to compare."""
    import paddle

    paddle.seed(seed)
    paddle.set_device("cpu")
    model = randomize(build(kind), seed)
    inputs = samples(shape, seed + 100, kind)
    seen = {}
    watched = {"cnn": {"bn1": "hardswish", "bn2": "hardswish", "bn3": "relu6"},
               "seg": {"bn2": "relu6", "c3": "hardswish"}}[kind]
    handles = []
    for layer_name, activation in watched.items():
        def hook(_layer, _inputs, output, key=f"{layer_name} ({activation} input)"):
            seen[key] = output.numpy()
        handles.append(getattr(model, layer_name).register_forward_post_hook(hook))
    with paddle.no_grad():
        outputs = np.stack([model(paddle.to_tensor(x)).numpy() for x in inputs])
    for h in handles:
        h.remove()
    for key, v in seen.items():  # how much of the clipped pieces the last sample reaches
        low, high = (-3, 3) if "hardswish" in key else (0, 6)
        print(f"    {kind}: {key}: {(v < low).mean():.1%} below {low}, {(v > high).mean():.1%} above {high}")
    np.save(outputs_path, outputs)
    with tempfile.TemporaryDirectory() as tmp:
        spec = [paddle.static.InputSpec([None] + list(shape[1:]), "float32", "image")]
        paddle.jit.save(model, os.path.join(tmp, "model"), input_spec=spec)
        files = sorted(os.listdir(tmp))
        model_file = "model.json" if "model.json" in files else "model.pdmodel"
        cli = os.path.join(os.path.dirname(sys.executable), "paddle2onnx")
        run = subprocess.run([cli, "--model_dir", tmp, "--model_filename", model_file,
                              "--params_filename", "model.pdiparams", "--save_file", out_path,
                              "--opset_version", str(opset)], capture_output=True, text=True)
        if run.returncode != 0 or not os.path.exists(out_path):
            sys.exit(f"paddle2onnx failed ({run.returncode}):\n{run.stdout}\n{run.stderr}")
    # What paddle2onnx warned about (timestamps and colour codes dropped), for the manifest.
    warnings = []
    for line in (run.stdout + run.stderr).splitlines():
        line = re.sub(r"\x1b\[[0-9;]*m", "", line)
        match = re.search(r"\[(WARNING|ERROR)\]\s*(.*)", line)
        if match and "Static PaddlePaddle model will be deleted" not in match.group(2):
            warnings.append(match.group(2).strip())
    with open(outputs_path + ".warnings.json", "w") as f:
        json.dump(warnings, f)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(HERE, "Fixtures", "onnx", "exporters", "paddle"))
    ap.add_argument("--one", nargs=6, metavar=("KIND", "SEED", "SHAPE", "OPSET", "OUT", "OUTPUTS"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        kind, seed, shape, opset, out_path, outputs_path = args.one
        export_one(kind, int(seed), tuple(int(s) for s in shape.split(",")), int(opset), out_path, outputs_path)
        return

    import importlib.metadata as md
    for package, version in PINS.items():
        found = md.version(package)
        if found != version:
            sys.exit(f"{package} {found} found, {version} pinned (requirements-exporters-paddle.txt)")
    import onnx

    from exporter_references import manifest_entry, write_manifest, write_references

    out = args.out
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    base = os.path.dirname(out)
    entries = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, kind, seed, shape, opset in FIXTURES:
            path = os.path.join(out, name + ".onnx")
            exported = []
            for attempt in range(2):
                target = os.path.join(tmp, f"{name}.{attempt}.onnx")
                outputs_path = os.path.join(tmp, f"{name}.{attempt}.npy")
                subprocess.run([sys.executable, os.path.abspath(__file__), "--one", kind, str(seed),
                                ",".join(map(str, shape)), str(opset), target, outputs_path], check=True)
                with open(target, "rb") as f:
                    exported.append(f.read())
            assert exported[0] == exported[1], f"{name}: the export is not deterministic"
            with open(path, "wb") as f:
                f.write(exported[0])
            paddle_outputs = np.load(outputs_path)
            with open(outputs_path + ".warnings.json") as f:
                warnings = json.load(f)
            inputs = samples(shape, seed + 100, kind)
            write_references(out, name, path, inputs, layout="NCHW",
                             framework_outputs=[[y] for y in paddle_outputs],
                             labels=LABELS if kind == "cnn" else None)
            m = onnx.load(path)
            entry = manifest_entry(path, base, os.path.join(out, name + ".reference.json"),
                                   f"paddle2onnx {PINS['paddle2onnx']} (CLI, defaults)",
                                   {"framework": f"paddlepaddle {PINS['paddlepaddle']}",
                                    "saved_as": "paddle.jit.save inference model (PIR model.json + model.pdiparams), "
                                                "InputSpec [None, ...] float32 named image",
                                    "requested_opset": opset, "seed": seed, "exporter_warnings": warnings,
                                    "notes": NOTES[kind]})
            entries.append(entry)
            print(f"  {entry['path']}: opset {entry['opset']}, ir {m.ir_version}, {entry['bytes']} bytes, "
                  f"inputs {entry['inputs']}, ops {entry['op_types']}")
    write_manifest(os.path.join(base, "paddle_manifest.json"),
                   "ONNX fixtures written by paddle2onnx from seeded PaddlePaddle models "
                   "(Samples/make_exporter_fixtures_paddle.py); references hold NCHW float32 inputs of batch 1",
                   entries)


if __name__ == "__main__":
    main()
