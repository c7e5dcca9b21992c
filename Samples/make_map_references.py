#!/usr/bin/env python3
"""Write mAP references for `evaluate` on the labelled detection folder `shapes_val` (made by
make_detector_fixtures.py): the detections of Ultralytics' own postprocessing on onnxruntime's outputs of
`yolov8_shapes.onnx`, and the mAP that Ultralytics' validator code and pycocotools compute from exactly those
detections.

Run by hand (not in CI), in the venv of requirements-exporters-torch.txt with pycocotools added:

    python3 -m venv /tmp/venv-exporters-torch
    /tmp/venv-exporters-torch/bin/pip install -r Samples/requirements-exporters-torch.txt pycocotools==2.0.10
    /tmp/venv-exporters-torch/bin/python Samples/make_map_references.py

Writes `Samples/Fixtures/onnx/detectors/shapes_val/map_references.json`:

- `runs`: two postprocessings of the same outputs, both `ultralytics.utils.nms.non_max_suppression` at the
  validator's conf 0.001, iou 0.7, max_det 300: `validator` (multi_label=True, what `YOLO.val` runs: a box may give a
  detection for each class scoring above conf) and `single_label` (multi_label=False: the class with the best score
  per box, what Core ML's non-maximum suppression keeps, and so what a converted pipeline returns).
- per run and image: the detections (class, confidence, cx cy w h normalized to the image; float32 values written
  as the shortest decimal that reads back the same) in the order NMS returns them (descending confidence);
- per run: `ultralytics`: Ultralytics 8.4.190's `DetectionValidator.match_predictions` (IoU from
  `ultralytics.utils.metrics.box_iou` on pixel boxes) and `ap_per_class`: mAP50, mAP50-95 and per class AP50, AP50-95
  (classes with labels); `coco`: pycocotools' `COCOeval` (bbox, pixel boxes, area = w * h, iscrowd 0, maxDets 100):
  stats[1] (AP50) and stats[0] (AP50:95), per class from `eval['precision']` (area all, maxDets 100);
- `consistency`: the `validator` run's Ultralytics mAP next to reference_map.json's (from `YOLO(onnx).val()`): the
  same when this script reproduces the validator's pipeline.

The labels are the folder's own `labels/*.txt`. Deterministic: the same bytes on every run.
"""

import json
import os
import sys

import numpy as np
import onnxruntime as ort
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from export_torchvision import import_torchvision  # noqa: E402  (torchvision's CUDA wheel with CPU torch)

FOLDER = os.path.join(HERE, "Fixtures", "onnx", "detectors")
NAMES = ["square", "circle", "triangle"]
CONF, IOU, MAX_DET = 0.001, 0.7, 300
PINS = {"ultralytics": "8.4.190", "onnxruntime": "1.20.1", "numpy": "1.26.4", "pycocotools": "2.0.10",
        "torch": "2.13.0"}


def f32(v):
    return float(np.format_float_positional(np.float32(v), unique=True, trim="-"))


def read_input(path):
    from PIL import Image

    pixels = np.asarray(Image.open(path).convert("RGB"))
    return pixels, (pixels.transpose(2, 0, 1)[None].astype(np.float32) / np.float32(255)).astype(np.float32)


def read_labels(path, width, height):
    rows = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                parts = line.split()
                if parts:
                    c, cx, cy, w, h = int(parts[0]), *map(float, parts[1:5])
                    rows.append((c, cx, cy, w, h))
    return rows


