#!/usr/bin/env python3
"""Opens .mlpackage folders with coremltools and compares their weights byte for byte.

Not part of CI: run it by hand with a Python that has coremltools (for example a virtualenv with
coremltools 9 and tf.keras 2.15):

    python Scripts/check_mlpackage.py Model.mlpackage [More.mlpackage ...]

For each package:
  1. coremltools.utils.load_spec reads the specification (Manifest.json and model.mlmodel);
  2. coremltools.models.MLModel(spec, weights_dir=...) builds the model object (on Linux it cannot be
     compiled or run; a failure here is reported, not fatal, unless it is a validation error);
  3. coremltools' MIL proto frontend (converters.mil.frontend.milproto) loads the program into pymil,
     which checks every operation's parameters against coremltools' op definitions and infers its
     output type; each inferred type is compared with the type the package declares;
  4. every blobFileValue in the program is read with coremltools' own blob reader
     (libmilstoragepython._BlobStorageReader) and compared byte for byte with what weight.bin holds at
     that offset, read independently here from the storage format (64-byte metadata record with the
     0xDEADBEEF sentinel, data type, size and data offset).
Prints one summary line per package and exits non-zero on any mismatch or unreadable package. Also reports each
input's declared flexibility (shape ranges, enumerated shapes, image size ranges and sizes) as load_spec reads it, and
with `--expect FILE.json` compares the declared inputs with FILE's (Samples/Fixtures/flexible/expected_inputs.json
lists what the flexible fixtures' conversions must declare); a flexible program's unknown dimensions are compared
with the symbols coremltools infers there.
"""

import os
import struct
import sys

import numpy as np


