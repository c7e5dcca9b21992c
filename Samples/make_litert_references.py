#!/usr/bin/env python3
"""LiteRT's outputs for any `.tflite` files, in the layout `modelconv verify --reference` reads, to check real
models by hand (MediaPipe's, Teachable Machine's, Kaggle's), not fixtures. Run in the keras3 venv with
ai-edge-litert 2.3.0 (Samples/make_tflite_fixtures.py says how):

    /tmp/venv-keras3/bin/python Samples/make_litert_references.py --out /tmp/refs model.tflite [more.tflite ...]
    modelconv verify model.tflite Model.mlpackage --reference /tmp/refs/model.reference.h5

For each file: 2 samples (`--samples N`) of seeded inputs (uniform in [0, 1) for float inputs, which MediaPipe's
image models take; the integer range for int8 and uint8 ones, or `--int-range=LO,HI`), LiteRT on one thread, each
sample on a fresh interpreter so that it starts from the model's initial state (reset_all_variables() resets
variable tensors, an LSTM's, but not resource variables: VAR_HANDLE ones, which CALL_ONCE initializes on the
first invocation only); `inputs/<i>` and `outputs/<i>` in the model's input and output order, float32 (integers
as they were given and read), root attribute `computed_by`.

`--steps N` writes a stream instead, for stateful models such as microWakeWord's wake-word models (pymicro-wakeword,
whose VAR_HANDLE/READ_VARIABLE/ASSIGN_VARIABLE ring buffers keep the previous frames): N seeded steps invoked in
order on one interpreter, each carrying the model's variables to the next, the first starting from their initial
values; `inputs/<i>` [N, ...] and `outputs/<o>` [N, ...] the steps in order, and root attribute `streaming` = 1
(as Samples/make_tflite_fixtures.py's `streaming_int8.reference.h5`). A wake-word model mostly says 0 on
random features over the full int8 range; `--int-range=-128,-78` (features below 5.1 at microWakeWord's input
scale 26/255) moves some of them.
"""

import argparse
import os

import h5py
import numpy as np
from ai_edge_litert.interpreter import Interpreter


def seeded_input(rng, detail, int_range):
    shape, dtype = detail["shape"], np.dtype(detail["dtype"])
    if dtype.kind == "f":
        return rng.uniform(0, 1, shape).astype(dtype)
    info = np.iinfo(dtype)
    low, high = int_range if int_range else (info.min, info.max)
    return rng.integers(max(low, info.min), min(high, info.max), shape, endpoint=True).astype(dtype)


def image_input(image_path, detail, scale):
    """A photo as a float image input [1, H, W, 3]: RGB, resized to the input's size with Pillow's bilinear filter,
    pixel values times `scale` (1/255: MediaPipe's [0, 1] inputs). Returns the input and the resized pixels."""
    from PIL import Image
    height, width = int(detail["shape"][1]), int(detail["shape"][2])
    with Image.open(image_path) as image:
        pixels = np.asarray(image.convert("RGB").resize((width, height), Image.BILINEAR), dtype=np.float32)
    return (pixels * scale)[None].astype(detail["dtype"]), pixels


def write_reference(path, out, samples=2, steps=None, int_range=None, computed_by="ai-edge-litert", name=None,
                    images=None, image_scale=1 / 255):
    """LiteRT's outputs for the model at `path` written to `<out>/<name>.reference.h5` (name: the file's, without
    `.tflite`): `samples` independent samples, or a stream of `steps` (above). Returns the inputs given and the
    outputs, each a list of arrays [samples or steps, ...] (float32)."""
    def fresh():
        interpreter = Interpreter(model_path=path, num_threads=1)
        interpreter.allocate_tensors()
        interpreter.reset_all_variables()
        return interpreter
    interpreter = fresh()
    inputs = interpreter.get_input_details()
    outputs = interpreter.get_output_details()
    rng = np.random.default_rng(1000)
    given = [[] for _ in inputs]
    got = [[] for _ in outputs]
    pixels = []
    for index in range(len(images) if images else steps or samples):
        if not steps and index > 0:
            interpreter = fresh()
        for i, detail in enumerate(inputs):
            if images and i == 0:
                x, seen = image_input(images[index], detail, image_scale)
                pixels.append(seen)
            else:
                x = seeded_input(rng, detail, int_range)
            interpreter.set_tensor(detail["index"], x)
            given[i].append(x[0].astype(np.float32))
        interpreter.invoke()
        for o, detail in enumerate(outputs):
            got[o].append(interpreter.get_tensor(detail["index"])[0].astype(np.float32))
    name = name or os.path.splitext(os.path.basename(path))[0]
    with h5py.File(os.path.join(out, name + ".reference.h5"), "w") as f:
        for i, values in enumerate(given):
            f.create_dataset("inputs/%d" % i, data=np.stack(values))
        for o, values in enumerate(got):
            f.create_dataset("outputs/%d" % o, data=np.stack(values))
        if pixels:
            f.create_dataset("pixels/0", data=np.stack(pixels))
        f.attrs["computed_by"] = computed_by
        if steps:
            f.attrs["streaming"] = 1
    print(name, [d["shape"].tolist() for d in inputs], "->", [d["shape"].tolist() for d in outputs],
          "%d %s" % (steps or samples, "steps" if steps else "samples"),
          "outputs in", [(float(np.min(v)), float(np.max(v))) for v in got])
    return [np.stack(v) for v in given], [np.stack(v) for v in got]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--samples", type=int, default=2, help="independent samples, each from the initial state")
    parser.add_argument("--steps", type=int, help="a stream of N steps carrying the variables (root attribute "
                        "streaming = 1) instead of independent samples")
    parser.add_argument("--int-range", help="LO,HI: integer inputs uniform in [LO, HI] (default the type's range)")
    parser.add_argument("--image", dest="images", action="append", help="a photo for the first input (an image "
                        "[1, H, W, 3]; repeatable), one sample each, resized with Pillow (11.3.0) and "
                        "scaled by --image-scale; pixels/0 keeps the pixels")
    parser.add_argument("--image-scale", type=float, default=1 / 255)
    parser.add_argument("models", nargs="+")
    args = parser.parse_args()
    int_range = tuple(int(v) for v in args.int_range.split(",")) if args.int_range else None
    os.makedirs(args.out, exist_ok=True)
    for path in args.models:
        write_reference(path, args.out, args.samples, args.steps, int_range, images=args.images,
                        image_scale=args.image_scale)


if __name__ == "__main__":
    main()
