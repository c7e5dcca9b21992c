#!/usr/bin/env python3
"""LiteRT's outputs for MediaPipe `.tflite` files that hold MediaPipe's custom transposed convolution
(`Convolution2DTransposeBias`: the segmentation models, selfie_segmentation.tflite and
selfie_segmentation_landscape.tflite of mediapipe/modules/selfie_segmentation/), in the layout
`modelconv verify --reference` reads, to check them by hand (not fixtures, not CI). LiteRT has no kernel of its own
for the custom operator, so each file is first rewritten by Samples/tflite_rewrite.py into TFLite's builtin
TRANSPOSE_CONV with the bias as input 3 (the same computation; everything else as it was, the metadata's zip
archive included) and LiteRT runs that builtin form. Run in the keras3 venv with ai-edge-litert 2.3.0 and
`flatbuffers` (Samples/make_tflite_fixtures.py says how), given the folder of the TFLite schema's generated Python
(`schema_py_generated.py` in mediapipe/tasks/metadata/ of mediapipe 0.10.14's wheel:
`pip download mediapipe==0.10.14 --no-deps --python-version 3.11 --only-binary=:all: -d /tmp/mpwheel`, then unzip):

    /tmp/venv-keras3/bin/python Samples/make_mediapipe_references.py --out /tmp/refs \
        --mediapipe-metadata /tmp/mp/old/mediapipe/tasks/metadata \
        /tmp/mp/old/mediapipe/modules/selfie_segmentation/selfie_segmentation.tflite \
        /tmp/mp/old/mediapipe/modules/selfie_segmentation/selfie_segmentation_landscape.tflite
    modelconv verify selfie_segmentation.tflite Selfie.mlpackage --reference /tmp/refs/selfie_segmentation.reference.h5

Writes `<name>.reference.h5` for each file as Samples/make_litert_references.py does (its write_reference: 2
samples, `--samples N`, of seeded inputs, seed 1000, uniform in [0, 1) for float inputs as MediaPipe's image models
take them; each sample on a fresh interpreter, LiteRT on one thread; `inputs/<i>`, `outputs/<o>` float32, root
attribute `computed_by` naming the builtin form). The builtin forms go to a temporary folder, or to
`--builtin-out DIR` (as `<name>.tflite`) to keep them. A file without the custom operator is run as it is.

Also printed, as a check, the largest difference from LiteRT's outputs on the original (custom) file: LiteRT 2.3.0
runs MediaPipe's operator only through its default XNNPACK delegate, which implements it (without default delegates
it refuses the file, "Encountered unresolved custom op: Convolution2DTransposeBias").
"""

import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tflite_rewrite  # noqa: E402
from make_litert_references import write_reference  # noqa: E402


def custom_form_outputs(path, given):
    """LiteRT's outputs on the original file (its default delegates), for the inputs `given`; None if it cannot."""
    from ai_edge_litert.interpreter import Interpreter
    try:
        outputs = []
        for sample in range(len(given[0])):
            interpreter = Interpreter(model_path=path, num_threads=1)
            interpreter.allocate_tensors()
            details = interpreter.get_input_details()
            for detail, values in zip(details, given):
                interpreter.set_tensor(detail["index"], values[sample][None].astype(detail["dtype"]))
            interpreter.invoke()
            outputs.append([interpreter.get_tensor(d["index"])[0].astype(np.float32)
                            for d in interpreter.get_output_details()])
        return [np.stack([sample[o] for sample in outputs]) for o in range(len(outputs[0]))]
    except (RuntimeError, ValueError) as error:
        print("  LiteRT cannot run the custom form:", str(error).strip().splitlines()[0])
        return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--mediapipe-metadata", required=True,
                        help="folder holding schema_py_generated.py (mediapipe/tasks/metadata/ of mediapipe 0.10.14)")
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--builtin-out", help="keep the builtin forms in this folder (default: a temporary one)")
    parser.add_argument("--image", dest="images", action="append", help="a photo for the image input instead of "
                        "seeded values (repeatable; Samples/make_litert_references.py --image)")
    parser.add_argument("models", nargs="+")
    args = parser.parse_args()
    import ai_edge_litert
    schema = tflite_rewrite.load_schema(args.mediapipe_metadata)
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as temporary:
        folder = args.builtin_out or temporary
        os.makedirs(folder, exist_ok=True)
        for path in args.models:
            name = os.path.splitext(os.path.basename(path))[0]
            with open(path, "rb") as handle:
                data = handle.read()
            builtin, count = tflite_rewrite.custom_to_builtin(data, schema)
            version = getattr(ai_edge_litert, "__version__", "?")
            if count:
                run_path = os.path.join(folder, name + ".tflite")
                with open(run_path, "wb") as handle:
                    handle.write(builtin)
                computed_by = "ai-edge-litert %s on the builtin TRANSPOSE_CONV form (%d %s rewritten by " \
                    "Samples/tflite_rewrite.py)" % (version, count, tflite_rewrite.CUSTOM_CODE)
            else:
                run_path, computed_by = path, "ai-edge-litert %s" % version
            print("%s: %d bytes, %d %s rewritten; builtin form %d bytes" % (
                path, len(data), count, tflite_rewrite.CUSTOM_CODE, len(builtin) if count else len(data)))
            given, outputs = write_reference(run_path, args.out, args.samples, computed_by=computed_by, name=name,
                                             images=args.images)
            print("  wrote", os.path.join(args.out, name + ".reference.h5"))
            if count:
                direct = custom_form_outputs(path, given)
                if direct is not None:
                    print("  LiteRT on the custom form (XNNPACK) differs by at most",
                          max(float(np.abs(a - b).max()) for a, b in zip(direct, outputs)))


if __name__ == "__main__":
    main()
