#!/usr/bin/env python3
"""Runs an ML Program package with a small numpy interpreter and compares it with saved Keras outputs.

Not part of CI. Core ML itself does not run on Linux, so this interprets the MIL operations the
converter writes, each with the semantics of Apple's op documentation (coremltools' mil/ops/defs
docstrings), and compares the program's outputs with a reference file that real Keras wrote
(`inputs/N` and `outputs/N` datasets, batch first, as the Samples/ scripts save them):

    python Scripts/eval_mlprogram.py Model.mlpackage model.reference.h5 [Model2.mlpackage ref2.h5 ...]

Float16 programs are run in float16 (numpy rounds each op's result). Image inputs are skipped (the
reference holds preprocessed tensors). Prints the largest absolute error per output, and exits
non-zero when one exceeds 1e-3 (float32) or 3e-2 relative to the output's range (float16).
"""

import math
import os
import struct
import sys

import numpy as np


def tensor_value(value, weights):
    t = value.type.tensorType
    shape = [d.constant.size for d in t.dimensions]
    dtype = {10: np.float16, 11: np.float32, 23: np.int32, 24: np.int64, 1: np.bool_, 2: object}[t.dataType]
    kind = value.WhichOneof("value")
    if kind == "blobFileValue":
        offset = value.blobFileValue.offset
        _, _, size, data_offset = struct.unpack_from("<IIQQ", weights, offset)
        return np.frombuffer(weights[data_offset:data_offset + size], dtype=dtype).reshape(shape)
    tensor = value.immediateValue.tensor
    which = tensor.WhichOneof("value")
    if which == "bytes":
        return np.frombuffer(tensor.bytes.values, dtype=dtype).reshape(shape)
    values = list(getattr(tensor, which).values)
    if dtype is object:
        return np.array(values, dtype=object).reshape(shape) if shape else values[0]
    return np.array(values, dtype=dtype).reshape(shape)


def windows(x, kernel, strides, pad, dilations=(1, 1), fill=0.0):
    """[N, C, H, W] → padded views [N, C, OH, OW, kh, kw]."""
    (t, b, l, r) = pad
    x = np.pad(x, ((0, 0), (0, 0), (t, b), (l, r)), constant_values=fill)
    n, c, h, w = x.shape
    kh, kw = kernel
    eh, ew = (kh - 1) * dilations[0] + 1, (kw - 1) * dilations[1] + 1
    oh, ow = (h - eh) // strides[0] + 1, (w - ew) // strides[1] + 1
    out = np.empty((n, c, oh, ow, kh, kw), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            out[..., i, j] = x[:, :, i * dilations[0]: i * dilations[0] + (oh - 1) * strides[0] + 1: strides[0],
                               j * dilations[1]: j * dilations[1] + (ow - 1) * strides[1] + 1: strides[1]]
    return out


def conv(x, w, b, strides, pad, dilations, groups):
    cout, cin_g, kh, kw = w.shape
    patches = windows(x, (kh, kw), strides, pad, dilations)  # N C OH OW kh kw
    n, c, oh, ow = patches.shape[:4]
    out = np.zeros((n, cout, oh, ow), dtype=np.float64)
    per_group = cout // groups
    for g in range(groups):
        p = patches[:, g * cin_g:(g + 1) * cin_g].astype(np.float64)
        wg = w[g * per_group:(g + 1) * per_group].astype(np.float64)
        out[:, g * per_group:(g + 1) * per_group] = np.einsum("ncyxij,ocij->noyx", p, wg)
    if b is not None:
        out += b.astype(np.float64).reshape(1, -1, 1, 1)
    return out.astype(x.dtype)


def conv_transpose(x, w, b, strides, pad):
    cin, cout, kh, kw = w.shape
    n, _, h, wd = x.shape
    full = np.zeros((n, cout, (h - 1) * strides[0] + kh, (wd - 1) * strides[1] + kw), dtype=np.float64)
    for i in range(h):
        for j in range(wd):
            full[:, :, i * strides[0]:i * strides[0] + kh, j * strides[1]:j * strides[1] + kw] += np.einsum(
                "nc,cokl->nokl", x[:, :, i, j].astype(np.float64), w.astype(np.float64))
    t, bt, l, r = pad
    full = full[:, :, t:full.shape[2] - bt, l:full.shape[3] - r]
    if b is not None:
        full += b.reshape(1, -1, 1, 1)
    return full.astype(x.dtype)


def bilinear_axis(size_in, size_out):
    spacing = size_in / size_out
    grid = np.clip(np.arange(size_out) * spacing + 0.5 * spacing - 0.5, 0, size_in - 1)
    low = np.floor(grid).astype(int)
    high = np.minimum(low + 1, size_in - 1)
    return low, high, grid - low


def gelu(x, mode):
    x64 = x.astype(np.float64)
    if mode == "EXACT":
        from math import erf
        return (0.5 * x64 * (1 + np.vectorize(erf)(x64 / math.sqrt(2)))).astype(x.dtype)
    return (0.5 * x64 * (1 + np.tanh(math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64 ** 3)))).astype(x.dtype)


