#!/usr/bin/env python3
"""ONNX benchmarks, side by side in one run: modelconv's runtime against onnxruntime, and `modelconv convert`
against the Python ONNX -> Core ML converters, on torchvision's mobilenet_v2 and resnet50.

The models are Samples/export_torchvision.py's exports (random weights, seed 0, opset 13 by default), read from
--models-dir (default /tmp/torchvision-onnx). Run with a Python that has onnxruntime and numpy, e.g. the onnx venv
of Samples/requirements-onnx.txt:

    /tmp/venv-onnx/bin/python Samples/export_torchvision.py --models mobilenet_v2,resnet50
    /tmp/venv-onnx/bin/python Benchmarks/onnx_runtime.py \
        [--onnx2coreml-python /tmp/venv-onnx2coreml/bin/python] [--coremltools5-python /tmp/venv-ct5/bin/python]

Parts (see Benchmarks/README.md, "ONNX"):

  latency     single thread, batch 1, each runtime in its own fresh process, --rounds alternating rounds
              (median of the rounds' medians): onnxruntime (`bench.py ort-latency`: CPUExecutionProvider,
              intra_op_num_threads = 1, inter_op_num_threads = 1, default graph optimisations, input uniform in
              [-1, 1] from numpy's default_rng(0)); modelconv's runtime (`runtime-bench`, which runs any source
              modelconv reads, on one input uniform in [-1, 1] from its own seed) on the .onnx file (the graph
              as the ONNX importer makes it, before the conversion's passes) and on the converted float32
              .mlpackage (after them). Target: modelconv / onnxruntime <= 1.2x.
  conversion  whole process, spawn to exit, --repeats times alternating, median: `modelconv convert MODEL.onnx
              -o X.mlpackage --precision float32` (and `-o X.mlmodel`), PyPI's onnx2coreml (its CLI, `convert
              --precision fp32`, coremltools 9 underneath) and coremltools 5.2's own ONNX converter
              (`coremltools.converters.onnx.convert`, the successor of onnx-coreml, removed in coremltools 6),
              each in the venv given; a tool that is not given, or fails, is reported with its reason.

Machine facts (CPU, flags, nproc, versions, the runtime's kernels) are printed first; the results are saved as
JSON in --work-dir (default Benchmarks/.work, git-ignored).
"""

import argparse
import datetime
import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench  # noqa: E402  (its helpers: fresh-process measurement, runtime-bench, machine facts, tables)

CT5_CONVERT = """
import sys, warnings
warnings.simplefilter("ignore")
from coremltools.converters.onnx import convert
convert(model=sys.argv[1], minimum_ios_deployment_target="13").save(sys.argv[2])
"""

VERSIONS = """
import importlib.metadata as m
for p in ("onnx2coreml", "onnx-coreml", "coremltools", "onnx", "numpy", "protobuf"):
    try:
        print(p, m.version(p))
    except m.PackageNotFoundError:
        pass
"""


def onnx_path(models_dir, name, opset):
    return Path(models_dir) / f"{name}_opset{opset}.onnx"


def rm(path):
    import shutil
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


def convert_commands(args, model, out):
    """(tool, format, command or None, why not) for every converter measured."""
    modelconv = str(Path(args.modelconv).absolute())
    tools = [("modelconv", "mlpackage", [modelconv, "convert", str(model), "-o", str(out / "modelconv.mlpackage"),
                                         "--precision", "float32"], None),
             ("modelconv", "mlmodel", [modelconv, "convert", str(model), "-o", str(out / "modelconv.mlmodel")], None)]
    if args.onnx2coreml_python:
        cli = str(Path(args.onnx2coreml_python).parent / "onnx2coreml")
        tools += [("onnx2coreml", "mlpackage", [cli, "convert", str(model), "-o", str(out / "onnx2coreml.mlpackage"),
                                                "--precision", "fp32"], None),
                  ("onnx2coreml", "mlmodel", [cli, "convert", str(model), "-o", str(out / "onnx2coreml.mlmodel"),
                                              "--format", "mlmodel"], None)]
    else:
        tools.append(("onnx2coreml", "-", None, "not given (--onnx2coreml-python)"))
    if args.coremltools5_python:
        tools.append(("coremltools 5.2 onnx", "mlmodel", [args.coremltools5_python, "-c", CT5_CONVERT, str(model),
                                                          str(out / "ct5.mlmodel")], None))
    else:
        tools.append(("coremltools 5.2 onnx", "-", None, "not given (--coremltools5-python)"))
    return tools


