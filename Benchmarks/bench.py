#!/usr/bin/env python3
"""Benchmarks for modelconv and its runtime, side by side with the Python tools, in one run.

Parts (all by default; pick some with --only PART[,PART...]):

  latency            single-thread latency, batch 1: modelconv's runtime (`runtime-bench`, Keras
                     graph) against onnxruntime (tf2onnx export, opset 13, CPU provider, 1 intra-op
                     and 1 inter-op thread) and, optionally, TensorFlow eager; on MobileNetV2 224,
                     ResNet50 224 (random weights, seed 0) and the shared real models
                     (--shared-models DIR). Target: modelconv / onnxruntime <= 1.2x.
  throughput         images per second at 1, 2 and all cores: modelconv's runtime
                     (`runtime-bench --threads N`) and onnxruntime (N sessions of 1 thread each, one
                     per worker thread; and one session with intra_op_num_threads = N).
  resnet-conversion  `modelconv convert resnet50.h5` wall time and peak RSS against the time h5py
                     takes to read every weight dataset of the file (fresh process) and the file
                     size. Targets: time <= 2x the read floor, peak RSS < 1.5x the file size.
  conversion         `modelconv convert` against coremltools on the fixtures, digits_cnn and
                     MobileNetV2 (whole process). Target: coremltools / modelconv >= 50x.

Usually started by Benchmarks/run.sh, which makes the venv and builds the binaries.
Direct use, with the venv's python:

    python Benchmarks/bench.py [--modelconv PATH] [--runtime-bench PATH] [--only PARTS] ...

Helper commands, each run by the main command as its own fresh process:

    python bench.py make-mobilenet OUT.h5
    python bench.py make-resnet50 OUT.h5
    python bench.py ct-convert IN.h5 OUT.mlmodel
    python bench.py export-onnx IN.h5 OUT.onnx
    python bench.py tf-latency IN.h5 [--runs 20 --warmup 3]
    python bench.py ort-latency IN.onnx [--runs 20 --warmup 3]
    python bench.py ort-throughput IN.onnx --threads N --images I --mode sessions|intra
    python bench.py h5-read IN.h5

Only the standard library is imported at module level: TensorFlow, coremltools, onnxruntime and
h5py are imported inside the helper that needs them, so each measurement pays for exactly the
imports it needs and the orchestrating process stays small.
"""

import argparse
import datetime
import importlib.metadata
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
THIS = Path(__file__).resolve()

CONVERSION_TARGET = 50.0      # coremltools time / modelconv time, at least
LATENCY_TARGET = 1.2          # modelconv latency / onnxruntime latency, at most (issue 12)
READ_FLOOR_TARGET = 2.0       # ResNet50 convert time / h5py weight-read time, at most (issue 12)
RSS_TARGET = 1.5              # ResNet50 convert peak RSS / .h5 file size, below (issue 12)

PARTS = ("latency", "throughput", "resnet-conversion", "conversion")

# The three real models in /work/shared/models (read in place, never copied into the repository).
SHARED_MODELS = ("emotion_model_v6_23.hdf5", "fer2013_mini_XCEPTION.102-0.66.hdf5",
                 "teachable_machine_mask_keras_model.h5")

# Fixtures coremltools cannot convert, or that are not whole models.
SKIP_NAMES = {"conv_variants.h5"}
SKIP_SUFFIXES = (".reference.h5", ".weights.h5")

# CPU flags (from /proc/cpuinfo) that matter for the choice of kernels.
X86_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
             "avx512_bf16", "amx_tile", "amx_bf16")
ARM_FLAGS = ("asimd", "asimdhp", "asimddp", "sve", "sve2", "i8mm", "bf16")


# ---------------------------------------------------------------- helpers (fresh processes)

def cmd_make_mobilenet(args):
    import tensorflow as tf

    tf.keras.utils.set_random_seed(0)
    model = tf.keras.applications.MobileNetV2(weights=None, input_shape=(224, 224, 3), classes=1000)
    model.save(args.output, save_format="h5")


def cmd_make_resnet50(args):
    import tensorflow as tf

    tf.keras.utils.set_random_seed(0)
    model = tf.keras.applications.ResNet50(weights=None)  # 224x224x3, 1000 classes
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


