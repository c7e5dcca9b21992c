#!/usr/bin/env python3
"""Generate the `.keras` (Keras 3 zip format) fixtures and their reference files.

Run in the Keras 3 virtual environment (requirements-keras3.txt):

    python Samples/make_keras_fixtures.py --out Samples/Fixtures

Writes `<out>/keras_zip/<model>.keras` (config.json, metadata.json, model.weights.h5 in a zip) and
`<out>/keras_zip/<model>.reference.h5` (inputs and Keras outputs, same layout as make_fixtures.py's),
reusing make_fixtures.py's seeded weights and inputs. Also writes `<model>.h5` (the same model in the
legacy layout) so the two readers can be compared.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_fixtures as mf  # noqa: E402


def sequential_cnn():
    L = mf.L()
    model = mf.K.Sequential([
        L.Input(shape=(8, 8, 1)),
        L.Conv2D(4, 3, padding="same", activation="relu", name="conv"),
        L.BatchNormalization(name="bn"),
        L.MaxPooling2D(2, name="pool"),
        L.DepthwiseConv2D(3, padding="same", name="depthwise"),
        L.Flatten(name="flatten"),
        L.Dense(10, activation="softmax", name="probabilities"),
    ], name="sequential_cnn")
    return model


def functional():
    L = mf.L()
    a = L.Input(shape=(6,), name="features")
    b = L.Input(shape=(4, 4, 2), name="image")
    x = L.Dense(8, activation="tanh", name="dense_a")(a)
    y = L.SeparableConv2D(3, 3, padding="valid", name="separable")(b)
    y = L.GlobalAveragePooling2D(name="gap")(y)
    y = L.Dense(8, use_bias=False, name="dense_b")(y)
    z = L.Concatenate(name="concat")([x, y])
    z = L.LayerNormalization(name="norm")(z)
    out = L.Dense(3, activation="softmax", name="out")(z)
    return mf.K.Model([a, b], out, name="functional")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "Fixtures"))
    args = ap.parse_args()
    mf.import_dialect("keras3")
    folder = os.path.join(args.out, "keras_zip")
    os.makedirs(folder, exist_ok=True)
    for name, builder in [("sequential_cnn", sequential_cnn), ("functional", functional)]:
        mf.reset()
        model = builder()
        mf.randomize_weights(model, name)
        path = os.path.join(folder, name + ".keras")
        model.save(path)
        model.save(os.path.join(folder, name + ".h5"))
        xs = mf.make_inputs(model, name)
        mf.write_reference(os.path.join(folder, name + ".reference.h5"), model, xs, "keras3", mf.KERAS_VERSION)
        reloaded = mf.K.models.load_model(path, compile=False)
        for a, b in zip(mf.predict(model, xs), mf.predict(reloaded, xs)):
            mf.np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
        print(f"  keras_zip/{name}.keras ok ({os.path.getsize(path)} bytes)")
    external_link_fixture(args.out)


if __name__ == "__main__":
    main()


def external_link_fixture(out):
    """bad/external_link.h5: sequential_plain.h5 with one weight dataset replaced by an HDF5 external
    link into another file (the reader must refuse it rather than open a file the user did not name)."""
    import shutil

    import h5py

    src = os.path.join(out, "tfkeras215", "sequential_plain.h5")
    dst = os.path.join(out, "bad", "external_link.h5")
    shutil.copyfile(src, dst)
    with h5py.File(dst, "a") as f:
        group = f["model_weights"]["conv2d"]["conv2d"]
        del group["kernel:0"]
        group["kernel:0"] = h5py.ExternalLink("external_link_target.h5", "/kernel")
    print("  bad/external_link.h5 ok")
