#!/usr/bin/env python3
"""Write YOLO object-detector fixtures: ONNX models exported by Ultralytics, test images, onnxruntime outputs and
the detections of Ultralytics' own postprocessing, and a small labelled folder with Ultralytics' own mAP.

Run by hand (not in CI), in the venv of requirements-exporters-torch.txt (Python 3.11), the same as
make_exporter_fixtures_torch.py, whose Ultralytics helpers this script imports:

    python3 -m venv /tmp/venv-exporters-torch
    /tmp/venv-exporters-torch/bin/pip install -r Samples/requirements-exporters-torch.txt
    /tmp/venv-exporters-torch/bin/python Samples/make_detector_fixtures.py --out Samples/Fixtures/onnx/detectors

`--keep-trained` skips the training: it keeps the committed `yolov8_shapes.onnx` in `--out` and rewrites
everything else from it (images, outputs, detections, mAP, manifest; the torch/onnxruntime check of that model is
then skipped, there is no torch model, so its .detections.json lacks the `torch_vs_onnxruntime` entries; every
other file comes out the same as after a full run). Nothing is downloaded: Ultralytics builds its models from its
packaged yaml files, with `YOLO_OFFLINE=1` and `YOLO_CONFIG_DIR` in a temporary folder (make_exporter_fixtures_torch's
setup); torchvision is imported with export_torchvision's workaround (PyPI's torchvision is a CUDA build without
working C++ operators next to the CPU torch). Training, validation and export run in a temporary folder.

Writes into `--out`:

| file | what |
|---|---|
| `yolov8_tiny_80.onnx` | YOLOv8 detector from the packaged `cfg/models/v8/yolov8.yaml`, `nc: 80`, a single scale `n` of depth 0.33, width 0.0625, max channels 1024 (yolov8n has width 0.25; make_exporter_fixtures_torch's `ultralytics_yaml`), random weights: Ultralytics' initialisation after `torch.manual_seed(0)`, then BatchNorm statistics from 32 seeded uniform images (`calibrate_batchnorm`). Input `images` [1,3,64,64], output `output0` [1,84,84] |
| `yolo11_tiny_3.onnx` | the same from the packaged `cfg/models/11/yolo11.yaml` with `nc: 3` (the same scale; C2PSA then has one attention head of 32 channels). Input [1,3,64,64], output [1,7,84] |
| `yolov8_shapes.onnx` | a TRAINED detector of squares, circles and triangles (see below), `yolov8.yaml` with `nc: 3`, depth 0.33, width 0.25, max channels 128 (channels 16, 32, then 32 everywhere: 0.36 M parameters). Input [1,3,128,128], output [1,7,336] |
| `*.yaml` | the model yaml files as built (`yolov8-tiny-80.yaml`, `yolo11-tiny-3.yaml`, `yolov8-shapes.yaml`) |
| `images/<model>_<i>.png` | test images at exactly the model's input size (RGB, 8 bits): for the random models 2 seeded shape images and 1 of uniform noise; for the trained model 4 new seeded shape images (seeds not used in training) |
| `<model>.detections.h5` | onnxruntime's raw outputs (CPU, one thread) for the model's images: `outputs/0` [images, 4 + nc, anchors] float32 (attributes `name` output0, `layout` row-major), root attributes `images` (the PNG paths, in order), `source`, `onnxruntime_version`. No inputs: input = PNG pixels / 255, RGB, NCHW |
| `<model>.detections.json` | per image: the PNG, ground-truth labels (shape images), max class score, the torch/onnxruntime difference, and for each postprocessing run (parameters recorded) the detections of `ultralytics.utils.nms.non_max_suppression` applied to onnxruntime's output: class, name, confidence, anchor index, box xyxy in input pixels (not clipped) and cx, cy, w, h normalised by the input width/height; how near the decisions are to flipping; whether per-class NMS without the class offset gives the same; whether `YOLO(onnx).predict(png)` gave the same |
| `shapes_val/images/*.png`, `shapes_val/labels/*.txt` | 8 more shape images at 128x128 (Ultralytics' layout: `class cx cy w h` per object, normalised, 6 decimals) |
| `shapes_val/reference_map.json` | Ultralytics' `YOLO("yolov8_shapes.onnx").val(...)` on that folder: mAP@0.5 and mAP@0.5:0.95 per class and overall, precision, recall, every setting |
| `detectors_manifest.json` | every file with its size and sha256, every model's metadata (names, imgsz, stride, ...), inputs and outputs, op-type histogram, the versions, the training settings and metrics |

Export: `YOLO(...).export(format="onnx", imgsz=N, opset=17, simplify=False, dynamic=False, batch=1, nms=False,
device="cpu")` (the TorchScript exporter, BatchNorm fused into the convs). Ultralytics' metadata_props are kept
except `date`, set to 2000-01-01T00:00:00+00:00. Each model is exported twice and the bytes compared. The output
rows are cx, cy, w, h in input pixels, then one sigmoid score per class (no objectness), one column per anchor
(8x8 + 4x4 + 2x2 = 84 anchors at 64, 16x16 + 8x8 + 4x4 = 336 at 128; strides 8, 16, 32).

Postprocessing runs, all `ultralytics.utils.nms.non_max_suppression(output, conf, iou, classes=None,
agnostic=..., multi_label=..., max_det=300, nc=0)` (as the 8.4.190 DetectionPredictor calls it, with
`return_idxs=True` for the anchor indices):

| model | runs (name: conf, IoU, agnostic, multi_label) |
|---|---|
| `yolov8_shapes` | per_class: 0.25, 0.45, False, False; agnostic: 0.25, 0.45, True, False; per_class_low_conf and agnostic_low_conf: the same at conf 0.001; validator: 0.001, 0.7, False, True (the validator's call) |
| `yolov8_tiny_80` | per_class: 2e-5, 0.7, False, False; agnostic: 2e-5, 0.7, True, False; per_class_iou045: 2e-5, 0.45, False, False |
| `yolo11_tiny_3` | the same runs at conf 2.7e-4 |

The random models' scores are small (Ultralytics initialises the class biases to log(5 / nc / (640 / stride)^2)):
~1e-5 to 1e-3 (up to 0.99 on uniform noise for the 80-class model), and their boxes are ~120 pixels and more
on a 64-pixel input (random DFL weights), so NMS at IoU 0.45 leaves few: their main runs use 0.7, the cfg's
default. onnxruntime's Sigmoid is exact to ~6e-8 absolute, so small scores often tie; the thresholds were picked
so that no two candidates tie (the script asserts it, since torch's `argsort(descending=True)` is not a stable
sort, so tied candidates' NMS order would be the sort's choice) and no score is within 3e-7 of them. Each run
records, per image, `candidates`, `closest_score_to_conf_thres` and `closest_pair_iou_to_iou_thres` (how near
a decision is to flipping).

Ultralytics' NMS (8.4.190, recorded in every .detections.json as `postprocessing.semantics`): candidates are the
anchors whose largest class score is > conf (strict); the class is the argmax (multi_label=False), kept if its
score is > conf; boxes cx, cy, w, h become x1 = cx - w/2 ... in float32; per-class NMS adds class * 7680
(`max_wh`) to the boxes (agnostic: 0) and runs one greedy NMS over all of them: in descending confidence, a box
is dropped if its IoU with an already kept box is > iou (kept if <= iou); then the first max_det (300), in
descending confidence; no clipping (the predictor clips to the image afterwards). NMS class by class without the
offset gives the same detections in every run here (`same_without_class_offset`). The validator calls it with
multi_label=True: one candidate per (anchor, class) with score > conf.

torchvision's `nms` has no kernel in this venv (see above), so `torchvision.ops.nms` is replaced by Ultralytics'
own pure-torch `TorchNMS.nms` (which Ultralytics documents as matching torchvision exactly: the same comparison,
a box is kept if its IoU with every kept box is <= the threshold), for the direct calls, the predictor and the
validator alike. The predictor cross-check runs `YOLO(onnx).predict(png, imgsz=N, conf=..., iou=...,
agnostic_nms=...)` for every run without multi_label: at the model's own size its letterbox changes nothing, and
its only difference from the direct call is that it clips the boxes to the image (recorded per image as
`clipped`); all agree (`predictor.same`). The torch model's outputs are checked against onnxruntime's (box rows
to 2e-5 of the largest box value, scores to 1e-5; the differences are recorded).

The shapes data set (`shape_image`): 128x128 RGB, a background of a random colour plus a random linear gradient
(+-30 levels), 1 to 3 filled shapes of side/diameter 20-53 pixels (axis-aligned square, disc, or isosceles
triangle pointing up, down, left or right), each a random colour far from the background (largest channel
difference >= 100), no two shapes' boxes within 3 pixels of each other, then gaussian noise (sigma 6) on every
pixel, rounded and clipped; the label is the tight box of the shape's pixels. Each image has its own
`np.random.RandomState(seed)`: train seeds 10000-10511 (512 images), val 20000-20063 (64), test images 30000-30003,
shapes_val 40000-40007, random models' images 50000+. Training: `YOLO("yolov8-shapes.yaml").train(...)` with the
settings in TRAIN_ARGS (CPU, `seed=0`, `deterministic=True`, `workers=0`, AdamW, batch 16, nbs 16, mosaic with
`close_mosaic`, Ultralytics' default colour/flip/scale augmentations), the best epoch's EMA weights (`best.pt`,
which Ultralytics saves in float16) exported at 128. Training took 330-360 s on 2 CPU cores (the whole script
about 6 minutes); the best epoch (val mAP50 0.995, mAP50-95 0.936 on the 64 val images) is near the last. Three
trainings on the same machine wrote byte-identical ONNX files, but CPU training is not guaranteed bit-identical
across machines, CPUs, thread counts or library builds: the committed `yolov8_shapes.onnx` is the fixture, and
`--keep-trained` regenerates the rest from it. (Validation in the first two epochs hits Ultralytics' NMS time
limit, thousands of low-confidence boxes, which truncates those epochs' near-zero metrics by time: it cannot change
which epoch is best.)

Every other file is deterministic: reruns write the same bytes (PNG through Pillow, HDF5 without timestamps via
`track_order` and `libver="earliest"`, JSON with fixed float formatting).
"""

