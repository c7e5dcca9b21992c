#!/usr/bin/env python3
"""Export torchvision's classification architectures to ONNX (opset 13 and 18) with onnxruntime reference outputs.

For `Scripts/check-torchvision.sh` (the issue's criterion: every torchvision classification architecture that
exports at opset 13-18 converts to both formats and passes `verify` with an onnxruntime `--reference`). Run by
hand, not in CI, in the onnx venv of `Samples/requirements-onnx.txt` (Python 3.11; torchvision is pinned there):

    python3 -m venv /tmp/venv-onnx
    /tmp/venv-onnx/bin/pip install -r Samples/requirements-onnx.txt
    /tmp/venv-onnx/bin/python Samples/export_torchvision.py                      # every model, both opsets
    /tmp/venv-onnx/bin/python Samples/export_torchvision.py --models resnet18,mobilenet_v2 --opsets 13,18
    /tmp/venv-onnx/bin/python Samples/export_torchvision.py --list               # the model names

Writes into `--out` (default /tmp/torchvision-onnx: OUTSIDE the repository, the files are large and never
committed), for each model and opset N:

* `<model>_opset<N>.onnx`: `torch.onnx.export(..., dynamo=False)` (the TorchScript exporter), fixed shapes
  (batch 1), `do_constant_folding=True`, input `input` [1, 3, 224, 224] ([1, 3, 299, 299] for inception_v3),
  output `logits` [1, 1000]. Weights: torchvision's own random initialisation (`weights=None`) after
  `torch.manual_seed(0)`, except the constants `redraw_constants` redraws (vit's zero head, ConvNeXt's 1e-6
  layer scales), module in eval mode (BatchNorm uses its initial running statistics, mean 0 and
  variance 1; dropout off; inception_v3's and googlenet's auxiliary heads are not in the eval graph).
* `<model>_opset<N>.reference.h5`: onnxruntime's outputs (CPU, one thread, default graph optimisations) for 2
  seeded samples, in the layout `modelconv verify --reference` reads, written by make_onnx_fixtures.py's
  `write_references` (inputs/0 [2, 3, H, W] in the model's NCHW layout, outputs/0 [2, 1000], pixels/0 the 0-255
  RGB pixels, root attributes onnxruntime_version, producer, opset, source). Inputs are ImageNet-normalised
  pixels: input = (pixels / 255 - mean) / std with mean 0.485,0.456,0.406 and std 0.229,0.224,0.225, pixels
  uniform integers 0-255 (seed 1000 + sample). (`--json` also writes make_onnx_fixtures' `.reference.json`.)
* `manifest.json`: per model and opset: status (`exported` or `export failed` with the error's first line),
  file size, parameter count, export seconds, op-type histogram, and the largest difference between torch's
  and onnxruntime's logits (relative to the logits' largest magnitude; printed, not asserted: a failed
  torch/onnxruntime match is the exporter's business, the reference is onnxruntime's).

The manifest is merged with an existing one, so models can be exported in several runs.

torchvision from PyPI is the CUDA build (`0.28.0+cu130`): its C++ extension `_C.so` links libtorch_cuda and does not
load with the CPU-only torch 2.13.0+cpu, and torchvision 0.28's `_meta_registrations.py` then fails at import
("operator torchvision::nms does not exist"), because it registers fake kernels for `nms` and `qnms` without
checking that the extension loaded. `import_torchvision` below declares those two operators' schemas (no kernels)
when that happens and imports again. Classification models use none of torchvision's C++ operators (they are for
detection: nms, roi_align, deform_conv2d), so nothing exported depends on this.
"""

import argparse
import collections
import json
import os
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_onnx_fixtures  # noqa: E402  (the shared reference writer)

PINS = {"torch": "2.13.0", "torchvision": "0.28.0", "onnx": "1.17.0", "onnxruntime": "1.20.1"}
MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)
SAMPLES = 2
# The order the brief asks for first (small and common first, the big ones last); the rest follow alphabetically.
PRIORITY = ["resnet18", "mobilenet_v2", "mobilenet_v3_small", "squeezenet1_1", "shufflenet_v2_x0_5", "densenet121",
            "efficientnet_b0", "googlenet", "mnasnet0_5", "regnet_y_400mf", "alexnet", "vgg11", "resnet50",
            "convnext_tiny", "vit_b_16", "inception_v3", "mobilenet_v3_large", "squeezenet1_0", "resnet34",
            "shufflenet_v2_x1_0", "mnasnet1_0", "regnet_x_400mf", "efficientnet_b1", "resnext50_32x4d",
            "wide_resnet50_2", "swin_t", "maxvit_t"]


def import_torchvision():
    try:
        import torchvision
    except RuntimeError as error:
        if "torchvision::nms does not exist" not in str(error):
            raise
        for name in [n for n in sys.modules if n == "torchvision" or n.startswith("torchvision.")]:
            del sys.modules[name]
        library = torch.library.Library("torchvision", "DEF")
        library.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        library.define("qnms(Tensor qdets, Tensor scores, float iou_threshold) -> Tensor")
        import_torchvision.library = library  # kept alive: dropping it undoes the definitions
        import torchvision
    return torchvision