def bench_conversion(args, names, work):
    print(f"\n== Conversion: whole process, median of {args.repeats} alternating runs", flush=True)
    rows, results = [], []
    for name in names:
        model = onnx_path(args.models_dir, name, args.opset)
        out = work / "onnx-conversion" / name
        out.mkdir(parents=True, exist_ok=True)
        tools = convert_commands(args, model, out)
        times = {(t, f): [] for t, f, _, _ in tools}
        errors = {(t, f): why for t, f, cmd, why in tools if cmd is None}
        for repeat in range(args.repeats):
            for tool, fmt_, cmd, _ in (tools if repeat % 2 == 0 else list(reversed(tools))):
                if cmd is None or (tool, fmt_) in errors:
                    continue
                target = Path(cmd[cmd.index("-o") + 1]) if "-o" in cmd else Path(cmd[-1])
                rm(target)
                run = bench.run_measured(cmd)
                if run.ok and target.exists():
                    times[(tool, fmt_)].append((run.seconds, run.rss_mib))
                else:
                    errors[(tool, fmt_)] = run.reason() if not run.ok else f"exit 0 but no {target.name}"
        ours = statistics.median(s for s, _ in times[("modelconv", "mlpackage")]) if times[("modelconv", "mlpackage")] else None
        for tool, fmt_, _, _ in tools:
            key = (tool, fmt_)
            seconds = statistics.median(s for s, _ in times[key]) if times[key] else None
            rss = max(r for _, r in times[key]) if times[key] else None
            r = {"model": name, "opset": args.opset, "tool": tool, "format": fmt_, "seconds": seconds,
                 "peak_rss_mib": rss, "runs": [s for s, _ in times[key]], "error": errors.get(key)}
            results.append(r)
            rows.append([name, tool, fmt_, bench.fmt(seconds, ".3f"), bench.fmt(rss, ".0f"),
                         bench.fmt(bench.ratio(seconds, ours), ".1f", "x"), (errors.get(key) or "ok")[:110]])
    print()
    bench.print_table(["model", "tool", "format", "wall s", "peak MiB", "vs modelconv mlpackage", "status"], rows)
    return results