import argparse
import ast
import copy
import hashlib
import importlib.metadata
import json
import os
import shutil
import sys
import tempfile
import time

import h5py
import numpy as np
import onnx
import onnxruntime as ort
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_exporter_fixtures_torch as met  # noqa: E402  (ultralytics_yaml, ultralytics_export, calibrate_batchnorm)
import make_onnx_fixtures as mof  # noqa: E402  (run_onnxruntime, dims, op_histogram)
from export_torchvision import import_torchvision  # noqa: E402  (torchvision's CUDA wheel with CPU torch)

# Pins beyond make_exporter_fixtures_torch's (torch, onnx, onnxruntime, onnxscript, ultralytics).
EXTRA_PINS = {"numpy": "1.26.4", "h5py": "3.16.0", "pillow": "13.0.0", "opencv-python": "4.11.0.86",
              "torchvision": "0.28.0"}
FIXED_DATE = met.FIXED_DATE
NAMES = ["square", "circle", "triangle"]
OPSET = 17

# The synthetic shapes data set.
SHAPES_SIZE = 128
SEEDS = {"train": (10000, 512), "val": (20000, 64), "test": (30000, 4), "shapes_val": (40000, 8)}
NOISE_SIGMA = 6.0

# Training (YOLO.train keyword arguments besides data, imgsz, project, name).
TRAIN_WIDTH = 0.25
TRAIN_MAX_CHANNELS = 128
TRAIN_ARGS = dict(epochs=40, batch=16, nbs=16, device="cpu", workers=0, seed=0, deterministic=True, optimizer="AdamW",
                  lr0=0.003, lrf=0.05, warmup_epochs=2, close_mosaic=10, mosaic=1.0, amp=False, cache=False,
                  plots=False, val=True, verbose=False, exist_ok=True)

# Postprocessing.
MAX_DET = 300
IOU = 0.45
TRAINED_CONF = 0.25
# Random models: scores ~1e-5 to 1e-3 (up to 0.99 on noise for the 80-class model) and boxes of ~120 pixels and
# more on a 64-pixel input (random DFL weights), which overlap so much that NMS at 0.45 leaves few: the main runs
# use the cfg's IoU default 0.7 (what the predictor and validator use).
# onnxruntime's Sigmoid is exact to ~6e-8 absolute, so such small scores tie often: the thresholds are low values
# with no tied candidate scores in any image (checked by `decision_margins`) and no score within 3e-7 of them.
RANDOM_CONF = {80: 0.00002, 3: 0.00027}
RANDOM_IOU = 0.7
# Ultralytics' validator for the mAP reference (its defaults for val: conf 0.001, iou 0.7).
VAL_CONF, VAL_IOU = 0.001, 0.7


