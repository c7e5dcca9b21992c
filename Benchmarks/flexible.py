#!/usr/bin/env python3
"""Flexible input sizes side by side in one run: what a range or an enumeration costs a modelconv conversion
against the same conversion at one size, and against coremltools converting the same network with RangeDim and
EnumeratedShapes.

    Benchmarks/flexible.py --modelconv /tmp/release-build/release/modelconv [--repeats 3]

Needs the venv of Benchmarks/requirements-detectors.txt (torch 2.13, torchvision 0.28, onnx, onnxruntime,
coremltools 9.0). The network is the fixture of Samples/make_flexible_fixtures.py (torchvision's
mobilenet_v3_small, width 0.25, 10 classes, seeded statistics), rebuilt here from the same seed: modelconv converts
its ONNX export (Samples/Fixtures/flexible/mobilenet_v3_dynamic.onnx, dynamic height and width), coremltools its
TorchScript trace (`ct.convert(traced, inputs=[ct.TensorType(shape=...)])`, the route coremltools offers for a
PyTorch model; it reads no ONNX). Each conversion is a whole process (imports included), median of --repeats:

* modelconv at one size (`--input-shape input=1,3,64,64`), with a range (`1,3,48:128:64,48:128:64`: converted and
  compared at 4 sizes) and with an enumeration (2 shapes), to an .mlpackage and to an .mlmodel;
* coremltools to an ML Program at one size, with RangeDim(48, 128, 64) on height and width, and with
  EnumeratedShapes of the same 2 shapes; and to a neural network with the range.

Prints a Markdown table and the machine (CPU model, cores, flags that matter to the kernels) for
Benchmarks/flexible.md.
"""

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
ONNX = ROOT / "Samples/Fixtures/flexible/mobilenet_v3_dynamic.onnx"

COREMLTOOLS = r'''
import sys, os, torch
sys.path.insert(0, os.path.join(sys.argv[1], "Samples"))
from export_torchvision import import_torchvision
import coremltools as ct
torchvision = import_torchvision()
from make_flexible_fixtures import mobilenet
model = mobilenet(torch, torchvision)
traced = torch.jit.trace(model, torch.zeros(1, 3, 64, 64))
mode, target, out = sys.argv[2], sys.argv[3], sys.argv[4]
if mode == "fixed":
    shape = (1, 3, 64, 64)
elif mode == "range":
    shape = (1, 3, ct.RangeDim(48, 128, 64), ct.RangeDim(48, 128, 64))
else:
    shape = ct.EnumeratedShapes(shapes=[(1, 3, 64, 64), (1, 3, 96, 80)], default=(1, 3, 64, 64))
converted = ct.convert(traced, inputs=[ct.TensorType(name="input", shape=shape)], convert_to=target)
converted.save(out)
'''


def timed(command, env=None):
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise RuntimeError("%s failed: %s" % (" ".join(map(str, command)), result.stderr[-2000:]))
    return elapsed


def median(command, repeats):
    return statistics.median(timed(command) for _ in range(repeats))


def machine():
    model, flags = "", set()
    with open("/proc/cpuinfo") as handle:
        for line in handle:
            if line.startswith("model name") and not model:
                model = line.split(":", 1)[1].strip()
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
    shown = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_tile", "f16c") if f in flags]
    return "%s, %d cores, %s, %s" % (model, os.cpu_count(), " ".join(shown), platform.platform())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--modelconv", required=True)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        shapes = {
            "one size": ["--input-shape", "input=1,3,64,64"],
            "range (4 sizes checked)": ["--input-shape", "input=1,3,48:128:64,48:128:64"],
            "enumeration (2 shapes)": ["--input-shape", "input=1,3,64,64", "--input-shape", "input=1,3,96,80"],
        }
        for extension in ("mlpackage", "mlmodel"):
            for label, options in shapes.items():
                out = work / ("m." + extension)
                seconds = median([args.modelconv, "convert", str(ONNX), *options, "-o", str(out)], args.repeats)
                rows.append(("modelconv (ONNX) → ." + extension, label, seconds))
        script = work / "coremltools_convert.py"
        script.write_text(COREMLTOOLS)
        for target, extension in (("mlprogram", "mlpackage"), ("neuralnetwork", "mlmodel")):
            modes = ("fixed", "range", "enumerated") if target == "mlprogram" else ("fixed", "range")
            for mode in modes:
                out = work / ("c." + extension)
                label = {"fixed": "one size", "range": "range (RangeDim)", "enumerated": "enumeration (2 shapes)"}[mode]
                try:
                    seconds = median([sys.executable, str(script), str(ROOT), mode, target, str(out)], args.repeats)
                    rows.append(("coremltools 9.0 (TorchScript) → ." + extension, label, seconds))
                except RuntimeError as error:
                    rows.append(("coremltools 9.0 (TorchScript) → ." + extension, label + ": failed: "
                                 + str(error).strip().splitlines()[-1][:160], float("nan")))
    print("Machine: %s; median of %d whole-process runs.\n" % (machine(), args.repeats))
    print("| converter | input sizes | seconds | × its one-size conversion |")
    print("|---|---|---|---|")
    base = {}
    for converter, label, seconds in rows:
        if label == "one size":
            base[converter] = seconds
        ratio = seconds / base[converter] if converter in base and seconds == seconds else float("nan")
        print("| %s | %s | %.2f | %.2f |" % (converter, label, seconds, ratio))


if __name__ == "__main__":
    main()
