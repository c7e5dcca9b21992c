#!/usr/bin/env python3
"""Write the ONNX frontend's fixtures: small PyTorch models exported to ONNX, their reference outputs, and bad files.

Run by hand (not in CI), in a venv with the pins of requirements-onnx.txt (Python 3.11):

    python3 -m venv /tmp/venv-onnx
    /tmp/venv-onnx/bin/pip install -r Samples/requirements-onnx.txt
    /tmp/venv-onnx/bin/python Samples/make_onnx_fixtures.py --out Samples/Fixtures/onnx

(The files were made with torch 2.13.0+cpu, the CPU-only build, from a local wheel folder; where only PyPI is
reachable `torch==2.13.0` installs PyPI's wheel, the CUDA build, which has the same TorchScript exporter but was
not tried. See requirements-onnx.txt.)

Every model is exported with `torch.onnx.export(..., dynamo=False)` (the TorchScript exporter), fixed shapes
(batch 1, no dynamic axes), `do_constant_folding=True`. The weights are not torch's initialisation but seeded
numpy values set by `randomize` (conv/linear kernels normal/sqrt(fan_in), biases normal*0.5, BatchNorm gamma
and beta normal, running mean normal, running variance uniform(0.5, 2)), so reruns write the same bytes and a
change of torch version does not change the weights. The script runs itself twice in memory and checks the
export is byte-identical.

Writes into `--out`:

| file | model | opset |
|---|---|---|
| `tiny_cnn.onnx` | input `input` [1,3,32,32]: Conv 3->8 3x3 pad 1, BatchNormalization (kept: exported with TrainingMode.PRESERVE of an eval-mode module, so the exporter does not fold it into the conv), Relu, MaxPool 2, depthwise Conv (group 8) + ReLU6 (Clip), Conv 1x1 8->16 stride 2, residual block (Pad + 3x3 conv valid, Relu, 3x3 conv pad 1, Add skip, Relu), GlobalAveragePool, Flatten, Gemm 16->5; output `logits` | 13 |
| `tiny_cnn_opset18.onnx` | the same model and weights | 18 |
| `mobile_block.onnx` | input `input` [1,3,24,24]: stem Conv+BN(folded by the exporter)+ReLU6, MobileNetV2 inverted residual (expand 1x1, depthwise 3x3, hardswish, squeeze-excitation: ReduceMean -> Gemm -> Relu -> Gemm -> Sigmoid -> Unsqueeze -> Mul, project 1x1, Add skip), AveragePool 3x3 stride 2 pad 1 count_include_pad=1, Resize nearest x2, Concat, ReduceMean keepdims, Conv 1x1 classifier, Squeeze, Softmax; output `probs` | 13 |
| `mobile_block_opset18.onnx` | the same model and weights (HardSwish op, ReduceMean axes as an input, Resize-18) | 18 |
| `mlp.onnx` | input `input` [1,10]: Gemm 10->16, Tanh, Unsqueeze, MatMul [1,1,16]x[16,8] + Add, Squeeze, LogSoftmax; output `log_probs` | 11 (Squeeze/Unsqueeze axes as attributes) |
| `convnext_block.onnx` | input `input` [1,3,32,32]: torchvision's ConvNeXt in small: stem Conv 3->8 4x4 stride 4, LayerNorm2d (Transpose, LayerNorm as ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add, Transpose), CNBlock (depthwise 7x7 Conv, Transpose to NHWC, LayerNorm eps 1e-6, MatMul 8->32 + Add, GELU as Erf, MatMul 32->8 + Add, Transpose back, layer scale Mul [8,1,1], Add skip), LayerNorm2d, Conv 8->16 2x2 stride 2, CNBlock, GlobalAveragePool, LayerNorm2d on [1,16,1,1], Flatten, Gemm 16->5; output `logits` | 13 |
| `convnext_block_opset18.onnx` | the same model and weights (LayerNormalization) | 18 |
| `shuffle_block.onnx` | input `input` [1,3,32,32]: Conv 3->8 3x3 stride 2 + Relu, torchvision's ShuffleNetV2 units (stride 2 8->16: two branches, Concat; two stride 1: Split/Slice in halves, the second through 1x1/depthwise 3x3/1x1 convs, Concat), each ending in the channel shuffle Reshape [1,2,8,H,W], Transpose [0,2,1,3,4], Reshape [1,16,H,W]; Conv 1x1 16->24 + Relu, ReduceMean over H and W, Gemm 24->5; output `logits` | 13 |
| `tiny_vit.onnx` | input `input` [1,3,16,16]: a vision transformer in small with a shifted-window attention first (`TinyViT`: Conv patch embedding, Slice/Concat roll, rank-6 Reshape/Transpose windows, LayerNormalization, MatMul of two computed tensors, Softmax, nn.MultiheadAttention, GELU as Erf, Gather of the class token, Gemm head); output `logits` | 18 |
| `external_data/mlp_external.onnx` + `external_data/weights.bin` | `mlp.onnx` with every initializer in `weights.bin` (`save_as_external_data=True, all_tensors_to_one_file=True, size_threshold=0`) | 11 |
| `labels_tiny_cnn.txt` | 5 class labels for `tiny_cnn` (one a line) | |
| `not_really.onnx` | an HTML page (what a failed download saves) | |
| `truncated.onnx` | the first half of `tiny_cnn.onnx` | |
| `manifest.json` | every model's opset, producer, inputs, outputs and op-type histogram | |

Reference files, next to each model (`external_data/` has its own, the same values as `mlp`'s), 3 seeded samples
each, outputs computed by onnxruntime (CPU, default graph optimisations) from the saved `.onnx` file:

* `<name>.reference.json`: {"computedBy": "onnxruntime <version>", "producer": "pytorch <version>", "opset": n,
  "layout": "NCHW", "inputs": {name: shape}, "outputs": {name: shape}, "samples": [{"inputs": {name: [flat]},
  "outputs": {name: [flat]}}]}; values are float32 (written as their shortest decimal form), flat lists in the
  ONNX tensor's own row-major order. For the image model `tiny_cnn` each sample also has "pixels": {"input":
  [flat 0-255 ints, RGB, NCHW]}, the file has "preprocessing": {"scale": 1/127.5, "bias": -1} (input = pixels *
  scale + bias, every channel alike) and "labels".
* `<name>.reference.h5`: the layout `modelconv verify --reference` reads (Sources/ModelConverter/Verification/
  ReferenceFile.swift): float32 datasets `inputs/<i>` and `outputs/<i>` of shape [N, ...] (N = 3 samples in
  place of the model's batch axis of 1: `inputs/0` of tiny_cnn is [3, 3, 32, 32]), each with attributes `name`
  (the ONNX input/output name) and `layout`; `pixels/0` (tiny_cnn: the 0-255 RGB pixels `inputs/0` was made
  from); root attributes `labels` (tiny_cnn), `onnxruntime_version`, `producer`, `opset`, `source`.
  LAYOUT: the inputs, pixels and outputs are in the ONNX model's own layout, NCHW (channels first), NOT the
  channels-last layout of the Keras reference files. The verifier matches a sample to the source graph's
  input by element count only, so these files are right for a source graph that keeps ONNX's NCHW order
  and would be silently misread by one imported channels-last.

Image inputs (tiny_cnn): pixels uniform integers 0-255, input = pixels / 127.5 - 1. Other inputs: uniform in
[-1, 1]. Seeds are fixed per model.
"""

