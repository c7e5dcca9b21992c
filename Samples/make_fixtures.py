#!/usr/bin/env python3
"""Generate the converter's Keras .h5 test fixtures and their reference files.

Run once per Keras dialect, each in the matching virtual environment:

    python make_fixtures.py --dialect tfkeras215 --out Samples/Fixtures   # venv from requirements-tfkeras215.txt
    python make_fixtures.py --dialect tfkeras2   --out Samples/Fixtures   # venv from requirements-keras3.txt
    python make_fixtures.py --dialect keras3     --out Samples/Fixtures   # venv from requirements-keras3.txt
    python make_fixtures.py --legacy             --out Samples/Fixtures   # tfkeras215 venv, after tfkeras215

Dialects:
    tfkeras215  `from tensorflow import keras` with TensorFlow 2.15 (Keras 2.15)
    tfkeras2    `import tf_keras` (Keras 2 API on current TensorFlow)
    keras3      `import keras` (Keras 3, TensorFlow backend), saved in the legacy .h5 layout

`--legacy` rewrites some tfkeras215 fixtures into the Keras 2.0-2.4 file layout (Keras 2.2.4 cannot be
installed on Python 3.11): see `legacy_rewrite` below.

Every fixture `<dir>/<model>.h5` gets a `<dir>/<model>.reference.h5` (inputs, Keras outputs, and the
weights rearranged into Core ML layouts by numpy from `layer.get_weights()`), and an entry in
`<out>/manifest.json`. Everything is seeded, so reruns give the same weights, inputs and outputs.
"""

import argparse
import json
import os
import re
import shutil
import sys
import zlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("PYTHONHASHSEED", "0")
os.environ.setdefault("TF_DETERMINISTIC_OPS", "1")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
import h5py  # noqa: E402

DIALECTS = ("tfkeras215", "tfkeras2", "keras3")
N_SAMPLES = 3

# Fixtures rewritten into the Keras 2.2.4 layout by --legacy (chosen to use no layer options newer than 2.2.4).
LEGACY_MODELS = [
    "dense_classifier",
    "depthwise_separable",
    "batchnorm",
    "pooling",
    "merge",
    "multi_io_shared",
    "nested",
    "sequential_plain",
]

K = None  # the Keras module of the chosen dialect
DIALECT = None
KERAS_VERSION = None


# --------------------------------------------------------------------------------------------------
# dialect setup


def import_dialect(dialect):
    global K, DIALECT, KERAS_VERSION
    import tensorflow as tf

    if dialect == "tfkeras215":
        from tensorflow import keras as k

        if not tf.__version__.startswith("2.15."):
            sys.exit(f"tfkeras215 needs TensorFlow 2.15, found {tf.__version__}")
        import keras as keras_pkg  # the keras 2.15 package behind tf.keras

        version = keras_pkg.__version__
    elif dialect == "tfkeras2":
        import tf_keras as k

        version = k.__version__
    elif dialect == "keras3":
        import keras as k

        version = k.__version__
        if not version.startswith("3."):
            sys.exit(f"keras3 needs Keras 3, found {version}")
    else:
        raise ValueError(dialect)
    K, DIALECT, KERAS_VERSION = k, dialect, version
    print(f"dialect {dialect}: Keras {version}, TensorFlow {tf.__version__}, h5py {h5py.__version__}")


def reset(seed=1234):
    """Fresh session (so auto-generated layer names restart at `conv2d`, `dense`, ...) and seeds."""
    K.backend.clear_session()
    import random

    import tensorflow as tf

    random.seed(seed)
    np.random.seed(seed)
    tf.random.set_seed(seed)
    if hasattr(K.utils, "set_random_seed"):
        K.utils.set_random_seed(seed)


def seed_of(*parts):
    return zlib.crc32("/".join(parts).encode("utf8"))


def is_keras3():
    return DIALECT == "keras3"


def L():
    return K.layers


def has_layer(name):
    return hasattr(K.layers, name)


# --------------------------------------------------------------------------------------------------
# helpers on models


def iter_layers(model):
    """All layers, depth first, including the layers of nested models (and the nested models)."""
    for layer in model.layers:
        yield layer
        if hasattr(layer, "layers") and isinstance(layer, K.Model):
            yield from iter_layers(layer)


def leaf_layers_with_weights(model):
    return [l for l in iter_layers(model) if not isinstance(l, K.Model) and l.weights]


def randomize_weights(model, model_name):
    """Replace every weight by seeded random values (same values in every dialect for the same layer name).

    Kernels: normal / sqrt(fan_in) (keeps activations O(1) through the layers); biases normal*0.5;
    BatchNormalization: gamma, beta, moving_mean normal, moving_variance uniform(0.5, 2); PReLU alpha normal*0.5.
    """
    for layer in leaf_layers_with_weights(model):
        rng = np.random.default_rng(seed_of(model_name, layer.name))
        new = []
        for var, value in zip(layer.weights, layer.get_weights()):
            base = var.name.split("/")[-1].split(":")[0]
            if base == "kernel" and layer.__class__.__name__ == "DepthwiseConv2D":
                base = "depthwise_kernel"  # Keras 3 names it `kernel`
            shape = value.shape
            if base == "moving_variance":
                v = rng.uniform(0.5, 2.0, shape)
            elif base in ("moving_mean", "gamma", "beta"):
                v = rng.normal(0.0, 1.0, shape)
            elif base in ("kernel", "depthwise_kernel", "pointwise_kernel"):
                if base == "depthwise_kernel":
                    fan_in = shape[0] * shape[1]
                else:
                    fan_in = int(np.prod(shape[:-1]))
                v = rng.normal(0.0, 1.0, shape) / np.sqrt(max(fan_in, 1))
            else:  # bias, alpha, ...
                v = rng.normal(0.0, 0.5, shape)
            new.append(v.astype(value.dtype))
        layer.set_weights(new)


