#!/usr/bin/env python3
"""The fixture `Samples/Fixtures/tflite/landmark_ops_custom.tflite` and its reference, computed by MediaPipe's own
kernels: MediaPipe's three landmark operators (version 2, as face_landmark_with_attention.tflite holds them), which
LiteRT does not implement. Run in the mediapipe venv (Samples/requirements-mediapipe.txt):

    /tmp/venv-mp/bin/python Samples/make_mediapipe_fixtures.py --out Samples/Fixtures/tflite

The file is written with TFLite's schema (the generated Python of mediapipe/tasks/metadata/ in mediapipe 0.10.14's
wheel, object API), every tensor float32 with the batch axis:

| tensor | made by |
|---|---|
| `image` [1, 12, 12, 3] | the input (MediaPipe's ImageToTensorCalculator gives pixels / 255) |
| `landmarks` [1, 10, 3] | STRIDED_SLICE `image[:, 0:10, 0, :]` (kept [1, 10, 1, 3]), RESHAPE, MUL by 12: points of the map |
| `points` [1, 5, 2] | STRIDED_SLICE `image[:, 0:5, 1, 0:2]`, RESHAPE, MUL by 4: points of a crop |
| `matrix` [1, 4, 4] | CUSTOM Landmarks2TransformMatrix (left_rotation_idx 0, right_rotation_idx 1, subset_idxs 2..8, seven: an odd count, output_width 4, output_height 5, scale_x 1.5, scale_y 1.25, target_rotation_radians 0.3) of `landmarks` |
| `crop` [1, 5, 4, 3] | CUSTOM TransformTensorBilinear (output_height 5, output_width 4) of `image` by `matrix` |
| `mapped` [1, 5, 2] | CUSTOM TransformLandmarks of `points` by `matrix` |
| `mapped3` [1, 10, 3] | CUSTOM TransformLandmarks of `landmarks` by `matrix` (z kept) |

Options are FlexBuffers maps (subset_idxs a typed vector of ints), as MediaPipe's files hold them; TransformLandmarks
has none. Outputs: `matrix`, `crop`, `mapped`, `mapped3`. The crop is 1.25-1.5 times the box of random points of a
12x12 map, so some of its points fall outside the map (0 there) and some inside.

The reference `landmark_ops_custom.reference.h5`: 4 seeded images (uniform bytes, seed 1000), each through a fresh
MediaPipe graph as Samples/make_mediapipe_graph_references.py runs one (ImageToTensorCalculator, MediaPipe's custom
op resolver, InferenceCalculator on TFLite's CPU kernels): `inputs/0` the graph's input tensor, `pixels/0`,
`outputs/<o>` without the batch axis, `computed_by`.
"""

import argparse
import os
import sys

import numpy as np
from flatbuffers import flexbuffers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_mediapipe_graph_references as graph_references  # noqa: E402
from tflite_rewrite import load_schema  # noqa: E402

NAME = "landmark_ops_custom"


def flex(entries):
    builder = flexbuffers.Builder()
    with builder.Map():
        for key, value in entries:
            builder.Key(key)
            if isinstance(value, list):
                builder.TypedVectorFromElements(value)
            elif isinstance(value, float):
                builder.Float(value)
            else:
                builder.Int(value)
    return bytes(builder.Finish())


