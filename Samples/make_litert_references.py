#!/usr/bin/env python3
"""LiteRT's outputs for any `.tflite` files, in the layout `modelconv verify --reference` reads, to check real
models by hand (MediaPipe's, Teachable Machine's, Kaggle's), not fixtures. Run in the keras3 venv with
ai-edge-litert 2.3.0 (Samples/make_tflite_fixtures.py says how):

    /tmp/venv-keras3/bin/python Samples/make_litert_references.py --out /tmp/refs model.tflite [more.tflite ...]
    modelconv verify model.tflite Model.mlpackage --reference /tmp/refs/model.reference.h5

For each file: 2 samples of seeded inputs (uniform in [0, 1) for float inputs, which MediaPipe's image models take;
the integer range for int8 and uint8 ones), LiteRT on one thread with its variables reset before each sample;
`inputs/<i>` and `outputs/<i>` in the model's input and output order, float32.
"""

import argparse
import os

import h5py
import numpy as np
from ai_edge_litert.interpreter import Interpreter


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("models", nargs="+")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for path in args.models:
        interpreter = Interpreter(model_path=path, num_threads=1)
        interpreter.allocate_tensors()
        inputs = interpreter.get_input_details()
        outputs = interpreter.get_output_details()
        rng = np.random.default_rng(1000)
        given = [[] for _ in inputs]
        got = [[] for _ in outputs]
        for _ in range(args.samples):
            interpreter.reset_all_variables()
            for i, detail in enumerate(inputs):
                shape, dtype = detail["shape"], np.dtype(detail["dtype"])
                if dtype.kind == "f":
                    x = rng.uniform(0, 1, shape).astype(dtype)
                else:
                    info = np.iinfo(dtype)
                    x = rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
                interpreter.set_tensor(detail["index"], x)
                given[i].append(x[0].astype(np.float32))
            interpreter.invoke()
            for o, detail in enumerate(outputs):
                got[o].append(interpreter.get_tensor(detail["index"])[0].astype(np.float32))
        name = os.path.splitext(os.path.basename(path))[0]
        with h5py.File(os.path.join(args.out, name + ".reference.h5"), "w") as f:
            for i, values in enumerate(given):
                f.create_dataset("inputs/%d" % i, data=np.stack(values))
            for o, values in enumerate(got):
                f.create_dataset("outputs/%d" % o, data=np.stack(values))
            f.attrs["computed_by"] = "ai-edge-litert"
        print(name, [tuple(d["shape"]) for d in inputs], "->", [tuple(d["shape"]) for d in outputs])


if __name__ == "__main__":
    main()