def producing_layer(tensor):
    h = tensor._keras_history
    layer = getattr(h, "layer", None) or getattr(h, "operation", None)
    if layer is None:
        layer = h[0]
    return layer


def io_names(model):
    ins = [producing_layer(t).name for t in model.inputs]
    outs = [producing_layer(t).name for t in model.outputs]
    return ins, outs


def shape_list(tensor):
    s = tensor.shape
    if hasattr(s, "as_list"):
        s = s.as_list()
    return [None if d is None else int(d) for d in s]


def coreml_weights(layer):
    """Weights of one Keras layer rearranged into Core ML NeuralNetwork layouts (numpy only)."""
    cls = layer.__class__.__name__
    w = layer.get_weights()
    out, attrs = {}, {}

    def dw(kernel):
        kh, kw, c, mult = kernel.shape
        return kernel.reshape(kh, kw, 1, c * mult).transpose(3, 2, 0, 1)

    if cls == "Conv2D":
        out["weights"] = w[0].transpose(3, 2, 0, 1)
        if layer.use_bias:
            out["bias"] = w[1]
    elif cls == "DepthwiseConv2D":
        out["weights"] = dw(w[0])
        if layer.use_bias:
            out["bias"] = w[1]
    elif cls == "SeparableConv2D":
        out["depthwise_weights"] = dw(w[0])
        out["pointwise_weights"] = w[1].transpose(3, 2, 0, 1)
        if layer.use_bias:
            out["bias"] = w[2]
    elif cls == "Dense":
        out["weights"] = w[0].T
        if layer.use_bias:
            out["bias"] = w[1]
    elif cls == "BatchNormalization":
        i = 0
        if layer.scale:
            gamma = w[i]
            i += 1
        else:
            gamma = None
        if layer.center:
            beta = w[i]
            i += 1
        else:
            beta = None
        mean, var = w[i], w[i + 1]
        out["gamma"] = gamma if gamma is not None else np.ones_like(mean)
        out["beta"] = beta if beta is not None else np.zeros_like(mean)
        out["mean"] = mean
        out["variance"] = var
        attrs["epsilon"] = float(layer.epsilon)
    elif cls == "PReLU":
        out["alpha"] = w[0].reshape(-1)
    else:
        return None, None
    return {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in out.items()}, attrs


def predict(model, inputs):
    y = model.predict(inputs if len(inputs) > 1 else inputs[0], verbose=0)
    if not isinstance(y, (list, tuple)):
        y = [y]
    return [np.asarray(v, dtype=np.float32) for v in y]


def write_reference(path, model, inputs, dialect, keras_version, labels=None, extra=None):
    in_names, out_names = io_names(model)
    outputs = predict(model, inputs)
    assert len(outputs) == len(out_names), (len(outputs), out_names)
    with h5py.File(path, "w") as f:
        f.attrs["keras_version"] = keras_version
        f.attrs["dialect"] = dialect
        if labels is not None:
            f.attrs["labels"] = list(labels)
        g = f.create_group("inputs")
        for i, (x, n) in enumerate(zip(inputs, in_names)):
            d = g.create_dataset(str(i), data=np.asarray(x, np.float32))
            d.attrs["name"] = n
        g = f.create_group("outputs")
        for i, (y, n) in enumerate(zip(outputs, out_names)):
            d = g.create_dataset(str(i), data=y)
            d.attrs["name"] = n
        g = f.create_group("coreml_weights")
        unmapped = []
        for layer in leaf_layers_with_weights(model):
            ws, attrs = coreml_weights(layer)
            if ws is None:
                unmapped.append(layer.__class__.__name__)
                continue
            if layer.name in g:
                raise RuntimeError(f"duplicate layer name {layer.name}")
            lg = g.create_group(layer.name)
            lg.attrs["class_name"] = layer.__class__.__name__
            for k, v in attrs.items():
                lg.attrs[k] = v
            for k, v in ws.items():
                lg.create_dataset(k, data=v)
        for k, v in (extra or {}).items():
            f.create_dataset(k, data=v)
    return outputs, unmapped


def save_model(model, path):
    if is_keras3():
        model.save(path)  # .h5 suffix -> legacy HDF5 layout
    else:
        model.save(path, save_format="h5")


def all_layer_classes(model):
    names = set()
    for l in iter_layers(model):
        names.add(l.__class__.__name__)
    # Input layers are not in Sequential.layers; the file still has them (InputLayer entry or batch_input_shape)
    return sorted(names)


# --------------------------------------------------------------------------------------------------
# the models. Each builder returns (model, info) where info may hold: skipped (list of str),
# input_range (low, high), labels, notes.


