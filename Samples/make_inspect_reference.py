#!/usr/bin/env python3
"""What real Keras says about a few fixtures, for the `inspect` tests.

Run in the tfkeras215 venv (Samples/requirements-tfkeras215.txt) from the repository root:

    python Samples/make_inspect_reference.py

Loads each model below with tf.keras 2.15 and writes `Samples/Fixtures/inspect/keras_summary.json`:
per file, `count_params()` of the model, and per layer (nested models expanded into their layers, in
`model.layers` order) its name, class, output shape without the batch axis (null when Keras has none
to give, as for a layer called more than once) and `count_params()`. These are the numbers
`model.summary()` prints.
"""

import json
import os

import tensorflow as tf

FILES = [
    "Samples/Digits/digits_cnn.h5",
    "Samples/DigitsMobile/digits_mobile.h5",
    "Samples/Fixtures/tfkeras215/nested.h5",
    "Samples/Fixtures/tfkeras215/batchnorm.h5",
    "Samples/Fixtures/tfkeras215/depthwise_separable.h5",
    "Samples/Fixtures/tfkeras215/dropout_noise.h5",
    "Samples/Fixtures/tfkeras215/sequential_plain.h5",
    "Samples/Fixtures/legacy224/merge.h5",
]


def layers_of(model):
    for layer in model.layers:
        if isinstance(layer, tf.keras.Model):
            # A nested Sequential lists no InputLayer of its own in `layers`; the file's config may.
            yield from layers_of(layer)
        else:
            yield layer


def output_shape(layer):
    try:
        shape = layer.output_shape
    except (AttributeError, RuntimeError):
        return None
    if isinstance(shape, list):
        shape = shape[0] if len(shape) == 1 else None
    if shape is None:
        return None
    return [int(d) for d in shape[1:]]


def main():
    result = {"tensorflow_version": tf.__version__, "models": {}}
    for path in FILES:
        model = tf.keras.models.load_model(path, compile=False)
        result["models"][path] = {
            "count_params": int(model.count_params()),
            "layers": [
                {"name": layer.name, "class": type(layer).__name__, "output_shape": output_shape(layer),
                 "count_params": int(layer.count_params())}
                for layer in layers_of(model)
            ],
        }
    os.makedirs("Samples/Fixtures/inspect", exist_ok=True)
    with open("Samples/Fixtures/inspect/keras_summary.json", "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
