#!/usr/bin/env python3
"""Conversion time against graph length: long chains of operations, side by side in one run.

    python Benchmarks/chain.py [--modelconv .build/release/modelconv] [--sizes 1000,10000,100000] [--work-dir DIR]

Needs `onnx` (the onnx venv of Samples/, or `pip install onnx==1.17.0 numpy==1.26.4`) to write the chains. For each
length N it writes two ONNX models with an input of shape [1, 8]:
- `relu`: N Relu nodes one after the other;
- `mixed`: N nodes cycling through Relu, Add of a constant [8], Sigmoid, Mul by a constant [1, 8], Transpose of
  [1, 8] to [8, 1] and back, Reshape to [1, 8] (so that every rewriting pass has work on every step).
Each is converted with `modelconv convert` to a neural network (.mlmodel) and an ML Program (.mlpackage), and
those two are converted again as Core ML sources (classic layers to an ML Program, MIL operations to a neural
network), and the longest chain is verified. The table gives the seconds of each run and the microseconds per
operation; a cost linear in the length keeps the microseconds per operation flat down a column.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def chain(kind, length):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])
    nodes, inits = [], []
    previous = "x"
    shape_const = numpy_helper.from_array(np.array([1, 8], np.int64), "shape_1_8")
    add_const = numpy_helper.from_array(np.linspace(-0.5, 0.5, 8).astype(np.float32), "bias_8")
    mul_const = numpy_helper.from_array(np.linspace(0.5, 1.5, 8).astype(np.float32).reshape(1, 8), "scale_1_8")
    if kind == "mixed":
        inits = [shape_const, add_const, mul_const]
    for i in range(length):
        out = f"v{i}"
        step = i % 7 if kind == "mixed" else 0
        if step == 0:
            nodes.append(helper.make_node("Relu", [previous], [out], name=f"n{i}"))
        elif step == 1:
            nodes.append(helper.make_node("Add", [previous, "bias_8"], [out], name=f"n{i}"))
        elif step == 2:
            nodes.append(helper.make_node("Sigmoid", [previous], [out], name=f"n{i}"))
        elif step == 3:
            nodes.append(helper.make_node("Mul", [previous, "scale_1_8"], [out], name=f"n{i}"))
        elif step == 4:
            nodes.append(helper.make_node("Transpose", [previous], [out], name=f"n{i}", perm=[1, 0]))
        elif step == 5:
            # Back from [8, 1] (the previous step is always the transpose).
            nodes.append(helper.make_node("Transpose", [previous], [out], name=f"n{i}", perm=[1, 0]))
        else:
            nodes.append(helper.make_node("Reshape", [previous, "shape_1_8"], [out], name=f"n{i}"))
        previous = out
    if kind == "mixed" and length % 7 == 5:
        # The chain must not end between the two transposes.
        nodes.append(helper.make_node("Transpose", [previous], ["v_end"], name="n_end", perm=[1, 0]))
        previous = "v_end"
    y = helper.make_tensor_value_info(previous, TensorProto.FLOAT, [1, 8])
    graph = helper.make_graph(nodes, f"{kind}_{length}", [x], [y], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def timed(command):
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({result.returncode}):\n{result.stderr[-2000:]}")
    return seconds


def machine():
    facts = {"machine": platform.machine(), "python": platform.python_version(), "cores": os.cpu_count()}
    try:
        info = open("/proc/cpuinfo").read()
        facts["cpu"] = next(line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name"))
        flags = next(line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags"))
        facts["features"] = [f for f in ("sse4_1", "avx", "avx2", "fma", "avx512f", "avx512_vnni", "amx_tile") if f in flags]
    except (OSError, StopIteration):
        pass
    return facts


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--modelconv", default=os.path.join(REPO, ".build/release/modelconv"))
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--work-dir", default=os.path.join(HERE, ".work", "chain"))
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    os.makedirs(args.work_dir, exist_ok=True)
    facts = machine()
    print(json.dumps(facts))
    columns = ["onnx->nn", "onnx->mlprogram", "nn->mlprogram", "mlprogram->nn"]
    rows = []
    for kind in ("relu", "mixed"):
        for length in sizes:
            base = os.path.join(args.work_dir, f"{kind}_{length}")
            onnx.save(chain(kind, length), base + ".onnx")
            for out in (base + ".mlmodel", base + ".mlpackage", base + "_nn.mlpackage", base + "_ml.mlmodel"):
                subprocess.run(["rm", "-rf", out])
            m = args.modelconv
            seconds = [
                timed([m, "convert", base + ".onnx", "-o", base + ".mlmodel"]),
                timed([m, "convert", base + ".onnx", "-o", base + ".mlpackage"]),
                timed([m, "convert", base + ".mlmodel", "-o", base + "_nn.mlpackage"]),
                timed([m, "convert", base + ".mlpackage", "-o", base + "_ml.mlmodel"]),
            ]
            verify = timed([m, "verify", base + ".onnx", base + ".mlpackage", "--samples", "2"]) if length == max(sizes) else None
            rows.append({"kind": kind, "operations": length, "seconds": dict(zip(columns, seconds)), "verify_mlprogram_seconds": verify})
            cells = " | ".join(f"{s:.2f} s ({s / length * 1e6:.0f} us/op)" for s in seconds)
            print(f"| {kind} | {length} | {cells} | {'' if verify is None else f'{verify:.2f} s'} |", flush=True)
    with open(os.path.join(args.work_dir, "results.json"), "w") as f:
        json.dump({"machine": facts, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
