#!/usr/bin/env python3
"""Make a corpus of hostile Keras .h5 files from the project's small fixtures (not committed: regenerate).

    python Samples/make_hostile_corpus.py --out /tmp/hostile --count 3000 [--seed 1]

Needs h5py and numpy (the tfkeras215 venv of Samples/make_fixtures.sh has both). Every file starts as a
copy of a fixture and gets one or two mutations:
- config: a numeric field of a layer config set to a hostile value (1e300, 2^62, 2^63, 2^64, -1, 0, 1.5, NaN,
  null, a string, an empty list, a dict), a key removed, a class name changed, a name given control
  characters, a list field lengthened or emptied, the JSON truncated;
- weights: a dataset replaced by one of another shape, dtype (int, string), NaN/inf values, a huge
  declared shape that is never written (a chunked dataset of 2^20 x 2^20 that costs a few KB on disk),
  a dataset turned into a group or removed, weight_names pointing elsewhere;
- bytes: single bit flips at random offsets, truncation at a random length, a run of zeroed bytes.
Scripts/run-hostile-corpus.sh then runs `modelconv convert` over the corpus, and `verify` over every case it
accepts, in both formats.

With `--keep-accepted N --modelconv PATH`, only the first N cases that `modelconv convert` accepts in both
formats (.mlmodel and .mlpackage) are kept, and their manifest: the committed sample the test suite's
SelfConsistencyTests reads back and verifies (Samples/Fixtures/hostile, made by

    python Samples/make_hostile_corpus.py --out Samples/Fixtures/hostile --count 400 --seed 2323 \
        --keep-accepted 24 --modelconv .build/release/modelconv --max-bytes 40000

with the tfkeras215 venv: cases of at most --max-bytes bytes, so the sample stays small).
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
BASES = [
    "Fixtures/tfkeras215/sequential_plain.h5", "Fixtures/tfkeras215/conv_variants.h5", "Fixtures/tfkeras215/pooling.h5",
    "Fixtures/tfkeras215/dense_classifier.h5", "Fixtures/tfkeras215/batchnorm.h5", "Fixtures/tfkeras215/depthwise_separable.h5",
    "Fixtures/tfkeras215/merge.h5", "Fixtures/tfkeras215/reshape_ops.h5", "Fixtures/keras3/sequential_plain.h5",
    "Fixtures/legacy224/sequential_plain.h5", "Fixtures/layers/tfkeras215/repeat_vector.h5",
    "Fixtures/layers/tfkeras215/gru_reset_after.h5", "Fixtures/layers/tfkeras215/lstm_variants.h5",
    "Fixtures/layers/tfkeras215/conv1d_variants.h5", "Fixtures/layers/tfkeras215/text_bilstm.h5", "Digits/digits_cnn.h5",
    "DigitsMobile/digits_mobile.h5",
]
HOSTILE = [1e300, -1e300, 2 ** 62, 2 ** 63, 2 ** 64, -(2 ** 63), -1, 0, 1.5, -0.5, float("nan"), float("inf"), None, "x", [], {},
           [0], [2 ** 40, 2 ** 40], [-3, -3], [1.5, 2], True, 10 ** 6, 10 ** 5]


def numeric_paths(node, path=()):
    """Every (path, value) in a JSON tree whose value is a number or a list of numbers."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from numeric_paths(value, path + (key,))
    elif isinstance(node, list):
        if node and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in node):
            yield path, node
        for index, value in enumerate(node):
            yield from numeric_paths(value, path + (index,))
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        yield path, node


def set_path(tree, path, value):
    for key in path[:-1]:
        tree = tree[key]
    tree[path[-1]] = value


def all_layer_configs(config):
    layers = config.get("config", {}).get("layers", []) if isinstance(config.get("config"), dict) else []
    for layer in layers:
        yield layer
        if isinstance(layer.get("config"), dict) and "layers" in layer["config"]:
            yield from all_layer_configs(layer)


def mutate_config(path, rng):
    with h5py.File(path, "r+") as f:
        text = f.attrs["model_config"]
        text = text.decode() if isinstance(text, bytes) else text
        config = json.loads(text)
        kind = rng.choice(["number", "number", "number", "remove", "class", "name", "list", "truncate"])
        layers = list(all_layer_configs(config))
        layer = rng.choice(layers) if layers else config
        if kind == "truncate":
            f.attrs["model_config"] = text[: rng.randrange(1, len(text))]
            return f"config truncated"
        if kind == "number":
            candidates = list(numeric_paths(layer))
            if candidates:
                where, _ = rng.choice(candidates)
                value = rng.choice(HOSTILE)
                set_path(layer, where, value)
                kind = f"{'/'.join(map(str, where))}={value!r}"
        elif kind == "remove" and isinstance(layer.get("config"), dict) and layer["config"]:
            key = rng.choice(sorted(layer["config"]))
            del layer["config"][key]
            kind = f"removed {key}"
        elif kind == "class":
            layer["class_name"] = rng.choice(["Conv2D", "Dense", "LSTM", "RepeatVector", "Reshape", "Flatten", "Nope", "", "Sequential"])
            kind = f"class -> {layer['class_name']}"
        elif kind == "name" and isinstance(layer.get("config"), dict):
            layer["config"]["name"] = rng.choice(["a\nb", "a\x00b", "", "../../x", "a" * 5000, "output1"])
            kind = "name"
        elif kind == "list":
            candidates = [(p, v) for p, v in numeric_paths(layer) if isinstance(v, list)]
            if candidates:
                where, value = rng.choice(candidates)
                set_path(layer, where, rng.choice([[], value * 3, [value[0]] if value else [], [None] * len(value)]))
                kind = f"list {'/'.join(map(str, where))}"
        f.attrs["model_config"] = json.dumps(config, allow_nan=True)
        return kind