def ort_session(path, intra):
    import onnxruntime as ort

    options = ort.SessionOptions()  # graph optimizations left at their default (ORT_ENABLE_ALL)
    options.intra_op_num_threads = intra
    options.inter_op_num_threads = 1
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def ort_feed(session):
    inp = session.get_inputs()[0]
    return {inp.name: sample_input(inp.shape)}


def cmd_ort_latency(args):
    import onnxruntime as ort

    session = ort_session(args.input, 1)
    feed = ort_feed(session)
    result = timed_runs(lambda: session.run(None, feed), args.runs, args.warmup)
    result["version"] = ort.__version__
    print(json.dumps(result))


def cmd_ort_throughput(args):
    """images/s over --images runs: --mode sessions = one 1-thread session per worker thread
    (onnxruntime releases the GIL in run), --mode intra = one session with intra_op_num_threads N."""
    import onnxruntime as ort

    n = args.threads
    if args.mode == "intra":
        session = ort_session(args.input, n)
        feed = ort_feed(session)
        session.run(None, feed)  # warm-up
        start = time.perf_counter()
        for _ in range(args.images):
            session.run(None, feed)
        seconds = time.perf_counter() - start
    else:
        sessions = [ort_session(args.input, 1) for _ in range(n)]
        feeds = [ort_feed(s) for s in sessions]
        for s, f in zip(sessions, feeds):
            s.run(None, f)  # warm-up, one per session
        barrier = threading.Barrier(n + 1)

        def work(worker):
            barrier.wait()
            for _ in range(worker, args.images, n):  # worker w runs inputs w, w+n, ... like runtime-bench
                sessions[worker].run(None, feeds[worker])

        threads = [threading.Thread(target=work, args=(w,)) for w in range(n)]
        for t in threads:
            t.start()
        barrier.wait()
        start = time.perf_counter()
        for t in threads:
            t.join()
        seconds = time.perf_counter() - start
    print(json.dumps({"mode": args.mode, "threads": n, "images": args.images, "seconds": seconds,
                      "imagesPerSecond": args.images / seconds, "version": ort.__version__}))


def cmd_h5_read(args):
    """Reads every weight dataset of a Keras .h5 into memory; prints the time from opening the file
    to the last byte read (imports excluded)."""
    import h5py

    start = time.perf_counter()
    arrays = []
    with h5py.File(args.input, "r") as f:
        root = f["model_weights"] if "model_weights" in f else f

        def visit(name, obj):
            if isinstance(obj, h5py.Dataset):
                arrays.append(obj[()])

        root.visititems(visit)
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "datasets": len(arrays),
                      "bytes": int(sum(getattr(a, "nbytes", 0) for a in arrays)), "h5py": h5py.__version__}))


# ---------------------------------------------------------------- measuring a process

class Run:
    """One finished subprocess: exit code, wall seconds, peak RSS in MiB, CPU seconds, output."""

    def __init__(self, code, seconds, rss_mib, stdout, stderr, cpu_seconds=float("nan")):
        self.code, self.seconds, self.rss_mib = code, seconds, rss_mib
        self.stdout, self.stderr, self.cpu_seconds = stdout, stderr, cpu_seconds

    @property
    def ok(self):
        return self.code == 0

    def reason(self):
        """Last meaningful stderr line (usually the exception), for a failure report."""
        lines = [l.strip() for l in (self.stderr + "\n" + self.stdout).splitlines() if l.strip()]
        for line in reversed(lines):
            if "Error" in line or "error" in line or "Exception" in line:
                return line[:300]
        return (lines[-1][:300] if lines else "no output") + f" (exit {self.code})"


def run_measured(cmd, env=None):
    """Run cmd to completion; wall time around the whole process, max RSS from wait4 of that child.

    On Linux wait4 reports the child's own usage together with that of the children it waited
    for: ru_maxrss is the largest peak among them (not their sum), CPU time is their total."""
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
                   out.read().decode(errors="replace"), err.read().decode(errors="replace"),
                   usage.ru_utime + usage.ru_stime)


def sampled_tree_peak_mib(cmd, interval=0.002):
    """Largest sum of VmRSS over a process and its children, sampled every `interval` seconds (a run
    of its own: the sampling costs CPU that the timed runs should not pay)."""
    def rss_kib(pid):
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except OSError:
            pass
        return 0

    def children(pid):
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                return [int(c) for c in f.read().split()]
        except OSError:
            return []

    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, rss_kib(proc.pid) + sum(rss_kib(c) for c in children(proc.pid)))
        time.sleep(interval)
    return peak / 1024.0 if proc.returncode == 0 else None


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