def build(schema):
    model = schema.ModelT()
    model.version = 3
    model.description = "MediaPipe landmark operators (Samples/make_mediapipe_fixtures.py)"
    model.buffers = [schema.BufferT()]
    graph = schema.SubGraphT()
    graph.tensors, graph.operators = [], []
    codes = []

    def tensor(name, shape, data=None, dtype=schema.TensorType.FLOAT32):
        t = schema.TensorT()
        t.name, t.shape, t.type = name, list(shape), dtype
        t.buffer = 0
        if data is not None:
            b = schema.BufferT()
            b.data = list(np.asarray(data).tobytes())
            model.buffers.append(b)
            t.buffer = len(model.buffers) - 1
        graph.tensors.append(t)
        return len(graph.tensors) - 1

    def code(builtin=None, custom=None, version=1):
        key = (builtin, custom, version)
        if key not in codes:
            codes.append(key)
        return codes.index(key)

    def operator(inputs, outputs, builtin=None, custom=None, version=1, options=None, options_type=0,
                 custom_options=None):
        op = schema.OperatorT()
        op.opcodeIndex = code(builtin, custom, version)
        op.inputs, op.outputs = inputs, outputs
        if options is not None:
            op.builtinOptionsType, op.builtinOptions = options_type, options
        if custom_options is not None:
            op.customOptions = list(custom_options)
            op.customOptionsFormat = schema.CustomOptionsFormat.FLEXBUFFERS
        graph.operators.append(op)

    def points(name, end, count, width, scale):
        sliced = tensor(name + "_slice", [1, count, 1, width])
        options = schema.StridedSliceOptionsT()
        operator([image, tensor(name + "_begin", [4], np.array([0, 0, end[0], 0], np.int32), schema.TensorType.INT32),
                  tensor(name + "_end", [4], np.array([1, count, end[0] + 1, width], np.int32), schema.TensorType.INT32),
                  tensor(name + "_strides", [4], np.ones(4, np.int32), schema.TensorType.INT32)], [sliced],
                 builtin=schema.BuiltinOperator.STRIDED_SLICE, options=options,
                 options_type=schema.BuiltinOptions.StridedSliceOptions)
        reshaped = tensor(name + "_reshaped", [1, count, width])
        options = schema.ReshapeOptionsT()
        options.newShape = [1, count, width]
        operator([sliced, tensor(name + "_shape", [3], np.array([1, count, width], np.int32),
                                 schema.TensorType.INT32)], [reshaped],
                 builtin=schema.BuiltinOperator.RESHAPE, options=options,
                 options_type=schema.BuiltinOptions.ReshapeOptions)
        result = tensor(name, [1, count, width])
        operator([reshaped, tensor(name + "_scale", [], np.array(scale, np.float32))], [result],
                 builtin=schema.BuiltinOperator.MUL, options=schema.MulOptionsT(),
                 options_type=schema.BuiltinOptions.MulOptions)
        return result

    image = tensor("image", [1, 12, 12, 3])
    landmarks = points("landmarks", [0], 10, 3, 12.0)
    crop_points = points("points", [1], 5, 2, 4.0)
    matrix = tensor("matrix", [1, 4, 4])
    operator([landmarks], [matrix], custom="Landmarks2TransformMatrix", version=2, custom_options=flex([
        ("left_rotation_idx", 0), ("output_height", 5), ("output_width", 4), ("right_rotation_idx", 1),
        ("scale_x", 1.5), ("scale_y", 1.25), ("subset_idxs", [2, 3, 4, 5, 6, 7, 8]),
        ("target_rotation_radians", 0.3)]))
    crop = tensor("crop", [1, 5, 4, 3])
    operator([image, matrix], [crop], custom="TransformTensorBilinear", version=2,
             custom_options=flex([("output_height", 5), ("output_width", 4)]))
    mapped = tensor("mapped", [1, 5, 2])
    operator([crop_points, matrix], [mapped], custom="TransformLandmarks", version=2)
    mapped3 = tensor("mapped3", [1, 10, 3])
    operator([landmarks, matrix], [mapped3], custom="TransformLandmarks", version=2)
    graph.inputs, graph.outputs = [image], [matrix, crop, mapped, mapped3]
    graph.name = "main"
    model.subgraphs = [graph]
    model.operatorCodes = []
    for builtin, custom, version in codes:
        c = schema.OperatorCodeT()
        c.builtinCode = schema.BuiltinOperator.CUSTOM if custom else builtin
        c.deprecatedBuiltinCode = min(c.builtinCode, 127)
        c.customCode, c.version = custom, version
        model.operatorCodes.append(c)
    import flatbuffers
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    import mediapipe
    schema = load_schema(os.path.join(os.path.dirname(mediapipe.__file__), "tasks", "metadata"))
    data = build(schema)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, NAME + ".tflite")
    with open(path, "wb") as handle:
        handle.write(data)
    print("wrote", path, len(data), "bytes")
    _, output_shapes = graph_references.model_interface(path)
    rng = np.random.default_rng(1000)
    images = [rng.integers(0, 255, (12, 12, 3), endpoint=True).astype(np.uint8) for _ in range(4)]
    graph_references.write(path, args.out, images, output_shapes,
                           "mediapipe %s (InferenceCalculator, TfLiteCustomOpResolver, TFLite CPU kernels)"
                           % mediapipe.__version__)
    # The file must not be one whose operators MediaPipe's kernels refuse: every output computed, finite.
    import h5py
    with h5py.File(os.path.join(args.out, NAME + ".reference.h5")) as f:
        crop = f["outputs/1"][()]
        assert np.isfinite(crop).all() and (crop == 0).any() and (crop != 0).any(), "the crop is all in or all out"


if __name__ == "__main__":
    main()
