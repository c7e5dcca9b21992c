#!/usr/bin/env python3
"""Benchmarks for modelconv, side by side with the Python tools, in one run.

1. Conversion: wall time and peak memory (max RSS) of a whole `modelconv convert`
   process against a fresh Python process that imports TensorFlow and coremltools,
   loads the same .h5 and runs `ct.convert(..., convert_to="neuralnetwork")`.
   Median of --repeats runs; ratio = coremltools / modelconv (target >= 50x).
2. Runtime latency per image, batch 1, single thread, on MobileNetV2 224x224x3:
   onnxruntime (tf2onnx export, opset 13), TensorFlow (eager `model(x)`), and
   modelconv's own runtime as reported by `modelconv verify --json` ("timing").
   Target: modelconv / onnxruntime <= 3x.

Usually started by Benchmarks/run.sh, which makes the venv and builds modelconv.
Direct use, with the venv's python:

    python Benchmarks/bench.py [--modelconv PATH] [--repeats N] [--only conversion|latency]

Helper commands, each run by the main command as its own fresh process:

    python bench.py make-mobilenet OUT.h5
    python bench.py ct-convert IN.h5 OUT.mlmodel
    python bench.py export-onnx IN.h5 OUT.onnx
    python bench.py tf-latency IN.h5 [--runs 20 --warmup 3]
    python bench.py ort-latency IN.onnx [--runs 20 --warmup 3]

Only the standard library is imported at module level: TensorFlow, coremltools and
onnxruntime are imported inside the helper that needs them, so each measurement
pays for exactly the imports it needs and the orchestrating process stays small.
"""

import argparse
import datetime
import importlib.metadata
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
THIS = Path(__file__).resolve()

CONVERSION_TARGET = 50.0  # coremltools time / modelconv time, at least
LATENCY_TARGET = 3.0      # modelconv latency / onnxruntime latency, at most

# Fixtures coremltools cannot convert, or that are not whole models.
SKIP_NAMES = {"conv_variants.h5"}
SKIP_SUFFIXES = (".reference.h5", ".weights.h5")


# ---------------------------------------------------------------- helpers (fresh processes)

def cmd_make_mobilenet(args):
    import tensorflow as tf

    tf.keras.utils.set_random_seed(0)
    model = tf.keras.applications.MobileNetV2(weights=None, input_shape=(224, 224, 3), classes=1000)
    model.save(args.output, save_format="h5")


def cmd_ct_convert(args):
    import coremltools as ct
    import tensorflow as tf

    model = tf.keras.models.load_model(args.input, compile=False)
    mlmodel = ct.convert(model, convert_to="neuralnetwork", source="tensorflow")
    ct.utils.save_spec(mlmodel.get_spec(), args.output)


def cmd_export_onnx(args):
    import tensorflow as tf
    import tf2onnx

    model = tf.keras.models.load_model(args.input, compile=False)
    shape = (1,) + tuple(model.input_shape[1:])
    spec = [tf.TensorSpec(shape, tf.float32, name="input")]
    tf2onnx.convert.from_keras(model, input_signature=spec, opset=13, output_path=args.output)


def sample_input(shape):
    """The same deterministic image for every runtime: uniform in [-1, 1] like MobileNetV2 expects."""
    import numpy as np

    shape = [d if isinstance(d, int) and d > 0 else 1 for d in shape]
    return np.random.default_rng(0).uniform(-1.0, 1.0, size=shape).astype(np.float32)


def timed_runs(fn, runs, warmup):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return {"median": statistics.median(times), "min": min(times), "runs": runs, "warmup": warmup}


def cmd_tf_latency(args):
    import tensorflow as tf

    # Before any op runs; TensorFlow refuses to change these afterwards.
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    model = tf.keras.models.load_model(args.input, compile=False)
    x = tf.constant(sample_input([1] + list(model.input_shape[1:])))
    result = timed_runs(lambda: model(x, training=False).numpy(), args.runs, args.warmup)
    result["version"] = tf.__version__
    print(json.dumps(result))