# MARK: - Synthetic images


def shape_image(seed, size):
    """A seeded image of 1-3 filled shapes on a noisy background (see the docstring) and its labels
    [(class, cx, cy, w, h)] normalised by the size."""
    rng = np.random.RandomState(seed)
    base = rng.randint(30, 226, size=3).astype(np.float64)
    gx, gy = rng.uniform(-30, 30, size=2)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float64)
    image = base[None, None, :] + (gx * (xx / (size - 1) - 0.5) + gy * (yy / (size - 1) - 0.5))[..., None]
    px, py = xx + 0.5, yy + 0.5  # pixel centres
    boxes, labels = [], []
    for _ in range(rng.randint(1, 4)):
        for _attempt in range(100):
            cls = int(rng.randint(3))
            d = int(rng.randint(int(size * 0.16), int(size * 0.42) + 1))
            x0, y0 = int(rng.randint(1, size - d)), int(rng.randint(1, size - d))
            if all(x0 + d + 3 <= bx0 or bx1 + 3 <= x0 or y0 + d + 3 <= by0 or by1 + 3 <= y0
                   for bx0, by0, bx1, by1 in boxes):
                break
        else:
            continue
        if cls == 0:
            mask = (xx >= x0) & (xx < x0 + d) & (yy >= y0) & (yy < y0 + d)
        elif cls == 1:
            r = d / 2
            mask = (px - (x0 + r)) ** 2 + (py - (y0 + r)) ** 2 <= r * r
        else:
            a, b, c = {0: [(x0, y0 + d), (x0 + d, y0 + d), (x0 + d / 2, y0)],  # pointing up
                       1: [(x0, y0), (x0 + d, y0), (x0 + d / 2, y0 + d)],  # down
                       2: [(x0 + d, y0), (x0 + d, y0 + d), (x0, y0 + d / 2)],  # left
                       3: [(x0, y0), (x0, y0 + d), (x0 + d, y0 + d / 2)]}[int(rng.randint(4))]

            def edge(p, q):
                return (q[0] - p[0]) * (py - p[1]) - (q[1] - p[1]) * (px - p[0])

            e1, e2, e3 = edge(a, b), edge(b, c), edge(c, a)
            mask = ((e1 >= 0) & (e2 >= 0) & (e3 >= 0)) | ((e1 <= 0) & (e2 <= 0) & (e3 <= 0))
        while True:
            colour = rng.randint(0, 256, size=3).astype(np.float64)
            if np.abs(colour - base).max() >= 100:
                break
        image[mask] = colour
        ys, xs = np.nonzero(mask)
        x1, x2, y1, y2 = int(xs.min()), int(xs.max()) + 1, int(ys.min()), int(ys.max()) + 1
        boxes.append((x0, y0, x0 + d, y0 + d))
        labels.append((cls, (x1 + x2) / 2 / size, (y1 + y2) / 2 / size, (x2 - x1) / size, (y2 - y1) / size))
    image = image + rng.normal(0, NOISE_SIGMA, size=image.shape)
    return np.clip(np.round(image), 0, 255).astype(np.uint8), labels


def noise_image(seed, size):
    return np.random.RandomState(seed).randint(0, 256, size=(size, size, 3)).astype(np.uint8), None


def write_png(path, pixels):
    from PIL import Image

    os.makedirs(os.path.dirname(path), exist_ok=True)
    Image.fromarray(pixels, "RGB").save(path, format="PNG")
    back = np.asarray(Image.open(path).convert("RGB"))
    assert np.array_equal(back, pixels), path


def label_text(labels):
    return "".join(f"{c} {cx:.6f} {cy:.6f} {w:.6f} {h:.6f}\n" for c, cx, cy, w, h in labels)


def write_split(root, split, first_seed, count, size):
    """Ultralytics' layout: `<root>/images/<split>/<seed>.png` and `<root>/labels/<split>/<seed>.txt`
    (split "" for a flat folder)."""
    counts = [0] * len(NAMES)
    for seed in range(first_seed, first_seed + count):
        pixels, labels = shape_image(seed, size)
        write_png(os.path.join(root, "images", split, f"shapes_{seed}.png"), pixels)
        os.makedirs(os.path.join(root, "labels", split), exist_ok=True)
        with open(os.path.join(root, "labels", split, f"shapes_{seed}.txt"), "w") as f:
            f.write(label_text(labels))
        for c, *_ in labels:
            counts[c] += 1
    return counts


def read_input(path):
    """The model input of a PNG: RGB pixels / 255 as float32, NCHW (what Ultralytics' predictor computes)."""
    from PIL import Image

    pixels = np.asarray(Image.open(path).convert("RGB"))
    return (pixels.transpose(2, 0, 1)[None].astype(np.float32) / np.float32(255)).astype(np.float32)


# MARK: - Models


def packaged_yaml(subfolder, packaged, nc, depth, width, max_channels):
    """An Ultralytics packaged model yaml (`cfg/models/<subfolder>/<packaged>`) with nc classes and a single scale
    `n`. make_exporter_fixtures_torch's `ultralytics_yaml` for v8 files, the same for the others."""
    import yaml
    import ultralytics

    if subfolder == "v8":
        cfg = met.ultralytics_yaml(packaged, nc)
    else:
        with open(os.path.join(os.path.dirname(ultralytics.__file__), "cfg", "models", subfolder, packaged)) as f:
            cfg = yaml.safe_load(f)
        cfg["nc"] = nc
    cfg["scales"] = {"n": [depth, width, max_channels]}
    return cfg


def fix_date(data):
    m = onnx.load_from_string(data)
    for p in m.metadata_props:
        if p.key == "date":
            p.value = FIXED_DATE
    return m.SerializeToString()