import argparse
import collections
import io
import json
import os
import shutil
import sys

import h5py
import numpy as np
import onnx
import onnxruntime as ort
import torch
import torch.nn as nn
import torch.nn.functional as F

PINS = {"torch": "2.13.0", "onnx": "1.17.0", "onnxruntime": "1.20.1"}
LABELS = ["cat", "dog", "bird", "fish", "frog"]
PIXEL_SCALE = 1 / 127.5
PIXEL_BIAS = -1.0


# MARK: - Models


class TinyCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8, eps=1e-3)
        self.pool = nn.MaxPool2d(2)
        self.depthwise = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.pointwise = nn.Conv2d(8, 16, 1, stride=2)
        self.res1 = nn.Conv2d(16, 16, 3, padding=0)  # after an explicit Pad
        self.res2 = nn.Conv2d(16, 16, 3, padding=1)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 5)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = F.relu6(self.depthwise(x))
        x = self.pointwise(x)
        y = self.res2(F.relu(self.res1(F.pad(x, (1, 1, 1, 1)))))
        x = F.relu(x + y)
        return self.fc(torch.flatten(self.gap(x), 1))


class SqueezeExcitation(nn.Module):
    def __init__(self, channels, squeezed):
        super().__init__()
        self.fc1 = nn.Linear(channels, squeezed)
        self.fc2 = nn.Linear(squeezed, channels)

    def forward(self, x):
        s = x.mean((2, 3))
        s = torch.sigmoid(self.fc2(F.relu(self.fc1(s))))
        return x * s[:, :, None, None]