def weight_datasets(f):
    found = []
    f.visititems(lambda name, obj: found.append(name) if isinstance(obj, h5py.Dataset) else None)
    return found


def mutate_weights(path, rng):
    with h5py.File(path, "r+") as f:
        datasets = weight_datasets(f)
        if not datasets:
            return "no weights"
        name = rng.choice(datasets)
        shape = f[name].shape
        kind = rng.choice(["shape", "dtype", "nan", "huge", "group", "remove", "names"])
        if kind == "shape":
            del f[name]
            f[name] = np.zeros(tuple(max(1, s + rng.choice([-1, 1, 5])) for s in shape) or (3,), dtype=np.float32)
        elif kind == "dtype":
            del f[name]
            f[name] = np.zeros(shape or (1,), dtype=rng.choice([np.int64, np.int8, np.float64])) if rng.random() < 0.7 else np.array([b"x"] * max(1, int(np.prod(shape or (1,)))))
        elif kind == "nan":
            values = np.array(f[name][()], dtype=np.float32).reshape(-1)
            if values.size:
                values[rng.randrange(values.size)] = rng.choice([np.nan, np.inf, -np.inf, 3.5e38])
            del f[name]
            f[name] = values.reshape(shape)
        elif kind == "huge":
            del f[name]
            f.create_dataset(name, shape=(2 ** 20, 2 ** 20), dtype=np.float32, chunks=(16, 16))
        elif kind == "group":
            del f[name]
            f.create_group(name)
        elif kind == "remove":
            del f[name]
        elif kind == "names":
            group = f[name].parent.parent if "/" in name else f
            if "weight_names" in group.attrs:
                names = list(group.attrs["weight_names"])
                rng.shuffle(names)
                group.attrs["weight_names"] = names + ([b"../../../etc/passwd"] if rng.random() < 0.5 else [])
        return f"weights {kind} {name}"


def mutate_bytes(path, rng):
    data = bytearray(open(path, "rb").read())
    kind = rng.choice(["flip", "flip", "truncate", "zero"])
    if kind == "flip":
        for _ in range(rng.choice([1, 1, 2, 8])):
            offset = rng.randrange(len(data))
            data[offset] ^= 1 << rng.randrange(8)
    elif kind == "truncate":
        data = data[: rng.randrange(len(data))]
    else:
        start = rng.randrange(len(data))
        data[start:start + rng.randrange(1, 256)] = bytes(min(len(data) - start, 256))
    open(path, "wb").write(bytes(data))
    return f"bytes {kind}"


def accepted(modelconv, path):
    """Whether `modelconv convert` writes the case in both formats (exit 0)."""
    with tempfile.TemporaryDirectory() as work:
        for suffix in (".mlmodel", ".mlpackage"):
            run = subprocess.run([modelconv, "convert", path, "-o", os.path.join(work, "model" + suffix)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
            if run.returncode != 0:
                return False
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep-accepted", type=int, default=0, help="keep only the first N cases convert accepts in both formats")
    ap.add_argument("--modelconv", help="the modelconv binary for --keep-accepted")
    ap.add_argument("--max-bytes", type=int, default=0, help="with --keep-accepted: skip cases larger than this")
    args = ap.parse_args()
    if args.keep_accepted and not args.modelconv:
        ap.error("--keep-accepted needs --modelconv")
    rng = random.Random(args.seed)
    os.makedirs(args.out, exist_ok=True)
    manifest = []
    for index in range(args.count):
        base = rng.choice(BASES)
        target = os.path.join(args.out, f"case{index:05d}.h5")
        shutil.copyfile(os.path.join(HERE, base), target)
        steps = []
        # Byte damage comes last: libhdf5 (under h5py) may hang on a file it has already damaged.
        chosen = sorted((rng.choice([mutate_config, mutate_config, mutate_weights, mutate_bytes]) for _ in range(rng.choice([1, 1, 2]))),
                        key=lambda m: m is mutate_bytes)
        for mutate in chosen:
            try:
                steps.append(mutate(target, rng))
            except Exception as error:  # a file already broken by bytes may not open in h5py: keep it as it is
                steps.append(f"{mutate.__name__} skipped: {type(error).__name__}")
        manifest.append({"file": os.path.basename(target), "base": base, "mutations": steps})
    if args.keep_accepted:
        kept = []
        for entry in manifest:
            path = os.path.join(args.out, entry["file"])
            if len(kept) < args.keep_accepted and (not args.max_bytes or os.path.getsize(path) <= args.max_bytes) and accepted(args.modelconv, path):
                kept.append(entry)
            else:
                os.remove(path)
        manifest = kept
        args.count = len(kept)
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"wrote {args.count} files to {args.out}")


if __name__ == "__main__":
    sys.exit(main())
