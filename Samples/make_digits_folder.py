#!/usr/bin/env python3
"""A labelled image folder for the Digits sample, laid out as Create ML expects (one folder per label).

Run in the tfkeras215 venv after `make_digits.py` (it reloads `Samples/Digits/digits_cnn.h5`):

    python Samples/make_digits_folder.py --digits Samples/Digits

Writes `Samples/Digits/test_images/<label>/test_<index>.png`: the first five images of each class in the
test split of `make_digits.py` (same data, same split), as 8x8 grayscale PNGs (0-255), and
`Samples/Digits/test_images.reference.h5`: `files` (relative paths, sorted), `labels` (true label per
file), `outputs` (real Keras probabilities for pixels / 255, the model's training preprocessing).
"""

import argparse
import os
import struct
import zlib

import h5py
import numpy as np

PER_CLASS = 5


def png_gray(path, pixels):
    """An 8-bit grayscale PNG (color type 0), written with zlib only."""
    height, width = pixels.shape

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = b"".join(b"\0" + bytes(pixels[y].astype(np.uint8)) for y in range(height))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--digits", required=True)
    digits_dir = parser.parse_args().digits
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    pixels = np.round(digits.images * (255.0 / 16.0)).astype(np.float32)
    y = digits.target.astype(np.int64)
    _, idx_test = train_test_split(np.arange(len(y)), test_size=0.25, random_state=0, stratify=y)
    model = tf.keras.models.load_model(os.path.join(digits_dir, "digits_cnn.h5"))
    files, labels, images = [], [], []
    for label in range(10):
        folder = os.path.join(digits_dir, "test_images", str(label))
        os.makedirs(folder, exist_ok=True)
        for index in [i for i in idx_test if y[i] == label][:PER_CLASS]:
            name = f"{label}/test_{index}.png"
            png_gray(os.path.join(digits_dir, "test_images", name), pixels[index])
            files.append(name)
            labels.append(label)
            images.append(pixels[index])
    order = np.argsort(files)
    files = [files[i] for i in order]
    labels = np.array(labels)[order]
    batch = (np.stack(images)[order] / 255.0)[..., None].astype(np.float32)
    outputs = model.predict(batch, verbose=0)
    print("accuracy on the folder:", float((outputs.argmax(axis=1) == labels).mean()))
    with h5py.File(os.path.join(digits_dir, "test_images.reference.h5"), "w") as h5:
        h5["files"] = np.array(files, dtype=h5py.string_dtype())
        h5["labels"] = labels
        h5["outputs"] = outputs.astype(np.float32)
        h5.attrs["keras_version"] = tf.keras.__version__ if hasattr(tf.keras, "__version__") else tf.__version__


if __name__ == "__main__":
    main()
