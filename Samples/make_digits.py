#!/usr/bin/env python3
"""Train a tiny CNN on scikit-learn's bundled 8x8 digits (no download) and save it as a Keras 2 .h5.

Run in the tfkeras215 venv (TensorFlow 2.15, scikit-learn):

    python make_digits.py --out Samples/Digits

Writes: digits_cnn.h5 (model.save, legacy HDF5, with optimizer state), labels.txt, images/digit_<label>.pgm
(one correctly classified test image per class, binary PGM 8x8 maxval 255), digits_cnn.reference.h5,
metrics.json and README.md.

Pixels: the dataset's 0..16 values are scaled to 0..255 and rounded (the PGM values); the model is trained on
pixels / 255, so a Core ML image input needs scale 1/255 and no bias.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_fixtures as mf  # noqa: E402  (sets the TF environment variables before TensorFlow loads)

import numpy as np  # noqa: E402

SEED = 20240
EPOCHS = 40
BATCH = 32
TEST_FRACTION = 0.25


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "Digits"))
    args = ap.parse_args()

    mf.import_dialect("tfkeras215")
    K = mf.K
    import tensorflow as tf
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    mf.reset(SEED)
    tf.config.experimental.enable_op_determinism()

    digits = load_digits()
    pixels = np.round(digits.images * (255.0 / 16.0)).astype(np.float32)[..., None]  # [N,8,8,1], 0..255
    y = digits.target.astype(np.int64)
    idx_train, idx_test = train_test_split(np.arange(len(y)), test_size=TEST_FRACTION, random_state=0, stratify=y)
    x_train, x_test = pixels[idx_train] / 255.0, pixels[idx_test] / 255.0
    y_train, y_test = y[idx_train], y[idx_test]

    l = K.layers
    inp = K.Input((8, 8, 1), name="image")
    x = l.Conv2D(8, 3, padding="same", activation="relu", name="conv1")(inp)
    x = l.MaxPooling2D(name="pool1")(x)
    x = l.Conv2D(16, 3, padding="same", activation="relu", name="conv2")(x)
    x = l.Flatten(name="flatten")(x)
    x = l.Dense(32, activation="relu", name="dense")(x)
    x = l.Dropout(0.2, name="dropout")(x)
    out = l.Dense(10, activation="softmax", name="probabilities")(x)
    model = K.Model(inp, out, name="digits_cnn")
    model.compile(optimizer=K.optimizers.Adam(1e-3), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x_train, y_train, epochs=EPOCHS, batch_size=BATCH, shuffle=True, verbose=0)

    probs = model.predict(x_test, verbose=0)
    pred = probs.argmax(axis=1)
    acc = float((pred == y_test).mean())
    print(f"test accuracy: {acc:.4f} ({int((pred == y_test).sum())}/{len(y_test)})")
    if acc < 0.95:
        sys.exit("accuracy below 95%")

    os.makedirs(os.path.join(args.out, "images"), exist_ok=True)
    model_path = os.path.join(args.out, "digits_cnn.h5")
    model.save(model_path, save_format="h5")
    labels = [str(i) for i in range(10)]
    with open(os.path.join(args.out, "labels.txt"), "w") as f:
        f.write("\n".join(labels) + "\n")

    # one correctly classified test image per class (the first in test order)
    chosen = []
    for label in range(10):
        k = next(i for i in range(len(y_test)) if y_test[i] == label and pred[i] == label)
        chosen.append(k)
        img = pixels[idx_test[k], :, :, 0].astype(np.uint8)
        with open(os.path.join(args.out, "images", f"digit_{label}.pgm"), "wb") as f:
            f.write(b"P5\n8 8\n255\n" + img.tobytes())
    sample_pixels = pixels[idx_test[chosen]]  # [10,8,8,1] float32 0..255
    sample_inputs = (sample_pixels / 255.0).astype(np.float32)
    outputs, _ = mf.write_reference(os.path.join(args.out, "digits_cnn.reference.h5"), model, [sample_inputs],
                                    "tfkeras215", mf.KERAS_VERSION, labels,
                                    extra={"pixels": sample_pixels,
                                           "true_labels": np.arange(10, dtype=np.int32)})
    assert (outputs[0].argmax(axis=1) == np.arange(10)).all()
    with h5py_file(os.path.join(args.out, "digits_cnn.reference.h5")) as f:
        f.attrs["test_accuracy"] = acc
        f.attrs["image_scale"] = 1.0 / 255.0

    metrics = {"test_accuracy": round(acc, 4), "test_samples": int(len(y_test)), "train_samples": int(len(y_train)),
               "epochs": EPOCHS, "batch_size": BATCH, "split": "sklearn train_test_split(test_size=0.25, "
               "random_state=0, stratify=target)", "seed": SEED, "keras_version": mf.KERAS_VERSION,
               "sample_test_indices": [int(idx_test[k]) for k in chosen]}
    with open(os.path.join(args.out, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=1)
        f.write("\n")
    with open(os.path.join(args.out, "README.md"), "w") as f:
        f.write(README.format(acc=100 * acc, n_test=len(y_test), n_train=len(y_train), epochs=EPOCHS,
                              batch=BATCH, keras=mf.KERAS_VERSION, seed=SEED))
    print(f"wrote {args.out}")


def h5py_file(path):
    import h5py

    return h5py.File(path, "r+")


README = """# Digits: a small trained image classifier

Made by `Samples/make_digits.py` (tf.keras {keras}, TensorFlow 2.15, seed {seed}, op determinism on);
regenerate with `Samples/make_fixtures.sh` (or `python Samples/make_digits.py --out Samples/Digits` in the
tfkeras215 venv).

- Data: scikit-learn's bundled `load_digits()` (1797 8x8 grayscale digits, values 0-16; no download).
  Pixels are scaled to 0-255 (`round(v * 255 / 16)`); the model is trained on `pixels / 255`, so a Core ML
  image input needs **image scale 1/255** (0.00392156862745098) and no bias.
- Split: `train_test_split(test_size=0.25, random_state=0, stratify=target)`: {n_train} train, {n_test} test.
- Model (Functional, input `image` (8,8,1), output `probabilities`): Conv2D(8,3,same,relu) -> MaxPooling2D
  -> Conv2D(16,3,same,relu) -> Flatten -> Dense(32,relu) -> Dropout(0.2) -> Dense(10,softmax).
  Adam(1e-3), sparse categorical cross-entropy, {epochs} epochs, batch {batch}.
- **Test accuracy: {acc:.2f}%** (also in `metrics.json` and the reference file's `test_accuracy` attribute).

Files:
- `digits_cnn.h5`: `model.save(..., save_format="h5")`, legacy HDF5 with `training_config` and
  `optimizer_weights` (Adam state), like a real trained model.
- `labels.txt`: class labels 0..9, one per line, in output order.
- `images/digit_<label>.pgm`: one correctly classified test image per class, binary PGM (P5, 8x8, maxval 255).
- `digits_cnn.reference.h5`: `inputs/0` = the 10 images as fed to Keras (pixels / 255, float32 [10,8,8,1],
  in label order 0..9), `pixels` = the raw 0-255 values (float32 [10,8,8,1], the PGM contents),
  `outputs/0` = Keras probabilities, `true_labels`, `coreml_weights/<layer>` (Core ML layouts), root
  attributes `labels`, `keras_version`, `dialect`, `test_accuracy`, `image_scale`.
"""

if __name__ == "__main__":
    main()