def redraw_constants(model):
    """Parameters torchvision initialises to a constant that hides what they feed are redrawn from torch's seeded
    generator: all-zero tensors of 2 or more dims (vit_*'s classification head and class token: zero logits
    whatever the input) from normal(0, 0.02), and ConvNeXt's `layer_scale` (1e-6: every block's residual branch
    a millionth of the skip, below verify's tolerance) from uniform(0.5, 1)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2 and not bool(p.any()):
                p.normal_(0, 0.02)
            elif name.endswith("layer_scale"):
                p.uniform_(0.5, 1.0)
    return model


def dims(value_info):
    return [d.dim_value if d.HasField("dim_value") else d.dim_param for d in value_info.type.tensor_type.shape.dim]


def samples(size):
    pixels, inputs = [], []
    for i in range(SAMPLES):
        p = np.random.RandomState(1000 + i).randint(0, 256, size=(1, 3, size, size)).astype(np.float32)
        pixels.append(p)
        inputs.append(((p / np.float32(255) - MEAN[None, :, None, None]) / STD[None, :, None, None]).astype(np.float32))
    return pixels, inputs


def export(torchvision, name, opsets, out, write_json):
    size = 299 if name == "inception_v3" else 224
    torch.manual_seed(0)
    model = redraw_constants(torchvision.models.get_model(name, weights=None).eval())
    params = sum(p.numel() for p in model.parameters())
    pixels, inputs = samples(size)
    with torch.no_grad():
        expected = [model(torch.from_numpy(x)).numpy() for x in inputs]
    entries = {}
    for opset in opsets:
        key = f"{name}_opset{opset}"
        path = os.path.join(out, key + ".onnx")
        entry = {"model": name, "opset": opset, "input": [1, 3, size, size], "parameters": params}
        start = time.time()
        try:
            # Not under torch.no_grad(): there nn.MultiheadAttention takes its fused fast path
            # (aten::_native_multi_head_attention), which the TorchScript exporter cannot export (vit_*).
            torch.onnx.export(model, (torch.zeros(1, 3, size, size),), path, dynamo=False, opset_version=opset,
                              input_names=["input"], output_names=["logits"], do_constant_folding=True)
            entry["export_seconds"] = round(time.time() - start, 1)
            m = onnx.load(path, load_external_data=False)
            entry["bytes"] = os.path.getsize(path)
            entry["inputs"] = {i.name: dims(i) for i in m.graph.input}
            entry["outputs"] = {o.name: dims(o) for o in m.graph.output}
            entry["op_types"] = dict(sorted(collections.Counter(n.op_type for n in m.graph.node).items()))
            _, results = make_onnx_fixtures.write_references(
                out, key, path, inputs, pixels=pixels, root=out, write_json=write_json,
                preprocessing={"mean": MEAN.tolist(), "std": STD.tolist(), "input": "(pixels / 255 - mean) / std"})
            scale = max(float(np.abs(e).max()) for e in expected) or 1.0
            entry["torch_vs_onnxruntime"] = max(float(np.abs(e - r[0]).max()) for e, r in zip(expected, results)) / scale
            entry["logits_max_abs"] = scale
            entry["status"] = "exported"
        except Exception as error:  # noqa: BLE001 - a failed export is a finding, recorded and skipped
            first = (str(error).strip().splitlines() or [type(error).__name__])[0]
            entry.update(status="export failed", error=f"{type(error).__name__}: {first}"[:300])
            for leftover in (path, os.path.join(out, key + ".reference.h5")):
                if os.path.exists(leftover):
                    os.remove(leftover)
        detail = (f"{entry.get('bytes', 0) / 1e6:.1f} MB, {entry.get('export_seconds')} s, torch vs onnxruntime "
                  f"{entry.get('torch_vs_onnxruntime', float('nan')):.1e}") if entry["status"] == "exported" else entry["error"]
        print(f"  {key}: {entry['status']} ({detail})", flush=True)
        entries[key] = entry
    return entries


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="/tmp/torchvision-onnx")
    ap.add_argument("--models", default="", help="comma-separated names (default: every classification model, "
                                                  "the common ones first)")
    ap.add_argument("--opsets", default="13,18")
    ap.add_argument("--skip-existing", action="store_true", help="leave out models whose files are already there")
    ap.add_argument("--json", action="store_true", help="also write the .reference.json files")
    ap.add_argument("--list", action="store_true", help="print the model names in export order and stop")
    args = ap.parse_args()
    torchvision = import_torchvision()
    found = {"torch": torch.__version__, "torchvision": torchvision.__version__, "onnx": onnx.__version__,
             "onnxruntime": ort.__version__}
    for package, version in PINS.items():
        if found[package].split("+")[0] != version:
            sys.exit(f"{package} {found[package]} found, {version} pinned (requirements-onnx.txt)")
    available = torchvision.models.list_models(module=torchvision.models)
    order = [m for m in PRIORITY if m in available] + sorted(set(available) - set(PRIORITY))
    if args.list:
        print("\n".join(order))
        return
    names = [m.strip() for m in args.models.split(",") if m.strip()] or order
    unknown = [m for m in names if m not in available]
    if unknown:
        sys.exit(f"not torchvision classification models: {', '.join(unknown)}")
    opsets = [int(o) for o in args.opsets.split(",")]
    os.makedirs(args.out, exist_ok=True)
    manifest_path = os.path.join(args.out, "manifest.json")
    manifest = {"versions": found, "models": {}}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            manifest["models"] = json.load(f).get("models", {})
    torch.use_deterministic_algorithms(True)
    for name in names:
        todo = [o for o in opsets if not (args.skip_existing and os.path.exists(
            os.path.join(args.out, f"{name}_opset{o}.reference.h5")))]
        if not todo:
            continue
        manifest["models"].update(export(torchvision, name, todo, args.out, args.json))
        manifest["models"] = dict(sorted(manifest["models"].items()))
        with open(manifest_path, "w") as f:
            json.dump(manifest, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