def run(op, a):
    t = op.type
    x = a.get("x")
    binary = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "real_div": np.divide, "maximum": np.maximum,
              "minimum": np.minimum, "pow": np.power, "greater": np.greater, "greater_equal": np.greater_equal,
              "less": np.less, "less_equal": np.less_equal, "equal": np.equal, "not_equal": np.not_equal}
    if t in binary:
        return binary[t](x, a["y"])
    if t == "select":
        return np.where(a["cond"], a["a"], a["b"])
    if t == "cast":
        return x.astype({"fp16": np.float16, "fp32": np.float32, "int32": np.int32, "bool": np.bool_}[a["dtype"]])
    if t == "identity":
        return x
    if t == "transpose":
        return np.transpose(x, a["perm"])
    if t == "reshape":
        return x.reshape(a["shape"])
    if t == "conv":
        assert a["pad_type"] == "custom"
        return conv(x, a["weight"], a.get("bias"), a["strides"], a["pad"], a["dilations"], int(a["groups"]))
    if t == "conv_transpose":
        return conv_transpose(x, a["weight"], a.get("bias"), a["strides"], a["pad"])
    if t in ("max_pool", "avg_pool"):
        if t == "max_pool":
            return windows(x, a["kernel_sizes"], a["strides"], a["pad"], fill=-np.inf).max(axis=(4, 5))
        sums = windows(x.astype(np.float64), a["kernel_sizes"], a["strides"], a["pad"]).sum(axis=(4, 5))
        if a.get("exclude_padding_from_average", False):
            counts = windows(np.ones_like(x, dtype=np.float64), a["kernel_sizes"], a["strides"], a["pad"]).sum(axis=(4, 5))
        else:
            counts = np.prod(a["kernel_sizes"])
        return (sums / counts).astype(x.dtype)
    reductions = {"reduce_mean": np.mean, "reduce_max": np.max, "reduce_min": np.min, "reduce_sum": np.sum}
    if t in reductions:
        return reductions[t](x, axis=tuple(int(v) for v in a["axes"]), keepdims=bool(a["keep_dims"])).astype(x.dtype)
    if t == "upsample_nearest_neighbor":
        return np.repeat(np.repeat(x, int(a["scale_factor_height"]), axis=-2), int(a["scale_factor_width"]), axis=-1)
    if t == "upsample_bilinear":
        assert not a["align_corners"]
        h, w = x.shape[-2:]
        oh, ow = int(h * a["scale_factor_height"]), int(w * a["scale_factor_width"])
        y0, y1, fy = bilinear_axis(h, oh)
        x0, x1, fx = bilinear_axis(w, ow)
        x64 = x.astype(np.float64)
        top = x64[..., y0, :] * (1 - fy)[:, None] + x64[..., y1, :] * fy[:, None]
        return (top[..., x0] * (1 - fx) + top[..., x1] * fx).astype(x.dtype)
    if t == "pad":
        p = list(a["pad"])
        widths = [(0, 0)] * (x.ndim - len(p) // 2) + [(p[2 * i], p[2 * i + 1]) for i in range(len(p) // 2)]
        return np.pad(x, widths, constant_values=a.get("constant_val", 0))
    if t == "slice_by_index":
        stride = a.get("stride", [1] * x.ndim)
        return x[tuple(slice(int(b), int(e), int(s)) for b, e, s in zip(a["begin"], a["end"], stride))]
    if t == "concat":
        return np.concatenate(a["values"], axis=int(a["axis"]))
    if t == "stack":
        return np.stack(a["values"], axis=int(a["axis"]))
    if t == "linear":
        y = x.astype(np.float64) @ a["weight"].astype(np.float64).T
        if "bias" in a:
            y = y + a["bias"]
        return y.astype(x.dtype)
    if t == "matmul":
        return (x.astype(np.float64) @ a["y"].astype(np.float64)).astype(x.dtype)
    if t == "batch_norm":
        shape = (1, -1) + (1,) * (x.ndim - 2)
        v = lambda k: a[k].astype(np.float64).reshape(shape)
        return (v("gamma") * (x - v("mean")) / np.sqrt(v("variance") + float(a["epsilon"])) + v("beta")).astype(x.dtype)
    if t == "layer_norm":
        axes = tuple(int(v) for v in a["axes"])
        x64 = x.astype(np.float64)
        mean = x64.mean(axis=axes, keepdims=True)
        var = ((x64 - mean) ** 2).mean(axis=axes, keepdims=True)
        y = (x64 - mean) / np.sqrt(var + float(a["epsilon"]))
        return (y * a.get("gamma", 1.0) + a.get("beta", 0.0)).astype(x.dtype)
    if t == "gather":
        return np.take(x, a["indices"], axis=int(a["axis"]))
    if t == "softmax":
        axis = int(a["axis"])
        e = np.exp(x.astype(np.float64) - x.max(axis=axis, keepdims=True))
        return (e / e.sum(axis=axis, keepdims=True)).astype(x.dtype)
    if t == "prelu":
        alpha = a["alpha"].reshape((1, -1) + (1,) * (x.ndim - 2))
        return np.where(x > 0, x, alpha * x).astype(x.dtype)
    x64 = x.astype(np.float64) if x is not None else None
    unary = {
        "relu": lambda: np.maximum(x64, 0),
        "clip": lambda: np.clip(x64, a["alpha"], a["beta"]),
        "leaky_relu": lambda: np.where(x64 >= 0, x64, a["alpha"] * x64),
        "elu": lambda: np.where(x64 > 0, x64, a["alpha"] * (np.exp(x64) - 1)),
        "sigmoid": lambda: 1 / (1 + np.exp(-x64)),
        "sigmoid_hard": lambda: np.clip(a["alpha"] * x64 + a["beta"], 0, 1),
        "tanh": lambda: np.tanh(x64),
        "softplus": lambda: np.log1p(np.exp(x64)),
        "softsign": lambda: x64 / (1 + np.abs(x64)),
        "silu": lambda: x64 / (1 + np.exp(-x64)),
        "exp": lambda: np.exp(x64),
        "sqrt": lambda: np.sqrt(x64),
        "rsqrt": lambda: 1 / np.sqrt(x64 + a["epsilon"]),
        "inverse": lambda: 1 / (x64 + a["epsilon"]),
        "log": lambda: np.log(x64 + a["epsilon"]),
        "abs": lambda: np.abs(x64),
        "sin": lambda: np.sin(x64),
        "cos": lambda: np.cos(x64),
        "floor": lambda: np.floor(x64),
        "ceil": lambda: np.ceil(x64),
        "threshold": lambda: np.maximum(x64, a["alpha"]),
        "linear_activation": lambda: a["alpha"] * x64 + a["beta"],
    }
    if t in unary:
        return unary[t]().astype(x.dtype)
    if t == "gelu":
        return gelu(x, a["mode"])
    raise NotImplementedError(t)


def evaluate(spec, weights, feeds):
    env = dict(feeds)
    function = spec.mlProgram.functions["main"]
    block = function.block_specializations[function.opset]
    for op in block.operations:
        if op.type == "const":
            env[op.outputs[0].name] = tensor_value(op.attributes["val"], weights)
            continue
        if op.type == "classify":
            env[op.outputs[1].name] = env[op.inputs["probabilities"].arguments[0].name]
            continue
        args = {}
        for key, argument in op.inputs.items():
            values = [env[b.name] for b in argument.arguments]
            args[key] = values if key == "values" else values[0]
        for k, v in list(args.items()):
            if isinstance(v, np.ndarray) and v.ndim == 0:
                args[k] = v[()]
        with np.errstate(all="ignore"):
            result = np.asarray(run(op, args))
        declared = [d.constant.size for d in op.outputs[0].type.tensorType.dimensions]
        if list(result.shape) != declared:
            raise ValueError("%s %s: computed shape %s, declared %s" % (op.type, op.outputs[0].name, list(result.shape), declared))
        env[op.outputs[0].name] = result
    return env, list(block.outputs)


def check(package, reference):
    import coremltools as ct
    import h5py

    spec = ct.utils.load_spec(package)
    with open(os.path.join(package, "Data", "com.apple.CoreML", "weights", "weight.bin"), "rb") as handle:
        weights = handle.read()
    if reference.endswith(".json"):
        # {"inputs": [{"shape", "values"}], "outputs": [...]}: one sample without the batch axis.
        import json
        with open(reference) as handle:
            ref = json.load(handle)
        inputs = [np.array(t["values"], dtype=np.float32).reshape([1] + t["shape"]) for t in ref["inputs"]]
        outputs = [np.array(t["values"], dtype=np.float32).reshape([1] + t["shape"]) for t in ref["outputs"]]
    else:
        ref = h5py.File(reference, "r")
        inputs = [np.asarray(ref["inputs"][k]) for k in sorted(ref["inputs"].keys(), key=int)]
        outputs = [np.asarray(ref["outputs"][k]) for k in sorted(ref["outputs"].keys(), key=int)]
    images = [f.type.WhichOneof("Type") == "imageType" for f in spec.description.input]
    if any(images):
        # The program applies the image scale and bias itself: feed the raw pixels when the reference has them.
        if "pixels" not in ref or len(inputs) != 1:
            return None, "image input without raw pixels in the reference (skipped)"
        inputs = [np.transpose(np.asarray(ref["pixels"]), (0, 3, 1, 2))]
    function = spec.mlProgram.functions["main"]
    fp16 = any(op.type == "cast" for op in function.block_specializations[function.opset].operations)
    worst = []
    for sample in range(inputs[0].shape[0]):
        feeds = {f.name: inputs[i][sample:sample + 1].astype(np.float32) for i, f in enumerate(function.inputs)}
        env, names = evaluate(spec, weights, feeds)
        for index, name in enumerate(names[:len(outputs)]):
            got = env[name].astype(np.float64).reshape(outputs[index][sample:sample + 1].shape)
            want = outputs[index][sample:sample + 1].astype(np.float64)
            error = float(np.max(np.abs(got - want))) if want.size else 0.0
            scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
            if len(worst) <= index:
                worst.append(0.0)
            worst[index] = max(worst[index], error / (scale if fp16 else 1.0))
    limit = 3e-2 if fp16 else 1e-3
    return all(w <= limit for w in worst), "max %s error per output: %s" % ("relative" if fp16 else "abs", ", ".join("%.2e" % w for w in worst))


def main(args):
    if len(args) < 2 or len(args) % 2:
        print(__doc__)
        return 2
    failed = 0
    for package, reference in zip(args[0::2], args[1::2]):
        try:
            ok, summary = check(package, reference)
        except Exception as error:  # noqa: BLE001
            ok, summary = False, "cannot run: %s: %s" % (type(error).__name__, error)
        status = "skipped" if ok is None else ("ok" if ok else "MISMATCH")
        print("%s: %s %s" % (os.path.basename(package.rstrip("/")), status, summary))
        failed += ok is False
    print("%d packages, %d mismatching" % (len(args) // 2, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