class InvertedResidual(nn.Module):
    def __init__(self, channels, expanded):
        super().__init__()
        self.expand = nn.Conv2d(channels, expanded, 1, bias=False)
        self.bn_expand = nn.BatchNorm2d(expanded)
        self.depthwise = nn.Conv2d(expanded, expanded, 3, padding=1, groups=expanded, bias=False)
        self.bn_depthwise = nn.BatchNorm2d(expanded)
        self.se = SqueezeExcitation(expanded, expanded // 4)
        self.project = nn.Conv2d(expanded, channels, 1, bias=False)
        self.bn_project = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = F.relu6(self.bn_expand(self.expand(x)))
        y = F.hardswish(self.bn_depthwise(self.depthwise(y)))
        y = self.se(y)
        y = self.bn_project(self.project(y))
        return x + y


class MobileBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn_stem = nn.BatchNorm2d(8)
        self.block = InvertedResidual(8, 24)
        self.avgpool = nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=True)
        self.upsample = nn.Upsample(scale_factor=2, mode="nearest")
        self.classifier = nn.Conv2d(16, 5, 1)

    def forward(self, x):
        x = self.block(F.relu6(self.bn_stem(self.stem(x))))
        up = self.upsample(self.avgpool(x))
        x = torch.cat([x, up], dim=1)
        x = self.classifier(x.mean((2, 3), keepdim=True))
        return torch.softmax(x.squeeze(3).squeeze(2), dim=1)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 16)
        self.weight = nn.Parameter(torch.zeros(16, 8))
        self.bias = nn.Parameter(torch.zeros(8))

    def forward(self, x):
        h = torch.tanh(self.fc1(x)).unsqueeze(1)  # [1, 1, 16]
        h = torch.matmul(h, self.weight) + self.bias
        return torch.log_softmax(h.squeeze(1), dim=1)


class LayerNorm2d(nn.LayerNorm):
    """torchvision's LayerNorm2d (ConvNeXt's stem, downsampling and head): a LayerNorm over the channels of an
    NCHW tensor, computed on its NHWC permutation."""

    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class CNBlock(nn.Module):
    """torchvision's ConvNeXt block: depthwise 7x7 conv, permute to NHWC, LayerNorm(eps 1e-6), Linear x4, GELU,
    Linear, permute back, layer scale [C, 1, 1], residual add."""

    def __init__(self, dim):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)
        self.layer_scale = nn.Parameter(torch.ones(dim, 1, 1))

    def forward(self, x):
        y = self.dwconv(x).permute(0, 2, 3, 1)
        y = self.fc2(F.gelu(self.fc1(self.norm(y)))).permute(0, 3, 1, 2)
        return self.layer_scale * y + x


