#!/usr/bin/env python3
"""Weight compression side by side in one run: `modelconv convert --palettize 4` / `--quantize 8` against
coremltools' `ct.optimize.coreml.palettize_weights` / `linear_quantize_weights` on the same ML Programs.

Run with a Python that has coremltools 9 (numpy < 2), e.g.:

    python3 -m venv /tmp/venv-ct && /tmp/venv-ct/bin/pip install "coremltools==9.0" "numpy<2" "protobuf<5"
    swift build -c release
    /tmp/venv-ct/bin/python Benchmarks/compression.py [--shared ../shared/models] [--resnet50 /tmp/torchvision-onnx/resnet50_opset13.onnx]

For each model (the bundled digits sample; the three shared Keras models when --shared is given; torchvision's
ResNet50 exported to ONNX when --resnet50 is given), each step a fresh process, wall time and peak RSS from
wait4:

  plain        modelconv convert MODEL -o plain.mlpackage --precision float32 (the uncompressed program)
  modelconv    modelconv convert MODEL -o X.mlpackage --precision float32 --palettize 4 (and --quantize 8):
               conversion and compression in one process
  coremltools  a Python process: ct.models.MLModel(plain.mlpackage, skip_model_load=True), then
               palettize_weights(OpPalettizerConfig(mode="kmeans", nbits=4, weight_threshold=2048)) or
               linear_quantize_weights(OpLinearQuantizerConfig(mode="linear_symmetric", weight_threshold=2048)),
               then save; its own compression time (inside the process) is reported too

Then every package is checked the same way: its size on disk, `modelconv verify MODEL X.mlpackage --samples 16`
(parity within the compression's tolerance, top-1 agreement with the source on random inputs), and for the digits
sample `modelconv evaluate X.mlpackage Samples/Digits/test_images --against digits_cnn.h5` (top-1 agreement and
accuracy on its labelled test images). Machine facts first; results also saved as JSON in --work-dir.
"""

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

COREMLTOOLS = r"""
import json, sys, time
import coremltools as ct
import coremltools.optimize.coreml as cto
source, output, kind = sys.argv[1:4]
start = time.perf_counter()
model = ct.models.MLModel(source, skip_model_load=True)
loaded = time.perf_counter()
if kind == "palettize":
    config = cto.OptimizationConfig(global_config=cto.OpPalettizerConfig(mode="kmeans", nbits=4, weight_threshold=2048))
    compressed = cto.palettize_weights(model, config)
else:
    config = cto.OptimizationConfig(global_config=cto.OpLinearQuantizerConfig(mode="linear_symmetric", weight_threshold=2048))
    compressed = cto.linear_quantize_weights(model, config)
done = time.perf_counter()
compressed.save(output)
print(json.dumps({"load_s": loaded - start, "compress_s": done - loaded, "save_s": time.perf_counter() - done,
                  "coremltools": ct.__version__}))
"""


def measured(command):
    """Runs a command in a fresh process: (exit code, wall seconds, stdout, stderr)."""
    start = time.perf_counter()
    process = subprocess.run(command, capture_output=True)
    return process.returncode, time.perf_counter() - start, process.stdout.decode(), process.stderr.decode()


def timed(command):
    """Wall seconds and peak RSS (MiB) of one fresh process, through GNU time."""
    gnu_time = shutil.which("time") or "/usr/bin/time"
    wrapped = [gnu_time, "-f", "__time__ %e %M"] + command
    code, wall, out, err = measured(wrapped)
    rss = None
    for line in err.splitlines():
        if line.startswith("__time__"):
            rss = int(line.split()[2]) / 1024
    err = "\n".join(line for line in err.splitlines() if not line.startswith("__time__"))
    return {"exit": code, "wall_s": wall, "rss_mib": rss, "stdout": out, "stderr": err}