def m_conv_variants():
    l = L()
    i = K.Input((12, 12, 4), name="input")
    x = l.Conv2D(6, 3, padding="same", activation="relu", name="conv_same_relu")(i)
    x = l.Conv2D(6, 3, padding="valid", strides=2, use_bias=False, name="conv_valid_s2_nobias")(x)
    x = l.Conv2D(4, (3, 2), padding="same", dilation_rate=2, activation="tanh", name="conv_dilated_tanh")(x)
    x = l.Conv2D(4, 1, groups=2, name="conv_groups2")(x)
    x = l.Conv2D(5, 3, strides=2, padding="same", name="conv_same_s2")(x)
    return K.Model(i, x, name="conv_variants"), {}


def m_depthwise_separable():
    l = L()
    i = K.Input((10, 10, 3), name="input")
    x = l.DepthwiseConv2D(3, depth_multiplier=2, padding="same", activation="relu", name="dw_mult2_same_relu")(i)
    x = l.DepthwiseConv2D(3, strides=2, padding="valid", use_bias=False, name="dw_s2_valid_nobias")(x)
    x = l.SeparableConv2D(5, 3, padding="same", activation="relu", depth_multiplier=1, name="sep_same_relu")(x)
    x = l.SeparableConv2D(4, 3, padding="valid", depth_multiplier=2, name="sep_valid_mult2")(x)
    return K.Model(i, x, name="depthwise_separable"), {}


DENSE_LABELS = ["cat", "dog", "bird", "fish"]


def m_dense_classifier():
    l = L()
    i = K.Input((6, 6, 2), name="image")
    x = l.Conv2D(3, 3, padding="same", activation="relu", name="conv")(i)
    x = l.Flatten(name="flatten")(x)
    x = l.Dense(8, activation="relu", name="hidden")(x)
    x = l.Dense(4, activation="softmax", name="probabilities")(x)
    m = K.Model(i, x, name="dense_classifier")
    m.compile(optimizer="adam", loss="categorical_crossentropy", metrics=["accuracy"])
    return m, {"labels": DENSE_LABELS, "notes": ["compiled (training_config present), never trained"]}


def m_batchnorm():
    l = L()
    i = K.Input((5, 5, 3), name="input")
    x = l.BatchNormalization(name="bn_input")(i)
    x = l.Conv2D(4, 3, padding="same", name="conv")(x)
    x = l.BatchNormalization(scale=False, name="bn_noscale")(x)
    x = l.BatchNormalization(center=False, epsilon=0.01, name="bn_nocenter_eps")(x)
    x = l.GlobalAveragePooling2D(name="gap")(x)
    x = l.BatchNormalization(name="bn_rank2")(x)
    return K.Model(i, x, name="batchnorm"), {}


ACTIVATION_NAMES = ["relu", "relu6", "sigmoid", "tanh", "softmax", "elu", "selu", "softplus", "softsign",
                    "hard_sigmoid", "swish", "gelu", "exponential", "linear"]


def m_activations():
    l = L()
    skipped, notes = [], []
    i = K.Input((4, 4, 3), name="input")
    branches = []
    for a in ACTIVATION_NAMES:
        try:
            K.activations.get(a)
        except Exception as e:  # noqa: BLE001
            skipped.append(f"Activation('{a}'): {e}")
            continue
        branches.append(l.Activation(a, name=f"act_{a}")(i))
    branches.append(l.ReLU(max_value=6.0, name="relu_max6")(i))
    branches.append(l.ReLU(negative_slope=0.1, name="relu_slope01")(i))
    branches.append(l.ReLU(threshold=0.5, name="relu_threshold05")(i))
    branches.append(l.ReLU(max_value=2.0, negative_slope=0.1, name="relu_max2_slope01")(i))
    branches.append(l.LeakyReLU(0.3, name="leaky_relu_03")(i))
    branches.append(l.PReLU(shared_axes=[1, 2], name="prelu_shared12")(i))
    branches.append(l.ELU(0.7, name="elu_07")(i))
    if has_layer("ThresholdedReLU"):
        branches.append(l.ThresholdedReLU(0.4, name="thresholded_relu_04")(i))
    else:
        skipped.append("ThresholdedReLU(0.4): layer class not in this Keras")
    branches.append(l.Softmax(axis=-1, name="softmax_layer")(i))
    x = l.Concatenate(axis=-1, name="concat")(branches)
    if is_keras3():
        notes.append("Keras 3 hard_sigmoid is relu6(x+3)/6 (slope 1/6); Keras 2 hard_sigmoid is clip(0.2x+0.5, 0, 1)")
        notes.append("Keras 3 serializes Activation('swish') as 'silu'")
    else:
        notes.append("Keras 2 hard_sigmoid is clip(0.2x+0.5, 0, 1)")
    notes.append("gelu is the exact (erf) form: Activation('gelu') has approximate=False")
    channel_order = [producing_layer(b).name for b in branches]
    notes.append("concat channel blocks (3 channels each, in order): " + ", ".join(channel_order))
    return K.Model(i, x, name="activations"), {"skipped": skipped, "input_range": (-4.0, 4.0), "notes": notes}


def approximate_gelu_skip_reason():
    """There is no GELU layer and Activation() only serializes a function name, which drops approximate=True."""
    if has_layer("GELU"):
        return None
    return ("activations_gelu_approx: no GELU layer in this Keras and Activation(fn) serializes only the function "
            "name (approximate=True would be lost); only a Lambda or a custom object could carry it")


