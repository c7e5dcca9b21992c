#!/usr/bin/env python3
"""MediaPipe's own outputs for a MediaPipe `.tflite` file whose custom operators only MediaPipe's TFLite op
resolver implements (face_landmark_with_attention.tflite: Landmarks2TransformMatrix, TransformTensorBilinear,
TransformLandmarks, which LiteRT does not have), in the layout `modelconv verify --reference` reads, to check
such files by hand (not fixtures, not CI). Run in a venv made from Samples/requirements-mediapipe.txt:

    python3 -m venv /tmp/venv-mp && /tmp/venv-mp/bin/pip install -r Samples/requirements-mediapipe.txt
    /tmp/venv-mp/bin/python Samples/make_mediapipe_graph_references.py --out /tmp/refs \\
        --image Samples/Faces/Happy/face_1.png --image Samples/Faces/Sad/face_1.png \\
        .../site-packages/mediapipe/modules/face_landmark/face_landmark_with_attention.tflite
    modelconv verify face_landmark_with_attention.tflite Face.mlpackage \\
        --reference /tmp/refs/face_landmark_with_attention.reference.h5

The model runs in a MediaPipe calculator graph, as MediaPipe's face landmark graph runs it: TfLiteCustomOpResolver
(MediaPipe's custom operators) feeding InferenceCalculator on TFLite's builtin CPU kernels (no XNNPACK), its
input from ImageToTensorCalculator in [0, 1], each output tensor read back by TensorsToFloatsCalculator; each
sample in a fresh graph. The images: each `--image` photo resized to the input's size with Pillow's bilinear filter
(as Samples/make_litert_references.py does), then `--samples N` (default 2) seeded ones (uniform bytes, seed
1000). The input tensor the graph computed is read back too and must be the pixels / 255 (float32 rounding).
Writes `<name>.reference.h5`: `inputs/0` [samples, H, W, 3] float32 (that tensor), `pixels/0` the pixels,
`outputs/<o>` [samples, ...] in the file's output order and shapes without the batch, root attribute
`computed_by`.
"""

import argparse
import os
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tflite_rewrite import load_schema  # noqa: E402


def model_interface(path):
    """The input shape and the outputs' shapes (TFLite's schema through MediaPipe's generated reader)."""
    import mediapipe
    schema = load_schema(os.path.join(os.path.dirname(mediapipe.__file__), "tasks", "metadata"))
    with open(path, "rb") as handle:
        model = schema.Model.GetRootAsModel(handle.read(), 0)
    graph = model.Subgraphs(0)
    shape = lambda index: [int(v) for v in graph.Tensors(index).ShapeAsNumpy()]  # noqa: E731
    assert graph.InputsLength() == 1, "one image input only"
    return shape(graph.Inputs(0)), [shape(graph.Outputs(i)) for i in range(graph.OutputsLength())]


def graph_config(path, height, width, outputs):
    floats = "\n".join(
        'node { calculator: "TensorsToFloatsCalculator" input_stream: "TENSORS:t%d" output_stream: "FLOATS:f%d" }'
        % (i, i) for i in range(outputs))
    ranges = " ".join("ranges: { begin: %d end: %d }" % (i, i + 1) for i in range(outputs))
    return """
input_stream: "image"
%s
output_stream: "input_floats"
node {
  calculator: "ImageToTensorCalculator"
  input_stream: "IMAGE:image"
  output_stream: "TENSORS:input_tensors"
  options: { [mediapipe.ImageToTensorCalculatorOptions.ext] {
    output_tensor_width: %d output_tensor_height: %d keep_aspect_ratio: false
    output_tensor_float_range { min: 0.0 max: 1.0 } border_mode: BORDER_ZERO } }
}
node { calculator: "TensorsToFloatsCalculator" input_stream: "TENSORS:input_tensors" output_stream: "FLOATS:input_floats" }
node { calculator: "TfLiteCustomOpResolverCalculator" output_side_packet: "OP_RESOLVER:op_resolver" }
node {
  calculator: "InferenceCalculator"
  input_side_packet: "OP_RESOLVER:op_resolver"
  input_stream: "TENSORS:input_tensors"
  output_stream: "TENSORS:output_tensors"
  options: { [mediapipe.InferenceCalculatorOptions.ext] { model_path: "%s" delegate { tflite {} } } }
}
node {
  calculator: "SplitTensorVectorCalculator"
  input_stream: "output_tensors"
  %s
  options: { [mediapipe.SplitVectorCalculatorOptions.ext] { %s } }
}
%s
""" % ("\n".join('output_stream: "f%d"' % i for i in range(outputs)), width, height, path,
       " ".join('output_stream: "t%d"' % i for i in range(outputs)), ranges, floats)


