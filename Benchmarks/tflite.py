#!/usr/bin/env python3
"""TensorFlow Lite to Core ML side by side in one run: `modelconv convert model.tflite` against the two-step Python
route people use today (tf2onnx's `--tflite` to ONNX, then PyPI's onnx2coreml to an .mlpackage), on the same files.

    Benchmarks/tflite.py --modelconv /tmp/release-build/release/modelconv \\
        --tf2onnx-python /tmp/venv-tf2onnx/bin/python --onnx2coreml-python /tmp/venv-onnx2coreml/bin/python \\
        [--repeats 3] model.tflite [more.tflite ...]

Venvs: Samples/requirements-tf2onnx.txt (tensorflow-cpu 2.15.1, tf2onnx 1.16.1) and
Benchmarks/requirements-onnx2coreml.txt (onnx2coreml 1.1.0, coremltools 9.0). Each step is a whole process (imports
included), median of --repeats; the two-step route's time is the sum of its steps; a step that fails is reported
with its last line. modelconv writes an .mlpackage (float16, its default) and an .mlmodel.
"""

import argparse
import os
import platform
import statistics
import subprocess
import tempfile
import time
from pathlib import Path


def timed(command):
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        lines = (result.stderr or result.stdout).strip().splitlines()
        return None, (lines[-1] if lines else "exit %d" % result.returncode)[:140]
    return seconds, None


def median(command, repeats):
    times = []
    for _ in range(repeats):
        seconds, failure = timed(command)
        if failure:
            return None, failure
        times.append(seconds)
    return statistics.median(times), None


def machine():
    model = ""
    with open("/proc/cpuinfo") as handle:
        for line in handle:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return "%s, %d cores, %s" % (model, os.cpu_count(), platform.platform())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--modelconv", required=True)
    parser.add_argument("--tf2onnx-python", required=True)
    parser.add_argument("--onnx2coreml-python", required=True)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("models", nargs="+")
    args = parser.parse_args()
    onnx2coreml = str(Path(args.onnx2coreml_python).parent / "onnx2coreml")
    print("Machine: %s; median of %d whole-process runs.\n" % (machine(), args.repeats))
    print("| model | modelconv → .mlpackage | modelconv → .mlmodel | tf2onnx --tflite | onnx2coreml | two steps | ratio |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        for model in args.models:
            name = Path(model).stem
            package, _ = median([args.modelconv, "convert", model, "-o", str(work / "m.mlpackage")], args.repeats)
            classic, classic_failure = median([args.modelconv, "convert", model, "-o", str(work / "m.mlmodel")],
                                              args.repeats)
            onnx = work / (name + ".onnx")
            step1, failure1 = median([args.tf2onnx_python, "-m", "tf2onnx.convert", "--tflite", model, "--output",
                                      str(onnx), "--opset", "13"], args.repeats)
            step2, failure2 = (None, "no ONNX file") if failure1 else median(
                [onnx2coreml, "convert", str(onnx), "-o", str(work / "o.mlpackage")], args.repeats)
            def show(value, failure):
                return "%.2f s" % value if value is not None else "fails: %s" % failure
            both = step1 + step2 if step1 is not None and step2 is not None else None
            ratio = "%.1fx" % (both / package) if both and package else "-"
            print("| %s | %s | %s | %s | %s | %s | %s |" % (
                name, show(package, "modelconv failed"), show(classic, classic_failure), show(step1, failure1),
                show(step2, failure2), show(both, "-"), ratio))


if __name__ == "__main__":
    main()