def decode_constexpr(op):
    """The dense weight of an iOS 16 constexpr operation, decoded from its parameters as MIL defines them."""
    if op.op_type == "constexpr_affine_dequantize":
        data = np.asarray(op.quantized_data.val).astype(np.float64)
        scale = np.asarray(op.scale.val).astype(np.float64)
        zero = np.asarray(op.zero_point.val).astype(np.float64)
        axis = int(op.axis.val)
        shape = [1] * data.ndim
        if scale.ndim == 1 and scale.size > 1:
            shape[axis] = scale.size
        return (data - zero.reshape(shape if zero.size > 1 else [1] * data.ndim)) * scale.reshape(shape if scale.size > 1 else [1] * data.ndim)
    if op.op_type == "constexpr_lut_to_dense" and op.inputs.get("shape") is not None:
        lut = np.asarray(op.lut.val).astype(np.float64)
        bits = int(np.log2(lut.size))
        packed = np.asarray(op.indices.val, dtype=np.uint8)
        shape = [int(d) for d in np.asarray(op.shape.val)]
        count = int(np.prod(shape))
        stream = np.unpackbits(packed, bitorder="little")[: count * bits].reshape(count, bits)
        codes = (stream.astype(np.int64) << np.arange(bits)).sum(axis=1)
        return lut[codes].reshape(shape)
    if op.op_type == "constexpr_lut_to_dense" and op.inputs.get("shape") is None and op.inputs.get("vector_axis") is None:
        # iOS 18: indices of the weight's shape, lut [blocks per axis..., 2^n, 1]: each index reads its block's table.
        indices = np.asarray(op.indices.val).astype(np.int64)
        lut = np.asarray(op.lut.val).astype(np.float64)
        if lut.ndim != indices.ndim + 2 or lut.shape[-1] != 1:
            return None
        blocks = [indices.shape[i] // lut.shape[i] for i in range(indices.ndim)]
        out = np.empty(indices.shape)
        for position in np.ndindex(*indices.shape):
            block = tuple(position[i] // blocks[i] for i in range(indices.ndim))
            out[position] = lut[block + (indices[position], 0)]
        return out
    if op.op_type == "constexpr_blockwise_shift_scale":
        # iOS 18: scale * (data - offset), each axis of data split into scale.shape[i] blocks.
        data = np.asarray(op.data.val).astype(np.float64)
        scale = np.asarray(op.scale.val).astype(np.float64)
        offset = np.asarray(op.offset.val).astype(np.float64) if op.inputs.get("offset") is not None else np.zeros(scale.shape)
        if scale.ndim != data.ndim:
            return None
        repeat = [data.shape[i] // scale.shape[i] for i in range(data.ndim)]
        expand = lambda a: np.kron(a, np.ones(repeat))  # noqa: E731  (each block's value over its elements)
        return expand(scale) * (data - expand(offset))
    if op.op_type == "constexpr_sparse_to_dense" and op.inputs.get("shape") is not None:
        values = np.asarray(op.nonzero_data.val).astype(np.float64)
        mask = np.asarray(op.mask.val, dtype=np.uint8)
        shape = [int(d) for d in np.asarray(op.shape.val)]
        count = int(np.prod(shape))
        bits = np.unpackbits(mask, bitorder="little")[:count].astype(bool)
        dense = np.zeros(count)
        dense[bits] = values
        return dense.reshape(shape)
    return None


def blob_values(program):
    """Yields (operation name, value type, blob file value) for every blob in the program."""
    for function in program.functions.values():
        for block in function.block_specializations.values():
            for op in block.operations:
                for key, value in op.attributes.items():
                    if value.WhichOneof("value") == "blobFileValue":
                        yield op.attributes["name"].immediateValue.tensor.strings.values[0], value.type, value.blobFileValue
                for key, argument in op.inputs.items():
                    for binding in argument.arguments:
                        if binding.WhichOneof("binding") == "value" and binding.value.WhichOneof("value") == "blobFileValue":
                            yield key, binding.value.type, binding.value.blobFileValue


def raw_blob(data, offset):
    """The data type code and bytes of the blob whose metadata record is at offset (format version 2)."""
    sentinel, dtype, size, data_offset = struct.unpack_from("<IIQQ", data, offset)
    if sentinel != 0xDEADBEEF:
        raise ValueError("no blob record at offset %d (sentinel %#x)" % (offset, sentinel))
    return dtype, data[data_offset:data_offset + size]


MIL_FP16, MIL_FP32, MIL_INT8, MIL_UINT8, MIL_INT4 = 10, 11, 21, 31, 25
BLOB_INT4 = 8
BLOB_FP16, BLOB_FP32, BLOB_UINT8, BLOB_INT8 = 1, 2, 3, 4
# MIL data type: (bits, blob storage type, coremltools' reader method)
SUB_BYTE = {37: (1, 9, "read_uint1_data"), 36: (2, 10, "read_uint2_data"), 39: (3, 12, "read_uint3_data"),
            35: (4, 11, "read_uint4_data"), 38: (6, 13, "read_uint6_data")}


def check(package):
    import coremltools as ct
    from coremltools import libmilstoragepython

    problems = []
    spec = ct.utils.load_spec(package)
    kind = spec.WhichOneof("Type")
    weights_dir = os.path.join(package, "Data", "com.apple.CoreML", "weights")
    try:
        ct.models.MLModel(spec, weights_dir=weights_dir, skip_model_load=True)
        model_note = "MLModel ok"
    except Exception as error:  # noqa: BLE001 - report any failure
        model_note = "MLModel failed: %s" % error
        problems.append(model_note)
    if kind != "mlProgram":
        return problems, "%s: %s, %s" % (package, kind, model_note)

    declared = {}
    for function in spec.mlProgram.functions.values():
        for block in function.block_specializations.values():
            for op in block.operations:
                for output in op.outputs:
                    if output.type.WhichOneof("type") == "tensorType":
                        t = output.type.tensorType
                        declared[output.name] = (t.dataType, tuple(
                            d.constant.size if d.WhichOneof("dimension") == "constant" else None for d in t.dimensions))
    try:
        from coremltools.converters.mil.frontend.milproto.load import load as milproto_load
        from coremltools.converters.mil.mil import types
        from coremltools.converters.mil.mil.types.symbolic import is_symbolic
        from coremltools.converters.mil.backend.mil.helper import types_to_proto_primitive

        pymil = milproto_load(spec, spec.specificationVersion, weights_dir)
        checked = 0
        for function in pymil.functions.values():
            for op in function.operations:
                for var in op.outputs:
                    if var.name not in declared or not types.is_tensor(var.sym_type) and not types.is_scalar(var.sym_type):
                        continue
                    dtype = types_to_proto_primitive(var.dtype)
                    # A flexible model's unknown dimensions: coremltools infers a symbol there.
                    shape = tuple(None if is_symbolic(d) else int(d) for d in var.shape)
                    want_type, want_shape = declared[var.name]
                    if dtype != want_type or len(shape) != len(want_shape) or any(
                            w is not None and w != d for w, d in zip(want_shape, shape)):
                        problems.append("%s: declared %s, coremltools infers %s" % (var.name, declared[var.name], (dtype, shape)))
                    checked += 1
        model_note += ", pymil load ok (%d types compared)" % checked
        # Compressed weights: coremltools' own decompression of each constexpr operation, compared with
        # a decoding written here from the MIL op definitions (iOS 16 forms), within one rounding of the
        # output type (coremltools computes scale * (q - zero) in the scale's type).
        decoded = 0
        for function in pymil.functions.values():
            for op in function.operations:
                if not op.op_type.startswith("constexpr_"):
                    continue
                dense = np.asarray(op.materialized_val_inference())
                theirs = dense.astype(np.float64)
                mine = decode_constexpr(op)
                if mine is None:
                    continue
                # The weight has the op's output type: rounded to it, within one rounding of that type.
                mine = mine.astype(dense.dtype).astype(np.float64)
                rtol = 2.0 ** -10 if dense.dtype == np.float16 else 2.0 ** -22
                if theirs.shape != mine.shape or not np.allclose(theirs, mine, rtol=rtol, atol=0):
                    problems.append("%s: coremltools decompresses %s to other values (max difference %g)" % (
                        op.name, op.op_type, float(np.max(np.abs(theirs - mine))) if theirs.shape == mine.shape else float("inf")))
                decoded += 1
        if decoded:
            model_note += ", %d compressed weights decompressed by coremltools as the op definitions say" % decoded
    except Exception as error:  # noqa: BLE001
        problems.append("pymil load failed: %s" % error)
        model_note += ", pymil load FAILED"

    weight_file = os.path.join(weights_dir, "weight.bin")
    with open(weight_file, "rb") as handle:
        data = handle.read()
    reader = libmilstoragepython._BlobStorageReader(weight_file)
    count = 0
    for name, value_type, blob in blob_values(spec.mlProgram):
        count += 1
        if blob.fileName != "@model_path/weights/weight.bin":
            problems.append("%s: file name %s" % (name, blob.fileName))
            continue
        dtype, raw = raw_blob(data, blob.offset)
        mil_type = value_type.tensorType.dataType
        elements = int(np.prod([d.constant.size for d in value_type.tensorType.dimensions])) if value_type.tensorType.dimensions else 1
        if mil_type == MIL_FP16:
            theirs = np.asarray(reader.read_fp16_data(blob.offset)).astype(np.uint16).tobytes()
            expected_type, width = BLOB_FP16, 2
        elif mil_type == MIL_FP32:
            theirs = np.asarray(reader.read_float_data(blob.offset), dtype=np.float32).tobytes()
            expected_type, width = BLOB_FP32, 4
        elif mil_type == MIL_INT8:  # compressed weights' codes and zero points
            theirs = np.asarray(reader.read_int8_data(blob.offset), dtype=np.int8).tobytes()
            expected_type, width = BLOB_INT8, 1
        elif mil_type == MIL_UINT8:
            theirs = np.asarray(reader.read_uint8_data(blob.offset), dtype=np.uint8).tobytes()
            expected_type, width = BLOB_UINT8, 1
        elif mil_type == MIL_INT4:  # iOS 18 4-bit codes: coremltools' values against the bytes, low nibble first
            signed = np.asarray(reader.read_int4_data(blob.offset), dtype=np.int8)
            nibbles = np.frombuffer(raw, dtype=np.uint8)
            mine = np.stack([nibbles & 0x0F, nibbles >> 4], axis=1).reshape(-1)[:elements].astype(np.int8)
            mine = np.where(mine > 7, mine - 16, mine)
            if dtype != BLOB_INT4 or signed.size != elements or not np.array_equal(signed, mine):
                problems.append("%s at %d: coremltools unpacks other int4 values" % (name, blob.offset))
            continue
        elif mil_type in SUB_BYTE:  # iOS 18 palette indices: coremltools' unpacked values against the bytes, LSB first
            bits, blob_type, read = SUB_BYTE[mil_type]
            unpacked = np.asarray(getattr(reader, read)(blob.offset), dtype=np.uint8)
            stream = np.unpackbits(np.frombuffer(raw, dtype=np.uint8), bitorder="little")[: elements * bits].reshape(elements, bits)
            mine = (stream.astype(np.int64) << np.arange(bits)).sum(axis=1)
            if dtype != blob_type:
                problems.append("%s: record type %d for MIL type %d" % (name, dtype, mil_type))
            if len(raw) != (elements * bits + 7) // 8 or unpacked.size != elements or not np.array_equal(unpacked, mine):
                problems.append("%s at %d: coremltools unpacks other %d-bit values" % (name, blob.offset, bits))
            continue
        else:
            problems.append("%s: unexpected blob type %d" % (name, mil_type))
            continue
        if dtype != expected_type:
            problems.append("%s: record type %d for MIL type %d" % (name, dtype, mil_type))
        if len(raw) != elements * width:
            problems.append("%s: %d bytes for %d elements" % (name, len(raw), elements))
        if theirs != raw:
            problems.append("%s at %d: coremltools reads different bytes" % (name, blob.offset))
    ops = sum(len(b.operations) for f in spec.mlProgram.functions.values() for b in f.block_specializations.values())
    opset = [f.opset for f in spec.mlProgram.functions.values()]
    summary = "%s: spec %d, %s, opset %s, %d ops, %d blobs compared, %s, %s" % (
        os.path.basename(package.rstrip("/")), spec.specificationVersion, kind, ",".join(opset), ops, count, model_note,
        "OK" if not problems else "%d PROBLEMS" % len(problems))
    return problems, summary


def check_mlmodel(path):
    """A classic .mlmodel with quantized weights: coremltools loads it, and its dequantization of every
    quantized weight (models.neural_network.quantization_utils, the inverse of quantize_weights) agrees
    with a decoding written here from NeuralNetwork.proto (codes most significant bit first; linear:
    scale * q + bias per output channel; lookup table: table[q])."""
    import copy
    import coremltools as ct
    from coremltools.models.neural_network import quantization_utils as qu

    problems = []
    spec = ct.utils.load_spec(path)
    try:
        ct.models.MLModel(spec, skip_model_load=True)
        note = "MLModel ok"
    except Exception as error:  # noqa: BLE001
        problems.append("MLModel: %s" % error)
        note = "MLModel FAILED"
    network = spec.neuralNetworkClassifier if spec.WhichOneof("Type") == "neuralNetworkClassifier" else spec.neuralNetwork
    checked = 0
    for layer in network.layers:
        kind = layer.WhichOneof("layer")
        if kind == "convolution":
            p = layer.convolution
            shape = (p.outputChannels if not p.isDeconvolution else p.kernelChannels,
                     p.kernelChannels if not p.isDeconvolution else p.outputChannels // max(p.nGroups, 1)) + tuple(p.kernelSize)
        elif kind == "innerProduct":
            p = layer.innerProduct
            shape = (p.outputChannels, p.inputChannels)
        elif kind == "batchedMatmul":
            p = layer.batchedMatmul
            shape = (p.weightMatrixSecondDimension, p.weightMatrixFirstDimension)
        else:
            continue
        wp = p.weights
        if not len(wp.rawValue):
            continue
        theirs_wp = copy.deepcopy(wp)
        qu._dequantize_wp(theirs_wp, shape, axis=0)
        theirs = np.asarray(theirs_wp.floatValue, dtype=np.float64)
        bits = wp.quantization.numberOfBits
        count = int(np.prod(shape))
        stream = np.unpackbits(np.frombuffer(wp.rawValue, dtype=np.uint8), bitorder="big")[: count * bits].reshape(count, bits)
        codes = (stream.astype(np.int64) << np.arange(bits - 1, -1, -1)).sum(axis=1)
        if wp.quantization.WhichOneof("QuantizationType") == "linearQuantization":
            scale = np.asarray(wp.quantization.linearQuantization.scale, dtype=np.float64)
            bias = np.asarray(wp.quantization.linearQuantization.bias, dtype=np.float64)
            channel = np.arange(count) // (count // scale.size)
            mine = codes * scale[channel] + bias[channel]
        else:
            mine = np.asarray(wp.quantization.lookupTableQuantization.floatValue, dtype=np.float64)[codes]
        if theirs.shape != mine.shape or not np.allclose(theirs, mine, rtol=2.0 ** -22, atol=1e-30):
            problems.append("%s: coremltools dequantizes its weights to other values" % layer.name)
        checked += 1
    summary = "%s: spec %d, %s, %s, %d quantized weights dequantized by coremltools as NeuralNetwork.proto says, %s" % (
        os.path.basename(path), spec.specificationVersion, spec.WhichOneof("Type"), note, checked,
        "OK" if not problems else "%d PROBLEMS" % len(problems))
    return problems, summary


def flexibility(path):
    """Each input's declared size and flexibility as coremltools' load_spec reads them, in the form of
    Samples/make_flexible_coreml.py's expected.json (array `shapeRange` [[lower, upper]] and `enumeratedShapes`;
    image `imageSizeRange` [[width lower, upper], [height lower, upper]] and `enumeratedSizes` [[width, height]];
    upper -1 = unbounded)."""
    import coremltools as ct
    spec = ct.utils.load_spec(path)
    inputs = []
    for feature in spec.description.input:
        kind = feature.type.WhichOneof("Type")
        entry = {"name": feature.name, "kind": kind}
        if kind == "multiArrayType":
            a = feature.type.multiArrayType
            entry["shape"] = list(a.shape)
            which = a.WhichOneof("ShapeFlexibility")
            if which == "shapeRange":
                entry["shapeRange"] = [[r.lowerBound, r.upperBound] for r in a.shapeRange.sizeRanges]
            elif which == "enumeratedShapes":
                entry["enumeratedShapes"] = [list(s.shape) for s in a.enumeratedShapes.shapes]
        elif kind == "imageType":
            i = feature.type.imageType
            entry["size"] = [i.width, i.height]
            which = i.WhichOneof("SizeFlexibility")
            if which == "imageSizeRange":
                r = i.imageSizeRange
                entry["imageSizeRange"] = [[r.widthRange.lowerBound, r.widthRange.upperBound],
                                           [r.heightRange.lowerBound, r.heightRange.upperBound]]
            elif which == "enumeratedSizes":
                entry["enumeratedSizes"] = [[s.width, s.height] for s in i.enumeratedSizes.sizes]
        inputs.append(entry)
    return {"specificationVersion": spec.specificationVersion, "inputs": inputs}


def unknown_where_flexible(path):
    """An ML Program's function inputs leave unknown each dimension the description lets change (coremltools
    writes them so; a constant there fixes the size whatever the description allows)."""
    import coremltools as ct
    spec = ct.utils.load_spec(path)
    if spec.WhichOneof("Type") != "mlProgram":
        return []
    problems = []
    function = spec.mlProgram.functions["main"]
    declared = {i.name: i for i in function.inputs}
    for entry in flexibility(path)["inputs"]:
        flexible = []
        if "shapeRange" in entry:
            flexible = [i for i, (lo, hi) in enumerate(entry["shapeRange"]) if lo != hi]
        elif "enumeratedShapes" in entry:
            shapes = entry["enumeratedShapes"]
            flexible = [i for i in range(len(shapes[0])) if len({s[i] for s in shapes}) > 1]
        elif "imageSizeRange" in entry or "enumeratedSizes" in entry:
            flexible = [2, 3]  # [1, C, H, W]
        if not flexible or entry["name"] not in declared:
            continue
        dims = declared[entry["name"]].type.tensorType.dimensions
        fixed = [i for i in flexible if i < len(dims) and dims[i].WhichOneof("dimension") == "constant"]
        if fixed:
            problems.append("input %s: the function fixes dimensions %s that the description lets change" % (
                entry["name"], fixed))
    return problems


def main(arguments):
    """`--expect FILE.json`: the inputs each model must declare, by file name ({"models": {name: {"inputs": [...]}}},
    as flexibility() reports them); a model listed there is compared with what load_spec reads."""
    expected = {}
    paths = list(arguments)
    if "--expect" in paths:
        at = paths.index("--expect")
        import json
        with open(paths[at + 1]) as handle:
            expected = json.load(handle)["models"]
        del paths[at:at + 2]
    if not paths:
        print(__doc__)
        return 2
    failed = 0
    for path in paths:
        try:
            problems, summary = check_mlmodel(path) if path.endswith(".mlmodel") else check(path)
            declared = flexibility(path)
            for entry in declared["inputs"]:
                flexible = {k: v for k, v in entry.items() if k in ("shapeRange", "enumeratedShapes", "imageSizeRange",
                                                                   "enumeratedSizes")}
                if flexible:
                    summary += "\n  input %s %s: %s" % (entry["name"], entry.get("shape", entry.get("size")), flexible)
            problems += unknown_where_flexible(path)
            name = os.path.basename(path.rstrip("/"))
            if name in expected:
                want = expected[name]["inputs"]
                if want != declared["inputs"]:
                    problems.append("inputs declared %s, expected %s" % (declared["inputs"], want))
                else:
                    summary += "\n  inputs declared as expected"
        except Exception as error:  # noqa: BLE001
            problems, summary = [str(error)], "%s: cannot be read: %s" % (path, error)
        print(summary)
        for problem in problems:
            print("  - " + problem)
        failed += bool(problems)
    print("%d packages, %d with problems" % (len(paths), failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
