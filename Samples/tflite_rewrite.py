#!/usr/bin/env python3
"""Rewrites MediaPipe's custom transposed convolution in a `.tflite` file into TFLite's builtin one and back, so
that LiteRT (which has no kernel for the custom operator) can compute references for files that hold it. Used by
Samples/make_tflite_fixtures.py (fixture `transpose_bias_custom`) and Samples/make_mediapipe_references.py.

MediaPipe's `Convolution2DTransposeBias` (mediapipe/util/tflite/operations/transpose_conv_bias.cc: a CUSTOM
operator, custom_code "Convolution2DTransposeBias"): inputs 0 = input NHWC float32, 1 = weights [O, KH, KW, I],
2 = bias [O]; `custom_options` the raw bytes of C's TfLiteTransposeConvParams, little-endian int32 padding
(TfLitePadding: 1 = SAME, 2 = VALID), stride_width, stride_height (12 bytes). The output is
[N, stride_h * (in_h - 1) + KH - pad_h, stride_w * (in_w - 1) + KW - pad_w, O], pad = max(0, K - (in - 1) % stride
- 1) for SAME, 0 for VALID, the padding split with the smaller half first: exactly TFLite's builtin
TRANSPOSE_CONV (operator 67: inputs output_shape int32 [4], weights [O, KH, KW, I], input, bias [O];
TransposeConvOptions padding (schema enum Padding: SAME = 0, VALID = 1), stride_w, stride_h,
fused_activation_function NONE) with a bias.

`custom_to_builtin(data, schema)` rewrites every custom operator into TRANSPOSE_CONV (version 3, the version of a
TRANSPOSE_CONV with a bias), adding for each an int32 [4] constant output_shape (a new buffer and tensor at the ends
of the lists, named `<output name>/output_shape`); `builtin_to_custom(data, schema)` rewrites every TRANSPOSE_CONV
with a bias (float32, no fused activation, its output_shape a constant the rule above gives) into the custom
operator (version 1, custom_options_format FLEXBUFFERS as MediaPipe's files have it, though the bytes are not a
FlexBuffer), dropping the output_shape tensors and buffers nothing else uses. The operator code is changed in place
when the rewritten operators are its only users (so that the operators' opcode indices stay), else a new one is
appended. Everything else is kept as it was: the model goes through the schema's object API (ModelT), so that the
FlatBuffer is packed anew (byte vectors 16-byte aligned, as TensorFlow's converter aligns buffers), and a zip
archive appended to the file (TFLite Model Metadata's associated files, such as MediaPipe's `labels.txt`) is
carried over as it is, its offsets moved when they count from the start of the file (as in MediaPipe's files).
custom -> builtin -> custom gives back MediaPipe's selfie segmentation models' ModelT field for field.

`schema` is the module of the TFLite schema's generated Python (`schema_py_generated.py` in
mediapipe/tasks/metadata/ of mediapipe 0.10.14's wheel; `load_schema(folder)` imports it) and needs the
`flatbuffers` package. Both functions return the new bytes and the number of operators rewritten.

    python Samples/tflite_rewrite.py --mediapipe-metadata DIR --to builtin IN.tflite OUT.tflite
"""

import importlib.util
import os
import struct

import numpy as np

CUSTOM_CODE = "Convolution2DTransposeBias"
# TfLitePadding (C) in the custom options; the schema's Padding enum in TransposeConvOptions.
C_PADDING = {1: "SAME", 2: "VALID"}
SCHEMA_PADDING = {0: "SAME", 1: "VALID"}
BUILTIN_VERSION = 3  # TRANSPOSE_CONV with a bias (TFLite's op_version.cc)