def m_pooling():
    l = L()
    i = K.Input((9, 9, 3), name="input")
    a = l.GlobalAveragePooling2D(name="gap_a")(l.MaxPooling2D(2, name="maxpool2_valid")(i))
    b = l.GlobalMaxPooling2D(name="gmp_b")(l.MaxPooling2D(3, strides=2, padding="same", name="maxpool3_s2_same")(i))
    c = l.GlobalAveragePooling2D(name="gap_c")(l.AveragePooling2D(2, strides=1, padding="same",
                                                                   name="avgpool2_s1_same")(i))
    d = l.GlobalMaxPooling2D(name="gmp_d")(l.AveragePooling2D(3, padding="valid", name="avgpool3_valid")(i))
    out_a = l.Concatenate(axis=-1, name="pooled")([a, b, c, d])
    outputs, skipped = [out_a], []
    try:
        outputs.append(l.GlobalMaxPooling2D(keepdims=True, name="gmp_keepdims")(i))
    except TypeError as e:
        skipped.append(f"GlobalMaxPooling2D(keepdims=True): {e}")
    return K.Model(i, outputs, name="pooling"), {"skipped": skipped, "notes": [
        "AveragePooling2D padding=same averages only the valid (unpadded) cells"]}


def m_reshape_ops():
    l = L()
    i = K.Input((6, 6, 2), name="input")
    x = l.ZeroPadding2D(((1, 2), (0, 1)), name="zeropad")(i)  # 9x7x2
    x = l.Cropping2D(((1, 0), (2, 1)), name="crop")(x)  # 8x4x2
    x = l.UpSampling2D(2, name="upsample_nearest")(x)  # 16x8x2
    x = l.Conv2D(2, 3, name="conv")(x)  # 14x6x2
    x = l.UpSampling2D((2, 2), interpolation="bilinear", name="upsample_bilinear")(x)  # 28x12x2
    x = l.Permute((2, 1, 3), name="permute")(x)  # 12x28x2
    x = l.Reshape((24, 14, 2), name="reshape")(x)  # (h*2, w/2, c)
    x = l.Flatten(name="flatten")(x)  # 672
    x = l.Dense(5, name="dense")(x)
    return K.Model(i, x, name="reshape_ops"), {"notes": [
        "shapes: 6x6x2 -> pad 9x7x2 -> crop 8x4x2 -> up 16x8x2 -> conv 14x6x2 -> bilinear 28x12x2 "
        "-> permute 12x28x2 -> reshape 24x14x2 -> flatten 672 -> dense 5",
        "UpSampling2D bilinear uses tf.image.resize (half-pixel centers, i.e. align_corners=False)"]}


def m_reshape_rank3():
    l = L()
    i = K.Input((12,), name="input")
    x = l.Reshape((2, 3, 2), name="reshape")(i)
    x = l.Conv2D(2, 1, name="conv")(x)
    x = l.Flatten(name="flatten")(x)
    return K.Model(i, x, name="reshape_rank3"), {}


def m_merge():
    l = L()
    a = K.Input((4, 4, 3), name="a")
    b = K.Input((4, 4, 3), name="b")
    parts = [l.Add(name="add")([a, b]), l.Subtract(name="subtract")([a, b]), l.Multiply(name="multiply")([a, b]),
             l.Average(name="average")([a, b]), l.Maximum(name="maximum")([a, b]), l.Minimum(name="minimum")([a, b])]
    m1 = l.Concatenate(axis=-1, name="merged")(parts)
    m2 = l.Concatenate(axis=1, name="concat_axis1")([a, b])
    m3 = l.Concatenate(axis=2, name="concat_axis2")([a, b])
    return K.Model([a, b], [m1, m2, m3], name="merge"), {}


def m_multi_io_shared():
    l = L()
    left = K.Input((8, 8, 3), name="left")
    right = K.Input((8, 8, 3), name="right")
    shared = l.Conv2D(4, 3, activation="relu", name="shared_conv")
    gl = l.GlobalAveragePooling2D(name="gap_left")(shared(left))
    gr = l.GlobalAveragePooling2D(name="gap_right")(shared(right))
    x = l.Concatenate(name="concat")([gl, gr])
    probs = l.Dense(3, activation="softmax", name="probs")(x)
    left_only = l.Dense(2, name="left_only")(gl)
    return K.Model([left, right], [probs, left_only], name="multi_io_shared"), {
        "notes": ["shared_conv is one layer with two inbound nodes"]}


def m_nested():
    l = L()
    ii = K.Input((8, 8, 3))
    x = l.Conv2D(4, 3, strides=2, use_bias=False)(ii)
    x = l.BatchNormalization()(x)
    x = l.ReLU(6.0)(x)
    x = l.DepthwiseConv2D(3, padding="same")(x)
    x = l.GlobalAveragePooling2D()(x)
    inner = K.Model(ii, x, name="inner")
    seq_a = K.Sequential([inner], name="sequential_a")
    head = K.Sequential([l.Dense(5, activation="relu"), l.Dense(2, activation="softmax")], name="head")
    outer = K.Sequential([K.Input((8, 8, 3)), seq_a, head], name="outer")
    return outer, {"labels": ["class_a", "class_b"], "notes": [
        "Teachable Machine style: Sequential[ Sequential[ Functional inner ], Sequential head ]; auto layer names"]}