def train_shapes(work):
    """Writes the data set and the model yaml into `work`, trains, and returns (best.pt path, training summary)."""
    import yaml
    from ultralytics import YOLO

    data_root = os.path.join(work, "shapes")
    counts = {}
    for split in ("train", "val"):
        first, count = SEEDS[split]
        counts[split] = write_split(data_root, split, first, count, SHAPES_SIZE)
    with open(os.path.join(work, "shapes.yaml"), "w") as f:
        yaml.safe_dump({"path": data_root, "train": "images/train", "val": "images/val",
                        "names": dict(enumerate(NAMES))}, f, sort_keys=False)
    cfg = packaged_yaml("v8", "yolov8.yaml", len(NAMES), 0.33, TRAIN_WIDTH, TRAIN_MAX_CHANNELS)
    with open(os.path.join(work, "yolov8-shapes.yaml"), "w") as f:
        yaml.safe_dump(cfg, f, sort_keys=False, default_flow_style=None)
    cwd = os.getcwd()
    os.chdir(work)  # relative names: the model's `args.data` (in the ONNX description) is "shapes.yaml"
    try:
        torch.manual_seed(0)
        yolo = YOLO("yolov8-shapes.yaml")
        start = time.time()
        yolo.train(data="shapes.yaml", imgsz=SHAPES_SIZE, project=os.path.join(work, "runs"), name="train",
                   **TRAIN_ARGS)
        seconds = time.time() - start
    finally:
        os.chdir(cwd)
    trainer = yolo.trainer
    metrics = {k: round(float(v), 5) for k, v in trainer.metrics.items()}
    summary = {"data": {split: {"images": SEEDS[split][1], "first_seed": SEEDS[split][0],
                                "instances": dict(zip(NAMES, counts[split]))} for split in ("train", "val")},
               "model_yaml": "yolov8-shapes.yaml", "imgsz": SHAPES_SIZE,
               "train_args": {k: v for k, v in TRAIN_ARGS.items()}, "best_epoch_metrics_on_val": metrics,
               "best_fitness": round(float(trainer.best_fitness), 5)}
    print(f"  trained in {seconds:.0f} s: {metrics}")
    return str(trainer.best), summary, seconds


def export_trained(best, work):
    """Exports best.pt at the training size; returns the float32 eval-mode torch model and the ONNX bytes."""
    from ultralytics import YOLO

    cwd = os.getcwd()
    os.chdir(work)
    try:
        trained = YOLO(best)
        reference = copy.deepcopy(trained.model).float().eval()
        exported = trained.export(format="onnx", imgsz=SHAPES_SIZE, opset=OPSET, simplify=False, dynamic=False,
                                  batch=1, device="cpu", nms=False)
    finally:
        os.chdir(cwd)
    with open(exported, "rb") as f:
        data = fix_date(f.read())
    os.remove(exported)
    return reference, data


# MARK: - Postprocessing


def use_ultralytics_nms():
    """torchvision's `nms` needs its C++ extension, which does not load here; Ultralytics calls
    `torchvision.ops.nms` whenever torchvision is imported (its predictor and validator import it), so it is
    replaced by Ultralytics' own `TorchNMS.nms` (used when torchvision is not imported)."""
    import torchvision
    from ultralytics.utils.nms import TorchNMS

    torchvision.ops.nms = TorchNMS.nms
    torchvision.ops.boxes.nms = TorchNMS.nms


def ultralytics_postprocess(output, conf, iou, agnostic, multi_label=False):
    """`ultralytics.utils.nms.non_max_suppression` as the 8.4.190 DetectionPredictor calls it (multi_label=True:
    as its DetectionValidator does); returns (rows [x1, y1, x2, y2, conf, class] float32, anchor indices)."""
    from ultralytics.utils import nms

    dets, keep = nms.non_max_suppression(torch.from_numpy(np.array(output, np.float32)), conf, iou, classes=None,
                                         agnostic=agnostic, multi_label=multi_label, max_det=MAX_DET, nc=0,
                                         end2end=False, rotated=False, return_idxs=True)
    return dets[0].numpy(), keep[0].numpy().astype(np.int64)


def decision_margins(output, run):
    """How close this image's decisions are to flipping: tied candidate scores (their NMS order would be the
    sort's choice: torch's argsort(descending=True) is not stable), anchors whose best score is shared by two
    classes, the smallest |score - conf_thres| over the anchors (or, multi_label, over the scores), and the smallest
    |IoU - iou_thres| over the candidate pairs NMS could compare (same class unless agnostic; IoU in float64 on
    the un-offset boxes)."""
    y = np.asarray(output, np.float32)[0]
    scores, conf = y[4:], np.float32(run["conf_thres"])
    best = scores.max(0)
    if run["multi_label"]:
        anchors, classes = np.nonzero((scores > conf).T)
        values, near = scores[classes, anchors], scores
    else:
        anchors = np.nonzero(best > conf)[0]
        classes, values, near = scores[:, anchors].argmax(0), best[anchors], best
    tied_argmax = int(((scores == best[None]).sum(0) > 1)[best > conf].sum()) if not run["multi_label"] else 0
    cx, cy, w, h = (y[i, anchors].astype(np.float64) for i in range(4))
    x1, y1, x2, y2 = cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2
    iw = (np.minimum(x2[:, None], x2[None]) - np.maximum(x1[:, None], x1[None])).clip(0)
    ih = (np.minimum(y2[:, None], y2[None]) - np.maximum(y1[:, None], y1[None])).clip(0)
    inter = iw * ih
    area = (x2 - x1) * (y2 - y1)
    iou = inter / (area[:, None] + area[None] - inter)
    pairs = np.triu(np.ones(iou.shape, bool), 1)
    if not run["agnostic"]:
        pairs &= classes[:, None] == classes[None]
    iou_margin = float(np.abs(iou[pairs] - run["iou_thres"]).min()) if pairs.any() else None
    return {"candidates": int(len(values)), "candidate_score_ties": int(len(values) - len(np.unique(values))),
            "argmax_ties": tied_argmax,
            "closest_score_to_conf_thres": float(f"{float(np.abs(near - conf).min()):.3g}"),
            "closest_pair_iou_to_iou_thres": None if iou_margin is None else float(f"{iou_margin:.3g}")}