def load_schema(folder):
    """The TFLite schema's generated Python (`schema_py_generated.py`) from `folder`."""
    spec = importlib.util.spec_from_file_location("schema_py_generated",
                                                  os.path.join(folder, "schema_py_generated.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def output_size(size, kernel, stride, padding):
    """A transposed convolution's output size along one axis (padding "SAME" or "VALID")."""
    total = max(0, kernel - (size - 1) % stride - 1) if padding == "SAME" else 0
    return stride * (size - 1) + kernel - total


def output_shape(input_shape, weights_shape, stride_h, stride_w, padding):
    batch, height, width, _ = (int(d) for d in input_shape)
    channels, kernel_h, kernel_w, _ = (int(d) for d in weights_shape)
    return [batch, output_size(height, kernel_h, stride_h, padding), output_size(width, kernel_w, stride_w, padding),
            channels]


# The zip archive a .tflite file may end with.

def split_archive(data):
    """(the bytes before the archive, the archive's bytes or None, whether its offsets count from the start of the
    file). Only an archive whose structure checks out is taken (a FlatBuffer's weights may hold zip signatures)."""
    end = data.rfind(b"PK\x05\x06", max(0, len(data) - 22 - 65535))
    if end < 0 or end + 22 > len(data):
        return data, None, False
    _, disk, cd_disk, _, count, cd_size, cd_offset, _ = struct.unpack("<IHHHHIIH", data[end:end + 22])
    if disk or cd_disk or 0xFFFFFFFF in (cd_size, cd_offset) or 0xFFFF == count:
        raise ValueError("a multi-disk or zip64 archive at the end of the file: not handled")
    shift = end - cd_size - cd_offset
    if shift < 0:
        return data, None, False
    at, locals_ = cd_offset + shift, []
    for _ in range(count):
        if data[at:at + 4] != b"PK\x01\x02":
            return data, None, False
        name, extra, comment = struct.unpack("<HHH", data[at + 28:at + 34])
        (local,) = struct.unpack("<I", data[at + 42:at + 46])
        locals_.append(local)
        at += 46 + name + extra + comment
    start = min(locals_) + shift if locals_ else cd_offset + shift
    if locals_ and data[start:start + 4] != b"PK\x03\x04":
        return data, None, False
    if shift not in (0, start):
        raise ValueError("a zip archive whose offsets count from neither the file's start nor its own")
    return data[:start], data[start:], shift == 0


def join_archive(flat, archive, absolute, old_start):
    """`flat` followed by `archive` (from split_archive), its offsets moved by the change of its start when they
    count from the start of the file."""
    if archive is None:
        return flat
    if not absolute:
        return flat + archive
    delta = len(flat) - old_start
    archive = bytearray(archive)
    end = archive.rfind(b"PK\x05\x06")
    _, _, _, _, count, cd_size, cd_offset, _ = struct.unpack("<IHHHHIIH", archive[end:end + 22])
    at = cd_offset - old_start
    for _ in range(count):
        name, extra, comment = struct.unpack("<HHH", archive[at + 28:at + 34])
        (local,) = struct.unpack("<I", archive[at + 42:at + 46])
        archive[at + 42:at + 46] = struct.pack("<I", local + delta)
        at += 46 + name + extra + comment
    archive[end + 16:end + 20] = struct.pack("<I", cd_offset + delta)
    return flat + bytes(archive)


# The model.

def _read(data, schema):
    flat, archive, absolute = split_archive(bytes(data))
    model = schema.ModelT.InitFromPackedBuf(bytearray(flat), 0)
    if any(buffer.offset > 1 for buffer in model.buffers or []):
        raise ValueError("buffers stored outside the FlatBuffer (offset/size): not handled")
    return model, (archive, absolute, len(flat))


def _write(model, archive_parts):
    import flatbuffers

    class Builder(flatbuffers.Builder):
        # Byte vectors (the buffers' data) 16-byte aligned, as TensorFlow's converter writes them.
        def StartVector(self, elemSize, numElems, alignment):
            return super().StartVector(elemSize, numElems, max(alignment, 16) if elemSize == 1 else alignment)
    builder = Builder(0)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    archive, absolute, old_start = archive_parts
    return join_archive(bytes(builder.Output()), archive, absolute, old_start)


def _code_name(schema, code):
    builtin = max(code.builtinCode, code.deprecatedBuiltinCode)
    custom = code.customCode.decode() if isinstance(code.customCode, bytes) else code.customCode
    return ("CUSTOM", custom) if builtin == schema.BuiltinOperator.CUSTOM else (builtin, None)


def _retarget(model, rewritten, make_code):
    """Points the rewritten operators (a list of (subgraph, operator)) at a code made by make_code(): in place of
    their old code when they are its only users, else a new code appended (once per old code)."""
    users = {}
    for subgraph in model.subgraphs:
        for op in subgraph.operators or []:
            users.setdefault(op.opcodeIndex, []).append(op)
    moved = {}
    ids = {id(op) for _, op in rewritten}
    for _, op in rewritten:
        old = op.opcodeIndex
        if old not in moved:
            if all(id(user) in ids for user in users[old]):
                model.operatorCodes[old] = make_code()
                moved[old] = old
            else:
                model.operatorCodes.append(make_code())
                moved[old] = len(model.operatorCodes) - 1
        op.opcodeIndex = moved[old]


def _constant(model, tensor):
    buffer = model.buffers[tensor.buffer] if 0 < tensor.buffer < len(model.buffers) else None
    if buffer is None or buffer.data is None or len(buffer.data) == 0:
        return None
    return np.asarray(buffer.data, dtype=np.uint8).tobytes()


def custom_to_builtin(data, schema):
    """Every Convolution2DTransposeBias custom operator as TRANSPOSE_CONV with its bias as input 3."""
    model, archive = _read(data, schema)
    rewritten = []
    for subgraph in model.subgraphs:
        for op in subgraph.operators or []:
            if _code_name(schema, model.operatorCodes[op.opcodeIndex]) != ("CUSTOM", CUSTOM_CODE):
                continue
            options = np.asarray(op.customOptions if op.customOptions is not None else [], dtype=np.uint8).tobytes()
            if len(options) != 12:
                raise ValueError("%s with %d bytes of custom options, not 12" % (CUSTOM_CODE, len(options)))
            padding, stride_w, stride_h = struct.unpack("<iii", options)
            if padding not in C_PADDING or stride_w < 1 or stride_h < 1:
                raise ValueError("%s with padding %d, strides %d, %d" % (CUSTOM_CODE, padding, stride_w, stride_h))
            if len(op.inputs) != 3 or len(op.outputs) != 1 or min(op.inputs) < 0:
                raise ValueError("%s with inputs %s and outputs %s" % (CUSTOM_CODE, list(op.inputs),
                                                                       list(op.outputs)))
            source, weights, bias = (subgraph.tensors[i] for i in op.inputs)
            output = subgraph.tensors[op.outputs[0]]
            shape = output_shape(source.shape, weights.shape, stride_h, stride_w, C_PADDING[padding])
            if output.shape is not None and len(output.shape) and list(output.shape) != shape:
                raise ValueError("%s's output %s is %s in the file, %s by its rule" % (
                    CUSTOM_CODE, output.name, list(output.shape), shape))
            buffer = schema.BufferT()
            buffer.data = np.frombuffer(np.asarray(shape, dtype="<i4").tobytes(), dtype=np.uint8)
            model.buffers.append(buffer)
            tensor = schema.TensorT()
            tensor.shape = [4]
            tensor.type = schema.TensorType.INT32
            tensor.buffer = len(model.buffers) - 1
            name = output.name.decode() if isinstance(output.name, bytes) else output.name
            tensor.name = (name or "transpose_conv") + "/output_shape"
            tensor.hasRank = True
            subgraph.tensors.append(tensor)
            op.inputs = [len(subgraph.tensors) - 1, op.inputs[1], op.inputs[0], op.inputs[2]]
            op.builtinOptionsType = schema.BuiltinOptions.TransposeConvOptions
            op.builtinOptions = schema.TransposeConvOptionsT()
            op.builtinOptions.padding = {"SAME": schema.Padding.SAME, "VALID": schema.Padding.VALID}[
                C_PADDING[padding]]
            op.builtinOptions.strideW = stride_w
            op.builtinOptions.strideH = stride_h
            op.customOptions = None
            op.customOptionsFormat = 0
            rewritten.append((subgraph, op))

    def code():
        made = schema.OperatorCodeT()
        made.builtinCode = made.deprecatedBuiltinCode = schema.BuiltinOperator.TRANSPOSE_CONV
        made.version = BUILTIN_VERSION
        return made
    _retarget(model, rewritten, code)
    return _write(model, archive), len(rewritten)


def builtin_to_custom(data, schema):
    """Every TRANSPOSE_CONV with a bias as the Convolution2DTransposeBias custom operator (as MediaPipe's files hold
    it: input, weights, bias; 12 bytes of custom options)."""
    model, archive = _read(data, schema)
    rewritten, dropped = [], {}
    for index, subgraph in enumerate(model.subgraphs):
        for op in subgraph.operators or []:
            if _code_name(schema, model.operatorCodes[op.opcodeIndex]) != \
                    (schema.BuiltinOperator.TRANSPOSE_CONV, None):
                continue
            if len(op.inputs) < 4 or op.inputs[3] < 0:
                continue  # no bias: the custom operator always has one
            shape_index, weights_index, source_index, bias_index = op.inputs[:4]
            options = op.builtinOptions
            where = "TRANSPOSE_CONV %s" % subgraph.tensors[op.outputs[0]].name
            if options.fusedActivationFunction != 0:
                raise ValueError("%s has a fused activation, which the custom operator cannot hold" % where)
            types = {subgraph.tensors[i].type for i in (weights_index, source_index, bias_index)}
            if types != {schema.TensorType.FLOAT32}:
                raise ValueError("%s is not float32" % where)
            padding = SCHEMA_PADDING[options.padding]
            source, weights = subgraph.tensors[source_index], subgraph.tensors[weights_index]
            constant = _constant(model, subgraph.tensors[shape_index])
            want = output_shape(source.shape, weights.shape, options.strideH, options.strideW, padding)
            if constant is None or np.frombuffer(constant, dtype="<i4").tolist() != want:
                raise ValueError("%s's output_shape is %s, not the %s its rule gives" % (
                    where, None if constant is None else np.frombuffer(constant, dtype="<i4").tolist(), want))
            op.inputs = [source_index, weights_index, bias_index]
            op.builtinOptionsType = 0
            op.builtinOptions = None
            c_padding = {name: value for value, name in C_PADDING.items()}[padding]
            op.customOptions = np.frombuffer(struct.pack("<iii", c_padding, options.strideW, options.strideH),
                                             dtype=np.uint8)
            op.customOptionsFormat = schema.CustomOptionsFormat.FLEXBUFFERS
            rewritten.append((subgraph, op))
            dropped.setdefault(index, set()).add(shape_index)

    def code():
        made = schema.OperatorCodeT()
        made.builtinCode = made.deprecatedBuiltinCode = schema.BuiltinOperator.CUSTOM
        made.customCode = CUSTOM_CODE
        made.version = 1
        return made
    _retarget(model, rewritten, code)
    for index, candidates in dropped.items():
        _drop_tensors(model, index, candidates)
    return _write(model, archive), len(rewritten)


def _list(values):
    """A vector of the object API (None, a list or a numpy array) as a list."""
    return [] if values is None else [int(v) for v in values]


def _drop_tensors(model, index, candidates):
    """Removes the tensors `candidates` of subgraph `index` that nothing uses any more, then their buffers that no
    tensor or metadata uses, renumbering the references."""
    subgraph = model.subgraphs[index]
    used = set(_list(subgraph.inputs)) | set(_list(subgraph.outputs))
    for op in subgraph.operators or []:
        used |= set(_list(op.inputs)) | set(_list(op.outputs)) | set(_list(op.intermediates))
    for signature in model.signatureDefs or []:
        if signature.subgraphIndex == index:
            used |= {m.tensorIndex for m in (signature.inputs or []) + (signature.outputs or [])}
    gone = sorted(set(candidates) - used)
    if not gone:
        return
    buffers = {subgraph.tensors[i].buffer for i in gone}
    keep = [i for i in range(len(subgraph.tensors)) if i not in set(gone)]
    renumber = {old: new for new, old in enumerate(keep)}
    move = lambda values: None if values is None else [renumber[v] if v >= 0 else v for v in values]
    subgraph.tensors = [subgraph.tensors[i] for i in keep]
    subgraph.inputs, subgraph.outputs = move(subgraph.inputs), move(subgraph.outputs)
    for op in subgraph.operators or []:
        op.inputs, op.outputs, op.intermediates = move(op.inputs), move(op.outputs), move(op.intermediates)
    for signature in model.signatureDefs or []:
        if signature.subgraphIndex == index:
            for entry in (signature.inputs or []) + (signature.outputs or []):
                entry.tensorIndex = renumber[entry.tensorIndex]
    # Their buffers, unless something else uses them (buffer 0 is the empty one every file starts with).
    used = {t.buffer for s in model.subgraphs for t in s.tensors or []}
    used |= {m.buffer for m in model.metadata or []} | set(_list(model.metadataBuffer))
    gone = sorted(b for b in buffers if b > 0 and b not in used)
    if not gone:
        return
    keep = [b for b in range(len(model.buffers)) if b not in set(gone)]
    renumber = {old: new for new, old in enumerate(keep)}
    model.buffers = [model.buffers[b] for b in keep]
    for s in model.subgraphs:
        for tensor in s.tensors or []:
            tensor.buffer = renumber[tensor.buffer]
    for entry in model.metadata or []:
        entry.buffer = renumber[entry.buffer]
    if model.metadataBuffer is not None:
        model.metadataBuffer = [renumber[b] for b in model.metadataBuffer]


def operator_names(data, schema):
    """The file's operators in order (subgraph 0), named as LiteRT names builtins and the Swift reader custom
    operators: `CUSTOM(<custom code>)`."""
    model, _ = _read(data, schema)
    names = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
    result = []
    for op in model.subgraphs[0].operators or []:
        builtin, custom = _code_name(schema, model.operatorCodes[op.opcodeIndex])
        result.append("CUSTOM(%s)" % custom if builtin == "CUSTOM" else names[builtin])
    return result


def main():
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mediapipe-metadata", required=True,
                        help="folder holding schema_py_generated.py (mediapipe/tasks/metadata/ of mediapipe 0.10.14)")
    parser.add_argument("--to", choices=("builtin", "custom"), required=True)
    parser.add_argument("source")
    parser.add_argument("destination")
    args = parser.parse_args()
    schema = load_schema(args.mediapipe_metadata)
    with open(args.source, "rb") as handle:
        data = handle.read()
    data, count = (custom_to_builtin if args.to == "builtin" else builtin_to_custom)(data, schema)
    with open(args.destination, "wb") as handle:
        handle.write(data)
    print(args.destination, len(data), "bytes,", count, "operators rewritten")


if __name__ == "__main__":
    main()
