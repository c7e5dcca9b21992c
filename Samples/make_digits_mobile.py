#!/usr/bin/env python3
"""Train a tiny MobileNet-style CNN on scikit-learn's bundled digits, as 16x16 tinted RGB images, and save it
as a Keras 2 .h5 with trained BatchNormalization statistics.

Run in the tfkeras215 venv (TensorFlow 2.15, scikit-learn):

    python make_digits_mobile.py --out Samples/DigitsMobile

Writes: digits_mobile.h5 (model.save, legacy HDF5, with optimizer state), labels.txt, digits_mobile.reference.h5,
metrics.json and README.md. No images are written (the reference file holds the 0-255 RGB pixels).

Pixels: the dataset's 0..16 values are scaled to 0..255 and rounded (p, as make_digits.py does), upsampled 8x8 ->
16x16 by nearest neighbour (each pixel repeated 2x2), and tinted per channel into RGB: R = p,
G = round(0.8 p + 20), B = 255 - p (all clipped to 0..255, integers). The model is trained on x / 127.5 - 1
(Teachable Machine's preprocessing), so a Core ML image input needs scale 1/127.5 and red/green/blue bias -1, in
RGB order (a BGR swap changes the result).

The layers are the families of the mobile models we convert (Teachable Machine MobileNetV2, mini-Xception):
Conv2D without bias -> BatchNormalization -> ReLU(6), an inverted-residual block (1x1 expand, asymmetric
ZeroPadding2D + valid DepthwiseConv2D, 1x1 project, Add), SeparableConv2D, MaxPooling2D,
GlobalAveragePooling2D, Dense. The BatchNormalization moving statistics are trained (default momentum 0.99, about
2,500 steps; gamma starts at 3 before each ReLU(6) so that the cap clips some values); the script checks that the first BatchNormalization's moving variance is within a factor of 2 of the
per-channel variance of its input on the test set, and that test accuracy is at least 90%.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_fixtures as mf  # noqa: E402  (sets the TF environment variables before TensorFlow loads)

import numpy as np  # noqa: E402

SEED = 20241
EPOCHS = 60
BATCH = 32
LEARNING_RATE = 3e-3
TEST_FRACTION = 0.25
SIZE = 16
EXPAND = 24  # inverted-residual expansion channels (8 -> 24 -> 8)
BLOCK_PAD = ((0, 2), (1, 1))  # asymmetric; with the valid 3x3 depthwise it keeps 8x8, so the Add is possible
IMAGE_SCALE = 1.0 / 127.5
IMAGE_BIAS = -1.0
MIN_ACCURACY = 0.90
FIRST_BN = "conv1_bn"
RELU6_GAMMA_INIT = 3.0


def tint(p):
    """[..., H, W] 0..255 grayscale -> [..., H, W, 3] RGB, integer valued, channels all different."""
    r = p
    g = np.round(0.8 * p + 20.0)
    b = 255.0 - p
    return np.clip(np.stack([r, g, b], axis=-1), 0, 255).astype(np.float32)


def preprocess(pixels):
    """0..255 RGB -> the model's input: x / 127.5 - 1 (Core ML: scale 1/127.5, bias -1), float32."""
    return (pixels.astype(np.float32) * np.float32(IMAGE_SCALE) + np.float32(IMAGE_BIAS)).astype(np.float32)