def per_class_nms_without_offset(output, run):
    """Per-class NMS done class by class on the boxes as they are (no max_wh offset), with the same TorchNMS.nms,
    merged by descending confidence: [(anchor, class)]. Compared with Ultralytics' offset trick per run."""
    from ultralytics.utils.nms import TorchNMS
    from ultralytics.utils.ops import xywh2xyxy

    y = np.asarray(output, np.float32)[0]
    scores, conf = y[4:], np.float32(run["conf_thres"])
    if run["multi_label"]:
        anchors, classes = np.nonzero((scores > conf).T)
    else:
        anchors = np.nonzero(scores.max(0) > conf)[0]
        classes = scores[:, anchors].argmax(0)
    values = scores[classes, anchors]
    boxes = xywh2xyxy(torch.from_numpy(np.ascontiguousarray(y[:4, anchors].T)))
    kept = []
    for c in np.unique(classes):
        sel = np.nonzero(classes == c)[0]
        for j in TorchNMS.nms(boxes[sel], torch.from_numpy(values[sel]), run["iou_thres"]).numpy():
            kept.append((-float(values[sel[j]]), int(anchors[sel[j]]), int(c)))
    return [(a, c) for _, a, c in sorted(kept)[:MAX_DET]]


def f32(v):
    """A float32 as the shortest decimal that reads back as the same float32."""
    return float(np.format_float_positional(np.float32(v), unique=True, trim="-"))


def detection_rows(dets, keep, width, height, names):
    rows = []
    for (x1, y1, x2, y2, conf, cls), anchor in zip(dets, keep):
        c = int(cls)
        rows.append({"class": c, "name": names[c], "confidence": f32(conf), "anchor": int(anchor),
                     "xyxy": [f32(x1), f32(y1), f32(x2), f32(y2)],
                     "cxcywh_normalized": [f32((np.float32(x1) + np.float32(x2)) / 2 / width),
                                           f32((np.float32(y1) + np.float32(y2)) / 2 / height),
                                           f32((np.float32(x2) - np.float32(x1)) / width),
                                           f32((np.float32(y2) - np.float32(y1)) / height)]})
    return rows


def predictor_check(yolo, png, size, dets, conf, iou, agnostic):
    """Runs Ultralytics' predictor on the PNG and compares with the direct postprocessing (its boxes clipped to
    the image, as the predictor's scale_boxes does)."""
    result = yolo.predict(png, imgsz=size, conf=conf, iou=iou, agnostic_nms=agnostic, max_det=MAX_DET,
                          device="cpu", verbose=False, save=False)[0]
    boxes = result.boxes.xyxy.numpy()
    confs = result.boxes.conf.numpy()
    classes = result.boxes.cls.numpy().astype(np.int64)
    clipped = dets[:, :4].copy()
    clipped[:, [0, 2]] = clipped[:, [0, 2]].clip(0, size)
    clipped[:, [1, 3]] = clipped[:, [1, 3]].clip(0, size)
    n_clipped = int((np.abs(clipped - dets[:, :4]) > 0).any(1).sum())
    check = {"detections": int(len(boxes)), "clipped": n_clipped}
    if len(boxes) == len(dets) and np.array_equal(classes, dets[:, 5].astype(np.int64)):
        check["same_classes_and_order"] = True
        check["max_abs_box_diff"] = f32(np.abs(boxes - clipped).max()) if len(boxes) else 0.0
        check["max_abs_conf_diff"] = f32(np.abs(confs - dets[:, 4]).max()) if len(boxes) else 0.0
        check["same"] = bool(check["max_abs_box_diff"] <= 1e-3 and check["max_abs_conf_diff"] <= 1e-5)
    else:
        check["same_classes_and_order"] = False
        check["same"] = False
        check["predictor"] = [[f32(v) for v in b] + [f32(c), int(k)] for b, c, k in zip(boxes, confs, classes)]
    return check


# MARK: - References


