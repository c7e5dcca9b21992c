#!/usr/bin/env python3
"""Write small Core ML models with flexible inputs, as coremltools 9.0 writes them, and what
`coremltools.utils.load_spec` reads of their declared flexibility (issue 38: the reader and `inspect`).

Run by hand (not in CI) in a venv with coremltools 9.0 and numpy 1.26 (Benchmarks/requirements-detectors.txt has
both; so has the tfkeras215 venv of Samples/):

    python Samples/make_flexible_coreml.py --out Samples/Fixtures/flexible_coreml

Writes, from one MIL program (a 3x3 convolution of 4 filters, `same` padding, then ReLU; seeded weights):

| file | input |
|---|---|
| `range.mlpackage` | ML Program, `x` [1, 3, 8...64, 8...64] (RangeDim, default 16 x 16) |
| `enumerated.mlmodel` | neural network, `x` EnumeratedShapes (1, 3, 16, 16) and (1, 3, 32, 24), default the first |
| `image_range.mlmodel` | neural network, image `x` (RGB) 16...128 x 16...unbounded, default 32 x 32 |
| `image_enumerated.mlpackage` | ML Program, image `x` (RGB) 32 x 32 or 64 x 48 (width x height), default 32 x 32 |

and `expected.json`: per file, each input's name, kind, declared shape or size, and its flexibility as
load_spec reads it (array `shapeRange` [[lower, upper]], `enumeratedShapes`; image `imageSizeRange`
[[width lower, upper], [height lower, upper]], `enumeratedSizes` [[width, height]]; upper -1 = unbounded).
The conversion date coremltools writes is left out; a package's Manifest.json holds fresh identifiers on each run.
"""

import argparse
import json
import os
import shutil

import coremltools as ct
import numpy as np
from coremltools.converters.mil import Builder as mb
from coremltools.converters.mil.mil import get_new_symbol

WEIGHTS = np.random.RandomState(0).uniform(-1, 1, (4, 3, 3, 3)).astype(np.float32)


def program():
    @mb.program(input_specs=[mb.TensorSpec(shape=(1, 3, get_new_symbol(), get_new_symbol()))])
    def prog(x):
        return mb.relu(x=mb.conv(x=x, weight=WEIGHTS, pad_type="same"), name="y")

    return prog


def flexibility(feature):
    t = feature.type
    kind = t.WhichOneof("Type")
    entry = {"name": feature.name, "kind": kind}
    if kind == "multiArrayType":
        a = t.multiArrayType
        entry["shape"] = list(a.shape)
        which = a.WhichOneof("ShapeFlexibility")
        if which == "shapeRange":
            entry["shapeRange"] = [[r.lowerBound, r.upperBound] for r in a.shapeRange.sizeRanges]
        elif which == "enumeratedShapes":
            entry["enumeratedShapes"] = [list(s.shape) for s in a.enumeratedShapes.shapes]
    elif kind == "imageType":
        i = t.imageType
        entry["width"], entry["height"] = i.width, i.height
        which = i.WhichOneof("SizeFlexibility")
        if which == "imageSizeRange":
            r = i.imageSizeRange
            entry["imageSizeRange"] = [[r.widthRange.lowerBound, r.widthRange.upperBound],
                                       [r.heightRange.lowerBound, r.heightRange.upperBound]]
        elif which == "enumeratedSizes":
            entry["enumeratedSizes"] = [[s.width, s.height] for s in i.enumeratedSizes.sizes]
    return entry


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "Fixtures",
                                                      "flexible_coreml"))
    out = parser.parse_args().out
    os.makedirs(out, exist_ok=True)
    assert ct.__version__ == "9.0", ct.__version__
    models = {
        "range.mlpackage": ("mlprogram", ct.TensorType(
            name="x", shape=(1, 3, ct.RangeDim(8, 64, default=16), ct.RangeDim(8, 64, default=16)))),
        "enumerated.mlmodel": ("neuralnetwork", ct.TensorType(
            name="x", shape=ct.EnumeratedShapes(shapes=[(1, 3, 16, 16), (1, 3, 32, 24)], default=(1, 3, 16, 16)))),
        "image_range.mlmodel": ("neuralnetwork", ct.ImageType(
            name="x", color_layout=ct.colorlayout.RGB,
            shape=(1, 3, ct.RangeDim(16, -1, default=32), ct.RangeDim(16, 128, default=32)))),
        "image_enumerated.mlpackage": ("mlprogram", ct.ImageType(
            name="x", color_layout=ct.colorlayout.RGB,
            shape=ct.EnumeratedShapes(shapes=[(1, 3, 32, 32), (1, 3, 48, 64)], default=(1, 3, 32, 32)))),
    }
    expected = {"coremltools": ct.__version__, "models": {}}
    for name, (target, input_type) in models.items():
        path = os.path.join(out, name)
        if os.path.isdir(path):
            shutil.rmtree(path)
        extra = {"minimum_deployment_target": ct.target.iOS15} if target == "mlprogram" else {}
        model = ct.convert(program(), inputs=[input_type], convert_to=target, **extra)
        model.user_defined_metadata.pop("com.github.apple.coremltools.conversion_date", None)
        model.save(path)
        spec = ct.utils.load_spec(path)
        expected["models"][name] = {"specificationVersion": spec.specificationVersion,
                                    "inputs": [flexibility(f) for f in spec.description.input]}
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")
    print(json.dumps(expected, indent=1))


if __name__ == "__main__":
    main()