def main():
    os.environ["YOLO_OFFLINE"] = "1"
    import_torchvision()
    import importlib.metadata

    for package, version in PINS.items():
        found = importlib.metadata.version(package)
        assert found.split("+")[0] == version, f"{package} {found}, expected {version}"
    import torchvision
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval
    from ultralytics.models.yolo.detect import DetectionValidator
    from ultralytics.utils import nms
    from ultralytics.utils.metrics import ap_per_class, box_iou

    # As make_detector_fixtures.py: torchvision's C++ nms does not load here; Ultralytics' own is used.
    torchvision.ops.nms = nms.TorchNMS.nms
    torchvision.ops.boxes.nms = nms.TorchNMS.nms

    folder = os.path.join(FOLDER, "shapes_val")
    names = sorted(os.listdir(os.path.join(folder, "images")))
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(os.path.join(FOLDER, "yolov8_shapes.onnx"), options,
                                   providers=["CPUExecutionProvider"])
    images = []
    for name in names:
        pixels, x = read_input(os.path.join(folder, "images", name))
        height, width = pixels.shape[:2]
        output = session.run(None, {session.get_inputs()[0].name: x})[0]
        labels = read_labels(os.path.join(folder, "labels", os.path.splitext(name)[0] + ".txt"), width, height)
        images.append((name, width, height, output, labels))

    validator = DetectionValidator.__new__(DetectionValidator)
    validator.iouv = torch.linspace(0.5, 0.95, 10)
    doc = {"model": "yolov8_shapes.onnx", "folder": "shapes_val", "names": NAMES,
           "versions": {k: importlib.metadata.version(k) for k in PINS},
           "postprocessing": f"ultralytics.utils.nms.non_max_suppression(output, {CONF}, {IOU}, multi_label=..., "
                             f"max_det={MAX_DET}) on onnxruntime's output (CPU, one thread; input RGB / 255, NCHW)",
           "runs": []}
    for run, multi_label in (("validator", True), ("single_label", False)):
        stats = {"tp": [], "conf": [], "cls": [], "target": []}
        coco_images, coco_annotations, coco_results = [], [], []
        per_image = []
        for index, (name, width, height, output, labels) in enumerate(images):
            dets = nms.non_max_suppression(torch.from_numpy(output), CONF, IOU, multi_label=multi_label,
                                           max_det=MAX_DET, nc=0)[0]
            boxes, conf, cls = dets[:, :4], dets[:, 4], dets[:, 5]
            truth = torch.tensor([[(cx - w / 2) * width, (cy - h / 2) * height, (cx + w / 2) * width,
                                   (cy + h / 2) * height] for _, cx, cy, w, h in labels], dtype=torch.float32)
            true_cls = torch.tensor([c for c, *_ in labels], dtype=torch.float32)
            if len(labels) and len(dets):
                correct = validator.match_predictions(cls, true_cls, box_iou(truth, boxes)).numpy()
            else:
                correct = np.zeros((len(dets), 10), bool)
            stats["tp"].append(correct)
            stats["conf"].append(conf.numpy())
            stats["cls"].append(cls.numpy())
            stats["target"].append(true_cls.numpy())
            coco_images.append({"id": index, "width": width, "height": height, "file_name": name})
            for c, cx, cy, w, h in labels:
                coco_annotations.append({"id": len(coco_annotations) + 1, "image_id": index, "category_id": c,
                                         "bbox": [(cx - w / 2) * width, (cy - h / 2) * height, w * width,
                                                  h * height], "area": w * width * h * height, "iscrowd": 0})
            rows = []
            for (x1, y1, x2, y2), score, c in zip(boxes.numpy().tolist(), conf.numpy().tolist(),
                                                  cls.numpy().tolist()):
                coco_results.append({"image_id": index, "category_id": int(c), "bbox": [x1, y1, x2 - x1, y2 - y1],
                                     "score": score})
                rows.append({"class": int(c), "confidence": f32(score),
                             "cxcywh_normalized": [f32((x1 + x2) / 2 / width), f32((y1 + y2) / 2 / height),
                                                   f32((x2 - x1) / width), f32((y2 - y1) / height)]})
            per_image.append({"image": "images/" + name, "detections": rows})

        tp, conf, pred_cls, target = (np.concatenate(stats[k], 0) for k in ("tp", "conf", "cls", "target"))
        result = ap_per_class(tp, conf, pred_cls, target)
        ap, classes = result[5], result[6]
        ultralytics = {"mAP50": float(ap[:, 0].mean()), "mAP50-95": float(ap.mean()),
                       "per_class": {NAMES[c]: {"AP50": float(ap[i, 0]), "AP50-95": float(ap[i].mean())}
                                     for i, c in enumerate(classes.tolist())}}

        gt = COCO()
        gt.dataset = {"info": {}, "licenses": [], "images": coco_images, "annotations": coco_annotations,
                      "categories": [{"id": i, "name": n} for i, n in enumerate(NAMES)]}
        gt.createIndex()
        dt = gt.loadRes(coco_results)
        evaluation = COCOeval(gt, dt, "bbox")
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
        precision = evaluation.eval["precision"]  # [T, R, K, A, M]
        per_class = {}
        for k, c in enumerate(evaluation.params.catIds):
            p = precision[:, :, k, 0, 2]
            per_class[NAMES[c]] = {"AP50": float(np.mean(p[0][p[0] > -1])), "AP50-95": float(np.mean(p[p > -1]))}
        coco = {"mAP50": float(evaluation.stats[1]), "mAP50-95": float(evaluation.stats[0]), "per_class": per_class}
        doc["runs"].append({"name": run, "multi_label": multi_label, "conf_thres": CONF, "iou_thres": IOU,
                            "max_det": MAX_DET, "ultralytics": ultralytics, "coco": coco, "images": per_image})
        print(run, "ultralytics", ultralytics["mAP50"], ultralytics["mAP50-95"], "coco", coco["mAP50"],
              coco["mAP50-95"])

    with open(os.path.join(folder, "reference_map.json")) as f:
        reference = json.load(f)["metrics"]
    ours = doc["runs"][0]["ultralytics"]
    doc["consistency"] = {"reference_map_json": {"mAP50": reference["mAP50"], "mAP50-95": reference["mAP50-95"]},
                          "validator_run": {"mAP50": round(ours["mAP50"], 6), "mAP50-95": round(ours["mAP50-95"], 6)}}
    print("consistency", doc["consistency"])
    with open(os.path.join(folder, "map_references.json"), "w") as f:
        json.dump(doc, f, indent=1, sort_keys=False)
        f.write("\n")


if __name__ == "__main__":
    main()