def json_helper(name, *argv, env=None):
    """(data, error): the helper's JSON line, or why there is none."""
    run = helper(name, *argv, env=env)
    data = last_json(run.stdout) if run.ok else None
    return (data, None) if data else (None, run.reason())


def runtime_bench(binary, model, *argv):
    """(data, error): the JSON line of `runtime-bench MODEL ARGV...`."""
    if not binary.exists():
        return None, f"runtime-bench not found at {binary}"
    run = run_measured([str(binary), str(model), *map(str, argv)])
    data = last_json(run.stdout) if run.ok else None
    return (data, None) if data else (None, run.reason())


# ---------------------------------------------------------------- formatting

def fmt(value, spec=".2f", suffix=""):
    if value is None or value != value:  # None or NaN
        return "n/a"
    return format(value, spec) + suffix


def ratio(num, den):
    if num is None or den is None or num != num or den != den or den <= 0:
        return None
    return num / den


def median_of(values):
    values = [v for v in values if v is not None and v == v]
    return statistics.median(values) if values else None


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


def read_text(path):
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def machine_facts(modelconv, bench_binary):
    cpu, flags = "?", set()
    for line in read_text("/proc/cpuinfo").splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key in ("model name", "Processor", "CPU part") and cpu == "?":
            cpu = value.strip()
        elif key in ("flags", "Features") and not flags:
            flags = set(value.split())
    wanted = ARM_FLAGS if platform.machine() in ("aarch64", "arm64") else X86_FLAGS
    ram = "?"
    for line in read_text("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            ram = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    os_name = platform.system()
    for line in read_text("/etc/os-release").splitlines():
        if line.startswith("PRETTY_NAME="):
            os_name = line.split("=", 1)[1].strip().strip('"')
    ours = "missing"
    if modelconv.exists():
        try:
            ours = subprocess.run([str(modelconv), "--version"], capture_output=True, text=True,
                                  timeout=30).stdout.strip() or "?"
        except (OSError, subprocess.SubprocessError):
            ours = "?"
    # The kernels the runtime picks, as runtime-bench reports them, on a tiny model.
    backend, error = "?", None
    probe = REPO / "Samples/Digits/digits_cnn.h5"
    data, error = runtime_bench(bench_binary, probe, "--runs", 1, "--warmup", 1)
    if data:
        backend = data.get("backend", "?")
    else:
        backend = f"n/a ({error})"
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "cpu": cpu,
        "nproc": os.cpu_count(),
        "cpu_flags": " ".join(f for f in wanted if f in flags) or "none of " + " ".join(wanted),
        "ram": ram,
        "os": f"{os_name}, {platform.system()} {platform.release()} {platform.machine()}",
        "python": platform.python_version(),
        "modelconv": f"{modelconv} ({ours})",
        "runtime_bench": str(bench_binary),
        "backend": backend,
        "onnxruntime": version_of("onnxruntime"),
        "tf2onnx": version_of("tf2onnx"),
        "tensorflow": version_of("tensorflow-cpu", "tensorflow"),
        "coremltools": version_of("coremltools"),
        "numpy": version_of("numpy"),
        "h5py": version_of("h5py"),
        "load_average": load_average(),
    }


def load_average():
    """1, 5 and 15 minute load averages: other work on the machine makes every number noisier."""
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


# ---------------------------------------------------------------- models

def ensure_generated(work, name, helper_name, what):
    path = work / f"{name}.h5"
    if not path.exists():
        print(f"== making {show(path)} ({what}, random weights, seed 0)", flush=True)
        run = helper(helper_name, path, env=quiet_env())
        if not run.ok:
            print(f"   failed: {run.reason()}")
            return None
    return path


def latency_models(work, shared_dir, mobilenet, resnet):
    """[(name, path or None, note)] in table order."""
    models = [("mobilenet_v2", mobilenet, None if mobilenet else "could not be made"),
              ("resnet50", resnet, None if resnet else "could not be made")]
    for file in SHARED_MODELS:
        path = shared_dir / file
        name = Path(file).stem
        models.append((name, path, None) if path.exists() else (name, None, f"not found in {shared_dir}"))
    return models


