#!/usr/bin/env python3
"""Object detectors side by side in one run: `modelconv convert --detector yolo` against Ultralytics' own Core ML
export of the same network, and the converted pipeline's latency in modelconv's runtime against onnxruntime plus
Ultralytics' non-maximum suppression.

    Benchmarks/detectors.py --modelconv .build/release/modelconv [--runtime-bench .build/release/runtime-bench]
                            [--imgsz 640] [--repeats 3] [--runs 20] [--work-dir Benchmarks/.work/detectors]

Needs the venv of Benchmarks/requirements-detectors.txt (Samples/requirements-exporters-torch.txt, which pins torch,
onnx, onnxruntime and Ultralytics 8.4.190, plus coremltools 9.0 for Ultralytics' Core ML export):

    python3 -m venv /tmp/venv-detectors && /tmp/venv-detectors/bin/pip install -r Benchmarks/requirements-detectors.txt

The model: YOLOv8n (Ultralytics' packaged yolov8.yaml, scale n, 80 classes, 3.2 M parameters) with Ultralytics'
random initialisation after `torch.manual_seed(0)` and BatchNorm statistics from seeded images (so that boxes and
scores are those of a detecting network, not of constants), saved as a `.pt`; Ultralytics exports it to ONNX
(opset 17, 640x640) for modelconv. Nothing is downloaded.

Conversion (whole processes, median of --repeats): `python -c "YOLO(pt).export(format='coreml', nms=True)"`
(Ultralytics' pipeline of an ML Program and Core ML's non-maximum suppression, through coremltools), against
`modelconv convert yolov8n.onnx --detector yolo ...` to an `.mlpackage` (the same pipeline) and to an `.mlmodel`.

Latency per photo (a 640x640 PNG, thresholds 0.25 and 0.45): modelconv's is `(t(K + 1 photos) - t(1 photo)) / K`
of `modelconv predict` processes (read, stretch, network, suppression; the model loaded once per process);
onnxruntime's is the median of --runs in one Python process of the same work: the PNG read and resized by Pillow,
`InferenceSession.run` (every core), then `ultralytics.utils.nms.non_max_suppression`.
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "Samples"))
sys.path.insert(0, str(HERE))

PROBE = """
import os, sys, time
os.environ["YOLO_OFFLINE"] = "1"
sys.path.insert(0, {samples!r})
from export_torchvision import import_torchvision
import_torchvision()
import torchvision
from ultralytics.utils.nms import TorchNMS
torchvision.ops.nms = TorchNMS.nms
torchvision.ops.boxes.nms = TorchNMS.nms
from ultralytics import YOLO
YOLO({pt!r}).export(format="coreml", nms=True, imgsz={imgsz}, device="cpu")
"""


def run(command, **kwargs):
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        raise RuntimeError(f"{command[:3]}... failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return seconds, result


def build_model(work, imgsz):
    """YOLOv8n with seeded random weights, as a .pt and Ultralytics' ONNX export."""
    import torch
    import make_exporter_fixtures_torch as met
    from ultralytics import YOLO

    pt, onnx_path = work / "yolov8n_random.pt", work / "yolov8n_random.onnx"
    if pt.exists() and onnx_path.exists():
        return pt, onnx_path
    cwd = os.getcwd()
    os.chdir(work)
    try:
        torch.manual_seed(0)
        yolo = YOLO("yolov8n.yaml")
        met.calibrate_batchnorm(yolo.model, imgsz, seed=0)
        yolo.save(str(pt))
        exported = YOLO(str(pt)).export(format="onnx", imgsz=imgsz, opset=17, simplify=False, batch=1, device="cpu")
        os.replace(exported, onnx_path)
    finally:
        os.chdir(cwd)
    return pt, onnx_path


def photo(work, imgsz):
    """A seeded photo of shapes at the input size (make_detector_fixtures' generator)."""
    import make_detector_fixtures as mdf

    path = work / "photo.png"
    if not path.exists():
        pixels, _ = mdf.shape_image(40100, imgsz)
        mdf.write_png(str(path), pixels)
    return path


def onnxruntime_latency(onnx_path, png, imgsz, runs, warmup):
    import numpy as np
    import onnxruntime as ort
    import torch
    from PIL import Image
    from ultralytics.utils import nms

    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name

    def once():
        pixels = np.asarray(Image.open(png).convert("RGB").resize((imgsz, imgsz), Image.BILINEAR))
        x = (pixels.transpose(2, 0, 1)[None].astype(np.float32) / np.float32(255))
        output = session.run(None, {name: x})[0]
        return nms.non_max_suppression(torch.from_numpy(output), 0.25, 0.45, max_det=300)[0]

    for _ in range(warmup):
        once()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        once()
        times.append(time.perf_counter() - start)
    return statistics.median(times), len(once())