def bench_latency(args, names, work):
    print(f"\n== Latency: batch 1, single thread, {args.rounds} alternating rounds of {args.runs} runs after "
          f"{args.warmup} warm-ups (median of round medians)", flush=True)
    runtime_bench = Path(args.runtime_bench).absolute()
    modelconv = str(Path(args.modelconv).absolute())
    results, rows = [], []
    for name in names:
        model = onnx_path(args.models_dir, name, args.opset)
        converted = work / "onnx-conversion" / name / "latency.mlpackage"
        converted.parent.mkdir(parents=True, exist_ok=True)
        rm(converted)
        run = bench.run_measured([modelconv, "convert", str(model), "-o", str(converted), "--precision", "float32"])
        subjects = [("onnxruntime", model), ("modelconv runtime, .onnx", model)]
        r = {"model": name, "opset": args.opset, "rounds": {}, "errors": {}}
        if run.ok:
            subjects.append(("modelconv runtime, converted .mlpackage", converted))
        else:
            r["errors"]["modelconv runtime, converted .mlpackage"] = "convert failed: " + run.reason()
        for index in range(args.rounds):
            for label, path in (subjects if index % 2 == 0 else list(reversed(subjects))):
                if label in r["errors"]:
                    continue
                if label == "onnxruntime":
                    data, error = bench.json_helper("ort-latency", path, "--runs", args.runs, "--warmup", args.warmup)
                    ms = data["median"] * 1000 if data else None
                    r["onnxruntime_version"] = data.get("version") if data else None
                else:
                    data, error = bench.runtime_bench(runtime_bench, path, "--runs", args.runs, "--warmup", args.warmup)
                    ms = data.get("latencyMedianMs") if data else None
                    if data:
                        r["backend"] = data.get("backend")
                if ms is None:
                    r["errors"][label] = error
                else:
                    r["rounds"].setdefault(label, []).append(ms)
                print(f"   {name} round {index + 1}/{args.rounds}: {label}: {bench.fmt(ms)} ms", flush=True)
        medians = {label: statistics.median(v) for label, v in r["rounds"].items()}
        r["median_ms"] = medians
        ort_ms = medians.get("onnxruntime")
        for label, _ in subjects[1:] + [(l, None) for l in r["errors"] if l != "onnxruntime" and l not in dict(subjects)]:
            ratio = bench.ratio(medians.get(label), ort_ms)
            rows.append([name, label, bench.fmt(ort_ms), bench.fmt(medians.get(label)), bench.fmt(ratio, ".2f", "x"),
                         f"<= {bench.LATENCY_TARGET:g}x",
                         "n/a" if ratio is None else ("pass" if ratio <= bench.LATENCY_TARGET else "FAIL")])
        results.append(r)
    print()
    bench.print_table(["model", "modelconv runs", "onnxruntime ms", "modelconv ms", "modelconv/ort", "target", "result"], rows)
    for r in results:
        for label, error in r["errors"].items():
            print(f"   {r['model']}: {label}: {error}")
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models-dir", default="/tmp/torchvision-onnx")
    ap.add_argument("--models", default="mobilenet_v2,resnet50")
    ap.add_argument("--opset", type=int, default=13)
    ap.add_argument("--only", default="latency,conversion")
    ap.add_argument("--modelconv", default=str(bench.REPO / ".build/release/modelconv"))
    ap.add_argument("--runtime-bench", default=str(bench.REPO / ".build/release/runtime-bench"))
    ap.add_argument("--onnx2coreml-python", default="", help="python of a venv with onnx2coreml (its CLI beside it)")
    ap.add_argument("--coremltools5-python", default="", help="python of a venv with coremltools 5.2 and onnx")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--work-dir", default=str(HERE / ".work"))
    args = ap.parse_args()
    names = [n for n in args.models.split(",") if n]
    missing = [str(onnx_path(args.models_dir, n, args.opset)) for n in names
               if not onnx_path(args.models_dir, n, args.opset).exists()]
    if missing:
        sys.exit("missing (run Samples/export_torchvision.py): " + ", ".join(missing))
    work = Path(args.work_dir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    facts = bench.machine_facts(Path(args.modelconv).absolute(), Path(args.runtime_bench).absolute())
    for key in ("tf2onnx", "tensorflow", "coremltools", "h5py"):
        facts.pop(key, None)  # not used here; the converters' venvs are reported with their results
    for label, python in (("onnx2coreml venv", args.onnx2coreml_python), ("coremltools 5.2 venv", args.coremltools5_python)):
        if python:
            run = bench.run_measured([python, "-c", VERSIONS])
            facts[label] = f"{python}: {run.stdout.strip().replace(chr(10), ', ') or run.reason()}"
    print("== Machine")
    for key, value in facts.items():
        print(f"   {key:20} {value}")
    parts = [p for p in args.only.split(",") if p]
    report = {"machine": facts, "models": names, "opset": args.opset}
    if "latency" in parts:
        report["latency"] = bench_latency(args, names, work)
    if "conversion" in parts:
        report["conversion"] = bench_conversion(args, names, work)
    report["load_average_at_end"] = bench.load_average()
    print(f"\n== Load average at the end: {report['load_average_at_end']} (at the start: {facts['load_average']})")
    out = work / f"onnx-results-{datetime.datetime.now().strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"== Results saved to {out}")


if __name__ == "__main__":
    main()