def cmd_ort_latency(args):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(args.input, options, providers=["CPUExecutionProvider"])
    inp = session.get_inputs()[0]
    feed = {inp.name: sample_input(inp.shape)}
    result = timed_runs(lambda: session.run(None, feed), args.runs, args.warmup)
    result["version"] = ort.__version__
    print(json.dumps(result))


# ---------------------------------------------------------------- measuring a process

class Run:
    """One finished subprocess: exit code, wall seconds, peak RSS in MiB, output."""

    def __init__(self, code, seconds, rss_mib, stdout, stderr):
        self.code, self.seconds, self.rss_mib = code, seconds, rss_mib
        self.stdout, self.stderr = stdout, stderr

    @property
    def ok(self):
        return self.code == 0

    def reason(self):
        """Last meaningful stderr line (usually the exception), for a failure report."""
        lines = [l.strip() for l in (self.stderr + "\n" + self.stdout).splitlines() if l.strip()]
        for line in reversed(lines):
            if "Error" in line or "error" in line or "Exception" in line:
                return line[:200]
        return (lines[-1][:200] if lines else "no output") + f" (exit {self.code})"


def run_measured(cmd, env=None):
    """Run cmd to completion; wall time around the whole process, max RSS from wait4 of that child."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        try:
            proc = subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env)
        except OSError as e:
            return Run(127, float("nan"), float("nan"), "", str(e))
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # so Popen does not wait again
        out.seek(0)
        err.seek(0)
        return Run(proc.returncode, seconds, usage.ru_maxrss / 1024.0,  # ru_maxrss is KiB on Linux
                   out.read().decode(errors="replace"), err.read().decode(errors="replace"))


def show(path):
    """path relative to the repository when it is inside it."""
    path = Path(path)
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def helper(name, *argv, env=None):
    return run_measured([sys.executable, str(THIS), name, *map(str, argv)], env=env)


def quiet_env():
    return dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")


def last_json(text):
    """The last JSON object printed on stdout (pretty-printed or one line), or None."""
    decoder = json.JSONDecoder()
    found, start = None, text.find("{")
    while start != -1:
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            found = value
        start = text.find("{", end)
    return found


def find_key(obj, key):
    """obj[key] at the top level, or the first one found nested deeper."""
    if isinstance(obj, dict):
        if key in obj:
            return obj[key]
        children = obj.values()
    elif isinstance(obj, list):
        children = obj
    else:
        return None
    for child in children:
        found = find_key(child, key)
        if found is not None:
            return found
    return None


# ---------------------------------------------------------------- formatting

def fmt(value, spec=".2f", suffix=""):
    if value is None or value != value:  # None or NaN
        return "n/a"
    return format(value, spec) + suffix


def ratio(num, den):
    if num is None or den is None or num != num or den != den or den <= 0:
        return None
    return num / den


def print_table(header, rows):
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    line = lambda r: "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                               for i, (c, w) in enumerate(zip(r, widths)))
    print(line(header))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print(line(r))


def version_of(*names):
    for name in names:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return "?"


def machine_facts(modelconv):
    cpu = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ours = "missing"
    if modelconv.exists():
        try:
            ours = subprocess.run([str(modelconv), "--version"], capture_output=True, text=True,
                                  timeout=30).stdout.strip() or "?"
        except (OSError, subprocess.SubprocessError):
            ours = "?"
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
        "modelconv": f"{modelconv} ({ours})",
        "tensorflow": version_of("tensorflow-cpu", "tensorflow"),
        "coremltools": version_of("coremltools"),
        "onnxruntime": version_of("onnxruntime"),
        "tf2onnx": version_of("tf2onnx"),
        "numpy": version_of("numpy"),
    }


# ---------------------------------------------------------------- the benchmark

def conversion_models(mobilenet):
    fixtures = sorted((REPO / "Samples/Fixtures/tfkeras215").glob("*.h5"))
    models = [p for p in fixtures if p.name not in SKIP_NAMES and not p.name.endswith(SKIP_SUFFIXES)]
    models.append(REPO / "Samples/Digits/digits_cnn.h5")
    if mobilenet is not None:
        models.append(mobilenet)
    return models


def ensure_mobilenet(work):
    path = work / "mobilenet_v2.h5"
    if not path.exists():
        print(f"== making {show(path)} (MobileNetV2, random weights, seed 0)", flush=True)
        run = helper("make-mobilenet", path, env=quiet_env())
        if not run.ok:
            print(f"   failed: {run.reason()}")
            return None
    return path


def bench_conversion(models, modelconv, repeats, work):
    """Returns one dict per model; also prints the table."""
    have_ours = modelconv.exists()
    out_ours, out_ct = work / "out/modelconv", work / "out/coremltools"
    out_ours.mkdir(parents=True, exist_ok=True)
    out_ct.mkdir(parents=True, exist_ok=True)
    print(f"\n== Conversion: median of {repeats} runs per tool (whole process; coremltools includes "
          f"Python start-up and imports)", flush=True)
    if not have_ours:
        print(f"   modelconv not found at {modelconv}: its columns will be n/a")
    results = []
    for model in models:
        name = model.stem
        print(f"   {name} ", end="", flush=True)
        ours, ct = [], []
        ours_error = ct_error = None
        for _ in range(repeats):
            if have_ours and ours_error is None:
                run = run_measured([str(modelconv), "convert", str(model), "-o", str(out_ours / f"{name}.mlmodel")])
                if run.ok:
                    ours.append(run)
                else:
                    ours_error = run.reason()
            if ct_error is None:
                run = helper("ct-convert", model, out_ct / f"{name}.mlmodel")
                if run.ok:
                    ct.append(run)
                else:
                    ct_error = run.reason()
            print(".", end="", flush=True)
        print(flush=True)
        med = lambda runs, attr: statistics.median(getattr(r, attr) for r in runs) if runs else None
        results.append({
            "model": name, "path": show(model),
            "modelconv_seconds": med(ours, "seconds"), "modelconv_rss_mib": med(ours, "rss_mib"),
            "coremltools_seconds": med(ct, "seconds"), "coremltools_rss_mib": med(ct, "rss_mib"),
            "modelconv_error": ours_error if have_ours else "modelconv missing", "coremltools_error": ct_error,
        })

    rows = []
    for r in results:
        time_ratio = ratio(r["coremltools_seconds"], r["modelconv_seconds"])
        mem_ratio = ratio(r["coremltools_rss_mib"], r["modelconv_rss_mib"])
        r["time_ratio"], r["memory_ratio"] = time_ratio, mem_ratio
        verdict = "n/a" if time_ratio is None else ("ok" if time_ratio >= CONVERSION_TARGET else "BELOW")
        rows.append([r["model"], fmt(r["modelconv_seconds"], ".3f"), fmt(r["modelconv_rss_mib"], ".1f"),
                     fmt(r["coremltools_seconds"], ".2f"), fmt(r["coremltools_rss_mib"], ".0f"),
                     fmt(time_ratio, ".1f", "x"), fmt(mem_ratio, ".1f", "x"), verdict])
    print()
    print_table(["model", "ours s", "ours MiB", "coremltools s", "ct MiB", "time ct/ours", "mem ct/ours",
                 f">= {CONVERSION_TARGET:g}x"], rows)
    failures = [r for r in results if r["coremltools_error"] or (have_ours and r["modelconv_error"])]
    for r in failures:
        if r["coremltools_error"]:
            print(f"   coremltools skipped {r['model']}: {r['coremltools_error']}")
        if have_ours and r["modelconv_error"]:
            print(f"   modelconv failed on {r['model']}: {r['modelconv_error']}")
    measured = [r["time_ratio"] for r in results if r["time_ratio"] is not None]
    if measured:
        print(f"   worst time ratio {min(measured):.1f}x, "
              f"{sum(x >= CONVERSION_TARGET for x in measured)}/{len(measured)} models meet >= {CONVERSION_TARGET:g}x")
    return results


def bench_latency(mobilenet, modelconv, work, runs, warmup, samples):
    print(f"\n== Runtime latency: MobileNetV2 224x224x3, batch 1, single thread, "
          f"median of {runs} runs after {warmup} warm-ups", flush=True)
    result = {}

    onnx_path = work / "mobilenet_v2.onnx"
    if not onnx_path.exists() or onnx_path.stat().st_mtime < mobilenet.stat().st_mtime:
        print("   exporting ONNX with tf2onnx (opset 13) ...", flush=True)
        run = helper("export-onnx", mobilenet, onnx_path, env=quiet_env())
        if not run.ok:
            result["onnxruntime_error"] = run.reason()
    if onnx_path.exists() and "onnxruntime_error" not in result:
        print("   onnxruntime ...", flush=True)
        run = helper("ort-latency", onnx_path, "--runs", runs, "--warmup", warmup)
        data = last_json(run.stdout) if run.ok else None
        if data:
            result["onnxruntime"] = data
        else:
            result["onnxruntime_error"] = run.reason()

    print("   TensorFlow ...", flush=True)
    run = helper("tf-latency", mobilenet, "--runs", runs, "--warmup", warmup, env=quiet_env())
    data = last_json(run.stdout) if run.ok else None
    if data:
        result["tensorflow"] = data
    else:
        result["tensorflow_error"] = run.reason()

    # modelconv: convert afresh (a file left by an older binary would be stale), then verify --json.
    mlmodel = work / "out/modelconv/mobilenet_v2.mlmodel"
    ours_error = None
    if not modelconv.exists():
        ours_error = f"modelconv not found at {modelconv}"
    else:
        mlmodel.parent.mkdir(parents=True, exist_ok=True)
        run = run_measured([str(modelconv), "convert", str(mobilenet), "-o", str(mlmodel)])
        if not run.ok:
            ours_error = "convert failed: " + run.reason()
    if ours_error is None:
        print("   modelconv verify ...", flush=True)
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
        run = run_measured([str(modelconv), "verify", str(mobilenet), str(mlmodel),
                            "--samples", str(samples), "--json"], env=env)
        timing = find_key(last_json(run.stdout), "timing")
        if isinstance(timing, dict):
            result["modelconv_timing"] = timing
            if not run.ok:
                result["modelconv_note"] = f"verify exited {run.code}"
        else:
            ours_error = "no \"timing\" in verify --json output: " + run.reason()
    if ours_error:
        result["modelconv_error"] = ours_error

    def seconds(key, sub=None):
        value = result.get(key)
        if value is None:
            return None
        value = value.get(sub) if sub else value
        return float(value) if isinstance(value, (int, float)) else None

    ort_s = seconds("onnxruntime", "median")
    tf_s = seconds("tensorflow", "median")
    rows_in = [
        (f"onnxruntime {result.get('onnxruntime', {}).get('version', '')} (tf2onnx, opset 13)", ort_s),
        (f"TensorFlow {result.get('tensorflow', {}).get('version', '')} (eager model(x))", tf_s),
        ("modelconv runtime, Keras graph", seconds("modelconv_timing", "sourceSecondsPerSample")),
        ("modelconv runtime, Core ML graph", seconds("modelconv_timing", "convertedSecondsPerSample")),
    ]
    rows = []
    for i, (name, s) in enumerate(rows_in):
        r_ort, r_tf = ratio(s, ort_s), ratio(s, tf_s)
        verdict = "" if i < 2 else ("n/a" if r_ort is None else ("ok" if r_ort <= LATENCY_TARGET else "ABOVE"))
        rows.append([name, fmt(None if s is None else s * 1000, ".2f"), fmt(r_ort, ".2f", "x"),
                     fmt(r_tf, ".2f", "x"), verdict])
    result["ratios"] = {
        "keras_graph_vs_onnxruntime": ratio(rows_in[2][1], ort_s),
        "coreml_graph_vs_onnxruntime": ratio(rows_in[3][1], ort_s),
        "keras_graph_vs_tensorflow": ratio(rows_in[2][1], tf_s),
        "coreml_graph_vs_tensorflow": ratio(rows_in[3][1], tf_s),
    }
    print()
    print_table(["runtime", "ms/image", "vs onnxruntime", "vs TensorFlow", f"<= {LATENCY_TARGET:g}x ort"], rows)
    for key in ("onnxruntime_error", "tensorflow_error", "modelconv_error", "modelconv_note"):
        if key in result:
            print(f"   {key.replace('_', ' ')}: {result[key]}")
    return result


def cmd_run(args):
    modelconv = Path(args.modelconv).absolute()
    work = Path(args.work_dir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    facts = machine_facts(modelconv)
    print("== Machine")
    for key, value in facts.items():
        print(f"   {key:12} {value}")

    report = {"machine": facts, "repeats": args.repeats}
    need_mobilenet = not (args.only == "conversion" and args.model)  # latency, or the default model set
    mobilenet = ensure_mobilenet(work) if need_mobilenet else None
    if args.only in (None, "conversion"):
        models = [Path(m).resolve() for m in args.model] if args.model else conversion_models(mobilenet)
        report["conversion"] = bench_conversion(models, modelconv, args.repeats, work)
    if args.only in (None, "latency"):
        if mobilenet is None:
            print("\n== Runtime latency: skipped, no MobileNetV2 model")
        else:
            report["latency"] = bench_latency(mobilenet, modelconv, work, args.runs, args.warmup, args.samples)

    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = work / f"results-{stamp}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\n== Results saved to {out}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--modelconv", default=os.environ.get("MODELCONV", str(REPO / ".build/release/modelconv")),
                        help="modelconv binary (env MODELCONV; default .build/release/modelconv)")
    parser.add_argument("--repeats", type=int, default=int(os.environ.get("REPEATS", "3")),
                        help="conversion runs per tool and model; the median is reported (env REPEATS, default 3)")
    parser.add_argument("--work-dir", default=str(HERE / ".work"), help="generated files (default Benchmarks/.work)")
    parser.add_argument("--runs", type=int, default=20, help="timed latency runs (default 20)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed warm-up runs before them (default 3)")
    parser.add_argument("--samples", type=int, default=20, help="`modelconv verify --samples` (default 20)")
    parser.add_argument("--only", choices=["conversion", "latency"], help="run one part only")
    parser.add_argument("--model", action="append", help="convert this .h5 instead of the default set (repeatable)")
    sub = parser.add_subparsers(dest="command", metavar="helper")
    p = sub.add_parser("make-mobilenet", help="write MobileNetV2 (random weights, seed 0) as .h5")
    p.add_argument("output")
    p.set_defaults(func=cmd_make_mobilenet)
    p = sub.add_parser("ct-convert", help="coremltools conversion of one .h5 (what is timed)")
    p.add_argument("input")
    p.add_argument("output")
    p.set_defaults(func=cmd_ct_convert)
    p = sub.add_parser("export-onnx", help="tf2onnx export of one .h5, opset 13, batch 1")
    p.add_argument("input")
    p.add_argument("output")
    p.set_defaults(func=cmd_export_onnx)
    for name, func, what in (("tf-latency", cmd_tf_latency, ".h5"), ("ort-latency", cmd_ort_latency, ".onnx")):
        p = sub.add_parser(name, help=f"single-thread latency of one {what}; prints JSON")
        p.add_argument("input")
        p.add_argument("--runs", type=int, default=20)
        p.add_argument("--warmup", type=int, default=3)
        p.set_defaults(func=func)
    args = parser.parse_args(argv)
    (getattr(args, "func", None) or cmd_run)(args)


if __name__ == "__main__":
    main()