def write_detections(out, name, onnx_path, images, runs, torch_model, names, notes):
    """`<name>.detections.h5` (raw outputs) and `<name>.detections.json` (detections per run) for `images`
    [(png path, labels or None, seed, kind)]."""
    from ultralytics import YOLO

    size = mof.dims(onnx.load(onnx_path).graph.input[0])[-1]
    inputs = [read_input(p) for p, *_ in images]
    out_names, results = mof.run_onnxruntime(onnx_path, inputs)
    outputs = [r[0] for r in results]
    rel = [os.path.relpath(p, out) for p, *_ in images]

    with h5py.File(os.path.join(out, name + ".detections.h5"), "w", libver="earliest", track_order=True) as f:
        f.attrs["onnxruntime_version"] = ort.__version__
        f.attrs["source"] = os.path.basename(onnx_path)
        f.attrs["images"] = rel
        f.attrs["preprocessing"] = "input = RGB pixels / 255 (float32), NCHW, no resizing"
        stacked = np.concatenate(outputs, 0).astype(np.float32)
        d = f.create_group("outputs").create_dataset("0", data=stacked)
        d.attrs["name"], d.attrs["layout"] = out_names[0], "row-major"

    yolo = YOLO(onnx_path, task="detect")
    per_image = []
    for (png, labels, seed, kind), x, y, r in zip(images, inputs, outputs, rel):
        entry = {"image": r, "seed": seed, "kind": kind}
        if labels is not None:
            entry["labels"] = [{"class": c, "name": names[c], "cxcywh_normalized": [round(v, 6) for v in b]}
                               for c, *b in labels]
        entry["max_class_score"] = f32(y[0, 4:].max())
        if torch_model is not None:
            with torch.no_grad():
                t = met.FirstOutput(torch_model)(torch.from_numpy(x)).numpy()
            # Box rows: cx = anchor + (right - left) / 2 * stride cancels distances of hundreds of pixels for the
            # random models, so their tolerance is relative to the largest box value; scores absolute.
            box_diff, box_scale = float(np.abs(t[:, :4] - y[:, :4]).max()), float(np.abs(y[:, :4]).max())
            score_diff = float(np.abs(t[:, 4:] - y[:, 4:]).max())
            assert box_diff <= 2e-5 * max(box_scale, 1.0), f"{name} {r}: torch/onnxruntime boxes differ by {box_diff}"
            assert score_diff <= 1e-5, f"{name} {r}: torch/onnxruntime scores differ by {score_diff}"
            entry["torch_vs_onnxruntime"] = {"max_abs_box_diff": float(f"{box_diff:.3g}"),
                                             "max_abs_box_value": float(f"{box_scale:.6g}"),
                                             "max_abs_score_diff": float(f"{score_diff:.3g}")}
        entry["runs"] = []
        for run in runs:
            dets, keep = ultralytics_postprocess(y, run["conf_thres"], run["iou_thres"], run["agnostic"],
                                                 run["multi_label"])
            # Ties in confidence would make the order depend on the sort: none occur in these fixtures.
            margins = decision_margins(y, run)
            assert margins["candidate_score_ties"] == 0 and margins["argmax_ties"] == 0, f"{name} {r}: {margins}"
            check = None  # the predictor has no multi_label
            if not run["multi_label"]:
                check = predictor_check(yolo, png, size, dets, run["conf_thres"], run["iou_thres"], run["agnostic"])
            offset_same = None
            if not run["agnostic"]:
                offset_same = per_class_nms_without_offset(y, run) == [(int(a), int(d[5])) for a, d in zip(keep, dets)]
            entry["runs"].append({"run": run["name"], "count": int(len(dets)), **margins,
                                  "same_without_class_offset": offset_same,
                                  "predictor": check,
                                  "detections": detection_rows(dets, keep, size, size, names)})
            same = "-" if check is None else f"{'same' if check['same'] else 'DIFFERS'} ({check['clipped']} clipped)"
            print(f"    {r} {run['name']}: {len(dets)} detections, predictor {same}")
        per_image.append(entry)

    m = onnx.load(onnx_path)
    doc = {
        "model": os.path.basename(onnx_path),
        "input": {"name": m.graph.input[0].name, "shape": mof.dims(m.graph.input[0]),
                  "preprocessing": "RGB pixels / 255 as float32, NCHW; the PNGs are already the input size "
                                   "(no letterbox, no resizing)"},
        "output": {"name": out_names[0], "shape": mof.dims(m.graph.output[0]),
                   "layout": "[1, 4 + nc, anchors]: rows 0-3 box cx, cy, w, h in input pixels, then one sigmoid "
                             "score per class (no objectness); anchors stride 8, then 16, then 32, row-major"},
        "names": names,
        "raw_outputs": {"file": name + ".detections.h5", "dataset": "outputs/0",
                        "shape": [len(images)] + mof.dims(m.graph.output[0])[1:], "dtype": "float32",
                        "computed_by": f"onnxruntime {ort.__version__} (CPU, 1 thread)"},
        "postprocessing": {
            "function": "ultralytics.utils.nms.non_max_suppression",
            "ultralytics": importlib.metadata.version("ultralytics"),
            "call": "non_max_suppression(output, conf_thres, iou_thres, classes=None, agnostic=agnostic, "
                    "multi_label=False, max_det=300, nc=0, end2end=False, rotated=False, return_idxs=True) "
                    "(as DetectionPredictor.postprocess calls it)",
            "nms_kernel": "ultralytics.utils.nms.TorchNMS.nms (torchvision.ops.nms replaced: no torchvision "
                          "C++ extension in this venv)",
            "semantics": [
                "candidates: anchors whose largest class score > conf_thres (strict)",
                "multi_label=False: class = argmax of the class scores (first index on ties, torch.max), "
                "confidence = that score; kept if confidence > conf_thres (strict)",
                "multi_label=True (the validator's): one candidate per (anchor, class) with score > conf_thres, "
                "in anchor-major order, before NMS",
                "boxes cx,cy,w,h -> x1 = cx - w/2, y1 = cy - h/2, x2 = cx + w/2, y2 = cy + h/2 (float32)",
                "more than max_nms = 30000 candidates: the 30000 most confident (never reached here)",
                "per-class NMS by offsetting the boxes by class * 7680 (max_wh) in float32 (agnostic: offset 0); "
                "greedy, in descending confidence: a box is suppressed if its IoU with a kept box is > iou_thres "
                "(kept if IoU <= iou_thres); IoU = inter / (area_a + area_b - inter), on the offset boxes",
                "at most max_det = 300 detections, in descending confidence",
                "boxes are not clipped to the image (the predictor clips them; see predictor.clipped)",
                "same_without_class_offset: whether NMS run class by class on the un-offset boxes gives the same "
                "detections (the offset costs float32 precision: 7680 * class reaches 606720 for class 79, where "
                "the float32 spacing is 1/16 pixel)",
            ],
        },
        "runs": runs,
        "images": per_image,
        "notes": notes,
    }
    with open(os.path.join(out, name + ".detections.json"), "w") as f:
        f.write(compact_rows_json(doc))
    return doc


def compact_rows_json(doc):
    """JSON indented by one space, except that every detection is on one line (keeps the files small)."""
    rows = {}

    def mark(value):
        if isinstance(value, dict):
            if "anchor" in value and "xyxy" in value:
                key = f"@@row{len(rows)}@@"
                rows[key] = json.dumps(value, separators=(", ", ": "))
                return key
            return {k: mark(v) for k, v in value.items()}
        if isinstance(value, list):
            return [mark(v) for v in value]
        return value

    text = json.dumps(mark(doc), indent=1)
    for key, row in rows.items():
        text = text.replace(json.dumps(key), row, 1)
    return text + "\n"