def size_of(path):
    path = Path(path)
    if path.is_file():
        return path.stat().st_size
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def machine():
    facts = {"platform": platform.platform(), "python": sys.version.split()[0], "nproc": os.cpu_count()}
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text()
        facts["cpu"] = next(l.split(":", 1)[1].strip() for l in cpuinfo.splitlines() if l.startswith("model name"))
        flags = next(l.split(":", 1)[1].split() for l in cpuinfo.splitlines() if l.startswith("flags"))
        facts["flags"] = " ".join(f for f in flags if f.startswith(("avx", "sse4", "fma", "amx")))
    except (OSError, StopIteration):
        pass
    facts["load_average"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return facts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--modelconv", default=str(REPO / ".build/release/modelconv"))
    ap.add_argument("--shared", default="", help="folder of the three shared Keras models")
    ap.add_argument("--resnet50", default="", help="torchvision ResNet50 exported to ONNX")
    ap.add_argument("--work-dir", default=str(REPO / "Benchmarks/.work/compression"))
    args = ap.parse_args()
    mc = args.modelconv
    work = Path(args.work_dir)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)

    digits = REPO / "Samples/Digits"
    models = [("digits", str(digits / "digits_cnn.h5"), ["--image-input", "input1", "--image-scale", "1/255",
                                                          "--labels-file", str(digits / "labels.txt")])]
    if args.shared:
        s = Path(args.shared)
        models += [
            ("emotion_v6", str(s / "emotion_model_v6_23.hdf5"),
             ["--image-input", "input1", "--image-scale", "1/255", "--labels-file", str(s / "emotion_model_v6_23.labels.txt")]),
            ("mini_xception", str(s / "fer2013_mini_XCEPTION.102-0.66.hdf5"),
             ["--image-input", "input1", "--image-scale", "2/255", "--gray-bias", "-1", "--labels-file", str(s / "fer2013_mini_XCEPTION.labels.txt")]),
            ("teachable_machine", str(s / "teachable_machine_mask_keras_model.h5"),
             ["--image-input", "input1", "--image-scale", "1/127.5", "--red-bias", "-1", "--green-bias", "-1", "--blue-bias", "-1",
              "--labels-file", str(s / "teachable_machine_mask_labels.txt")]),
        ]
    if args.resnet50:
        models.append(("resnet50_onnx", args.resnet50, []))

    facts = machine()
    version = subprocess.run([mc, "--version", "--verbose"], capture_output=True, text=True).stdout.strip().replace("\n", "; ")
    facts["modelconv"] = version
    facts["coremltools"] = subprocess.run([sys.executable, "-c", "import coremltools; print(coremltools.__version__)"],
                                          capture_output=True, text=True).stdout.strip().splitlines()[-1:]
    print("== Machine")
    for key, value in facts.items():
        print(f"   {key:12} {value}")

    rows = []
    for name, source, options in models:
        folder = work / name
        folder.mkdir()
        plain = folder / "plain.mlpackage"
        step = timed([mc, "convert", source, "-o", str(plain), "--precision", "float32"] + options)
        if step["exit"] != 0:
            print(f"{name}: plain conversion failed: {step['stderr'][:300]}")
            continue
        rows.append({"model": name, "tool": "modelconv", "method": "none", "wall_s": step["wall_s"], "rss_mib": step["rss_mib"],
                     "compress_s": None, "package": str(plain)})
        for method, flags in (("palettize 4", ["--palettize", "4"]), ("linear 8", ["--quantize", "8"])):
            tag = method.replace(" ", "")
            ours = folder / f"modelconv-{tag}.mlpackage"
            step = timed([mc, "convert", source, "-o", str(ours), "--precision", "float32"] + options + flags)
            rows.append({"model": name, "tool": "modelconv", "method": method, "wall_s": step["wall_s"], "rss_mib": step["rss_mib"],
                         "compress_s": None, "package": str(ours) if step["exit"] == 0 else None,
                         "error": step["stderr"][:300] if step["exit"] else None})
            theirs = folder / f"coremltools-{tag}.mlpackage"
            kind = "palettize" if method.startswith("palettize") else "linear"
            step = timed([sys.executable, "-c", COREMLTOOLS, str(plain), str(theirs), kind])
            inner = {}
            try:
                inner = json.loads(step["stdout"].strip().splitlines()[-1])
            except (ValueError, IndexError):
                pass
            rows.append({"model": name, "tool": "coremltools", "method": method, "wall_s": step["wall_s"], "rss_mib": step["rss_mib"],
                         "compress_s": inner.get("compress_s"), "package": str(theirs) if step["exit"] == 0 else None,
                         "error": step["stderr"][-300:] if step["exit"] else None})

    # Every package checked the same way.
    for row in rows:
        if not row.get("package"):
            continue
        source, options = next((s, o) for n, s, o in models if n == row["model"])
        row["bytes"] = size_of(row["package"])
        # verify takes the preprocessing options (it reads the image input and labels from the package).
        verify_options = [o for i, o in enumerate(options) if o != "--image-input" and (i == 0 or options[i - 1] != "--image-input")]
        check = subprocess.run([mc, "verify", source, row["package"], "--samples", "16", "--json"] + verify_options,
                               capture_output=True, text=True)
        try:
            report = json.loads(check.stdout)
            row["verify"] = "PASS" if report.get("passed") else "FAIL"
            classifier = report.get("classifier") or {}
            row["top1_random"] = classifier.get("top1Agreement")
            outputs = [o for o in report.get("outputs", []) if o.get("snrDecibels") is not None]
            row["output_snr_db"] = min((o["snrDecibels"] for o in outputs), default=None)
        except ValueError:
            row["verify"] = f"error: {check.stderr.strip()[:200]}"
        if row["model"] == "digits":
            evaluation = subprocess.run([mc, "evaluate", row["package"], str(digits / "test_images"), "--against", source, "--json",
                                         "--image-scale", "1/255", "--labels-file", str(digits / "labels.txt")], capture_output=True, text=True)
            try:
                report = json.loads(evaluation.stdout)
                row["folder_agreement"] = report.get("agreement")
                row["folder_accuracy"] = (report.get("model") or {}).get("accuracy")
                row["source_folder_accuracy"] = (report.get("against") or {}).get("accuracy")
            except ValueError:
                row["folder_agreement"] = f"error: {evaluation.stderr.strip()[:200]}"

    print("\nmodel              tool         method        wall s  peak MiB  compress s      bytes  vs plain  verify  top-1 (random)  output SNR dB  folder agreement")
    for row in rows:
        plain_bytes = next((r.get("bytes") for r in rows if r["model"] == row["model"] and r["method"] == "none"), None)
        ratio = f"{plain_bytes / row['bytes']:.2f}x" if row.get("bytes") and plain_bytes else ""
        def fmt(value, spec):
            return format(value, spec) if isinstance(value, (int, float)) else str(value if value is not None else "")
        print(f"{row['model']:18} {row['tool']:12} {row['method']:12} {fmt(row['wall_s'], '7.2f')} {fmt(row['rss_mib'], '9.0f')} "
              f"{fmt(row.get('compress_s'), '11.2f')} {fmt(row.get('bytes'), '10d')} {ratio:>9} {row.get('verify', row.get('error') or ''):>7} "
              f"{fmt(row.get('top1_random'), '15.3f')} {fmt(row.get('output_snr_db'), '14.1f')} {fmt(row.get('folder_agreement'), '17.3f')}")
    facts["load_average_at_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    out = work / "results.json"
    out.write_text(json.dumps({"machine": facts, "rows": rows}, indent=2) + "\n")
    print(f"\n== Load average at the end: {facts['load_average_at_end']}; results in {out}")


if __name__ == "__main__":
    main()