class ConvNeXtBlock(nn.Module):
    """A two-stage ConvNeXt in small: stem (4x4 stride-4 conv, LayerNorm2d), a block, downsampling (LayerNorm2d,
    2x2 stride-2 conv), a block, global average pooling, the head's LayerNorm2d on [1, C, 1, 1], Flatten, Linear."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 4, stride=4)
        self.stem_norm = LayerNorm2d(8, eps=1e-6)
        self.block1 = CNBlock(8)
        self.down_norm = LayerNorm2d(8, eps=1e-6)
        self.down = nn.Conv2d(8, 16, 2, stride=2)
        self.block2 = CNBlock(16)
        self.head_norm = LayerNorm2d(16, eps=1e-6)
        self.fc = nn.Linear(16, 5)

    def forward(self, x):
        x = self.block1(self.stem_norm(self.stem(x)))
        x = self.block2(self.down(self.down_norm(x)))
        x = self.head_norm(F.adaptive_avg_pool2d(x, 1))
        return self.fc(torch.flatten(x, 1))


class TinyViT(nn.Module):
    """A vision transformer in small, with a Swin-style shifted-window attention first: patch embedding Conv 3->16
    4x4 stride 4 on 16x16, permute to NHWC, roll by -1 on H and W (Slice + Concat), window partition (Reshape to
    rank 6, Transpose) into 4 windows of 2x2 tokens, LayerNorm, Linear 16->48 (q, k, v), 2 heads: MatMul q k^T of
    two computed tensors, scale, Softmax, MatMul with v, back to the grid and rolled back, residual; then the ViT
    part: class token Concat, position embedding Add, pre-norm nn.MultiheadAttention (2 heads, exported at opset
    18 as MatMul/Softmax), MLP Linear 16->32, GELU (Erf), Linear 32->16, residuals, LayerNorm, the class token
    (Gather), head Linear 16->5."""

    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(3, 16, 4, stride=4)
        self.window_norm = nn.LayerNorm(16)
        self.window_qkv = nn.Linear(16, 48)
        self.cls = nn.Parameter(torch.zeros(1, 1, 16))
        self.pos = nn.Parameter(torch.zeros(1, 17, 16))
        self.ln1 = nn.LayerNorm(16, eps=1e-6)
        self.attn = nn.MultiheadAttention(16, 2, batch_first=True)
        self.ln2 = nn.LayerNorm(16, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16))
        self.ln = nn.LayerNorm(16, eps=1e-6)
        self.head = nn.Linear(16, 5)

    @staticmethod
    def windows(g):
        return g.reshape(1, 2, 2, 2, 2, 16).permute(0, 1, 3, 2, 4, 5).reshape(4, 4, 16)

    @staticmethod
    def grid(w):
        return w.reshape(1, 2, 2, 2, 2, 16).permute(0, 1, 3, 2, 4, 5).reshape(1, 4, 4, 16)

    def forward(self, x):
        g = torch.roll(self.patch(x).permute(0, 2, 3, 1), shifts=(-1, -1), dims=(1, 2))
        w = self.windows(g)
        q, k, v = self.window_qkv(self.window_norm(w)).reshape(4, 4, 3, 2, 8).permute(2, 0, 3, 1, 4)
        scores = torch.softmax((q @ k.transpose(-2, -1)) * 8 ** -0.5, dim=-1)
        w = w + (scores @ v).transpose(1, 2).reshape(4, 4, 16)
        t = torch.roll(self.grid(w), shifts=(1, 1), dims=(1, 2)).reshape(1, 16, 16)
        t = torch.cat([self.cls, t], dim=1) + self.pos
        h = self.ln1(t)
        t = t + self.attn(h, h, h, need_weights=False)[0]
        t = t + self.mlp(self.ln2(t))
        return self.head(self.ln(t)[:, 0])


def channel_shuffle(x, groups):
    """torchvision's ShuffleNetV2 channel shuffle: [N, C, H, W] -> [N, g, C/g, H, W] -> swap -> [N, C, H, W]."""
    n, c, h, w = x.size()
    x = x.view(n, groups, c // groups, h, w)
    x = torch.transpose(x, 1, 2).contiguous()
    return x.view(n, -1, h, w)


class ShuffleUnit(nn.Module):
    """torchvision's ShuffleNetV2 InvertedResidual: stride 2 (both branches convolve, concat) or stride 1 (chunk in
    two halves, the second convolves, concat), then the channel shuffle of 2 groups."""

    def __init__(self, inputs, outputs, stride):
        super().__init__()
        self.stride = stride
        half = outputs // 2
        if stride > 1:
            self.branch1 = nn.Sequential(
                nn.Conv2d(inputs, inputs, 3, stride, 1, groups=inputs, bias=False), nn.BatchNorm2d(inputs),
                nn.Conv2d(inputs, half, 1, bias=False), nn.BatchNorm2d(half), nn.ReLU())
        source = inputs if stride > 1 else half
        self.branch2 = nn.Sequential(
            nn.Conv2d(source, half, 1, bias=False), nn.BatchNorm2d(half), nn.ReLU(),
            nn.Conv2d(half, half, 3, stride, 1, groups=half, bias=False), nn.BatchNorm2d(half),
            nn.Conv2d(half, half, 1, bias=False), nn.BatchNorm2d(half), nn.ReLU())

    def forward(self, x):
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = torch.cat((x1, self.branch2(x2)), dim=1)
        else:
            out = torch.cat((self.branch1(x), self.branch2(x)), dim=1)
        return channel_shuffle(out, 2)


class ShuffleBlock(nn.Module):
    """A ShuffleNetV2 stage in small: stem conv + ReLU, a stride-2 unit 8 -> 16 channels, two stride-1 units, a
    1x1 conv, global average pooling, Linear."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.units = nn.Sequential(ShuffleUnit(8, 16, 2), ShuffleUnit(16, 16, 1), ShuffleUnit(16, 16, 1))
        self.conv = nn.Conv2d(16, 24, 1)
        self.fc = nn.Linear(24, 5)

    def forward(self, x):
        x = self.units(F.relu(self.stem(x)))
        return self.fc(F.relu(self.conv(x)).mean((2, 3)))


# MARK: - Weights and inputs


def randomize(model, seed, scales=None):
    """Seeded numpy weights (the project's convention, as make_fixtures.py): kernels normal/sqrt(fan_in),
    biases normal*0.5, BatchNorm gamma/beta/mean normal and variance uniform(0.5, 2). `scales` multiplies the
    kernel of the named modules (to push activations into ReLU6's and hardswish's clipped ranges)."""
    rng = np.random.RandomState(seed)
    scales = scales or {}
    with torch.no_grad():
        for name, module in model.named_modules():
            if isinstance(module, (nn.Conv2d, nn.Linear)):
                w = module.weight
                fan_in = int(np.prod(w.shape[1:]))
                w.copy_(torch.from_numpy(rng.normal(size=w.shape).astype(np.float32) / np.float32(np.sqrt(fan_in))))
                w.mul_(scales.get(name, 1.0))
                if module.bias is not None:
                    module.bias.copy_(torch.from_numpy((rng.normal(size=module.bias.shape) * 0.5).astype(np.float32)))
            elif isinstance(module, nn.LayerNorm):
                n = module.normalized_shape[0]
                module.weight.copy_(torch.from_numpy(rng.normal(size=n).astype(np.float32)))
                module.bias.copy_(torch.from_numpy(rng.normal(size=n).astype(np.float32)))
            elif isinstance(module, nn.MultiheadAttention):
                # The q, k, v projections (the output projection is an nn.Linear, set above or below).
                w = module.in_proj_weight
                w.copy_(torch.from_numpy(rng.normal(size=w.shape).astype(np.float32) / np.float32(np.sqrt(w.shape[1]))))
                module.in_proj_bias.copy_(torch.from_numpy((rng.normal(size=module.in_proj_bias.shape) * 0.5).astype(np.float32)))
            elif isinstance(module, CNBlock):
                module.layer_scale.copy_(torch.from_numpy(rng.uniform(0.5, 1.5, size=module.layer_scale.shape).astype(np.float32)))
            elif isinstance(module, nn.BatchNorm2d):
                n = module.num_features
                module.weight.copy_(torch.from_numpy(rng.normal(size=n).astype(np.float32)))
                module.bias.copy_(torch.from_numpy(rng.normal(size=n).astype(np.float32)))
                module.running_mean.copy_(torch.from_numpy(rng.normal(size=n).astype(np.float32)))
                module.running_var.copy_(torch.from_numpy(rng.uniform(0.5, 2, size=n).astype(np.float32)))
        for name, p in model.named_parameters(recurse=False):
            p.copy_(torch.from_numpy((rng.normal(size=p.shape) / (np.sqrt(p.shape[0]) if p.dim() == 2 else 2)).astype(np.float32)))
    return model.eval()


def image_samples(shape, seed):
    """3 samples: (pixels 0-255 RGB NCHW, input = pixels * scale + bias), float32."""
    rng = np.random.RandomState(seed)
    pixels = [rng.randint(0, 256, size=shape).astype(np.float32) for _ in range(3)]
    return pixels, [(p * np.float32(PIXEL_SCALE) + np.float32(PIXEL_BIAS)).astype(np.float32) for p in pixels]


def uniform_samples(shape, seed):
    rng = np.random.RandomState(seed)
    return [rng.uniform(-1, 1, size=shape).astype(np.float32) for _ in range(3)]


# MARK: - Export and reference outputs


def export_bytes(model, shape, opset, output_name, keep_batchnorm):
    f = io.BytesIO()
    torch.onnx.export(
        model, (torch.zeros(shape),), f, dynamo=False, opset_version=opset, input_names=["input"],
        output_names=[output_name], do_constant_folding=True,
        training=torch.onnx.TrainingMode.PRESERVE if keep_batchnorm else torch.onnx.TrainingMode.EVAL)
    return f.getvalue()


def dims(value_info):
    return [d.dim_value if d.HasField("dim_value") else d.dim_param for d in value_info.type.tensor_type.shape.dim]


def op_histogram(model):
    return dict(sorted(collections.Counter(n.op_type for n in model.graph.node).items()))


def shortest(values):
    """Float32 values as Python floats that print as the shortest decimal that reads back as the same float32."""
    return [float(np.format_float_positional(v, unique=True, trim="-")) if np.isfinite(v) else float(v)
            for v in np.asarray(values, np.float32).reshape(-1)]


def run_onnxruntime(path, inputs):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    in_name = session.get_inputs()[0].name
    names = [o.name for o in session.get_outputs()]
    return names, [session.run(names, {in_name: x}) for x in inputs]


def write_references(folder, name, model_path, inputs, pixels=None, labels=None, torch_model=None, root=None,
                     preprocessing=None, write_json=True):
    """Runs onnxruntime on `inputs` and writes `<name>.reference.json` (unless `write_json` is false) and
    `<name>.reference.h5` into `folder`. `preprocessing` is the JSON's description of how `pixels` became
    `inputs` (default: this script's {"scale": 1/127.5, "bias": -1}). Also used by export_torchvision.py."""
    model = onnx.load(model_path)
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    producer = f"{model.producer_name} {model.producer_version}"
    in_info = {i.name: dims(i) for i in model.graph.input}
    out_info = {o.name: dims(o) for o in model.graph.output}
    (in_name,) = in_info
    out_names, results = run_onnxruntime(model_path, inputs)
    if torch_model is not None:  # the exporter kept the model's meaning
        with torch.no_grad():
            for x, outputs in zip(inputs, results):
                np.testing.assert_allclose(torch_model(torch.from_numpy(x)).numpy(), outputs[0], rtol=1e-4, atol=1e-5)

    samples = []
    for i, (x, outputs) in enumerate(zip(inputs, results)):
        sample = {"inputs": {in_name: shortest(x)}, "outputs": {n: shortest(y) for n, y in zip(out_names, outputs)}}
        if pixels is not None:
            sample["pixels"] = {in_name: [int(p) for p in pixels[i].reshape(-1)]}
        samples.append(sample)
    doc = {"computedBy": f"onnxruntime {ort.__version__}", "producer": producer, "opset": opset, "layout": "NCHW",
           "inputs": in_info, "outputs": out_info}
    if pixels is not None:
        doc["preprocessing"] = preprocessing or {"scale": PIXEL_SCALE, "bias": PIXEL_BIAS}
    if labels is not None:
        doc["labels"] = labels
    doc["samples"] = samples
    if write_json:
        with open(os.path.join(folder, name + ".reference.json"), "w") as f:
            json.dump(doc, f, separators=(",", ":"))
            f.write("\n")

    # The verifier's HDF5 layout: [N, ...] with the samples in place of the batch axis of 1.
    def stacked(arrays):
        a = np.stack([np.asarray(v, np.float32) for v in arrays])
        return a.reshape((a.shape[0],) + a.shape[2:]) if a.ndim >= 3 and a.shape[1] == 1 else a

    with h5py.File(os.path.join(folder, name + ".reference.h5"), "w", libver="earliest", track_order=True) as f:
        f.attrs["onnxruntime_version"] = ort.__version__
        f.attrs["producer"] = producer
        f.attrs["opset"] = opset
        f.attrs["source"] = os.path.relpath(model_path, root or os.path.dirname(os.path.abspath(folder)))
        if labels is not None:
            f.attrs["labels"] = labels
        layout = "NCHW" if len(next(iter(in_info.values()))) == 4 else "row-major"
        d = f.create_group("inputs").create_dataset("0", data=stacked(inputs))
        d.attrs["name"], d.attrs["layout"] = in_name, layout
        g = f.create_group("outputs")
        for j, n in enumerate(out_names):
            d = g.create_dataset(str(j), data=stacked([r[j] for r in results]))
            d.attrs["name"], d.attrs["layout"] = n, "NCHW" if len(out_info[n]) == 4 else "row-major"
        if pixels is not None:
            d = f.create_group("pixels").create_dataset("0", data=stacked(pixels))
            d.attrs["name"], d.attrs["layout"] = in_name, layout
    return out_names, results


# MARK: - Main


MODELS = [
    # name, builder, seed, input shape, opset, output, keep BatchNormalization, image input, kernel scales
    ("tiny_cnn", TinyCNN, 11, (1, 3, 32, 32), 13, "logits", True, True, {"depthwise": 5.0}),
    ("tiny_cnn_opset18", TinyCNN, 11, (1, 3, 32, 32), 18, "logits", True, True, {"depthwise": 5.0}),
    ("mobile_block", MobileBlock, 12, (1, 3, 24, 24), 13, "probs", False, False, {"block.expand": 3.0}),
    ("mobile_block_opset18", MobileBlock, 12, (1, 3, 24, 24), 18, "probs", False, False, {"block.expand": 3.0}),
    ("mlp", MLP, 13, (1, 10), 11, "log_probs", False, False, {}),
    ("convnext_block", ConvNeXtBlock, 14, (1, 3, 32, 32), 13, "logits", False, False, {}),
    ("convnext_block_opset18", ConvNeXtBlock, 14, (1, 3, 32, 32), 18, "logits", False, False, {}),
    ("shuffle_block", ShuffleBlock, 15, (1, 3, 32, 32), 13, "logits", False, False, {}),
    ("tiny_vit", TinyViT, 16, (1, 3, 16, 16), 18, "logits", False, False, {}),
]

HTML = """<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>Sign in to continue</title></head>
<body>
<h1>Sign in to continue</h1>
<p>You need to sign in to download <code>tiny_cnn.onnx</code>.</p>
<form method="post" action="/login"><input name="user"><input name="password" type="password"><button>Sign in</button></form>
</body>
</html>
"""


def coverage(name, model, x):
    """How much of the clipped activations' ranges the first reference input reaches (printed, and checked
    so the fixture really exercises ReLU6's upper bound and hardswish's three pieces)."""
    seen = {}

    def hook(key):
        def f(_module, _inputs, output):
            seen[key] = output.detach().numpy()
        return f

    handles = []
    if isinstance(model, TinyCNN):
        handles.append(model.depthwise.register_forward_hook(hook("relu6 input")))
    if isinstance(model, MobileBlock):
        handles.append(model.block.bn_expand.register_forward_hook(hook("relu6 input")))
        handles.append(model.block.bn_depthwise.register_forward_hook(hook("hardswish input")))
    with torch.no_grad():
        model(torch.from_numpy(x))
    for h in handles:
        h.remove()
    for key, v in seen.items():
        below, above = float((v < (-3 if "hardswish" in key else 0)).mean()), float((v > (3 if "hardswish" in key else 6)).mean())
        print(f"    {name}: {key}: {below:.1%} below, {above:.1%} above the linear range")
        assert below > 0.01 and above > 0.01, (name, key, below, above)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "Fixtures", "onnx"))
    args = ap.parse_args()
    for package, version in PINS.items():
        found = {"torch": torch.__version__, "onnx": onnx.__version__, "onnxruntime": ort.__version__}[package]
        if found.split("+")[0] != version:
            sys.exit(f"{package} {found} found, {version} pinned (requirements-onnx.txt)")
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    out = args.out
    os.makedirs(out, exist_ok=True)
    manifest = {"description": "ONNX fixtures made by Samples/make_onnx_fixtures.py (tf2onnx/ by make_onnx_tf2onnx.py); "
                               "shapes as the model declares them; references hold NCHW inputs", "models": []}

    def add_to_manifest(path, reference):
        m = onnx.load(path)
        onnx.checker.check_model(path, full_check=True)
        entry = {"path": os.path.relpath(path, out), "reference": reference,
                 "opset": next(o.version for o in m.opset_import if o.domain in ("", "ai.onnx")),
                 "ir_version": m.ir_version, "producer": f"{m.producer_name} {m.producer_version}",
                 "inputs": {i.name: dims(i) for i in m.graph.input}, "outputs": {o.name: dims(o) for o in m.graph.output},
                 "initializers": len(m.graph.initializer), "op_types": op_histogram(m), "bytes": os.path.getsize(path)}
        manifest["models"].append(entry)
        print(f"  {entry['path']}: opset {entry['opset']}, {entry['bytes']} bytes, ops {entry['op_types']}")

    for name, builder, seed, shape, opset, output, keep_bn, image, scales in MODELS:
        model = randomize(builder(), seed, scales)
        first = export_bytes(model, shape, opset, output, keep_bn)
        again = export_bytes(randomize(builder(), seed, scales), shape, opset, output, keep_bn)
        assert first == again, f"{name}: the export is not deterministic"
        path = os.path.join(out, name + ".onnx")
        with open(path, "wb") as f:
            f.write(first)
        if image:
            pixels, inputs = image_samples(shape, seed + 100)
        else:
            pixels, inputs = None, uniform_samples(shape, seed + 100)
        coverage(name, model, inputs[0])
        write_references(out, name, path, inputs, pixels, LABELS if image else None, torch_model=model)
        add_to_manifest(path, name + ".reference.json")
        if name == "mlp":
            mlp_inputs = inputs

    with open(os.path.join(out, "labels_tiny_cnn.txt"), "w") as f:
        f.write("\n".join(LABELS) + "\n")

    # Initializers as external data: the model file holds only the graph, weights.bin the tensors.
    folder = os.path.join(out, "external_data")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    external = os.path.join(folder, "mlp_external.onnx")
    onnx.save_model(onnx.load(os.path.join(out, "mlp.onnx")), external, save_as_external_data=True,
                    all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)
    reloaded = onnx.load(external, load_external_data=False)
    assert all(t.data_location == onnx.TensorProto.EXTERNAL for t in reloaded.graph.initializer)
    write_references(folder, "mlp_external", external, mlp_inputs, root=os.path.dirname(os.path.abspath(out)))
    with open(os.path.join(out, "mlp.reference.json")) as a, open(os.path.join(folder, "mlp_external.reference.json")) as b:
        assert json.load(a)["samples"] == json.load(b)["samples"]
    add_to_manifest(external, "external_data/mlp_external.reference.json")

    with open(os.path.join(out, "not_really.onnx"), "w") as f:
        f.write(HTML)
    with open(os.path.join(out, "tiny_cnn.onnx"), "rb") as f:
        data = f.read()
    with open(os.path.join(out, "truncated.onnx"), "wb") as f:
        f.write(data[: len(data) // 2])
    for bad in ["not_really.onnx", "truncated.onnx"]:
        try:
            onnx.checker.check_model(onnx.load(os.path.join(out, bad)))
        except Exception as error:  # noqa: BLE001 - any failure is the point
            print(f"  {bad}: rejected by onnx ({type(error).__name__})")
        else:
            sys.exit(f"{bad} loads as a valid model")
    manifest["bad"] = {"not_really.onnx": "an HTML page", "truncated.onnx": "the first half of tiny_cnn.onnx"}

    # Keep the tf2onnx entries that make_onnx_tf2onnx.py added.
    manifest_path = os.path.join(out, "manifest.json")
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            manifest["models"] += [m for m in json.load(f)["models"] if m["path"].startswith("tf2onnx/")]
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