def reference_map(out, onnx_path, work):
    """Ultralytics' validator on a copy of shapes_val (it writes a labels cache next to the labels)."""
    import yaml
    from ultralytics import YOLO

    folder = os.path.join(work, "shapes_val")
    shutil.copytree(os.path.join(out, "shapes_val"), folder)
    os.remove(os.path.join(folder, "reference_map.json")) if os.path.exists(
        os.path.join(folder, "reference_map.json")) else None
    data = {"path": folder, "train": "images", "val": "images", "names": dict(enumerate(NAMES))}
    with open(os.path.join(work, "shapes_val.yaml"), "w") as f:
        yaml.safe_dump(data, f, sort_keys=False)
    settings = dict(imgsz=SHAPES_SIZE, batch=1, conf=VAL_CONF, iou=VAL_IOU, max_det=MAX_DET, split="val",
                    device="cpu", plots=False, save_json=False, verbose=False, rect=False, half=False)
    metrics = YOLO(onnx_path, task="detect").val(data=os.path.join(work, "shapes_val.yaml"),
                                                 project=os.path.join(work, "runs"), name="val", exist_ok=True,
                                                 **settings)
    box = metrics.box
    instances = [0] * len(NAMES)
    for txt in sorted(os.listdir(os.path.join(out, "shapes_val", "labels"))):
        with open(os.path.join(out, "shapes_val", "labels", txt)) as f:
            for line in f:
                instances[int(line.split()[0])] += 1
    per_class = {}
    for j, c in enumerate(box.ap_class_index):
        c = int(c)
        per_class[NAMES[c]] = {"class": c, "instances": instances[c], "precision": round(float(box.p[j]), 6),
                               "recall": round(float(box.r[j]), 6), "mAP50": round(float(box.ap50[j]), 6),
                               "mAP50-95": round(float(box.ap[j]), 6)}
    doc = {
        "model": os.path.relpath(onnx_path, out).replace(os.sep, "/"),
        "images": len(os.listdir(os.path.join(out, "shapes_val", "images"))),
        "instances": dict(zip(NAMES, instances)),
        "computed_by": f"ultralytics {importlib.metadata.version('ultralytics')}: YOLO(onnx, task='detect')"
                       f".val(data=<yaml: path shapes_val, val images, names {NAMES}>, **settings), "
                       f"onnxruntime {ort.__version__}",
        "settings": settings,
        "validator_postprocessing": "non_max_suppression(preds, conf=0.001, iou=0.7, multi_label=True, "
                                    "agnostic=False, max_det=300, nc=0): multi_label=True, so one box can give a "
                                    "detection for every class whose score > conf",
        "matching": "DetectionValidator: predictions matched to labels of the same class at IoU thresholds "
                    "0.50:0.05:0.95 (10), greedy by IoU; AP per class by ap_per_class with 101-point "
                    "interpolation (COCO) of the precision envelope; mAP = mean over classes present",
        "metrics": {"precision": round(float(box.mp), 6), "recall": round(float(box.mr), 6),
                    "mAP50": round(float(box.map50), 6), "mAP50-95": round(float(box.map), 6)},
        "per_class": per_class,
    }
    with open(os.path.join(out, "shapes_val", "reference_map.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"  shapes_val: mAP50 {doc['metrics']['mAP50']}, mAP50-95 {doc['metrics']['mAP50-95']}")
    return doc


# MARK: - Manifest


def model_entry(path, out, yaml_name, weights, notes):
    m = onnx.load(path)
    onnx.checker.check_model(path, full_check=True)
    meta = {p.key: p.value for p in m.metadata_props}
    parsed = {}
    for key in ("names", "imgsz", "stride", "batch", "channels", "end2end", "args"):
        if key in meta:
            try:
                parsed[key] = ast.literal_eval(meta[key])
            except (ValueError, SyntaxError):
                parsed[key] = meta[key]
    if "names" in parsed:
        parsed["names"] = {str(k): v for k, v in parsed["names"].items()}
    return {
        "path": os.path.relpath(path, out), "yaml": yaml_name, "weights": weights,
        "producer": f"{m.producer_name} {m.producer_version}",
        "opset": next(o.version for o in m.opset_import if o.domain in ("", "ai.onnx")), "ir_version": m.ir_version,
        "inputs": {i.name: mof.dims(i) for i in m.graph.input},
        "outputs": {o.name: mof.dims(o) for o in m.graph.output},
        "initializers": len(m.graph.initializer),
        "parameters": int(sum(int(np.prod(t.dims)) for t in m.graph.initializer)),
        "op_types": mof.op_histogram(m), "metadata_props": meta, "metadata": parsed,
        "detections": os.path.relpath(path, out)[:-5] + ".detections.json", "bytes": os.path.getsize(path),
        "notes": notes,
    }


def file_list(out):
    files = []
    for root, dirs, names in os.walk(out):
        dirs.sort()
        for n in sorted(names):
            p = os.path.join(root, n)
            rel = os.path.relpath(p, out).replace(os.sep, "/")
            if rel == "detectors_manifest.json":
                continue
            with open(p, "rb") as f:
                digest = hashlib.sha256(f.read()).hexdigest()
            files.append({"path": rel, "bytes": os.path.getsize(p), "sha256": digest})
    return files


# MARK: - Main


def check_pins():
    versions = met.check_pins()
    for package, version in EXTRA_PINS.items():
        found = importlib.metadata.version(package)
        if found.split("+")[0] != version:
            sys.exit(f"{package} {found} found, {version} pinned (requirements-exporters-torch.txt)")
        versions[package] = found
    return versions


def random_detector(out, work, name, stem, subfolder, packaged, nc, first_seed):
    """A random-weight detector at 64x64 (make_exporter_fixtures_torch's `ultralytics_export`, exported twice and
    compared) with 3 test images; returns its manifest entry."""
    cfg = packaged_yaml(subfolder, packaged, nc, 0.33, 0.0625, 1024)
    model, data = met.ultralytics_export(stem, cfg, 64, False, work)
    _, again = met.ultralytics_export(stem, cfg, 64, False, work)
    assert data == again, f"{name}: the export is not deterministic"
    path = os.path.join(out, name + ".onnx")
    with open(path, "wb") as f:
        f.write(data)
    shutil.copyfile(os.path.join(work, stem + ".yaml"), os.path.join(out, stem + ".yaml"))
    images = []
    for i, (maker, kind) in enumerate([(shape_image, "shapes"), (shape_image, "shapes"), (noise_image, "noise")]):
        pixels, labels = maker(first_seed + i, 64)
        png = os.path.join(out, "images", f"{name}_{i}.png")
        write_png(png, pixels)
        images.append((png, labels, first_seed + i, kind))
    names = [str(v) for _, v in sorted(model.names.items())]
    conf = RANDOM_CONF[nc]
    runs = [{"name": "per_class", "conf_thres": conf, "iou_thres": RANDOM_IOU, "agnostic": False, "max_det": MAX_DET,
             "multi_label": False, "classes": None},
            {"name": "agnostic", "conf_thres": conf, "iou_thres": RANDOM_IOU, "agnostic": True, "max_det": MAX_DET,
             "multi_label": False, "classes": None},
            {"name": "per_class_iou045", "conf_thres": conf, "iou_thres": IOU, "agnostic": False, "max_det": MAX_DET,
             "multi_label": False, "classes": None}]
    notes = [f"random weights: Ultralytics' initialisation after torch.manual_seed(0), BatchNorm statistics from "
             f"calibrate_batchnorm; class scores are small (class biases initialised to "
             f"log(5 / nc / (640 / stride)^2)), hence conf_thres {conf}",
             "names are Ultralytics' defaults for a yaml model ('0', '1', ...)",
             "shape images' labels are what the generator drew; the random model knows nothing of them"]
    write_detections(out, name, path, images, runs, model, names, notes)
    return model_entry(path, out, stem + ".yaml", "random (torch.manual_seed(0) + calibrate_batchnorm)",
                       f"cfg/models/{subfolder}/{packaged}, nc {nc}, depth 0.33, width 0.0625, max channels 1024; "
                       f"imgsz 64, opset {OPSET}, simplify=False, dynamic=False, nms=False; date {FIXED_DATE}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(HERE, "Fixtures", "onnx", "detectors"))
    ap.add_argument("--keep-trained", action="store_true",
                    help="do not train: keep <out>/yolov8_shapes.onnx and regenerate everything else from it")
    args = ap.parse_args()
    os.environ["YOLO_OFFLINE"] = "1"
    config_dir = tempfile.mkdtemp(prefix="ultralytics-config-")
    os.environ["YOLO_CONFIG_DIR"] = config_dir
    import_torchvision()  # before Ultralytics imports it
    versions = check_pins()
    use_ultralytics_nms()
    torch.use_deterministic_algorithms(True)
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    trained_path = os.path.join(out, "yolov8_shapes.onnx")
    if args.keep_trained:
        assert os.path.exists(trained_path), f"--keep-trained: {trained_path} missing"
        with open(trained_path, "rb") as f:
            kept = f.read()
        previous = None
        if os.path.exists(os.path.join(out, "detectors_manifest.json")):
            with open(os.path.join(out, "detectors_manifest.json")) as f:
                previous = json.load(f).get("training")
    for sub in ("images", "shapes_val"):
        shutil.rmtree(os.path.join(out, sub), ignore_errors=True)
    work = tempfile.mkdtemp(prefix="detector-fixtures-")
    entries = []
    try:
        print("random detectors")
        entries.append(random_detector(out, work, "yolov8_tiny_80", "yolov8-tiny-80", "v8", "yolov8.yaml", 80, 50000))
        entries.append(random_detector(out, work, "yolo11_tiny_3", "yolo11-tiny-3", "11", "yolo11.yaml", 3, 50100))

        print("trained detector")
        if args.keep_trained:
            with open(trained_path, "wb") as f:
                f.write(kept)
            reference, training = None, previous
        else:
            best, training, seconds = train_shapes(work)
            reference, data = export_trained(best, work)
            _, again = export_trained(best, work)
            assert data == again, "yolov8_shapes: the export is not deterministic"
            with open(trained_path, "wb") as f:
                f.write(data)
            shutil.copyfile(os.path.join(work, "yolov8-shapes.yaml"), os.path.join(out, "yolov8-shapes.yaml"))
        first, count = SEEDS["test"]
        images = []
        for seed in range(first, first + count):
            pixels, labels = shape_image(seed, SHAPES_SIZE)
            png = os.path.join(out, "images", f"yolov8_shapes_{seed - first}.png")
            write_png(png, pixels)
            images.append((png, labels, seed, "shapes"))
        runs = [{"name": "per_class", "conf_thres": TRAINED_CONF, "iou_thres": IOU, "agnostic": False,
                 "max_det": MAX_DET, "multi_label": False, "classes": None},
                {"name": "agnostic", "conf_thres": TRAINED_CONF, "iou_thres": IOU, "agnostic": True,
                 "max_det": MAX_DET, "multi_label": False, "classes": None},
                {"name": "per_class_low_conf", "conf_thres": VAL_CONF, "iou_thres": IOU, "agnostic": False,
                 "max_det": MAX_DET, "multi_label": False, "classes": None},
                {"name": "agnostic_low_conf", "conf_thres": VAL_CONF, "iou_thres": IOU, "agnostic": True,
                 "max_det": MAX_DET, "multi_label": False, "classes": None},
                {"name": "validator", "conf_thres": VAL_CONF, "iou_thres": VAL_IOU, "agnostic": False,
                 "max_det": MAX_DET, "multi_label": True, "classes": None}]
        notes = ["trained on the synthetic shapes data set (see make_detector_fixtures.py); training is not "
                 "guaranteed bit-reproducible across machines: the committed ONNX is the fixture",
                 "test images: seeds " + f"{first}-{first + count - 1}" + ", not in the training or val data"]
        write_detections(out, "yolov8_shapes", trained_path, images, runs, reference, NAMES, notes)

        first, count = SEEDS["shapes_val"]
        write_split(os.path.join(out, "shapes_val"), "", first, count, SHAPES_SIZE)
        val = reference_map(out, trained_path, work)
        entries.append(model_entry(trained_path, out, "yolov8-shapes.yaml",
                                   "trained (see training)",
                                   f"cfg/models/v8/yolov8.yaml, nc 3, depth 0.33, width {TRAIN_WIDTH}, max channels "
                                   f"{TRAIN_MAX_CHANNELS}; trained at {SHAPES_SIZE}, best.pt (EMA, float16) exported "
                                   f"at imgsz {SHAPES_SIZE}, opset {OPSET}, simplify=False, dynamic=False, "
                                   f"nms=False; date {FIXED_DATE}"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(config_dir, ignore_errors=True)

    manifest = {
        "description": "YOLO detector fixtures (Samples/make_detector_fixtures.py): Ultralytics ONNX exports, test "
                       "PNGs, onnxruntime outputs (.detections.h5) and Ultralytics' postprocessing "
                       "(.detections.json), a labelled folder with Ultralytics' mAP (shapes_val/)",
        "versions": versions,
        "models": entries,
        "training": training,
        "shapes_val": {"images": SEEDS["shapes_val"][1], "first_seed": SEEDS["shapes_val"][0],
                       "mAP50": val["metrics"]["mAP50"], "mAP50-95": val["metrics"]["mAP50-95"],
                       "reference": "shapes_val/reference_map.json"},
        "files": file_list(out),
    }
    with open(os.path.join(out, "detectors_manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    total = sum(f["bytes"] for f in manifest["files"])
    print(f"wrote {len(manifest['files'])} files, {total} bytes")


if __name__ == "__main__":
    main()