def build(K):
    l = K.layers
    # gamma starts at 3 (not 1) on the BatchNormalizations before ReLU(6), so that after training some values
    # exceed 6 and the cap matters (with gamma 1 none did: a ReLU6 -> ReLU change would go unnoticed)
    relu6_gamma = K.initializers.Constant(RELU6_GAMMA_INIT)
    inp = K.Input((SIZE, SIZE, 3), name="image")
    x = l.Conv2D(8, 3, strides=2, padding="same", use_bias=False, name="conv1")(inp)  # 8x8x8
    x = l.BatchNormalization(gamma_initializer=relu6_gamma, name="conv1_bn")(x)
    x = l.ReLU(max_value=6.0, name="conv1_relu")(x)
    block_in = x
    # inverted residual (MobileNetV2 style): expand, depthwise, project, add
    x = l.Conv2D(EXPAND, 1, use_bias=False, name="block1_expand")(x)
    x = l.BatchNormalization(gamma_initializer=relu6_gamma, name="block1_expand_bn")(x)
    x = l.ReLU(max_value=6.0, name="block1_expand_relu")(x)
    x = l.ZeroPadding2D(BLOCK_PAD, name="block1_pad")(x)  # 8x8 -> 10x10
    x = l.DepthwiseConv2D(3, padding="valid", use_bias=False, name="block1_depthwise")(x)  # -> 8x8
    x = l.BatchNormalization(gamma_initializer=relu6_gamma, name="block1_depthwise_bn")(x)
    x = l.ReLU(max_value=6.0, name="block1_depthwise_relu")(x)
    x = l.Conv2D(8, 1, use_bias=False, name="block1_project")(x)
    x = l.BatchNormalization(name="block1_project_bn")(x)
    x = l.Add(name="block1_add")([block_in, x])
    # mini-Xception style tail
    x = l.SeparableConv2D(16, 3, padding="same", use_bias=False, name="sep_conv")(x)
    x = l.BatchNormalization(name="sep_conv_bn")(x)
    x = l.Activation("relu", name="sep_conv_relu")(x)
    x = l.MaxPooling2D(2, name="pool")(x)  # 4x4x16
    x = l.GlobalAveragePooling2D(name="global_pool")(x)
    x = l.Dense(16, activation="relu", name="dense")(x)
    out = l.Dense(10, activation="softmax", name="probabilities")(x)
    return K.Model(inp, out, name="digits_mobile")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "DigitsMobile"))
    args = ap.parse_args()

    mf.import_dialect("tfkeras215")
    K = mf.K
    import tensorflow as tf
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    mf.reset(SEED)
    tf.config.experimental.enable_op_determinism()

    digits = load_digits()
    gray = np.round(digits.images * (255.0 / 16.0)).astype(np.float32)  # [N,8,8], 0..255
    gray = gray.repeat(2, axis=1).repeat(2, axis=2)  # nearest-neighbour upsampling -> [N,16,16]
    pixels = tint(gray)  # [N,16,16,3] RGB 0..255
    y = digits.target.astype(np.int64)
    idx_train, idx_test = train_test_split(np.arange(len(y)), test_size=TEST_FRACTION, random_state=0, stratify=y)
    x_train, x_test = preprocess(pixels[idx_train]), preprocess(pixels[idx_test])
    y_train, y_test = y[idx_train], y[idx_test]

    model = build(K)
    n_params = int(model.count_params())
    print(f"parameters: {n_params}")
    assert n_params < 30000
    model.compile(optimizer=K.optimizers.Adam(LEARNING_RATE), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    model.fit(x_train, y_train, epochs=EPOCHS, batch_size=BATCH, shuffle=True, verbose=0)

    probs = model.predict(x_test, verbose=0)
    pred = probs.argmax(axis=1)
    acc = float((pred == y_test).mean())
    print(f"test accuracy: {acc:.4f} ({int((pred == y_test).sum())}/{len(y_test)})")
    if acc < MIN_ACCURACY:
        sys.exit(f"accuracy below {100 * MIN_ACCURACY:.0f}%")

    # the first BatchNormalization's moving statistics against its input's statistics on the test set
    bn = model.get_layer(FIRST_BN)
    gamma, beta, moving_mean, moving_var = [np.asarray(w, np.float64) for w in bn.get_weights()]
    bn_in = K.Model(model.input, bn.input).predict(x_test, verbose=0).astype(np.float64)  # [N,8,8,8]
    test_mean = bn_in.mean(axis=(0, 1, 2))
    test_var = bn_in.var(axis=(0, 1, 2))
    var_ratio = moving_var / test_var
    mean_shift = np.abs(moving_mean - test_mean) / np.sqrt(test_var)  # in test standard deviations
    np.set_printoptions(precision=3, suppress=True)
    print(f"{FIRST_BN} moving variance / test-set input variance per channel: {var_ratio}")
    print(f"{FIRST_BN} |moving mean - test-set input mean| / test std per channel: {mean_shift}")
    if not ((var_ratio > 0.5) & (var_ratio < 2.0)).all():
        sys.exit(f"{FIRST_BN} moving variance is not within a factor of 2 of the test-set variance")
    if not (mean_shift < 0.5).all():
        sys.exit(f"{FIRST_BN} moving mean is more than 0.5 std from the test-set mean")

    os.makedirs(args.out, exist_ok=True)
    model_path = os.path.join(args.out, "digits_mobile.h5")
    model.save(model_path, save_format="h5")
    labels = [str(i) for i in range(10)]
    with open(os.path.join(args.out, "labels.txt"), "w") as f:
        f.write("\n".join(labels) + "\n")

    # one correctly classified test image per class (the first in test order)
    chosen = [next(i for i in range(len(y_test)) if y_test[i] == label and pred[i] == label) for label in range(10)]
    sample_pixels = pixels[idx_test[chosen]]  # [10,16,16,3] float32 0..255, RGB
    sample_inputs = preprocess(sample_pixels)
    ref_path = os.path.join(args.out, "digits_mobile.reference.h5")
    outputs, unmapped = mf.write_reference(ref_path, model, [sample_inputs], "tfkeras215", mf.KERAS_VERSION, labels,
                                           extra={"pixels": sample_pixels,
                                                  "true_labels": np.arange(10, dtype=np.int32)})
    assert not unmapped, unmapped
    assert (outputs[0].argmax(axis=1) == np.arange(10)).all()
    sample_bn_in = K.Model(model.input, bn.input).predict(sample_inputs, verbose=0).astype(np.float64)
    sample_ratio = moving_var / sample_bn_in.var(axis=(0, 1, 2))
    print(f"{FIRST_BN} moving variance / variance on the 10 reference images: {sample_ratio}")
    with h5py_file(ref_path) as f:
        f.attrs["test_accuracy"] = acc
        f.attrs["image_scale"] = IMAGE_SCALE
        f.attrs["image_bias"] = IMAGE_BIAS
        g = f.create_group("first_bn_input_stats")
        g.attrs["layer"] = FIRST_BN
        g.attrs["input_layer"] = "conv1"
        g.create_dataset("test_mean", data=test_mean.astype(np.float32))
        g.create_dataset("test_variance", data=test_var.astype(np.float32))
        g.create_dataset("moving_variance_over_test_variance", data=var_ratio.astype(np.float32))

    relu6_clipped = {}
    for name in ["conv1_relu", "block1_expand_relu", "block1_depthwise_relu"]:
        pre = K.Model(model.input, model.get_layer(name).input).predict(sample_inputs, verbose=0)
        relu6_clipped[name] = round(float((pre > 6).mean()), 4)
    print(f"fraction of ReLU(6) inputs above 6 on the reference images: {relu6_clipped}")
    if min(relu6_clipped.values()) == 0:
        sys.exit("a ReLU(6) never clips on the reference images")

    def r(v, n=4):
        return [round(float(a), n) for a in v]

    metrics = {"test_accuracy": round(acc, 4), "test_samples": int(len(y_test)), "train_samples": int(len(y_train)),
               "parameters": n_params, "epochs": EPOCHS, "batch_size": BATCH, "learning_rate": LEARNING_RATE,
               "split": "sklearn train_test_split(test_size=0.25, random_state=0, stratify=target)",
               "seed": SEED, "keras_version": mf.KERAS_VERSION,
               "preprocessing": {"upsample": "nearest 8x8 -> 16x16 (2x2 repeat)",
                                 "tint": "R = p, G = round(0.8 p + 20), B = 255 - p, clipped to 0..255",
                                 "input": "x / 127.5 - 1", "image_scale": IMAGE_SCALE,
                                 "red_bias": IMAGE_BIAS, "green_bias": IMAGE_BIAS, "blue_bias": IMAGE_BIAS,
                                 "channel_order": "RGB"},
               "first_bn": {"layer": FIRST_BN, "moving_mean": r(moving_mean), "moving_variance": r(moving_var),
                            "test_input_mean": r(test_mean), "test_input_variance": r(test_var),
                            "moving_variance_over_test_variance": r(var_ratio, 3)},
               "relu6_clipped_fraction": relu6_clipped,
               "sample_test_indices": [int(idx_test[k]) for k in chosen]}
    with open(os.path.join(args.out, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=1)
        f.write("\n")
    with open(os.path.join(args.out, "README.md"), "w") as f:
        f.write(README.format(acc=100 * acc, n_test=len(y_test), n_train=len(y_train), epochs=EPOCHS,
                              batch=BATCH, lr=LEARNING_RATE, keras=mf.KERAS_VERSION, seed=SEED, params=n_params,
                              expand=EXPAND, pad=BLOCK_PAD, ratio_min=var_ratio.min(), ratio_max=var_ratio.max()))
    print(f"wrote {args.out}")


def h5py_file(path):
    import h5py

    return h5py.File(path, "r+")


README = """# DigitsMobile: a small trained MobileNet-style classifier (RGB, Teachable Machine preprocessing)

Made by `Samples/make_digits_mobile.py` (tf.keras {keras}, TensorFlow 2.15, seed {seed}, op determinism on);
regenerate with `Samples/make_fixtures.sh` (or `python Samples/make_digits_mobile.py --out Samples/DigitsMobile`
in the tfkeras215 venv).

- Data: scikit-learn's bundled `load_digits()` (1797 8x8 grayscale digits, values 0-16; no download).
  Pixels are scaled to 0-255 (`p = round(v * 255 / 16)`), upsampled to 16x16 by **nearest neighbour** (each
  pixel repeated 2x2) and tinted into **RGB**: `R = p`, `G = round(0.8 p + 20)`, `B = 255 - p` (clipped to
  0-255; integers), so the three channels differ and an RGB/BGR swap changes the output.
- The model is trained on `x / 127.5 - 1` (Teachable Machine's preprocessing), so a Core ML image input needs
  **image scale 1/127.5** (0.00784313725490196) and **red/green/blue bias -1**, RGB order.
- Split: `train_test_split(test_size=0.25, random_state=0, stratify=target)`: {n_train} train, {n_test} test.
- Model (Functional, input `image` (16,16,3), output `probabilities`, {params} parameters):
  `conv1` Conv2D(8,3,strides 2,same,no bias) -> `conv1_bn` BatchNormalization -> `conv1_relu` ReLU(6)
  -> inverted residual: `block1_expand` Conv2D({expand},1,no bias) -> `block1_expand_bn` -> `block1_expand_relu`
  ReLU(6) -> `block1_pad` ZeroPadding2D({pad}) -> `block1_depthwise` DepthwiseConv2D(3,valid,no bias)
  -> `block1_depthwise_bn` -> `block1_depthwise_relu` ReLU(6) -> `block1_project` Conv2D(8,1,no bias)
  -> `block1_project_bn` -> `block1_add` Add(block input, projection)
  -> `sep_conv` SeparableConv2D(16,3,same,no bias) -> `sep_conv_bn` -> `sep_conv_relu` Activation(relu)
  -> `pool` MaxPooling2D(2) -> `global_pool` GlobalAveragePooling2D -> `dense` Dense(16,relu)
  -> `probabilities` Dense(10,softmax).
  The padding is asymmetric (top 0, bottom 2, left 1, right 1): with the valid 3x3 depthwise it keeps 8x8, so
  the residual Add is possible (MobileNetV2's `((0,1),(0,1))` only fits its stride-2 blocks, which have no Add).
  Adam({lr}), sparse categorical cross-entropy, {epochs} epochs, batch {batch}.
- **Test accuracy: {acc:.2f}%** (also in `metrics.json` and the reference file's `test_accuracy` attribute).
- The BatchNormalizations before the ReLU(6)s start with gamma 3 (not 1), so that after training some values
  exceed 6 on the reference images (`relu6_clipped_fraction` in `metrics.json`) and the cap matters.
- BatchNormalization statistics are trained (default momentum 0.99). The first one, `conv1_bn`, has moving
  variance {ratio_min:.2f}-{ratio_max:.2f} times the per-channel variance of its input (`conv1`'s output) over
  the test set (the script fails outside 0.5-2); both are in `metrics.json` (`first_bn`).

Files:
- `digits_mobile.h5`: `model.save(..., save_format="h5")`, legacy HDF5 with `training_config` and
  `optimizer_weights` (Adam state), like a real trained model.
- `labels.txt`: class labels 0..9, one per line, in output order.
- `digits_mobile.reference.h5`: `inputs/0` = one correctly classified test image per class as fed to Keras
  (`pixels / 127.5 - 1`, computed in float32 as `pixels * float32(1/127.5) + float32(-1)`, Core ML's
  scale-then-bias order; float32 [10,16,16,3], in label order 0..9), `pixels` = the raw 0-255 RGB values
  (float32 [10,16,16,3]), `outputs/0` = Keras probabilities, `true_labels`, `coreml_weights/<layer>` (Core ML
  layouts), `first_bn_input_stats/` (`test_mean`, `test_variance` of `conv1_bn`'s input over the test set,
  `moving_variance_over_test_variance`), root attributes `labels`, `keras_version`, `dialect`, `test_accuracy`,
  `image_scale` (1/127.5), `image_bias` (-1).
"""

if __name__ == "__main__":
    main()