def modelconv_latency(modelconv, model, png, count):
    one, _ = run([str(modelconv), "predict", str(model), str(png)])
    many, result = run([str(modelconv), "predict", str(model)] + [str(png)] * (count + 1))
    found = result.stdout.splitlines()[1].split(": ")[-1] if len(result.stdout.splitlines()) > 1 else "?"
    return (many - one) / count, found


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--modelconv", default=str(REPO / ".build/release/modelconv"))
    parser.add_argument("--runtime-bench", default=str(REPO / ".build/release/runtime-bench"))
    parser.add_argument("--imgsz", type=int, default=640)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--work-dir", default=str(HERE / ".work" / "detectors"))
    args = parser.parse_args()
    os.environ["YOLO_OFFLINE"] = "1"
    os.environ.setdefault("YOLO_CONFIG_DIR", tempfile.mkdtemp(prefix="ultralytics-config-"))
    from export_torchvision import import_torchvision

    import_torchvision()
    import torchvision
    from ultralytics.utils.nms import TorchNMS

    torchvision.ops.nms = TorchNMS.nms
    torchvision.ops.boxes.nms = TorchNMS.nms
    import bench

    modelconv = Path(args.modelconv)
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    facts = bench.machine_facts(modelconv, Path(args.runtime_bench))
    for package in ("ultralytics", "torch", "coremltools", "onnxruntime"):
        facts[package] = bench.version_of(package)
    print("== Machine")
    for key, value in facts.items():
        print(f"   {key}: {value}")

    pt, onnx_path = build_model(work, args.imgsz)
    png = photo(work, args.imgsz)
    results = {"machine": facts, "imgsz": args.imgsz, "conversion": {}, "latency": {}}

    print(f"\n== Conversion of YOLOv8n ({args.imgsz}x{args.imgsz}, 80 classes) to a detector pipeline, "
          f"whole processes, median of {args.repeats}")
    ultralytics_times = []
    for _ in range(args.repeats):
        seconds, _ = run([sys.executable, "-c", PROBE.format(samples=str(REPO / "Samples"), pt=str(pt),
                                                            imgsz=args.imgsz)], cwd=work)
        ultralytics_times.append(seconds)
    ours = {}
    for suffix in ("mlpackage", "mlmodel"):
        times = []
        for _ in range(args.repeats):
            seconds, _ = run([str(modelconv), "convert", str(onnx_path), "--detector", "yolo", "--image-input",
                              "images", "--image-scale", "1/255", "-o", str(work / f"YOLOv8n.{suffix}")])
            times.append(seconds)
        ours[suffix] = statistics.median(times)
    theirs = statistics.median(ultralytics_times)
    results["conversion"] = {"ultralytics_coreml_nms_seconds": theirs, "modelconv_seconds": ours,
                             "ultralytics_runs": ultralytics_times}
    print("   | tool | output | seconds | Ultralytics / this |")
    print("   |---|---|---|---|")
    print(f"   | Ultralytics export(format='coreml', nms=True) | .mlpackage pipeline | {theirs:.2f} | 1.0x |")
    for suffix, seconds in ours.items():
        print(f"   | modelconv convert --detector yolo | .{suffix} pipeline | {seconds:.2f} | {theirs / seconds:.1f}x |")

    print(f"\n== Latency per photo ({args.imgsz}x{args.imgsz} PNG, confidence 0.25, IoU 0.45, all cores)")
    ort_seconds, ort_found = onnxruntime_latency(onnx_path, png, args.imgsz, args.runs, args.warmup)
    rows = [("onnxruntime + Ultralytics non_max_suppression (Python)", ort_seconds, f"{ort_found} objects")]
    for suffix in ("mlpackage", "mlmodel"):
        seconds, found = modelconv_latency(modelconv, work / f"YOLOv8n.{suffix}", png, args.runs)
        rows.append((f"modelconv predict YOLOv8n.{suffix} (pipeline in its runtime)", seconds, found))
    print("   | runtime | ms per photo | this / onnxruntime | found |")
    print("   |---|---|---|---|")
    for name, seconds, found in rows:
        print(f"   | {name} | {seconds * 1000:.1f} | {seconds / ort_seconds:.2f}x | {found} |")
        results["latency"][name] = {"seconds": seconds, "found": found}
    out = work / f"results-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(results, indent=1))
    print(f"\nsaved {out} ({platform.node()})")


if __name__ == "__main__":
    main()