def m_dropout_noise():
    l = L()
    i = K.Input((6,), name="input")
    x = l.Dense(5, name="dense_1")(i)
    x = l.Dropout(0.5, name="dropout")(x)
    x = l.GaussianNoise(0.1, name="gaussian_noise")(x)
    x = l.GaussianDropout(0.2, name="gaussian_dropout")(x)
    x = l.ActivityRegularization(l1=0.01, name="activity_reg")(x)
    x = l.Dense(3, name="dense_2")(x)
    return K.Model(i, x, name="dropout_noise"), {}


def m_spatial_dropout():
    l = L()
    i = K.Input((4, 4, 2), name="input")
    x = l.SpatialDropout2D(0.3, name="spatial_dropout")(i)
    x = l.Conv2D(2, 1, name="conv")(x)
    x = l.Flatten(name="flatten")(x)
    return K.Model(i, x, name="spatial_dropout"), {}


def m_sequential_plain():
    l = L()
    m = K.Sequential([l.Conv2D(4, 3, input_shape=(7, 7, 1)), l.MaxPooling2D(), l.Flatten(), l.Dense(3)],
                     name="sequential_plain")
    return m, {"notes": ["no explicit InputLayer: input_shape given to the first layer"]}


MODELS = [
    ("conv_variants", m_conv_variants),
    ("depthwise_separable", m_depthwise_separable),
    ("dense_classifier", m_dense_classifier),
    ("batchnorm", m_batchnorm),
    ("activations", m_activations),
    ("pooling", m_pooling),
    ("reshape_ops", m_reshape_ops),
    ("reshape_rank3", m_reshape_rank3),
    ("merge", m_merge),
    ("multi_io_shared", m_multi_io_shared),
    ("nested", m_nested),
    ("dropout_noise", m_dropout_noise),
    ("spatial_dropout", m_spatial_dropout),
    ("sequential_plain", m_sequential_plain),
]


# --------------------------------------------------------------------------------------------------
# manifest


def load_manifest(out):
    p = os.path.join(out, "manifest.json")
    if os.path.exists(p):
        with open(p) as f:
            return json.load(f)
    return {"description": "Keras .h5 fixtures made by Samples/make_fixtures.py; shapes include the batch "
                           "dimension (null); paths are relative to this folder", "fixtures": []}


def save_manifest(out, manifest, replace_dialect):
    keep = [e for e in manifest["fixtures"] if e["dialect"] != replace_dialect]
    manifest["fixtures"] = keep
    return manifest