def run(path, pixels, output_shapes):
    """One fresh graph on one image (uint8 [H, W, 3]): the input tensor it made and the outputs."""
    from mediapipe.python import packet_creator, packet_getter
    from mediapipe.python._framework_bindings import calculator_graph, image_frame
    height, width = pixels.shape[:2]
    config = graph_config(os.path.abspath(path), height, width, len(output_shapes))
    graph = calculator_graph.CalculatorGraph(graph_config=config)
    got = {}
    for name in ["input_floats"] + ["f%d" % i for i in range(len(output_shapes))]:
        graph.observe_output_stream(
            name, lambda stream, packet: got.__setitem__(stream, np.array(packet_getter.get_float_list(packet))))
    graph.start_run()
    frame = packet_creator.create_image_frame(image_format=image_frame.ImageFormat.SRGB,
                                              data=np.ascontiguousarray(pixels))
    graph.add_packet_to_input_stream("image", frame.at(0))
    graph.close()
    given = got["input_floats"].astype(np.float32).reshape(height, width, 3)
    outputs = [got["f%d" % i].astype(np.float32).reshape(shape[1:]) for i, shape in enumerate(output_shapes)]
    return given, outputs


def write(path, out, images, output_shapes, computed_by):
    """Runs each image (uint8 [H, W, 3]) through a fresh graph; writes `<out>/<name>.reference.h5`."""
    given, got = [], [[] for _ in output_shapes]
    for pixels in images:
        tensor, outputs = run(path, pixels, output_shapes)
        error = float(np.abs(tensor - pixels.astype(np.float32) / 255).max())
        assert error <= 1e-6, "the graph's input tensor differs from pixels / 255 by %g" % error
        given.append(tensor)
        for o, values in enumerate(outputs):
            got[o].append(values)
    os.makedirs(out, exist_ok=True)
    name = os.path.splitext(os.path.basename(path))[0]
    target = os.path.join(out, name + ".reference.h5")
    with h5py.File(target, "w") as f:
        f.create_dataset("inputs/0", data=np.stack(given))
        f.create_dataset("pixels/0", data=np.stack(images).astype(np.float32))
        for o, values in enumerate(got):
            f.create_dataset("outputs/%d" % o, data=np.stack(values))
        f.attrs["computed_by"] = computed_by
    print("wrote", target, "%d samples" % len(images),
          "outputs in", [(float(np.min(v)), float(np.max(v))) for v in got])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--samples", type=int, default=2, help="seeded images after the photos")
    parser.add_argument("--image", dest="images", action="append", default=[], help="a photo (repeatable)")
    parser.add_argument("model")
    args = parser.parse_args()
    import mediapipe
    from PIL import Image
    input_shape, output_shapes = model_interface(args.model)
    height, width = input_shape[1], input_shape[2]
    images = []
    for image_path in args.images:
        with Image.open(image_path) as image:
            images.append(np.asarray(image.convert("RGB").resize((width, height), Image.BILINEAR), dtype=np.uint8))
    rng = np.random.default_rng(1000)
    for _ in range(args.samples):
        images.append(rng.integers(0, 255, (height, width, 3), endpoint=True).astype(np.uint8))
    write(args.model, args.out, images, output_shapes,
          "mediapipe %s (InferenceCalculator, TfLiteCustomOpResolver, TFLite CPU kernels)" % mediapipe.__version__)


if __name__ == "__main__":
    main()