def ensure_onnx(work, name, h5):
    """(path, error): tf2onnx export (opset 13, batch 1), made again when older than the .h5."""
    path = work / "onnx" / f"{name}.onnx"
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.stat().st_mtime >= h5.stat().st_mtime:
        return path, None
    print(f"   {name}: exporting ONNX with tf2onnx (opset 13, batch 1) ...", flush=True)
    run = helper("export-onnx", h5, path, env=quiet_env())
    if not run.ok or not path.exists():
        path.unlink(missing_ok=True)
        return None, "tf2onnx export failed: " + run.reason()
    return path, None


# ---------------------------------------------------------------- part: latency

def bench_latency(models, bench_binary, work, runs, warmup, with_tf, rounds=3, latency_seconds=1.0):
    print(f"\n== Latency: batch 1, single thread, median of at least {runs} runs (and {latency_seconds:g} s of them) after "
          f"warm-ups, each runtime in its own process, {rounds} alternating rounds (median of round medians)", flush=True)
    results = []
    for name, path, note in models:
        r = {"model": name, "path": None if path is None else show(path)}
        results.append(r)
        if path is None:
            r["note"] = note
            print(f"   {name}: skipped, {note}", flush=True)
            continue
        onnx, error = ensure_onnx(work, name, path)
        if onnx is None:
            r["onnxruntime_error"] = error
        # Rounds alternate the two runtimes (ort, ours, ours, ort, ...) so that drift in the machine's
        # speed (a shared VM) hits both alike; each reports the median of its rounds' medians.
        # Small models run in well under a millisecond: 20 runs would be over before the CPU settles, so
        # each measurement gets at least --latency-seconds of runs (same count for both runtimes).
        model_runs, model_warmup = runs, warmup
        probe, _ = runtime_bench(bench_binary, path, "--runs", 3, "--warmup", 1)
        if probe and probe.get("latencyMedianMs"):
            model_runs = max(runs, min(5000, math.ceil(latency_seconds * 1000 / probe["latencyMedianMs"])))
            model_warmup = max(warmup, model_runs // 10)
        r["runs"], r["warmup"] = model_runs, model_warmup
        ort_rounds, ours_rounds = [], []
        for round_index in range(rounds):
            order = ["ort", "ours"] if round_index % 2 == 0 else ["ours", "ort"]
            for which in order:
                if which == "ort" and onnx is not None and "onnxruntime_error" not in r:
                    print(f"   {name}: onnxruntime (round {round_index + 1}/{rounds}) ...", flush=True)
                    data, error = json_helper("ort-latency", onnx, "--runs", model_runs, "--warmup", model_warmup)
                    if data:
                        ort_rounds.append(data)
                    else:
                        r["onnxruntime_error"] = error
                elif which == "ours" and "modelconv_error" not in r:
                    print(f"   {name}: modelconv runtime-bench (round {round_index + 1}/{rounds}) ...", flush=True)
                    data, error = runtime_bench(bench_binary, path, "--runs", model_runs, "--warmup", model_warmup)
                    if data:
                        ours_rounds.append(data)
                    else:
                        r["modelconv_error"] = error
        if ort_rounds:
            r["onnxruntime"] = dict(ort_rounds[0], median=statistics.median(d["median"] for d in ort_rounds),
                                    rounds=[d["median"] for d in ort_rounds])
        if ours_rounds:
            r["modelconv"] = dict(ours_rounds[0], latencyMedianMs=statistics.median(d["latencyMedianMs"] for d in ours_rounds),
                                  rounds=[d["latencyMedianMs"] for d in ours_rounds])
        if with_tf:
            print(f"   {name}: TensorFlow eager ...", flush=True)
            data, error = json_helper("tf-latency", path, "--runs", runs, "--warmup", warmup, env=quiet_env())
            if data:
                r["tensorflow"] = data
            else:
                r["tensorflow_error"] = error

    rows = []
    for r in results:
        ort_ms = r["onnxruntime"]["median"] * 1000 if "onnxruntime" in r else None
        ours_ms = r["modelconv"].get("latencyMedianMs") if "modelconv" in r else None
        tf_ms = r["tensorflow"]["median"] * 1000 if "tensorflow" in r else None
        r["onnxruntime_ms"], r["modelconv_ms"], r["tensorflow_ms"] = ort_ms, ours_ms, tf_ms
        r["ratio"] = ratio(ours_ms, ort_ms)
        r["pass"] = None if r["ratio"] is None else r["ratio"] <= LATENCY_TARGET
        row = [r["model"], fmt(ort_ms), fmt(ours_ms), fmt(r["ratio"], ".2f", "x"), f"<= {LATENCY_TARGET:g}x",
               "n/a" if r["pass"] is None else ("pass" if r["pass"] else "FAIL")]
        if with_tf:
            row.append(fmt(tf_ms))
        rows.append(row)
    print()
    header = ["model", "onnxruntime ms", "modelconv ms", "modelconv/ort", "target", "result"]
    print_table(header + (["TF eager ms"] if with_tf else []), rows)
    backends = sorted({r["modelconv"].get("backend", "?") for r in results if "modelconv" in r})
    for b in backends:
        print(f"   modelconv backend: {b}")
    for r in results:
        for key in ("note", "onnxruntime_error", "modelconv_error", "tensorflow_error"):
            if key in r:
                print(f"   {r['model']}: {key.replace('_', ' ')}: {r[key]}")
    measured = [r for r in results if r["pass"] is not None]
    if measured:
        print(f"   {sum(r['pass'] for r in measured)}/{len(measured)} models within {LATENCY_TARGET:g}x "
              f"of onnxruntime; worst {max(r['ratio'] for r in measured):.2f}x")
    return results


# ---------------------------------------------------------------- part: throughput

def thread_counts():
    n = os.cpu_count() or 1
    return sorted({1, 2, n})


def bench_throughput(models, bench_binary, work, latency, seconds_target):
    counts = thread_counts()
    step = math.lcm(*counts)
    print(f"\n== Throughput: images/s at {', '.join(map(str, counts))} threads (nproc {os.cpu_count()}); "
          f"inputs per measurement sized for about {seconds_target:g} s single-threaded per runtime", flush=True)
    known = {r["model"]: r for r in latency or []}

    def image_count(ms):
        """Inputs for about seconds_target at single-thread speed, a multiple of every thread count."""
        images = max(16, math.ceil(seconds_target * 1000 / ms)) if ms else 32
        return min(5000, math.ceil(images / step) * step)

    results = []
    for name, path, note in models:
        r = {"model": name, "modelconv": {}, "ort_sessions": {}, "ort_intra": {}, "images": {}, "errors": []}
        results.append(r)
        if path is None:
            r["errors"].append(note)
            continue
        print(f"   {name} ", end="", flush=True)
        # Each runtime's number of inputs comes from its own single-thread latency (measured now when
        # the latency part did not run), so that every measurement lasts about as long.
        ms = known.get(name, {}).get("modelconv_ms")
        if not ms:
            data, _ = runtime_bench(bench_binary, path, "--runs", 3, "--warmup", 1)
            ms = data.get("latencyMedianMs") if data else None
        images = r["images"]["modelconv"] = image_count(ms)
        for n in counts:
            data, error = runtime_bench(bench_binary, path, "--threads", n, "--images", images,
                                        "--runs", 1, "--warmup", 1)
            if data and data.get("imagesPerSecond") is not None:
                r["modelconv"][n] = data["imagesPerSecond"]
                r["backend"] = data.get("backend")
            else:
                r["errors"].append(f"modelconv, {n} threads: {error or 'no imagesPerSecond'}")
            print(".", end="", flush=True)
        onnx, error = ensure_onnx(work, name, path)
        if onnx is None:
            r["errors"].append(error)
        else:
            ms = known.get(name, {}).get("onnxruntime_ms")
            if not ms:
                data, _ = json_helper("ort-latency", onnx, "--runs", 3, "--warmup", 1)
                ms = data["median"] * 1000 if data else None
            images = r["images"]["onnxruntime"] = image_count(ms)
            for n in counts:
                for mode, key in (("sessions", "ort_sessions"), ("intra", "ort_intra")):
                    if mode == "intra" and n == 1:
                        continue  # the same as one 1-thread session
                    data, error = json_helper("ort-throughput", onnx, "--threads", n, "--images", images,
                                              "--mode", mode)
                    if data:
                        r[key][n] = data["imagesPerSecond"]
                    else:
                        r["errors"].append(f"onnxruntime {mode}, {n} threads: {error}")
                    print(".", end="", flush=True)
            if 1 in r["ort_sessions"]:
                r["ort_intra"][1] = r["ort_sessions"][1]
        print(f" ({', '.join(f'{k} {v} inputs' for k, v in r['images'].items())})", flush=True)

    rows = []
    for r in results:
        for label, key in (("modelconv (N workers, 1 interpreter)", "modelconv"),
                           ("onnxruntime (N sessions x 1 thread)", "ort_sessions"),
                           ("onnxruntime (1 session, N intra-op)", "ort_intra")):
            values = r[key]
            row = [r["model"], label] + [fmt(values.get(n), ".1f") for n in counts]
            base = values.get(1)
            row.append(fmt(ratio(values.get(counts[-1]), base), ".2f", "x"))
            rows.append(row)
    print()
    print_table(["model", "runtime"] + [f"{n} thr img/s" for n in counts] + [f"{counts[-1]} thr / 1 thr"], rows)
    for r in results:
        for e in r["errors"]:
            print(f"   {r['model']}: {e}")
    return results


# ---------------------------------------------------------------- part: resnet-conversion

def bench_resnet_conversion(resnet, modelconv, repeats, work):
    print(f"\n== ResNet50 conversion: median of {repeats} runs, against the weight-read floor and the file size",
          flush=True)
    result = {"model": show(resnet) if resnet else None, "repeats": repeats}
    if resnet is None:
        result["error"] = "no resnet50.h5"
        print("   skipped: no resnet50.h5")
        return result
    size = resnet.stat().st_size
    result["file_bytes"] = size
    out = work / "out/modelconv/resnet50.mlmodel"
    out.parent.mkdir(parents=True, exist_ok=True)
    converts, replaces, reads = [], [], []
    print("   ", end="", flush=True)
    for _ in range(repeats):  # alternating, so all see the same page cache and machine load
        if modelconv.exists():
            # The target: a conversion to a new file. Then the same conversion replacing that file, which
            # adds the file system's work of dropping the old 98 MB (reported, not the target).
            out.unlink(missing_ok=True)
            for kind in (converts, replaces):
                run = run_measured([str(modelconv), "convert", str(resnet), "-o", str(out)])
                if run.ok:
                    kind.append(run)
                else:
                    result["modelconv_error"] = run.reason()
        run = helper("h5-read", resnet)
        data = last_json(run.stdout) if run.ok else None
        if data:
            reads.append((run, data))
        else:
            result["h5_read_error"] = run.reason()
        print(".", end="", flush=True)
    print(flush=True)
    if not modelconv.exists():
        result["modelconv_error"] = f"modelconv not found at {modelconv}"

    tree_peak = sampled_tree_peak_mib([str(modelconv), "convert", str(resnet), "-o", str(out)]) if modelconv.exists() else None
    replace_s = median_of([r.seconds for r in replaces])
    convert_s = median_of([r.seconds for r in converts])
    convert_cpu = median_of([r.cpu_seconds for r in converts])
    rss = median_of([r.rss_mib for r in converts])
    floor_s = median_of([d["seconds"] for _, d in reads])
    floor_process_s = median_of([r.seconds for r, _ in reads])
    floor_rss = median_of([r.rss_mib for r, _ in reads])
    size_mib = size / 2**20
    result.update({
        "modelconv_seconds": convert_s, "modelconv_cpu_seconds": convert_cpu, "modelconv_peak_rss_mib": rss,
        "modelconv_runs": [{"seconds": r.seconds, "rss_mib": r.rss_mib, "cpu_seconds": r.cpu_seconds}
                           for r in converts],
        "modelconv_replacing_seconds": replace_s,
        "modelconv_replacing_runs": [{"seconds": r.seconds, "rss_mib": r.rss_mib} for r in replaces],
        "modelconv_sampled_tree_peak_mib": tree_peak,
        "read_floor_seconds": floor_s, "read_floor_process_seconds": floor_process_s,
        "read_floor_process_rss_mib": floor_rss,
        "read_floor_runs": [dict(d, process_seconds=r.seconds, rss_mib=r.rss_mib) for r, d in reads],
        "weight_datasets": reads[0][1]["datasets"] if reads else None,
        "weight_bytes": reads[0][1]["bytes"] if reads else None,
        "file_mib": size_mib,
    })
    result["time_ratio"] = ratio(convert_s, floor_s)
    result["rss_ratio"] = ratio(rss, size_mib)
    verdict = lambda value, ok: "n/a" if value is None else ("pass" if ok(value) else "FAIL")
    print()
    print_table(["measure", "value", "vs", "ratio", "target", "result"], [
        ["modelconv convert, wall s", fmt(convert_s, ".3f"), "read floor " + fmt(floor_s, ".3f") + " s",
         fmt(result["time_ratio"], ".2f", "x"), f"<= {READ_FLOOR_TARGET:g}x",
         verdict(result["time_ratio"], lambda v: v <= READ_FLOOR_TARGET)],
        ["modelconv convert, peak RSS MiB", fmt(rss, ".1f"), "file " + fmt(size_mib, ".1f") + " MiB",
         fmt(result["rss_ratio"], ".2f", "x"), f"< {RSS_TARGET:g}x",
         verdict(result["rss_ratio"], lambda v: v < RSS_TARGET)],
    ])
    print(f"   modelconv convert CPU (user+sys, with its reader child): {fmt(convert_cpu, '.3f')} s; "
          f"peak RSS is the larger of modelconv and its reader child (wait4); their sum sampled every "
          f"2 ms in one more run peaked at {fmt(tree_peak, '.1f')} MiB")
    print(f"   replacing the previous output instead of writing a new file: {fmt(replace_s, '.3f')} s "
          f"(the file system drops the old file's 98 MB; not part of the target)")
    if reads:
        print(f"   read floor: h5py reads {result['weight_datasets']} weight datasets, "
              f"{result['weight_bytes'] / 2**20:.1f} MiB, in {fmt(floor_s, '.3f')} s (imports excluded); "
              f"whole process {fmt(floor_process_s, '.2f')} s, peak RSS {fmt(floor_rss, '.0f')} MiB")
    for key in ("modelconv_error", "h5_read_error"):
        if key in result:
            print(f"   {key.replace('_', ' ')}: {result[key]}")
    return result


# ---------------------------------------------------------------- part: conversion (vs coremltools)

def conversion_models(mobilenet):
    fixtures = sorted((REPO / "Samples/Fixtures/tfkeras215").glob("*.h5"))
    models = [p for p in fixtures if p.name not in SKIP_NAMES and not p.name.endswith(SKIP_SUFFIXES)]
    models.append(REPO / "Samples/Digits/digits_cnn.h5")
    if mobilenet is not None:
        models.append(mobilenet)
    return models


def bench_conversion(models, modelconv, repeats, work):
    """Returns one dict per model; also prints the table."""
    have_ours = modelconv.exists()
    out_ours, out_ct = work / "out/modelconv", work / "out/coremltools"
    out_ours.mkdir(parents=True, exist_ok=True)
    out_ct.mkdir(parents=True, exist_ok=True)
    print(f"\n== Conversion vs coremltools: median of {repeats} runs per tool (whole process; coremltools "
          f"includes Python start-up and imports)", flush=True)
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


# ---------------------------------------------------------------- the benchmark

def parse_parts(values):
    if not values:
        return list(PARTS)
    parts = []
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if part not in PARTS:
                raise SystemExit(f"bench.py: unknown part {part!r} in --only (choose from {', '.join(PARTS)})")
            if part not in parts:
                parts.append(part)
    return parts


def cmd_run(args):
    parts = parse_parts(args.only)
    modelconv = Path(args.modelconv).absolute()
    bench_binary = Path(args.runtime_bench).absolute()
    work = Path(args.work_dir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    shared_dir = Path(args.shared_models).resolve()
    facts = machine_facts(modelconv, bench_binary)
    print("== Machine")
    for key, value in facts.items():
        print(f"   {key:14} {value}")
    print(f"   parts          {', '.join(parts)}")

    report = {"machine": facts, "parts": parts, "repeats": args.repeats, "runs": args.runs,
              "warmup": args.warmup, "shared_models": str(shared_dir)}
    need_mobilenet = any(p in parts for p in ("latency", "throughput")) or (
        "conversion" in parts and not args.model)
    need_resnet = any(p in parts for p in ("latency", "throughput", "resnet-conversion"))
    mobilenet = ensure_generated(work, "mobilenet_v2", "make-mobilenet", "MobileNetV2 224") if need_mobilenet else None
    resnet = ensure_generated(work, "resnet50", "make-resnet50", "ResNet50 224") if need_resnet else None
    models = latency_models(work, shared_dir, mobilenet, resnet)

    if "latency" in parts:
        report["latency"] = bench_latency(models, bench_binary, work, args.runs, args.warmup, not args.no_tensorflow, args.rounds, args.latency_seconds)
    if "throughput" in parts:
        chosen = models if not args.throughput_no_shared else models[:2]
        report["throughput"] = bench_throughput(chosen, bench_binary, work, report.get("latency"),
                                                args.throughput_seconds)
    if "resnet-conversion" in parts:
        report["resnet_conversion"] = bench_resnet_conversion(resnet, modelconv, max(args.repeats, 9), work)
    if "conversion" in parts:
        conv = [Path(m).resolve() for m in args.model] if args.model else conversion_models(mobilenet)
        report["conversion"] = bench_conversion(conv, modelconv, args.repeats, work)

    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = work / f"results-{stamp}.json"
    report["load_average_at_end"] = load_average()
    print(f"\n== Load average at the end: {report['load_average_at_end']} (at the start: {facts['load_average']})")
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\n== Results saved to {out}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--modelconv", default=os.environ.get("MODELCONV", str(REPO / ".build/release/modelconv")),
                        help="modelconv binary (env MODELCONV; default .build/release/modelconv)")
    parser.add_argument("--runtime-bench",
                        default=os.environ.get("RUNTIME_BENCH", str(REPO / ".build/release/runtime-bench")),
                        help="runtime-bench binary (env RUNTIME_BENCH; default .build/release/runtime-bench)")
    parser.add_argument("--repeats", type=int, default=int(os.environ.get("REPEATS", "3")),
                        help="conversion runs per tool and model; the median is reported (env REPEATS, default 3)")
    parser.add_argument("--work-dir", default=str(HERE / ".work"), help="generated files (default Benchmarks/.work)")
    parser.add_argument("--shared-models", default=str(REPO.parent / "shared/models"),
                        help="folder with the shared real models, read in place (default ../shared/models "
                             "relative to the repository); skipped with a note when absent")
    parser.add_argument("--runs", type=int, default=20, help="timed latency runs (default 20)")
    parser.add_argument("--rounds", type=int, default=7, help="alternating latency rounds per runtime and model (default 7)")
    parser.add_argument("--latency-seconds", type=float, default=1.0,
                        help="at least this much work per latency measurement: more runs for small models (default 1)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed warm-up runs before them (default 3)")
    parser.add_argument("--no-tensorflow", action="store_true",
                        help="leave out the optional TensorFlow eager column of the latency table")
    parser.add_argument("--throughput-seconds", type=float, default=4.0,
                        help="size each throughput measurement to about this many single-thread seconds (default 4)")
    parser.add_argument("--throughput-no-shared", action="store_true",
                        help="throughput on MobileNetV2 and ResNet50 only")
    parser.add_argument("--only", action="append", metavar="PARTS",
                        help=f"run these parts only, comma-separated or repeated: {', '.join(PARTS)}")
    parser.add_argument("--model", action="append",
                        help="conversion part: convert this .h5 instead of the default set (repeatable)")
    sub = parser.add_subparsers(dest="command", metavar="helper")
    for name, func, what in (("make-mobilenet", cmd_make_mobilenet, "MobileNetV2"),
                             ("make-resnet50", cmd_make_resnet50, "ResNet50")):
        p = sub.add_parser(name, help=f"write {what} 224 (random weights, seed 0) as .h5")
        p.add_argument("output")
        p.set_defaults(func=func)
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
    p = sub.add_parser("ort-throughput", help="onnxruntime images/s with N threads; prints JSON")
    p.add_argument("input")
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--images", type=int, required=True)
    p.add_argument("--mode", choices=["sessions", "intra"], required=True)
    p.set_defaults(func=cmd_ort_throughput)
    p = sub.add_parser("h5-read", help="read every weight dataset of a .h5 with h5py; prints JSON")
    p.add_argument("input")
    p.set_defaults(func=cmd_h5_read)
    args = parser.parse_args(argv)
    (getattr(args, "func", None) or cmd_run)(args)


if __name__ == "__main__":
    main()