def write_manifest(out, manifest):
    order = {d: i for i, d in enumerate(list(DIALECTS) + ["legacy224", "bad"])}
    manifest["fixtures"].sort(key=lambda e: (order.get(e["dialect"], 99), e["path"]))
    text = json.dumps(manifest, indent=1)
    # keep short lists of numbers (shapes) on one line
    text = re.sub(r"\[\s*((?:(?:-?\d+|null),\s*)*(?:-?\d+|null))\s*\]",
                  lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", text)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        f.write(text + "\n")


def manifest_entry(rel_path, dialect, keras_version, model, info, reference=True):
    ins, outs = io_names(model)
    return {
        "path": rel_path,
        "reference": rel_path[:-3] + ".reference.h5" if reference else None,
        "dialect": dialect,
        "keras_version": keras_version,
        "model_class": model.__class__.__name__,
        "inputs": [{"name": n, "shape": shape_list(t)} for n, t in zip(ins, model.inputs)],
        "outputs": [{"name": n, "shape": shape_list(t)} for n, t in zip(outs, model.outputs)],
        "layer_classes": all_layer_classes(model),
        "labels": info.get("labels"),
        "skipped": info.get("skipped", []),
        "notes": info.get("notes", []),
    }


# --------------------------------------------------------------------------------------------------
# main generation


def make_inputs(model, name, low=-1.0, high=1.0):
    rng = np.random.default_rng(seed_of(name, "inputs"))
    xs = []
    for t in model.inputs:
        shape = [N_SAMPLES] + shape_list(t)[1:]
        xs.append(rng.uniform(low, high, shape).astype(np.float32))
    return xs


def build_and_save(name, builder, folder, rel_folder, dialect):
    reset()
    model, info = builder()
    randomize_weights(model, name)
    path = os.path.join(folder, name + ".h5")
    save_model(model, path)
    lo, hi = info.get("input_range", (-1.0, 1.0))
    xs = make_inputs(model, name, lo, hi)
    labels = info.get("labels")
    _, unmapped = write_reference(path[:-3] + ".reference.h5", model, xs, dialect, KERAS_VERSION, labels)
    if labels:
        with open(path[:-3] + ".labels.txt", "w") as f:
            f.write("\n".join(labels) + "\n")
    if unmapped:
        info.setdefault("notes", []).append("weights not in coreml_weights (no Core ML mapping): "
                                            + ", ".join(sorted(set(unmapped))))
    # sanity: reload with the same Keras and compare
    reloaded = K.models.load_model(path, compile=False)
    y0, y1 = predict(model, xs), predict(reloaded, xs)
    for a, b in zip(y0, y1):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    print(f"  {rel_folder}/{name}.h5 ok ({os.path.getsize(path)} bytes)" +
          (f"; skipped: {info['skipped']}" if info.get("skipped") else ""))
    return model, info, xs


def run_dialect(dialect, out):
    import_dialect(dialect)
    folder = os.path.join(out, dialect)
    os.makedirs(folder, exist_ok=True)
    manifest = save_manifest(out, load_manifest(out), dialect)
    if dialect == "tfkeras215":
        manifest = save_manifest(out, manifest, "bad")
    entries = []
    for name, builder in MODELS:
        model, info, xs = build_and_save(name, builder, folder, dialect, dialect)
        entries.append(manifest_entry(f"{dialect}/{name}.h5", dialect, KERAS_VERSION, model, info))
        if name == "activations":
            reason = approximate_gelu_skip_reason()
            if reason:
                entries[-1]["skipped"].append(reason)
                print("  skipped " + reason)
        if name == "dense_classifier":
            with open(os.path.join(folder, "dense_classifier.tm_labels.txt"), "w") as f:
                f.write("".join(f"{i} {lab}\n" for i, lab in enumerate(DENSE_LABELS)))
            if dialect == "tfkeras215":
                # valid (json, weights-only) pair in the legacy weights-only HDF5 layout
                # (a name ending in .weights.h5 would make tf.keras 2.15 write the new Keras 3 style weights
                # file with layers/vars groups, so save under another name and rename)
                tmp = os.path.join(folder, "_dense_classifier_weights_tmp.h5")
                model.save_weights(tmp, save_format="h5")
                os.replace(tmp, os.path.join(folder, "dense_classifier.weights.h5"))
                with open(os.path.join(folder, "dense_classifier.json"), "w") as f:
                    f.write(model.to_json())
                e = manifest_entry(f"{dialect}/dense_classifier.weights.h5", dialect, KERAS_VERSION, model, info)
                e["reference"] = f"{dialect}/dense_classifier.reference.h5"
                e["json"] = f"{dialect}/dense_classifier.json"
                e["notes"] = ["weights-only legacy HDF5 (layer groups at the root, no model_config); "
                              "architecture in dense_classifier.json",
                              "tf.keras 2.15 picks the weights format from the file name: its own load_weights "
                              "treats any *.weights.h5 as the Keras 3 layout (layers/vars groups) and fails on "
                              "this file; load a copy with another name. Detect the layout by content."]
                entries.append(e)
    manifest["fixtures"].extend(entries)
    if dialect == "tfkeras215":
        manifest["fixtures"].extend(make_bad(out))
    write_manifest(out, manifest)


# --------------------------------------------------------------------------------------------------
# bad inputs (tfkeras215 only)


def make_bad(out):
    folder = os.path.join(out, "bad")
    os.makedirs(folder, exist_ok=True)
    entries = []

    def entry(fname, note, model=None, info=None, reference=False):
        if model is not None:
            e = manifest_entry(f"bad/{fname}", "bad", KERAS_VERSION, model, info or {}, reference)
        else:
            e = {"path": f"bad/{fname}", "reference": None, "dialect": "bad", "keras_version": KERAS_VERSION}
        e["notes"] = [note] + (e.get("notes") or [])
        if not reference:
            e["reference"] = None
        entries.append(e)

    with open(os.path.join(folder, "not_hdf5.h5"), "w") as f:
        f.write("This is a text file with an .h5 name, not an HDF5 file.\n")
    entry("not_hdf5.h5", "plain text, not HDF5")

    reset()
    model, info = m_dense_classifier()
    randomize_weights(model, "dense_classifier")
    model.save_weights(os.path.join(folder, "weights_only.h5"), save_format="h5")
    with open(os.path.join(folder, "weights_only.json"), "w") as f:
        f.write(model.to_json())
    entry("weights_only.h5", "weights-only legacy HDF5 (no model_config); pair with weights_only.json", model, info)

    base = os.path.join(folder, "_dense_classifier_tmp.h5")
    save_model(model, base)

    p = os.path.join(folder, "missing_dataset.h5")
    shutil.copyfile(base, p)
    with h5py.File(p, "r+") as f:
        del f["model_weights/hidden/hidden/kernel:0"]
    entry("missing_dataset.h5", "dense_classifier with model_weights/hidden/hidden/kernel:0 deleted "
          "(still listed in weight_names)", model, info)

    p = os.path.join(folder, "wrong_shape.h5")
    shutil.copyfile(base, p)
    with h5py.File(p, "r+") as f:
        ds = "model_weights/hidden/hidden/kernel:0"
        shape = f[ds].shape
        del f[ds]
        f.create_dataset(ds, data=np.zeros((shape[0] - 1, shape[1] + 2), np.float32))
    entry("wrong_shape.h5", f"dense_classifier with hidden kernel {list(shape)} replaced by "
          f"{[shape[0] - 1, shape[1] + 2]}", model, info)
    os.remove(base)

    # unsupported layer classes
    reset()
    l = L()
    i = K.Input((4, 4, 4, 1), name="input")
    x = l.Conv3D(2, 2, name="conv3d")(i)  # 3x3x3x2
    x = l.Reshape((9, 6), name="reshape")(x)
    # compiled with a fixed file name so the marshaled bytecode in the config does not depend on this script
    times2 = eval(compile("lambda t: t * 2.0", "lambda_times2", "eval"))  # noqa: S307
    x = l.Lambda(times2, name="lambda_times2")(x)
    x = l.Flatten(name="flatten")(x)
    um = K.Model(i, x, name="unsupported")
    randomize_weights(um, "unsupported")
    p = os.path.join(folder, "unsupported.h5")
    save_model(um, p)
    xs = make_inputs(um, "unsupported")
    write_reference(p[:-3] + ".reference.h5", um, xs, "bad", KERAS_VERSION)
    entry("unsupported.h5", "Conv3D and Lambda have no classic Core ML mapping", um, {}, reference=True)

    # Dense on a rank-3 tensor
    reset()
    i = K.Input((4, 5), name="input")
    x = L().Dense(3, name="dense")(i)
    dm = K.Model(i, x, name="dense_rank3")
    randomize_weights(dm, "dense_rank3")
    p = os.path.join(folder, "dense_rank3.h5")
    save_model(dm, p)
    write_reference(p[:-3] + ".reference.h5", dm, make_inputs(dm, "dense_rank3"), "bad", KERAS_VERSION)
    entry("dense_rank3.h5", "Dense applied to a rank-3 tensor [batch, 4, 5]", dm, {}, reference=True)

    # layer_names split over several attributes (layer_names0, layer_names1, ...)
    reset()
    # Keras splits an attribute when its numpy fixed-length byte array (count * longest name) exceeds 64512
    # bytes. 400 layers named 'long_'*30+str(i) would do it but make a 700 KB file; one 2202-character name
    # among 30 layers gives 30 * 2202 = 66060 bytes -> two chunks, in a 40 KB file.
    n_layers, long_index = 30, 16
    names = [("long_" * 440 + str(i)) if i == long_index else f"linear_{i}" for i in range(n_layers)]
    sm = K.Sequential([K.Input((3,), name="input")] +
                      [L().Activation("linear", name=n) for n in names], name="split_names")
    p = os.path.join(folder, "split_names.h5")
    save_model(sm, p)
    with h5py.File(p, "r") as f:
        split = sorted(k for k in f["model_weights"].attrs if k.startswith("layer_names"))
    if "layer_names" in split or len(split) < 2:
        raise RuntimeError(f"split_names.h5: layer_names not split: {split}")
    write_reference(p[:-3] + ".reference.h5", sm, make_inputs(sm, "split_names"), "bad", KERAS_VERSION)
    entry("split_names.h5", f"{n_layers} Activation('linear') layers, layer {long_index} named with "
          f"{len(names[long_index])} characters; model_weights attribute layer_names split by Keras into "
          f"{', '.join(split)}", sm, {}, reference=True)
    print("  bad/ fixtures ok; split_names.h5 attributes: " + ", ".join(split))
    return entries


# --------------------------------------------------------------------------------------------------
# legacy (Keras 2.0-2.4 layout) rewrite


def _ascii_vlen(group, name, text):
    if name in group.attrs:
        del group.attrs[name]
    group.attrs.create(name, data=text.encode("ascii"), dtype=h5py.string_dtype("ascii"))


def _fixed_names(group, name, values):
    if name in group.attrs:
        del group.attrs[name]
    if len(values) == 0:
        group.attrs.create(name, data=np.zeros((0,), np.float64))  # what Keras 2.2.4 / h5py 2 wrote
    else:
        group.attrs.create(name, data=np.array([v if isinstance(v, bytes) else v.encode("ascii") for v in values]))


def _decode_list(a):
    return [v.decode("utf8") if isinstance(v, bytes) else str(v) for v in np.asarray(a).reshape(-1)]


def _legacy_copy_group(gin, gout):
    for k, v in gin.attrs.items():
        if k.startswith("layer_names") or k.startswith("weight_names"):
            _fixed_names(gout, k, _decode_list(v))
        elif k == "backend":
            _ascii_vlen(gout, k, "tensorflow")
        elif k == "keras_version":
            _ascii_vlen(gout, k, "2.2.4")
        else:
            gout.attrs[k] = v
    for k, child in gin.items():
        if k == "top_level_model_weights":  # written since Keras 2.13, not by 2.2.4
            continue
        if isinstance(child, h5py.Group):
            _legacy_copy_group(child, gout.create_group(k))
        else:
            gout.create_dataset(k, data=child[()])


NEWER_KEYS = ("module", "registered_name", "build_config", "compile_config")


def legacy_config(obj):
    """Make a tf.keras 2.15 model config look like Keras 2.2.4's."""
    if isinstance(obj, list):
        return [legacy_config(v) for v in obj]
    if not isinstance(obj, dict):
        return obj
    d = {k: legacy_config(v) for k, v in obj.items()}
    if "class_name" in d:
        for k in NEWER_KEYS:
            d.pop(k, None)
        cfg = d.get("config")
        if isinstance(cfg, dict):
            # layer options that Keras 2.2.4 did not write (a reader must default them)
            if cfg.get("groups") == 1:
                cfg.pop("groups")
            if d["class_name"] == "InputLayer":
                cfg.pop("ragged", None)
        if d["class_name"] == "Functional":
            d["class_name"] = "Model"
        if d["class_name"] == "Sequential":
            layers = d["config"]["layers"]
            # Keras 2.2.4 Sequential configs have no InputLayer entry: the first layer has batch_input_shape
            # (a nested model as first layer keeps its own input shape, so the entry is just dropped)
            if layers and layers[0]["class_name"] == "InputLayer":
                inp = layers.pop(0)["config"]
                first = layers[0] if layers else None
                if (first is not None and first["class_name"] not in ("Model", "Sequential")
                        and "batch_input_shape" not in first["config"]):
                    first["config"]["batch_input_shape"] = inp["batch_input_shape"]
    return d


def legacy_rewrite(out):
    src_dir = os.path.join(out, "tfkeras215")
    dst_dir = os.path.join(out, "legacy224")
    os.makedirs(dst_dir, exist_ok=True)
    manifest = load_manifest(out)
    manifest["fixtures"] = [e for e in manifest["fixtures"] if e["dialect"] != "legacy224"]
    src_entries = {e["path"]: e for e in manifest["fixtures"] if e["dialect"] == "tfkeras215"}
    for name in LEGACY_MODELS:
        src = os.path.join(src_dir, name + ".h5")
        dst = os.path.join(dst_dir, name + ".h5")
        # written afresh (deleting and re-adding attributes in place would leave dead space in the file)
        with h5py.File(src, "r") as fin, h5py.File(dst, "w") as fout:
            _ascii_vlen(fout, "backend", "tensorflow")
            _ascii_vlen(fout, "keras_version", "2.2.4")
            _ascii_vlen(fout, "model_config", json.dumps(legacy_config(json.loads(fin.attrs["model_config"]))))
            if "training_config" in fin.attrs:
                _ascii_vlen(fout, "training_config",
                            json.dumps(legacy_config(json.loads(fin.attrs["training_config"]))))
            for key in fin:
                _legacy_copy_group(fin[key], fout.create_group(key))
        ref_src, ref_dst = src[:-3] + ".reference.h5", dst[:-3] + ".reference.h5"
        shutil.copyfile(ref_src, ref_dst)
        with h5py.File(ref_dst, "r+") as f:
            f.attrs["dialect"] = "legacy224"
            f.attrs["keras_version"] = "2.2.4"
            f.attrs["made_with_keras_version"] = src_entries[f"tfkeras215/{name}.h5"]["keras_version"]
        for extra in (".labels.txt",):
            if os.path.exists(src[:-3] + extra):
                shutil.copyfile(src[:-3] + extra, dst[:-3] + extra)
        e = dict(src_entries[f"tfkeras215/{name}.h5"])
        e["path"] = f"legacy224/{name}.h5"
        e["reference"] = f"legacy224/{name}.reference.h5"
        e["dialect"] = "legacy224"
        e["keras_version"] = "2.2.4"
        e["model_class"] = {"Functional": "Model"}.get(e["model_class"], e["model_class"])
        e["layer_classes"] = sorted({"Functional": "Model"}.get(c, c) for c in e["layer_classes"])
        # input/output names as Keras sees them when it loads the rewritten file (a Sequential whose
        # InputLayer entry was dropped gets an implied input named `<first layer>_input`)
        reloaded = K.models.load_model(dst, compile=False)
        in_names, out_names = io_names(reloaded)
        with h5py.File(ref_dst, "r+") as f:
            for grp, names in (("inputs", in_names), ("outputs", out_names)):
                for i, n in enumerate(names):
                    f[grp][str(i)].attrs["name"] = n
        e["inputs"] = [dict(d, name=n) for d, n in zip(e["inputs"], in_names)]
        e["outputs"] = [dict(d, name=n) for d, n in zip(e["outputs"], out_names)]
        e["notes"] = list(e.get("notes", [])) + [
            "rewritten from tfkeras215 by make_fixtures.py --legacy: Functional->Model, keras_version 2.2.4, "
            "ASCII variable-length root strings, fixed-length layer_names/weight_names, "
            "module/registered_name/build_config, groups=1 and InputLayer ragged removed, "
            "Sequential InputLayer entry dropped (folded into the first layer's batch_input_shape)"]
        manifest["fixtures"].append(e)
        print(f"  legacy224/{name}.h5 ok ({os.path.getsize(dst)} bytes)")
    write_manifest(out, manifest)


def check_legacy(out):
    """Reload the rewritten files with tf.keras 2.15 and compare to the reference outputs."""
    k = K
    for name in LEGACY_MODELS:
        p = os.path.join(out, "legacy224", name + ".h5")
        m = k.models.load_model(p, compile=False)
        with h5py.File(p[:-3] + ".reference.h5", "r") as f:
            xs = [f["inputs"][str(i)][()] for i in range(len(f["inputs"]))]
            ys = [f["outputs"][str(i)][()] for i in range(len(f["outputs"]))]
        y = m.predict(xs if len(xs) > 1 else xs[0], verbose=0)
        y = y if isinstance(y, list) else [y]
        for a, b in zip(y, ys):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    print("  legacy224 files reload in tf.keras 2.15 and match the references")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dialect", choices=DIALECTS)
    ap.add_argument("--legacy", action="store_true", help="rewrite tfkeras215 fixtures into the Keras 2.2.4 layout")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "Fixtures"))
    args = ap.parse_args()
    if bool(args.dialect) == bool(args.legacy):
        ap.error("give exactly one of --dialect or --legacy")
    os.makedirs(args.out, exist_ok=True)
    if args.legacy:
        import_dialect("tfkeras215")
        legacy_rewrite(args.out)
        check_legacy(args.out)
    else:
        run_dialect(args.dialect, args.out)


if __name__ == "__main__":
    main()
