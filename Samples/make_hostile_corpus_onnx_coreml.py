#!/usr/bin/env python3
"""Make a corpus of hostile ONNX and Core ML sources from the project's fixtures (not committed: regenerate).

    python Samples/make_hostile_corpus_onnx_coreml.py --out /tmp/hostile-oc --count 3000 [--seed 1] \
        [--kinds onnx,coreml,package]

Needs onnx, protobuf and coremltools (only its generated protos: coremltools.proto), pinned in
Samples/requirements-hostile.txt (`python3 -m venv /tmp/venv-hostile && /tmp/venv-hostile/bin/pip install -r
Samples/requirements-hostile.txt`). The same seed makes the same corpus: case N depends only on --seed, N and
--kinds. --out should be empty or a corpus made by this script (its case_* entries are removed first).

Bases (read from Samples/Fixtures, never modified):
- onnx: Fixtures/onnx/*.onnx (but not_really.onnx; truncated.onnx, which protobuf does not parse, only gets
  byte damage), Fixtures/onnx/tf2onnx/*.onnx, and Fixtures/onnx/external_data (mlp_external.onnx beside its
  weights.bin), or another ONNX base whose initializers are moved to an external weights.bin;
- coreml: Fixtures/coremltools/*.mlmodel and Fixtures/legacy_coreml/*.mlmodel (classic neural networks);
- package: Fixtures/coremltools/*_program.mlpackage (ML Programs).

Layout of a case (what to pass to `modelconv convert`; the manifest's "model" says the same):
- case_00001.onnx          an ONNX file: the model is the file;
- case_00002/model.onnx    a folder for an ONNX model with external data: the model is case_NNNNN/model.onnx,
                           its data file (weights.bin) and any hostile neighbours (FIFO, symbolic links) beside it;
- case_00003.mlmodel       a Core ML specification file;
- case_00004.mlpackage/    a Core ML package: the model is the folder.
manifest.json lists every case: {"case", "model" (path relative to --out), "kind", "base" (relative to
Samples/), "mutations" (one description each), "special" (a FIFO, a symbolic link, a sparse file or a device
in the case: never copy such a case into the repository)}.

Every case starts as a copy of a base and gets one or two mutations (protobuf edits first, then byte damage,
then package and file-system damage, at most one of the last kind):
- bytes: bit flips, truncation, zeroed runs, on the .onnx, on model.mlmodel, weight.bin or Manifest.json of a
  package, on an external weights.bin; names overwritten in place with invalid UTF-8;
- protobuf (onnx.ModelProto, coremltools.proto.Model_pb2): any numeric field set to a hostile value (-1, 0,
  2^31, 2^62, 2^63 - 1, 2^64 - 1, NaN, inf, unknown enum values), shapes and dims hostile (negative, 0,
  2^31, 2^62), attributes removed, duplicated, or of another type, opset / ir_version / specificationVersion /
  ML Program opset ("CoreML99", "") odd, dtypes changed (a Cast to STRING, an unknown tensor data_type, an
  unknown MIL or array dataType), raw_data truncated or lengthened, names with control characters, NUL,
  empty or 5000 characters;
- semantic: duplicate nodes, initializers, inputs, outputs, attributes, classic layers, MIL ops and block
  outputs; dangling references (inputs naming nothing, outputs nothing produces, use before definition,
  cycles); outputs removed; an initializer with a graph input's name and another shape; chains appended to the
  output (2,000-20,000 ONNX Relu nodes, 10,000 classic ReLU layers, 10,000 MIL relu ops); ML Program `cond`
  blocks nested 1,000 and 100,000 deep (written wire format by hand: the Python protobuf library refuses that
  depth); a classic layerNormalization with epsilon -1, NaN or inf; NaN / inf in scale, bias and epsilon fields
  and in weights; ML Program consts whose values do not fill their type, blob offsets and file names hostile,
  weight.bin blob headers hostile;
- packages: symbolic links out of the package (weight.bin -> /etc/passwd, /dev/zero; Data -> /; model.mlmodel
  -> a fixture outside), link loops, a FIFO as weight.bin, model.mlmodel or Manifest.json, 8 GiB sparse files
  (costing a few KB of disk), Manifest.json whose item paths leave the package (../../x, absolute paths),
  missing, garbage, empty, truncated, deeply nested, over 1 MiB, with huge numbers or duplicate keys;
- external data: `location` leaving the model folder (../, absolute, a symbolic link out, a loop), a device
  (/dev/zero), a FIFO, an 8 GiB sparse file, offset / length past the end, negative, huge or not numbers,
  entries missing or duplicated, the data file truncated or missing.
Scripts/run-hostile-corpus.sh then runs `modelconv convert` over the corpus, and `verify` over every case it
accepts, in both formats.

With `--keep-accepted N --modelconv PATH`, only the first N cases that `modelconv convert` accepts in both
formats (.mlmodel and .mlpackage) are kept, with their manifest; cases with special files (FIFOs, symbolic
links, sparse files, devices) are never kept, nor (with --max-bytes) cases larger than that. The sample
for Samples/Fixtures/hostile_onnx_coreml:

    python Samples/make_hostile_corpus_onnx_coreml.py --out Samples/Fixtures/hostile_onnx_coreml --count 600 \
        --seed 3434 --keep-accepted 24 --modelconv .build/release/modelconv --max-bytes 40000
"""

import argparse
import copy
import glob
import importlib.util
import json
import math
import os
import random
import shutil
import stat
import subprocess
import sys
import tempfile
import types

import onnx
from onnx import helper

HERE = os.path.dirname(os.path.abspath(__file__))


def import_coreml_protos():
    """coremltools' generated protos without importing coremltools itself (slow, and it warns about its
    missing native libraries on Linux)."""
    if "coremltools" not in sys.modules:
        spec = importlib.util.find_spec("coremltools")
        if spec is None:
            raise SystemExit("coremltools is not installed (see Samples/requirements-hostile.txt)")
        package = types.ModuleType("coremltools")
        package.__path__ = list(spec.submodule_search_locations)
        sys.modules["coremltools"] = package
    from coremltools.proto import MIL_pb2, Model_pb2  # noqa: E402
    return MIL_pb2, Model_pb2


MIL_pb2, Model_pb2 = import_coreml_protos()

# ---------------------------------------------------------------------------------------------------- bases


def rel(path):
    return os.path.relpath(path, HERE)


def parses_as_onnx(path):
    try:
        onnx.ModelProto().ParseFromString(open(path, "rb").read())
        return True
    except Exception:
        return False


def find_bases():
    fixtures = os.path.join(HERE, "Fixtures")
    onnx_files = sorted(p for p in glob.glob(os.path.join(fixtures, "onnx", "*.onnx")) if os.path.basename(p) != "not_really.onnx")
    onnx_files += sorted(glob.glob(os.path.join(fixtures, "onnx", "tf2onnx", "*.onnx")))
    return {
        "onnx": onnx_files,
        "onnx_parsable": [p for p in onnx_files if parses_as_onnx(p)],
        "external": os.path.join(fixtures, "onnx", "external_data", "mlp_external.onnx"),
        "coreml": sorted(glob.glob(os.path.join(fixtures, "coremltools", "*.mlmodel")) + glob.glob(os.path.join(fixtures, "legacy_coreml", "*.mlmodel"))),
        "package": sorted(glob.glob(os.path.join(fixtures, "coremltools", "*_program.mlpackage"))),
    }


# ------------------------------------------------------------------------------------------- hostile values

INT64 = [-1, -2, 0, 1, 2 ** 31, 2 ** 31 - 1, 2 ** 32, 2 ** 62, 2 ** 63 - 1, -(2 ** 63), 10 ** 12]
INT32 = [-1, 0, 1, 2 ** 31 - 1, -(2 ** 31), 65535, 99]
UINT32 = [0, 1, 2 ** 31, 2 ** 32 - 1]
UINT64 = [0, 1, 2 ** 31, 2 ** 32, 2 ** 62, 2 ** 63, 2 ** 64 - 1]
FLOATS = [math.nan, math.inf, -math.inf, -1.0, 0.0, -0.0, 3.4e38, 1e-45, 1e30]
DIMS = [-1, -2, 0, 2 ** 31, 2 ** 31 - 1, 2 ** 32 + 1, 2 ** 62, 2 ** 63 - 1, -(2 ** 63)]
UDIMS = [0, 2 ** 31, 2 ** 32 + 1, 2 ** 62, 2 ** 63, 2 ** 64 - 1]
NAMES = ["", "\x00", "a\x00b", "a\nb", "\x1b[31mred", "../../etc/passwd", "/etc/passwd", "a" * 5000, " ", "x/y",
         "\u202egnp.exe", "\t", "%s%n", "con", "1abc", "a b"]
CPP_INT32, CPP_INT64, CPP_UINT32, CPP_UINT64, CPP_DOUBLE, CPP_FLOAT, CPP_BOOL, CPP_ENUM = range(1, 9)


class Skip(Exception):
    """A mutation that does not apply to this case (the driver picks another)."""


# -------------------------------------------------------------------------------------- safe file handling
# The generator runs as whatever user runs it (maybe root) and cases hold links to /etc/passwd: it never
# writes through a symbolic link, never reads anything but a regular file, and does file-system damage last.


def check_inside(case, path):
    """Refuse a path under the case that passes through a symbolic link (or is one)."""
    root = case.root
    if os.path.islink(root):
        raise Skip("case root is a link")
    relpath = os.path.relpath(path, root)
    if relpath.startswith(".."):
        raise Skip(f"{path} is outside the case")
    current = root
    for part in relpath.split(os.sep):
        if part in ("", "."):
            continue
        current = os.path.join(current, part)
        if os.path.islink(current):
            raise Skip(f"{os.path.relpath(current, root)} is a link")


def read_file(case, path):
    check_inside(case, path)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise Skip(f"{os.path.basename(path)} is missing")
    if not stat.S_ISREG(info.st_mode):
        raise Skip(f"{os.path.basename(path)} is not a regular file")
    if info.st_size > 256 << 20:
        raise Skip(f"{os.path.basename(path)} is large")
    with open(path, "rb") as f:
        return f.read()


def open_for_write(case, path):
    check_inside(case, path)
    if os.path.lexists(path) and not stat.S_ISREG(os.lstat(path).st_mode):
        raise Skip(f"{os.path.basename(path)} is not a regular file")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    return os.fdopen(fd, "wb")


def write_file(case, path, data):
    with open_for_write(case, path) as f:
        f.write(data)


def remove_path(path):
    """Remove a file, link, FIFO or folder without following links."""
    if os.path.islink(path) or (os.path.lexists(path) and not os.path.isdir(path)):
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)


def tree_size(path):
    """Apparent bytes of the regular files under path (links and special files not followed)."""
    if not os.path.isdir(path) or os.path.islink(path):
        return os.lstat(path).st_size
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            total += os.lstat(os.path.join(folder, name)).st_size
    return total


# ---------------------------------------------------------------------------------------------------- cases


class Case:
    def __init__(self, out, index, kind, base):
        self.index, self.kind, self.base = index, kind, base
        self.special = False
        stem = f"case_{index:05d}"
        if kind == "onnx":
            self.root = os.path.join(out, stem + ".onnx")
            self.model = self.spec = self.root
            self.data = None
        elif kind == "external":
            self.root = os.path.join(out, stem)
            self.model = self.spec = os.path.join(self.root, "model.onnx")
            self.data = os.path.join(self.root, "weights.bin")
        elif kind == "coreml":
            self.root = os.path.join(out, stem + ".mlmodel")
            self.model = self.spec = self.root
            self.data = None
        else:
            self.root = os.path.join(out, stem + ".mlpackage")
            self.model = self.root
            self.spec = os.path.join(self.root, "Data", "com.apple.CoreML", "model.mlmodel")
            self.data = os.path.join(self.root, "Data", "com.apple.CoreML", "weights", "weight.bin")
        self.out = out

    @property
    def manifest_path(self):
        return os.path.join(self.root, "Manifest.json")


def load_proto(case, cls, path=None):
    data = read_file(case, path or case.spec)
    message = cls()
    try:
        message.ParseFromString(data)
    except Exception as error:
        raise Skip(f"does not parse ({type(error).__name__})")
    return message


def save_proto(case, message, path=None):
    write_file(case, path or case.spec, message.SerializeToString(deterministic=True))


# ------------------------------------------------------------------------------------------ proto walking


def is_map(field):
    return field.type == field.TYPE_MESSAGE and field.message_type.GetOptions().map_entry


def walk_messages(message, path=""):
    """Every message in a tree, with a readable path: (path, message)."""
    yield path, message
    for field, value in message.ListFields():
        if field.type != field.TYPE_MESSAGE:
            continue
        if is_map(field):
            value_field = field.message_type.fields_by_name["value"]
            if value_field.type == value_field.TYPE_MESSAGE:
                for key in sorted(value):
                    yield from walk_messages(value[key], f"{path}{field.name}[{key!r}].")
        elif field.label == field.LABEL_REPEATED:
            for index, item in enumerate(value):
                yield from walk_messages(item, f"{path}{field.name}[{index}].")
        else:
            yield from walk_messages(value, f"{path}{field.name}.")


NUMERIC = {CPP_INT32, CPP_INT64, CPP_UINT32, CPP_UINT64, CPP_DOUBLE, CPP_FLOAT, CPP_BOOL, CPP_ENUM}


def numeric_slots(root):
    """Every numeric field of every message in the tree, set or not (not unset members of a oneof):
    (path, message, field)."""
    for path, message in walk_messages(root):
        set_fields = {field.name for field, _ in message.ListFields()}
        for field in message.DESCRIPTOR.fields:
            if field.cpp_type not in NUMERIC:
                continue
            if field.label == field.LABEL_REPEATED:
                if len(getattr(message, field.name)):
                    yield path, message, field
            elif field.name in set_fields or field.containing_oneof is None:
                yield path, message, field


def hostile_for(field, rng):
    cpp = field.cpp_type
    if cpp == CPP_INT32:
        return rng.choice(INT32)
    if cpp == CPP_INT64:
        return rng.choice(INT64)
    if cpp == CPP_UINT32:
        return rng.choice(UINT32)
    if cpp == CPP_UINT64:
        return rng.choice(UINT64)
    if cpp in (CPP_FLOAT, CPP_DOUBLE):
        return rng.choice(FLOATS)
    if cpp == CPP_BOOL:
        return rng.random() < 0.5
    known = [value.number for value in field.enum_type.values]
    return rng.choice([99, -1, 2 ** 31 - 1, max(known) + 1] + known)


def set_numeric(message, field, value, rng):
    """Set a field (a random element of a repeated one); returns a description."""
    if field.label == field.LABEL_REPEATED:
        items = getattr(message, field.name)
        index = rng.randrange(len(items))
        try:
            items[index] = value
        except (ValueError, TypeError):  # a closed (proto2) enum refuses unknown values
            items[index] = rng.choice([v.number for v in field.enum_type.values]) if field.enum_type else 0
        return f"{field.name}[{index}]={items[index]!r}"
    try:
        setattr(message, field.name, value)
    except (ValueError, TypeError):
        if not field.enum_type:
            raise Skip(f"{field.name} refuses {value!r}")
        setattr(message, field.name, rng.choice([v.number for v in field.enum_type.values]))
    return f"{field.name}={getattr(message, field.name)!r}"


def mutate_numeric_generic(message, rng, path_filter=None):
    slots = [slot for slot in numeric_slots(message) if path_filter is None or path_filter(slot[0] + slot[2].name)]
    if not slots:
        raise Skip("no numeric field")
    path, owner, field = rng.choice(slots)
    return f"numeric {path}" + set_numeric(owner, field, hostile_for(field, rng), rng)


def replace_strings(message, old, new):
    """Replace every string field (and repeated string element) equal to `old` in the tree; returns how many."""
    count = 0
    for _, owner in walk_messages(message):
        for field, value in owner.ListFields():
            if field.type != field.TYPE_STRING:
                continue
            if field.label == field.LABEL_REPEATED:
                for index, item in enumerate(value):
                    if item == old:
                        value[index] = new
                        count += 1
            elif value == old:
                setattr(owner, field.name, new)
                count += 1
    return count


def short(value, limit=40):
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"...({len(value)} chars)'"


# ---------------------------------------------------------------------------------------------- protobuf wire


def varint(value):
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def key(field, wire=2):
    return varint(field << 3 | wire)


def length_field(field, payload):
    return key(field) + varint(len(payload)) + payload


def write_nested(case, path, levels, core):
    """Write nested length-delimited messages without building them: levels (outer first) are
    (before, field, after): level k is before + <field: level k+1> + after; the innermost is `core`."""
    sizes = [0] * (len(levels) + 1)
    sizes[-1] = len(core)
    for k in range(len(levels) - 1, -1, -1):
        before, field, after = levels[k]
        child = sizes[k + 1]
        sizes[k] = len(before) + len(key(field)) + len(varint(child)) + child + len(after)
    with open_for_write(case, path) as f:
        for k, (before, field, _) in enumerate(levels):
            f.write(before + key(field) + varint(sizes[k + 1]))
        f.write(core)
        for _, _, after in reversed(levels):
            f.write(after)
    return sizes[0]


# ---------------------------------------------------------------------------------------------- bytes level


def damage_bytes(data, rng):
    data = bytearray(data)
    if not data:
        return bytes(data), "empty already"
    kind = rng.choice(["flip", "flip", "flip", "truncate", "zero"])
    if kind == "flip":
        flips = rng.choice([1, 1, 2, 8, 32])
        for _ in range(flips):
            offset = rng.randrange(len(data))
            data[offset] ^= 1 << rng.randrange(8)
        return bytes(data), f"{flips} bit flip(s)"
    if kind == "truncate":
        size = rng.choice([0, 1, rng.randrange(len(data)), len(data) - 1]) if len(data) > 1 else 0
        return bytes(data[:size]), f"truncated to {size} of {len(data)} bytes"
    start = rng.randrange(len(data))
    run = min(len(data) - start, rng.choice([1, 4, 16, 256, 4096]))
    data[start:start + run] = bytes(run)
    return bytes(data), f"{run} bytes zeroed at {start}"


def mutate_bytes(case, rng):
    targets = [case.spec]
    if case.kind == "external":
        targets = [case.spec, case.data]
    elif case.kind == "package":
        targets = [case.spec] * 5 + [case.manifest_path]
        if os.path.isfile(case.data):
            targets += [case.data] * 3
    target = rng.choice(targets)
    data, what = damage_bytes(read_file(case, target), rng)
    write_file(case, target, data)
    return f"bytes{' ' + os.path.relpath(target, case.root) if target != case.root else ''}: {what}"


def mutate_invalid_utf8(case, rng):
    """Overwrite, in place, every occurrence of a name in the protobuf with the same number of 0xff bytes:
    lengths stay right, the string is no longer UTF-8."""
    data = read_file(case, case.spec)
    if case.kind in ("onnx", "external"):
        model = load_proto(case, onnx.ModelProto)
        names = [v.name for v in list(model.graph.input) + list(model.graph.output)] + [n.output[0] for n in model.graph.node if n.output]
    else:
        model = load_proto(case, Model_pb2.Model)
        names = [f.name for f in list(model.description.input) + list(model.description.output)]
    names = [n for n in names if len(n.encode()) >= 3 and n.encode() in data]
    if not names:
        raise Skip("no name to overwrite")
    name = rng.choice(names).encode()
    write_file(case, case.spec, data.replace(name, b"\xff" * len(name)))
    return f"name {short(name.decode())} overwritten with invalid UTF-8 everywhere"


# --------------------------------------------------------------------------------------------------- ONNX


def onnx_edit(function):
    def run(case, rng):
        model = load_proto(case, onnx.ModelProto)
        description = function(model, rng, case)
        save_proto(case, model)
        return description
    run.__name__ = function.__name__
    return run


def all_value_infos(graph):
    return list(graph.input) + list(graph.output) + list(graph.value_info)


def producer_of(graph, name):
    for node in graph.node:
        for index, output in enumerate(node.output):
            if output == name:
                return node, index
    return None, None


def rename_final_output(graph):
    """Let the node making the first graph output make <name>__hostile_pre instead; returns (pre, name)."""
    if not graph.output:
        raise Skip("no graph output")
    name = graph.output[0].name
    node, index = producer_of(graph, name)
    if node is None:
        raise Skip("graph output made by no node")
    node.output[index] = name + "__hostile_pre"
    return name + "__hostile_pre", name


@onnx_edit
def onnx_numeric(model, rng, case):
    return mutate_numeric_generic(model, rng)


@onnx_edit
def onnx_dims(model, rng, case):
    graph = model.graph
    choice = rng.choice(["value_info", "value_info", "initializer", "clear", "rank", "param"])
    infos = [v for v in all_value_infos(graph) if v.type.HasField("tensor_type")]
    if choice == "initializer" or not infos:
        tensors = [t for t in graph.initializer if len(t.dims)]
        if not tensors:
            raise Skip("no initializer with dims")
        tensor = rng.choice(tensors)
        index = rng.randrange(len(tensor.dims))
        tensor.dims[index] = rng.choice(DIMS)
        return f"initializer {short(tensor.name)} dims[{index}]={tensor.dims[index]}"
    info = rng.choice(infos)
    shape = info.type.tensor_type.shape
    if choice == "clear":
        info.type.tensor_type.ClearField("shape")
        return f"shape of {short(info.name)} removed"
    if choice == "rank":
        extra = rng.choice([1, 8, 100])
        for _ in range(extra):
            shape.dim.add().dim_value = 1
        return f"{extra} dims of 1 added to {short(info.name)}"
    if not len(shape.dim):
        raise Skip("no dims")
    index = rng.randrange(len(shape.dim))
    if choice == "param":
        shape.dim[index].dim_param = rng.choice(NAMES)
        return f"{short(info.name)} dim {index} param {short(shape.dim[index].dim_param)}"
    shape.dim[index].dim_value = rng.choice(DIMS)
    return f"{short(info.name)} dim {index}={shape.dim[index].dim_value}"


@onnx_edit
def onnx_attribute(model, rng, case):
    nodes = [n for n in model.graph.node if len(n.attribute)]
    if not nodes:
        raise Skip("no attributes")
    node = rng.choice(nodes)
    index = rng.randrange(len(node.attribute))
    attribute = node.attribute[index]
    what = f"{node.op_type} {short(node.name)} attribute {attribute.name}"
    action = rng.choice(["remove", "duplicate", "duplicate_other", "type", "type", "values", "rename", "unknown"])
    if action == "remove":
        del node.attribute[index]
        return f"{what} removed"
    if action == "duplicate":
        node.attribute.add().CopyFrom(attribute)
        return f"{what} duplicated"
    if action == "duplicate_other":
        copy_ = node.attribute.add()
        copy_.CopyFrom(attribute)
        if copy_.type == onnx.AttributeProto.INT:
            copy_.i = copy_.i + 1
        elif copy_.type == onnx.AttributeProto.FLOAT:
            copy_.f = -copy_.f - 1
        elif copy_.type == onnx.AttributeProto.INTS:
            copy_.ints.append(1)
        return f"{what} duplicated with another value"
    if action == "type":
        new = rng.choice(["float", "string", "ints_to_int", "tensor", "graph", "undefined", "mismatch", "type_99"])
        if new == "float":
            attribute.ClearField("i")
            del attribute.ints[:]
            attribute.type, attribute.f = onnx.AttributeProto.FLOAT, 1.5
        elif new == "string":
            attribute.ClearField("i")
            attribute.ClearField("f")
            del attribute.ints[:]
            attribute.type, attribute.s = onnx.AttributeProto.STRING, b"hostile"
        elif new == "ints_to_int":
            values = list(attribute.ints) or [3]
            del attribute.ints[:]
            attribute.type, attribute.i = onnx.AttributeProto.INT, values[0]
        elif new == "tensor":
            attribute.type = onnx.AttributeProto.TENSOR
            attribute.t.CopyFrom(helper.make_tensor("t", onnx.TensorProto.FLOAT, [2], [1.0, 2.0]))
        elif new == "graph":
            attribute.type = onnx.AttributeProto.GRAPH
            attribute.g.name = "empty"
        elif new == "undefined":
            attribute.type = onnx.AttributeProto.UNDEFINED
        elif new == "mismatch":  # the type field says one thing, the value field another
            attribute.type = onnx.AttributeProto.INTS if attribute.type != onnx.AttributeProto.INTS else onnx.AttributeProto.FLOAT
        else:
            try:
                attribute.type = 99
            except ValueError:
                attribute.type = onnx.AttributeProto.SPARSE_TENSORS
        return f"{what} type changed ({new})"
    if action == "values":
        if len(attribute.ints):
            mode = rng.choice(["empty", "long", "hostile"])
            if mode == "empty":
                del attribute.ints[:]
            elif mode == "long":
                attribute.ints.extend([1] * rng.choice([10, 1000]))
            else:
                attribute.ints[rng.randrange(len(attribute.ints))] = rng.choice(DIMS)
            return f"{what} ints {mode}"
        if attribute.type == onnx.AttributeProto.INT:
            attribute.i = rng.choice(INT64)
            return f"{what} i={attribute.i}"
        if attribute.type == onnx.AttributeProto.FLOAT:
            attribute.f = rng.choice(FLOATS)
            return f"{what} f={attribute.f}"
        if attribute.type == onnx.AttributeProto.STRING:
            attribute.s = rng.choice([b"", b"\x00", b"\xff\xfe", b"NOTSET" * 1000])
            return f"{what} s={short(attribute.s)}"
        raise Skip("attribute without simple values")
    if action == "rename":
        attribute.name = rng.choice(NAMES + ["axis", "perm", "to"])
        return f"{what} renamed {short(attribute.name)}"
    node.attribute.add().CopyFrom(helper.make_attribute(rng.choice(["hostile", "axis", "pads", "kernel_shape"]), rng.choice([7, [1, 2, 3], 1.0, "x"])))
    return f"{what}: unknown or extra attribute added"


@onnx_edit
def onnx_opset(model, rng, case):
    action = rng.choice(["version", "version", "remove", "duplicate", "domain", "ir", "node_domain"])
    defaults = [o for o in model.opset_import if o.domain in ("", "ai.onnx")]
    if action == "version" and defaults:
        defaults[0].version = rng.choice([0, 1, 6, 99, 2 ** 31, 2 ** 62, -1])
        return f"default opset version {defaults[0].version}"
    if action == "remove":
        del model.opset_import[:]
        return "opset_import removed"
    if action == "duplicate" and defaults:
        extra = model.opset_import.add()
        extra.CopyFrom(defaults[0])
        extra.version = rng.choice([1, 7, 99])
        return f"default opset imported twice (second {extra.version})"
    if action == "domain" and defaults:
        defaults[0].domain = rng.choice(["com.microsoft", "\x00", "ai.onnx.ml", "x" * 300])
        return f"default opset domain {short(defaults[0].domain)}"
    if action == "node_domain":
        node = rng.choice(model.graph.node)
        node.domain = rng.choice(["com.microsoft", "ai.onnx.ml", "hostile.domain", "\n"])
        return f"{node.op_type} node domain {short(node.domain)}"
    model.ir_version = rng.choice([0, 1, 3, 99, -1, 2 ** 62])
    return f"ir_version {model.ir_version}"


ONNX_TYPES = [0, 8, 99, 16, 11, 7, 9, 17, 23, -1, 2 ** 31 - 1]  # undefined, string, unknown, bfloat16, double...


@onnx_edit
def onnx_dtype(model, rng, case):
    graph = model.graph
    action = rng.choice(["cast", "cast", "initializer", "initializer", "elem_type"])
    if action == "cast":
        to = rng.choice([8, 8, 0, 99, 17, 16, -1, 2 ** 31 - 1])
        casts = [n for n in graph.node if n.op_type == "Cast"]
        if casts and rng.random() < 0.5:
            node = rng.choice(casts)
            for attribute in node.attribute:
                if attribute.name == "to":
                    attribute.i = to
            return f"Cast {short(node.name)} to={to}"
        pre, name = rename_final_output(graph)
        graph.node.append(helper.make_node("Cast", [pre], [name], name="hostile_cast", to=to))
        if to == 8 and rng.random() < 0.5:
            graph.output[0].type.tensor_type.elem_type = 8
            return "Cast to STRING appended at the output (output declared STRING)"
        return f"Cast to={to} appended at the output"
    if action == "initializer" and len(graph.initializer):
        tensor = rng.choice(graph.initializer)
        tensor.data_type = rng.choice(ONNX_TYPES)
        return f"initializer {short(tensor.name)} data_type={tensor.data_type}"
    infos = [v for v in all_value_infos(graph) if v.type.HasField("tensor_type")]
    if not infos:
        raise Skip("no typed value")
    info = rng.choice(infos)
    info.type.tensor_type.elem_type = rng.choice(ONNX_TYPES)
    return f"{short(info.name)} elem_type={info.type.tensor_type.elem_type}"


@onnx_edit
def onnx_raw_data(model, rng, case):
    tensors = [t for t in model.graph.initializer if t.raw_data]
    if not tensors:
        tensors = [t for t in model.graph.initializer if len(t.float_data) or len(t.int64_data)]
        if not tensors:
            raise Skip("no initializer data")
        tensor = rng.choice(tensors)
        values = tensor.float_data if len(tensor.float_data) else tensor.int64_data
        del values[len(values) // 2:]
        return f"initializer {short(tensor.name)} typed data halved"
    tensor = rng.choice(tensors)
    raw = tensor.raw_data
    action = rng.choice(["minus1", "half", "empty", "plus1", "plus4096", "double", "typed_too", "typed_instead"])
    if action == "minus1":
        tensor.raw_data = raw[:-1]
    elif action == "half":
        tensor.raw_data = raw[: len(raw) // 2]
    elif action == "empty":
        tensor.raw_data = b""
    elif action == "plus1":
        tensor.raw_data = raw + b"\x00"
    elif action == "plus4096":
        tensor.raw_data = raw + bytes(4096)
    elif action == "double":
        tensor.raw_data = raw + raw
    elif action == "typed_too":
        tensor.float_data.extend([1.0] * 3)
    else:
        tensor.ClearField("raw_data")
        tensor.float_data.extend([0.5] * rng.choice([0, 1, 7]))
    return f"initializer {short(tensor.name)} raw_data {action} ({len(raw)} bytes before)"


@onnx_edit
def onnx_names(model, rng, case):
    graph = model.graph
    new = rng.choice(NAMES)
    targets = [("input", v.name) for v in graph.input] + [("output", v.name) for v in graph.output]
    targets += [("initializer", t.name) for t in graph.initializer] + [("node output", o) for n in graph.node for o in n.output]
    where, old = rng.choice(targets)
    if rng.random() < 0.3:
        node = rng.choice(graph.node)
        node.name = new
        return f"node {node.op_type} named {short(new)}"
    if rng.random() < 0.6:
        count = replace_strings(graph, old, new)
        return f"{where} {short(old)} renamed {short(new)} everywhere ({count} places)"
    # One place only: the others keep the old name.
    for value in list(graph.input) + list(graph.output) + list(graph.initializer):
        if value.name == old:
            value.name = new
            return f"{where} {short(old)} renamed {short(new)} in its declaration only"
    node, index = producer_of(graph, old)
    if node is not None:
        node.output[index] = new
    return f"{where} {short(old)} renamed {short(new)} where made only"


@onnx_edit
def onnx_duplicate(model, rng, case):
    graph = model.graph
    action = rng.choice(["node", "node", "initializer", "initializer_other", "input", "output", "opset"])
    if action == "node":
        node = rng.choice(graph.node)
        graph.node.add().CopyFrom(node)
        return f"node {node.op_type} {short(node.name)} duplicated (two producers of {short(node.output[0] if node.output else '')})"
    if action in ("initializer", "initializer_other") and len(graph.initializer):
        tensor = rng.choice(graph.initializer)
        extra = graph.initializer.add()
        extra.CopyFrom(tensor)
        if action == "initializer_other":
            extra.ClearField("raw_data")
            del extra.float_data[:]
            del extra.dims[:]
            extra.dims.extend([3])
            extra.data_type = onnx.TensorProto.FLOAT
            extra.float_data.extend([7.0, 8.0, 9.0])
        return f"initializer {short(tensor.name)} duplicated{' with another shape' if action == 'initializer_other' else ''}"
    if action == "input" and len(graph.input):
        value = rng.choice(graph.input)
        graph.input.add().CopyFrom(value)
        return f"graph input {short(value.name)} duplicated"
    if action == "output" and len(graph.output):
        value = rng.choice(graph.output)
        graph.output.add().CopyFrom(value)
        return f"graph output {short(value.name)} duplicated"
    if len(model.opset_import):
        model.opset_import.add().CopyFrom(model.opset_import[0])
        return "opset_import entry duplicated"
    raise Skip("nothing to duplicate")


@onnx_edit
def onnx_dangling(model, rng, case):
    graph = model.graph
    action = rng.choice(["input", "input", "output", "remove_node", "cycle", "self"])
    nodes = [n for n in graph.node if len(n.input)]
    if action == "input" and nodes:
        node = rng.choice(nodes)
        index = rng.randrange(len(node.input))
        old = node.input[index]
        node.input[index] = rng.choice(["nothing_makes_this", "", "\x00"])
        return f"{node.op_type} input {index} ({short(old)}) names {short(node.input[index])}"
    if action == "output":
        ghost = graph.output.add()
        if len(graph.output) > 1:
            ghost.CopyFrom(graph.output[0])
        ghost.name = "ghost_output"
        return "graph output ghost_output that nothing produces"
    if action == "remove_node" and len(graph.node) > 1:
        index = rng.randrange(len(graph.node) - 1)
        node = graph.node[index]
        del graph.node[index]
        return f"node {node.op_type} {short(node.name)} removed (its outputs dangle)"
    if action == "cycle" and len(nodes) > 1:
        first = rng.choice(nodes[:-1])
        later = nodes[-1]
        first.input[0] = later.output[0]
        return f"{first.op_type} reads {short(later.output[0])}, made later (a cycle)"
    if not nodes:
        raise Skip("no node inputs")
    node = rng.choice(nodes)
    node.input[0] = node.output[0]
    return f"{node.op_type} {short(node.name)} reads its own output"


@onnx_edit
def onnx_outputs_removed(model, rng, case):
    count = len(model.graph.output)
    del model.graph.output[:]
    return f"all {count} graph outputs removed"


@onnx_edit
def onnx_shadow_initializer(model, rng, case):
    graph = model.graph
    initialized = {t.name for t in graph.initializer}
    action = rng.choice(["input", "input", "node_output"])
    if action == "input":
        inputs = [v for v in graph.input if v.name not in initialized]
        if not inputs:
            raise Skip("no graph input without initializer")
        name = rng.choice(inputs).name
    else:
        name = rng.choice([o for n in graph.node for o in n.output])
    dims = rng.choice([[1], [2, 2], [7, 7, 7], [0], [1, 1, 1, 1]])
    count = 1
    for d in dims:
        count *= d
    graph.initializer.append(helper.make_tensor(name, onnx.TensorProto.FLOAT, dims, [0.25] * count))
    return f"initializer named like {action.replace('_', ' ')} {short(name)} with shape {dims}"


@onnx_edit
def onnx_relu_chain(model, rng, case):
    graph = model.graph
    pre, name = rename_final_output(graph)
    count = rng.randrange(2000, 20001)
    previous = pre
    for index in range(count):
        output = name if index == count - 1 else f"hostile_relu_{index}"
        graph.node.append(helper.make_node("Relu", [previous], [output], name=f"hostile_relu_node_{index}"))
        previous = output
    return f"chain of {count} Relu nodes appended at the output"


@onnx_edit
def onnx_op_type(model, rng, case):
    node = rng.choice(model.graph.node)
    old = node.op_type
    node.op_type = rng.choice(["", "NotAnOp", old.lower(), old + "\x00", old * 2, "Loop", "If", "Scan", "Constant", "Einsum"])
    return f"{old} node op_type {short(node.op_type)}"


@onnx_edit
def onnx_nan(model, rng, case):
    tensors = [t for t in model.graph.initializer if t.data_type == onnx.TensorProto.FLOAT and len(t.raw_data) >= 4]
    if not tensors:
        raise Skip("no float initializer")
    tensor = rng.choice(tensors)
    raw = bytearray(tensor.raw_data)
    value = rng.choice([b"\x00\x00\xc0\x7f", b"\x00\x00\x80\x7f", b"\x00\x00\x80\xff", b"\xff\xff\x7f\x7f"])
    spots = rng.choice([1, len(raw) // 4])
    for _ in range(spots):
        at = rng.randrange(len(raw) // 4) * 4
        raw[at:at + 4] = value
    tensor.raw_data = bytes(raw)
    return f"initializer {short(tensor.name)}: {spots} value(s) set to {value.hex()} (NaN/inf/max)"


# ------------------------------------------------------------------------------------ ONNX external data


def externalize(case, model):
    """Move the raw_data of every initializer into weights.bin beside the model."""
    blob = bytearray()
    moved = 0
    for tensor in model.graph.initializer:
        if not tensor.raw_data:
            continue
        while len(blob) % 64:
            blob.append(0)
        offset, data = len(blob), tensor.raw_data
        blob += data
        tensor.ClearField("raw_data")
        tensor.data_location = onnx.TensorProto.EXTERNAL
        del tensor.external_data[:]
        for k, v in (("location", "weights.bin"), ("offset", str(offset)), ("length", str(len(data)))):
            entry = tensor.external_data.add()
            entry.key, entry.value = k, v
        moved += 1
    if not moved:
        raise Skip("no raw_data to move")
    write_file(case, case.data, bytes(blob))
    return moved


def external_tensors(model):
    return [t for t in model.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]


def set_entry(tensor, name, value):
    for entry in tensor.external_data:
        if entry.key == name:
            if value is None:
                tensor.external_data.remove(entry)
            else:
                entry.value = value
            return
    if value is not None:
        entry = tensor.external_data.add()
        entry.key, entry.value = name, value


def get_entry(tensor, name):
    for entry in tensor.external_data:
        if entry.key == name:
            return entry.value
    return None


@onnx_edit
def ext_location(model, rng, case):
    tensors = external_tensors(model)
    if not tensors:
        raise Skip("no external tensor")
    location = rng.choice(["../manifest.json", "../../../../../../../../etc/passwd", "/etc/passwd", os.path.abspath(case.data),
                           "/dev/zero", "/dev/urandom", "/proc/self/mem", "", ".", "..", "sub/../weights.bin",
                           f"../{os.path.basename(case.root)}/weights.bin", "weights.bin\x00.txt", "weights.bin/", "./weights.bin",
                           "missing.bin", "a" * 5000, "weights.bin\n", "model.onnx", "WEIGHTS.BIN", "weights.bin/../weights.bin"])
    everywhere = rng.random() < 0.5
    for tensor in tensors if everywhere else [rng.choice(tensors)]:
        set_entry(tensor, "location", location)
    return f"external location {short(location)} ({'all tensors' if everywhere else 'one tensor'})"


@onnx_edit
def ext_offset_length(model, rng, case):
    tensors = external_tensors(model)
    if not tensors:
        raise Skip("no external tensor")
    tensor = rng.choice(tensors)
    size = os.lstat(case.data).st_size if os.path.lexists(case.data) else 0
    which = rng.choice(["offset", "length", "both"])
    values = [str(size), str(size + 1), str(size + 4096), "-1", "-4096", str(2 ** 63 - 1), str(2 ** 64), str(2 ** 64 + 8), "abc", "",
              "+3", " 3", "0x10", "1e3", "0" * 30 + "4", "3.5", "\x00", "٣"]
    if which == "both":
        set_entry(tensor, "offset", str(2 ** 63 - 1))
        set_entry(tensor, "length", rng.choice(["2", "16", str(2 ** 63)]))
        return f"tensor {short(tensor.name)} offset 2^63-1 with length {get_entry(tensor, 'length')} (overflows)"
    value = rng.choice(values + (["0", "4", "1"] if which == "length" else []))
    set_entry(tensor, which, value)
    return f"tensor {short(tensor.name)} external {which}={short(value)} (file {size} bytes)"


@onnx_edit
def ext_entries(model, rng, case):
    tensors = external_tensors(model)
    if not tensors:
        raise Skip("no external tensor")
    tensor = rng.choice(tensors)
    action = rng.choice(["no_location", "no_length", "no_offset", "dup_location", "dup_offset", "unknown_key", "no_entries",
                         "default_location", "raw_too", "dtype", "graph_input"])
    if action == "no_location":
        set_entry(tensor, "location", None)
    elif action == "no_length":
        set_entry(tensor, "length", None)
    elif action == "no_offset":
        set_entry(tensor, "offset", None)
    elif action == "dup_location":
        entry = tensor.external_data.add()
        entry.key, entry.value = "location", rng.choice(["/etc/passwd", "../manifest.json", "other.bin"])
    elif action == "dup_offset":
        entry = tensor.external_data.add()
        entry.key, entry.value = "offset", "8"
    elif action == "unknown_key":
        entry = tensor.external_data.add()
        entry.key, entry.value = rng.choice([("checksum", "0" * 40), ("basepath", "/etc"), ("", ""), ("\x00", "x")])
    elif action == "no_entries":
        del tensor.external_data[:]
    elif action == "default_location":
        tensor.data_location = onnx.TensorProto.DEFAULT
    elif action == "raw_too":
        tensor.raw_data = bytes(8)
    elif action == "dtype":
        tensor.data_type = rng.choice([onnx.TensorProto.DOUBLE, onnx.TensorProto.STRING, onnx.TensorProto.INT8, 0])
    else:
        if not len(model.graph.input):
            raise Skip("no graph input")
        tensor.name = model.graph.input[0].name
        return f"external tensor renamed to the graph input {short(tensor.name)}"
    return f"tensor {short(tensor.name)} external_data: {action}"


def ext_data_file(case, rng):
    action = rng.choice(["truncate", "truncate", "empty", "remove", "directory", "grow"])
    data = read_file(case, case.data)
    if action == "truncate":
        size = rng.randrange(len(data)) if data else 0
        write_file(case, case.data, data[:size])
        return f"weights.bin truncated to {size} of {len(data)} bytes"
    if action == "empty":
        write_file(case, case.data, b"")
        return "weights.bin empty"
    if action == "remove":
        os.unlink(case.data)
        return "weights.bin removed"
    if action == "directory":
        os.unlink(case.data)
        os.mkdir(case.data)
        return "weights.bin is a directory"
    write_file(case, case.data, data + bytes(1 << 20))
    return "weights.bin 1 MiB longer than its tensors"


def ext_special(case, rng):
    """File-system damage around the data file (symbolic links, a FIFO, a sparse 8 GiB file, a device)."""
    check_inside(case, case.data)
    action = rng.choice(["link", "link", "link_dir", "loop", "fifo", "sparse", "sparse_offset"])
    case.special = True
    if action == "link":
        target = rng.choice(["/etc/passwd", "../manifest.json", "/dev/zero", "/dev/urandom", os.path.join(HERE, "Fixtures/onnx/external_data/weights.bin")])
        remove_path(case.data)
        os.symlink(target, case.data)
        return f"weights.bin -> {target}"
    if action == "link_dir":
        model = load_proto(case, onnx.ModelProto)
        os.symlink("/", os.path.join(case.root, "sub"))
        for tensor in external_tensors(model):
            set_entry(tensor, "location", rng.choice(["sub/etc/passwd", "sub/dev/zero", "sub" + os.path.abspath(case.data)]))
        save_proto(case, model)
        return f"sub -> / beside the model, locations {get_entry(external_tensors(model)[0], 'location')}"
    if action == "loop":
        remove_path(case.data)
        os.symlink("weights.bin", case.data)
        return "weights.bin -> weights.bin (a link loop)"
    if action == "fifo":
        remove_path(case.data)
        os.mkfifo(case.data)
        return "weights.bin is a FIFO"
    read_file(case, case.data)  # a regular file inside the case (truncate follows links)
    os.truncate(case.data, 8 << 30)
    if action == "sparse":
        return "weights.bin extended to 8 GiB (sparse)"
    model = load_proto(case, onnx.ModelProto)
    tensors = external_tensors(model)
    if not tensors:
        raise Skip("no external tensor")
    tensor = rng.choice(tensors)
    if rng.random() < 0.5:
        length = int(get_entry(tensor, "length") or 4)
        set_entry(tensor, "offset", str((8 << 30) - length))
        result = f"weights.bin 8 GiB (sparse), tensor {short(tensor.name)} read from its end"
    else:
        set_entry(tensor, "offset", "0")
        set_entry(tensor, "length", str(8 << 30))
        result = f"weights.bin 8 GiB (sparse), tensor {short(tensor.name)} length 8 GiB"
    save_proto(case, model)
    return result


# ----------------------------------------------------------------------------------- Core ML (classic)


def coreml_edit(function):
    def run(case, rng):
        model = load_proto(case, Model_pb2.Model)
        description = function(model, rng, case)
        save_proto(case, model)
        return description
    run.__name__ = function.__name__
    return run


def network(model):
    kind = model.WhichOneof("Type")
    if kind not in ("neuralNetwork", "neuralNetworkClassifier", "neuralNetworkRegressor"):
        raise Skip(f"not a classic neural network ({kind})")
    return getattr(model, kind)


@coreml_edit
def cm_numeric(model, rng, case):
    return mutate_numeric_generic(model, rng)


@coreml_edit
def cm_spec_version(model, rng, case):
    model.specificationVersion = rng.choice([0, -1, 99, 2 ** 31 - 1, 1, 10, 3 if case.kind == "package" else 5])
    return f"specificationVersion {model.specificationVersion}"


ARRAY_TYPES = [0, 99, 65568, 65600, 131104, 131080, 65552, -1]


@coreml_edit
def cm_description(model, rng, case):
    description = model.description
    features = [("input", f) for f in description.input] + [("output", f) for f in description.output]
    if not features:
        raise Skip("no features")
    where, feature = rng.choice(features)
    action = rng.choice(["shape", "shape", "dtype", "clear_shape", "clear_type", "rank", "image", "duplicate", "remove", "extra"])
    kind = feature.type.WhichOneof("Type")
    if action in ("shape", "dtype", "clear_shape", "rank") and kind == "multiArrayType":
        array = feature.type.multiArrayType
        if action == "shape" and len(array.shape):
            index = rng.randrange(len(array.shape))
            array.shape[index] = rng.choice(DIMS)
            return f"{where} {short(feature.name)} shape[{index}]={array.shape[index]}"
        if action == "dtype":
            array.dataType = rng.choice(ARRAY_TYPES)
            return f"{where} {short(feature.name)} dataType={array.dataType}"
        if action == "clear_shape":
            del array.shape[:]
            return f"{where} {short(feature.name)} shape removed"
        array.shape.extend([1] * rng.choice([1, 10, 100]))
        return f"{where} {short(feature.name)} rank raised to {len(array.shape)}"
    if action == "image" and kind == "imageType":
        image = feature.type.imageType
        setattr(image, rng.choice(["width", "height"]), rng.choice(DIMS))
        image.colorSpace = rng.choice([image.colorSpace, 0, 99])
        return f"{where} {short(feature.name)} image {image.width}x{image.height} colorSpace {image.colorSpace}"
    if action == "clear_type":
        feature.ClearField("type")
        return f"{where} {short(feature.name)} type removed"
    if action == "duplicate":
        (description.input if where == "input" else description.output).add().CopyFrom(feature)
        return f"{where} {short(feature.name)} declared twice"
    if action == "remove":
        features_of = description.input if where == "input" else description.output
        features_of.remove(feature)
        return f"{where} {short(feature.name)} removed from the description"
    extra = description.input.add()
    extra.CopyFrom(feature)
    extra.name = "hostile_extra_input"
    return f"extra input hostile_extra_input (like {where} {short(feature.name)}) that nothing reads"


@coreml_edit
def cm_names(model, rng, case):
    nn = network(model)
    new = rng.choice(NAMES)
    action = rng.choice(["everywhere", "everywhere", "declaration", "layer_name", "producer"])
    if action == "layer_name":
        layer = rng.choice(nn.layers)
        layer.name = new
        return f"layer {short(layer.name)} named {short(new)}"
    names = [f.name for f in model.description.input] + [f.name for f in model.description.output]
    names += [o for layer in nn.layers for o in layer.output]
    old = rng.choice(names)
    if action == "everywhere":
        count = replace_strings(model, old, new)
        return f"{short(old)} renamed {short(new)} everywhere ({count} places)"
    if action == "declaration":
        for feature in list(model.description.input) + list(model.description.output):
            if feature.name == old:
                feature.name = new
                return f"feature {short(old)} renamed {short(new)} in the description only"
    for layer in nn.layers:
        for index, output in enumerate(layer.output):
            if output == old:
                layer.output[index] = new
                return f"{short(old)} renamed {short(new)} in its layer only"
    raise Skip("name not found")


@coreml_edit
def cm_layers(model, rng, case):
    nn = network(model)
    layers = nn.layers
    if not len(layers):
        raise Skip("no layers")
    action = rng.choice(["duplicate", "duplicate", "remove", "input", "ghost", "cycle", "self", "clear", "no_inputs", "many_inputs", "same_output"])
    index = rng.randrange(len(layers))
    layer = layers[index]
    kind = layer.WhichOneof("layer")
    what = f"{kind} layer {short(layer.name)}"
    if action == "duplicate":
        layers.add().CopyFrom(layer)
        return f"{what} duplicated (two producers of {short(layer.output[0] if layer.output else '')})"
    if action == "remove" and len(layers) > 1:
        del layers[index]
        return f"{what} removed"
    if action == "input" and len(layer.input):
        layer.input[0] = rng.choice(["nothing_makes_this", "", "\x00"])
        return f"{what} input names {short(layer.input[0])}"
    if action == "ghost" and len(model.description.output):
        ghost = model.description.output.add()
        ghost.CopyFrom(model.description.output[0])
        ghost.name = "ghost_output"
        return "description output ghost_output that no layer makes"
    if action == "cycle" and index < len(layers) - 1 and len(layer.input):
        layer.input[0] = layers[-1].output[0]
        return f"{what} reads {short(layers[-1].output[0])}, made later (a cycle)"
    if action == "self" and len(layer.input) and len(layer.output):
        layer.input[0] = layer.output[0]
        return f"{what} reads its own output"
    if action == "clear" and kind:
        layer.ClearField(kind)
        return f"{what}: parameters removed (no layer type)"
    if action == "no_inputs":
        del layer.input[:]
        return f"{what} has no inputs"
    if action == "many_inputs" and len(layer.input):
        layer.input.extend([layer.input[0]] * 1000)
        return f"{what} reads its input 1001 times"
    if len(layer.output):
        layer.output.append(layer.output[0])
        return f"{what} names the same output twice"
    raise Skip("layer action does not apply")


@coreml_edit
def cm_outputs_removed(model, rng, case):
    count = len(model.description.output)
    del model.description.output[:]
    return f"all {count} description outputs removed"


def append_classic_layer(nn):
    last = nn.layers[-1]
    if not len(last.output):
        raise Skip("last layer without output")
    out = last.output[0]
    pre = out + "__hostile_pre"
    last.output[0] = pre
    return pre, out


@coreml_edit
def cm_activation_chain(model, rng, case):
    nn = network(model)
    pre, out = append_classic_layer(nn)
    count = 10000
    previous = pre
    for index in range(count):
        layer = nn.layers.add()
        layer.name = f"hostile_relu_{index}"
        layer.input.append(previous)
        previous = out if index == count - 1 else f"hostile_relu_{index}"
        layer.output.append(previous)
        layer.activation.ReLU.SetInParent()
    return f"{count} ReLU activation layers appended at {short(out)}"


@coreml_edit
def cm_layernorm(model, rng, case):
    nn = network(model)
    pre, out = append_classic_layer(nn)
    width = 1
    for feature in model.description.output:
        if feature.name == out and feature.type.WhichOneof("Type") == "multiArrayType" and len(feature.type.multiArrayType.shape):
            width = max(1, feature.type.multiArrayType.shape[-1])
    layer = nn.layers.add()
    layer.name = "hostile_layer_norm"
    layer.input.append(pre)
    layer.output.append(out)
    params = layer.layerNormalization
    params.normalizedShape.append(width)
    params.eps = rng.choice([-1.0, math.nan, math.inf, -math.inf, 0.0, -0.0, 3.4e38])
    gamma = rng.choice([1.0, 1.0, math.nan, math.inf])
    params.gamma.floatValue.extend([gamma] * width)
    params.beta.floatValue.extend([0.0] * width)
    return f"layerNormalization appended at {short(out)}: eps={params.eps} gamma={gamma} width {width}"


SCALE_FIELDS = ("eps", "epsilon", "alpha", "beta", "scale", "bias", "gamma", "shift", "mean", "variance", "minvalue", "maxvalue", "k")


def wants_nan(path):
    parts = path.lower().replace("[", ".").split(".")
    return any(p in SCALE_FIELDS or p.startswith(SCALE_FIELDS[:2]) for p in parts)


@coreml_edit
def cm_nan(model, rng, case):
    nn = network(model)
    slots = [s for s in numeric_slots(nn) if s[2].cpp_type == CPP_FLOAT and wants_nan(s[0] + s[2].name)]
    if not slots:
        slots = [s for s in numeric_slots(nn) if s[2].cpp_type == CPP_FLOAT]
    if not slots:
        raise Skip("no float field")
    path, owner, field = rng.choice(slots)
    value = rng.choice([math.nan, math.inf, -math.inf, -1.0])
    return f"nan {path}" + set_numeric(owner, field, value, rng)


@coreml_edit
def cm_weights(model, rng, case):
    nn = network(model)
    weights = [(p, m) for p, m in walk_messages(nn) if m.DESCRIPTOR.name == "WeightParams" and (len(m.floatValue) or m.float16Value or m.rawValue)]
    if not weights:
        raise Skip("no weights")
    path, params = rng.choice(weights)
    action = rng.choice(["truncate", "lengthen", "clear", "half16", "odd16", "both", "raw_odd", "quant"])
    if action == "truncate" and len(params.floatValue):
        del params.floatValue[len(params.floatValue) // 2:]
    elif action == "lengthen" and len(params.floatValue):
        params.floatValue.extend([0.5] * rng.choice([1, 1000]))
    elif action == "clear":
        params.ClearField("floatValue")
        params.ClearField("float16Value")
        params.ClearField("rawValue")
    elif action == "half16":
        values = len(params.floatValue) or 2
        params.ClearField("floatValue")
        params.float16Value = bytes(values)  # half the bytes needed
    elif action == "odd16":
        params.float16Value = (params.float16Value or bytes(8)) + b"\x01"
    elif action == "both":
        params.float16Value = bytes(2 * max(1, len(params.floatValue)))
        params.floatValue.append(1.0)
    elif action == "raw_odd":
        params.rawValue = bytes(rng.choice([1, 3, 7]))
    else:
        params.quantization.numberOfBits = rng.choice([0, 9, 33, 2 ** 64 - 1, 1])
        if rng.random() < 0.5:
            params.quantization.linearQuantization.scale.append(rng.choice([math.nan, 0.0, -1.0]))
        else:
            params.quantization.lookupTableQuantization.floatValue.extend([])
            params.quantization.lookupTableQuantization.SetInParent()
        params.rawValue = params.rawValue or bytes(3)
        return f"weights {path}: quantization bits {params.quantization.numberOfBits}"
    return f"weights {path}: {action}"


# ----------------------------------------------------------------------------------- Core ML (ML Program)


def main_block(model):
    if model.WhichOneof("Type") != "mlProgram":
        raise Skip("not an ML Program")
    functions = model.mlProgram.functions
    if "main" not in functions:
        raise Skip("no main function")
    function = functions["main"]
    if function.opset not in function.block_specializations:
        raise Skip("no block for the opset")
    return function, function.block_specializations[function.opset]


def named_value_types(model):
    return [m for _, m in walk_messages(model) if m.DESCRIPTOR.name == "NamedValueType"]


def tensor_types(model):
    return [(p, m) for p, m in walk_messages(model) if m.DESCRIPTOR.name == "TensorType"]


def producer_op(block, name):
    for op in block.operations:
        for output in op.outputs:
            if output.name == name:
                return op, output
    return None, None


@coreml_edit
def mil_opset(model, rng, case):
    function, block = main_block(model)
    action = rng.choice(["opset_consistent", "opset_mismatch", "extra", "remove", "program_version", "function_name", "second_function"])
    old = function.opset
    new = rng.choice(["CoreML99", "", "CoreML0", "iOS15", "CoreML5\x00", "coreml5", "CoreML" + "9" * 40])
    if action == "opset_consistent":
        function.opset = new
        function.block_specializations[new].CopyFrom(block)
        del function.block_specializations[old]
        return f"main opset {short(new)} (its block too)"
    if action == "opset_mismatch":
        function.opset = new
        return f"main opset {short(new)}, block still under {old}"
    if action == "extra":
        function.block_specializations[new].CopyFrom(block)
        return f"second block specialization {short(new)}"
    if action == "remove":
        function.ClearField("block_specializations")
        return "main has no block"
    if action == "program_version":
        model.mlProgram.version = rng.choice([0, 2, 99, -1, 2 ** 62])
        return f"program version {model.mlProgram.version}"
    if action == "function_name":
        name = rng.choice(["", "Main", "main\x00", "predict"])
        model.mlProgram.functions[name].CopyFrom(function)
        del model.mlProgram.functions["main"]
        return f"main function renamed {short(name)}"
    model.mlProgram.functions["other"].CopyFrom(function)
    return "second function 'other' (a copy of main)"


@coreml_edit
def mil_dims(model, rng, case):
    main_block(model)
    types_ = tensor_types(model)
    if not types_:
        raise Skip("no tensor types")
    path, tensor = rng.choice(types_)
    action = rng.choice(["size", "size", "size", "rank", "add_dim", "drop_dim", "unknown"])
    if action == "size" and len(tensor.dimensions):
        index = rng.randrange(len(tensor.dimensions))
        tensor.dimensions[index].constant.size = rng.choice(UDIMS)
        return f"{path}dimensions[{index}]={tensor.dimensions[index].constant.size}"
    if action == "rank":
        tensor.rank = rng.choice([-1, 0, 2 ** 62, tensor.rank + 1, 2 ** 31])
        return f"{path}rank={tensor.rank} ({len(tensor.dimensions)} dims)"
    if action == "add_dim":
        tensor.dimensions.add().constant.size = 1
        return f"{path}: a dim added without rank"
    if action == "drop_dim" and len(tensor.dimensions):
        del tensor.dimensions[-1]
        return f"{path}: last dim dropped, rank {tensor.rank} kept"
    if len(tensor.dimensions):
        tensor.dimensions[0].unknown.variadic = rng.random() < 0.5
        return f"{path}: dim 0 unknown (variadic={tensor.dimensions[0].unknown.variadic})"
    raise Skip("no dims")


MIL_TYPES = [0, 2, 1, 99, 40, 25, 37, 12, 13, 24, -1]


@coreml_edit
def mil_dtype(model, rng, case):
    main_block(model)
    types_ = tensor_types(model)
    if not types_:
        raise Skip("no tensor types")
    path, tensor = rng.choice(types_)
    old = tensor.dataType
    tensor.dataType = rng.choice(MIL_TYPES)
    return f"{path}dataType {old} -> {tensor.dataType}"


@coreml_edit
def mil_names(model, rng, case):
    function, block = main_block(model)
    new = rng.choice(NAMES)
    values = named_value_types(model)
    old = rng.choice(values).name
    action = rng.choice(["everywhere", "everywhere", "definition", "use", "input"])
    if action == "everywhere":
        count = replace_strings(model, old, new)
        return f"value {short(old)} renamed {short(new)} everywhere ({count} places)"
    if action == "input" and len(function.inputs):
        function.inputs[0].name = new
        return f"function input {short(old)} renamed {short(new)} (description and uses not)"
    if action == "definition":
        for value in values:
            if value.name == old:
                value.name = new
                return f"value {short(old)} renamed {short(new)} where defined only"
    for _, message in walk_messages(block):
        if message.DESCRIPTOR.name == "Binding" and message.name == old:
            message.name = new
            return f"a use of {short(old)} renamed {short(new)}"
    raise Skip("name not used")


@coreml_edit
def mil_duplicate(model, rng, case):
    function, block = main_block(model)
    action = rng.choice(["op", "op", "output", "input", "feature", "op_outputs"])
    if action == "op":
        op = rng.choice(block.operations)
        block.operations.add().CopyFrom(op)
        return f"{op.type} op {short(op.outputs[0].name if op.outputs else '')} duplicated"
    if action == "output" and len(block.outputs):
        block.outputs.append(block.outputs[0])
        return f"block output {short(block.outputs[0])} listed twice"
    if action == "input" and len(function.inputs):
        function.inputs.add().CopyFrom(function.inputs[0])
        return f"function input {short(function.inputs[0].name)} declared twice"
    if action == "feature" and len(model.description.output):
        model.description.output.add().CopyFrom(model.description.output[0])
        return f"description output {short(model.description.output[0].name)} declared twice"
    ops = [op for op in block.operations if len(op.outputs)]
    if not ops:
        raise Skip("no op with outputs")
    op = rng.choice(ops)
    op.outputs.add().CopyFrom(op.outputs[0])
    return f"{op.type} op names output {short(op.outputs[0].name)} twice"


@coreml_edit
def mil_dangling(model, rng, case):
    function, block = main_block(model)
    action = rng.choice(["input", "input", "block_output", "ghost", "remove", "before_def", "self"])
    bindings = [m for _, m in walk_messages(block) if m.DESCRIPTOR.name == "Binding" and m.WhichOneof("binding") == "name"]
    if action == "input" and bindings:
        binding = rng.choice(bindings)
        old = binding.name
        binding.name = rng.choice(["undefined_value", "", "\x00"])
        return f"a use of {short(old)} names {short(binding.name)}"
    if action == "block_output" and len(block.outputs):
        block.outputs[0] = "undefined_value"
        return "block output names undefined_value"
    if action == "ghost" and len(model.description.output):
        ghost = model.description.output.add()
        ghost.CopyFrom(model.description.output[0])
        ghost.name = "ghost_output"
        block.outputs.append("ghost_output")
        return "declared output ghost_output (and block output) that no op makes"
    if action == "remove" and len(block.operations) > 1:
        index = rng.randrange(len(block.operations) - 1)
        op = block.operations[index]
        del block.operations[index]
        return f"{op.type} op {short(op.outputs[0].name if op.outputs else '')} removed"
    if action == "before_def" and len(block.operations) > 1:
        ops = [copy.deepcopy(op) for op in block.operations]
        del block.operations[:]
        block.operations.extend([ops[-1]] + ops[:-1])
        return f"last op ({ops[-1].type}) moved first: used before its inputs are made"
    ops = [op for op in block.operations if len(op.outputs) and len(op.inputs)]
    if not ops:
        raise Skip("no op with inputs")
    op = rng.choice(ops)
    argument = op.inputs[sorted(op.inputs)[0]]
    if not len(argument.arguments):
        raise Skip("no binding")
    argument.arguments[0].name = op.outputs[0].name
    return f"{op.type} op reads its own output"


@coreml_edit
def mil_outputs_removed(model, rng, case):
    function, block = main_block(model)
    action = rng.choice(["block", "description", "both"])
    if action in ("block", "both"):
        del block.outputs[:]
    if action in ("description", "both"):
        del model.description.output[:]
    return f"outputs removed ({action})"


def rename_block_output(block):
    if not len(block.outputs):
        raise Skip("no block output")
    out = block.outputs[0]
    op, output = producer_op(block, out)
    if op is None:
        raise Skip("block output made by no op")
    inner = out + "_hostile_inner"
    output.name = inner
    return inner, out, copy.deepcopy(output.type)


@coreml_edit
def mil_relu_chain(model, rng, case):
    function, block = main_block(model)
    inner, out, value_type = rename_block_output(block)
    count = 10000
    previous = inner
    for index in range(count):
        op = block.operations.add()
        op.type = "relu"
        op.inputs["x"].arguments.add().name = previous
        previous = out if index == count - 1 else f"hostile_relu_{index}"
        output = op.outputs.add()
        output.name = previous
        output.type.CopyFrom(value_type)
    return f"{count} relu ops appended at {short(out)}"


def mil_cond_nest(case, rng):
    """`cond` ops nested `depth` deep, each then-branch holding the next; written as wire format."""
    model = load_proto(case, Model_pb2.Model)
    function, block = main_block(model)
    depth = rng.choice([1000, 1000, 100000])
    inner, out, value_type = rename_block_output(block)
    pred = block.operations.add()
    pred.type = "const"
    pred_type = MIL_pb2.ValueType()
    pred_type.tensorType.dataType = MIL_pb2.BOOL
    pred_type.tensorType.rank = 0
    output = pred.outputs.add()
    output.name = "hostile_pred"
    output.type.CopyFrom(pred_type)
    pred.attributes["val"].type.CopyFrom(pred_type)
    pred.attributes["val"].immediateValue.tensor.bools.values.append(True)

    def names(level):
        return out if level == 0 else f"hostile_cond_{level}"

    def fixed(level):  # the cond op without its then-block: type, pred, output, else-block
        op = MIL_pb2.Operation()
        op.type = "cond"
        op.inputs["pred"].arguments.add().name = "hostile_pred"
        result = op.outputs.add()
        result.name = names(level)
        result.type.CopyFrom(value_type)
        op.blocks.add().outputs.append(inner)
        return op.SerializeToString(deterministic=True)

    def block_outputs(name):
        b = MIL_pb2.Block()
        b.outputs.append(name)
        return b.SerializeToString(deterministic=True)

    opset = function.opset
    stripped_model = copy.deepcopy(model)
    stripped_model.ClearField("mlProgram")
    program = copy.deepcopy(model.mlProgram)
    program.ClearField("functions")
    stripped_function = copy.deepcopy(function)
    stripped_function.ClearField("block_specializations")
    field = {f.name: f.number for f in Model_pb2.Model.DESCRIPTOR.fields}
    levels = [
        (stripped_model.SerializeToString(deterministic=True), field["mlProgram"], b""),
        (program.SerializeToString(deterministic=True), 2, b""),  # Program.functions
        (length_field(1, b"main"), 2, b""),  # map entry: key, value
        (stripped_function.SerializeToString(deterministic=True), 3, b""),  # Function.block_specializations
        (length_field(1, opset.encode()), 2, b""),
        (block.SerializeToString(deterministic=True), 3, b""),  # Block.operations: the outermost cond last
    ]
    for level in range(depth):
        levels.append((b"", 4, fixed(level)))  # Operation.blocks: the then-block first, the else-block after
        if level < depth - 1:
            levels.append((b"", 3, block_outputs(names(level + 1))))  # then-block: the next cond and its output
    size = write_nested(case, case.spec, levels, block_outputs(inner))
    return f"cond ops nested {depth} deep at {short(out)} ({size} bytes, written as wire format)"


@coreml_edit
def mil_const(model, rng, case):
    function, block = main_block(model)
    consts = [op for op in block.operations if op.type == "const" and "val" in op.attributes]
    blobs = [op for op in consts if op.attributes["val"].WhichOneof("value") == "blobFileValue"]
    immediates = [op for op in consts if op.attributes["val"].WhichOneof("value") == "immediateValue"]
    if blobs and (rng.random() < 0.6 or not immediates):
        op = rng.choice(blobs)
        blob = op.attributes["val"].blobFileValue
        name = op.outputs[0].name if op.outputs else ""
        if rng.random() < 0.55:
            size = os.lstat(case.data).st_size if os.path.isfile(case.data) else 0
            blob.offset = rng.choice([0, 1, 63, 65, size, size + 64, size - 64 if size > 64 else 0, 2 ** 62, 2 ** 64 - 1, 2 ** 63])
            return f"const {short(name)} blob offset {blob.offset} (weight.bin {size} bytes)"
        blob.fileName = rng.choice(["@model_path/../../../../etc/passwd", "/etc/passwd", "", "@model_path/weights/missing.bin", "weight.bin",
                                    "@model_path/weights/weight.bin\x00x", "@model_path/../../Manifest.json", "@model_path/model.mlmodel",
                                    "@model_path/weights", "@model_path/weights/../../../../../manifest.json", "/dev/zero"])
        return f"const {short(name)} blob fileName {short(blob.fileName)}"
    if not immediates:
        raise Skip("no const")
    op = rng.choice(immediates)
    value = op.attributes["val"]
    tensor = value.immediateValue.tensor
    kind = tensor.WhichOneof("value")
    name = op.outputs[0].name if op.outputs else ""
    action = rng.choice(["truncate", "lengthen", "other_kind", "bytes_odd", "empty"])
    if action in ("truncate", "lengthen") and kind in ("floats", "ints", "bools", "strings", "longInts", "doubles"):
        values = getattr(tensor, kind).values
        if action == "truncate":
            del values[max(0, len(values) - 1 - len(values) // 2):]
        else:
            values.extend([values[0]] * 1000 if len(values) else [])
        return f"const {short(name)} {kind} {action}d to {len(values)}"
    if action == "other_kind":
        tensor.ints.values.extend([1, 2, 3])
        return f"const {short(name)} {kind} replaced by ints"
    if action == "bytes_odd":
        tensor.bytes.values = b"\x01\x02\x03"
        return f"const {short(name)} holds 3 raw bytes"
    value.immediateValue.ClearField("tensor")
    return f"const {short(name)} immediate value empty"


@coreml_edit
def mil_nan(model, rng, case):
    function, block = main_block(model)
    consts = [op for op in block.operations if op.type == "const" and "val" in op.attributes
              and op.attributes["val"].WhichOneof("value") == "immediateValue"
              and op.attributes["val"].immediateValue.tensor.WhichOneof("value") == "floats"]
    if not consts:
        raise Skip("no float const")
    epsilons = [op for op in consts if op.outputs and "eps" in op.outputs[0].name.lower()]
    op = rng.choice(epsilons if epsilons and rng.random() < 0.6 else consts)
    values = op.attributes["val"].immediateValue.tensor.floats.values
    if not len(values):
        raise Skip("empty const")
    value = rng.choice([math.nan, math.inf, -math.inf, -1.0])
    values[rng.randrange(len(values))] = value
    return f"const {short(op.outputs[0].name)} value {value}"


@coreml_edit
def mil_op(model, rng, case):
    function, block = main_block(model)
    ops = [op for op in block.operations if op.type != "const"]
    if not ops:
        raise Skip("no ops")
    op = rng.choice(ops)
    what = f"{op.type} op {short(op.outputs[0].name if op.outputs else '')}"
    action = rng.choice(["type", "remove_input", "extra_input", "two_bindings", "no_bindings", "value_binding", "no_outputs", "blocks"])
    if action == "type":
        old = op.type
        op.type = rng.choice(["", "nope", "cond", "while_loop", old.upper(), old + "\x00", "const"])
        return f"{old} op type {short(op.type)}"
    if action == "remove_input" and len(op.inputs):
        name = rng.choice(sorted(op.inputs))
        del op.inputs[name]
        return f"{what}: input {name} removed"
    if action == "extra_input":
        own = op.outputs[0].name if len(op.outputs) else "undefined_value"
        op.inputs[rng.choice(["hostile", "x", ""])].arguments.add().name = own if rng.random() < 0.3 else "undefined_value"
        return f"{what}: extra input"
    argument = op.inputs[sorted(op.inputs)[0]] if len(op.inputs) else None
    if action == "two_bindings" and argument is not None and len(argument.arguments):
        argument.arguments.add().CopyFrom(argument.arguments[0])
        return f"{what}: an input bound twice"
    if action == "no_bindings" and argument is not None:
        del argument.arguments[:]
        return f"{what}: an input with no binding"
    if action == "value_binding" and argument is not None and len(argument.arguments):
        binding = argument.arguments[0]
        binding.value.type.tensorType.dataType = MIL_pb2.FLOAT32
        binding.value.type.tensorType.rank = 1
        binding.value.type.tensorType.dimensions.add().constant.size = rng.choice([1, 2 ** 40])
        binding.value.immediateValue.tensor.floats.values.append(1.0)
        return f"{what}: an input bound to an inline value"
    if action == "no_outputs":
        del op.outputs[:]
        return f"{what}: outputs removed"
    op.blocks.add().outputs.append("undefined_value")
    return f"{what}: an unexpected block"


def weight_blobs(data):
    """Offsets of the 64-byte blob headers (sentinel 0xDEADBEEF) in a weight.bin."""
    return [at for at in range(64, len(data) - 8, 64) if data[at:at + 4] == b"\xef\xbe\xad\xde"]


def mil_weight_header(case, rng):
    data = bytearray(read_file(case, case.data))
    blobs = weight_blobs(data)
    if not blobs:
        raise Skip("no blob in weight.bin")
    at = rng.choice(blobs)
    field = rng.choice(["sentinel", "dtype", "size", "size", "offset", "offset", "file_count", "file_version", "nan"])
    if field == "sentinel":
        data[at:at + 4] = b"\xef\xbe\xad\xdf"
        what = "sentinel"
    elif field == "dtype":
        value = rng.choice([0, 99, 2 ** 32 - 1, 2, 14])
        data[at + 4:at + 8] = value.to_bytes(4, "little")
        what = f"dtype {value}"
    elif field == "size":
        old = int.from_bytes(data[at + 8:at + 16], "little")
        value = rng.choice([0, old - 1, old + 1, old * 2, 2 ** 31, 2 ** 62, 2 ** 64 - 1, len(data)])
        data[at + 8:at + 16] = max(0, value).to_bytes(8, "little")
        what = f"sizeInBytes {old} -> {max(0, value)}"
    elif field == "offset":
        old = int.from_bytes(data[at + 16:at + 24], "little")
        value = rng.choice([0, at, old + 1, len(data), len(data) - 1, 2 ** 62, 2 ** 64 - 1, 64])
        data[at + 16:at + 24] = value.to_bytes(8, "little")
        what = f"offset {old} -> {value}"
    elif field == "file_count":
        value = rng.choice([0, 2 ** 32 - 1, 1000])
        data[0:4] = value.to_bytes(4, "little")
        at, what = 0, f"file header count {value}"
    elif field == "file_version":
        value = rng.choice([0, 1, 3, 99])
        data[4:8] = value.to_bytes(4, "little")
        at, what = 0, f"file header version {value}"
    else:
        start = int.from_bytes(data[at + 16:at + 24], "little")
        size = int.from_bytes(data[at + 8:at + 16], "little")
        if size < 2 or start + size > len(data):
            raise Skip("blob outside the file")
        pattern = rng.choice([b"\x00\x7e", b"\x00\x7c", b"\x00\x00\xc0\x7f"])  # fp16 NaN, fp16 inf, fp32 NaN
        data[start:start + len(pattern)] = pattern
        what = f"first value bytes {pattern.hex()} (NaN/inf)"
    write_file(case, case.data, bytes(data))
    return f"weight.bin blob header at {at}: {what}"


# -------------------------------------------------------------------------------------------- package files


def fresh_id(rng):
    return "-".join("".join(rng.choice("0123456789abcdef") for _ in range(n)) for n in (8, 4, 4, 4, 12))


def pkg_manifest(case, rng):
    try:
        text = read_file(case, case.manifest_path).decode()
        manifest = json.loads(text)
        entries = manifest["itemInfoEntries"]
        root = manifest["rootModelIdentifier"]
        entries[root]["path"]
    except (ValueError, KeyError, TypeError) as error:
        raise Skip(f"Manifest.json unreadable ({type(error).__name__})")
    weights_id = next((k for k in entries if k != root), None)
    action = rng.choice(["path_parent", "path_parent", "path_abs", "path_abs", "weights_out", "path_nul", "path_dir", "path_empty",
                         "path_dots", "missing", "garbage", "empty", "json_type", "truncated", "version", "huge_numbers", "deep",
                         "many_entries", "root", "duplicate_keys", "over_limit", "bom", "utf16", "fields_missing"])
    raw = None
    if action == "path_parent":
        entries[root]["path"] = rng.choice(["../../x", "../Manifest.json", "../../../../manifest.json", "com.apple.CoreML/../../Manifest.json",
                                            "com.apple.CoreML/../../../../../../etc/passwd"])
        what = f"model path {entries[root]['path']}"
    elif action == "path_abs":
        entries[root]["path"] = rng.choice(["/etc/passwd", os.path.abspath(case.spec), os.path.abspath(case.spec).replace(case.out, "/nonexistent"),
                                            "/dev/zero"])
        what = f"model path {entries[root]['path']}"
    elif action == "weights_out":
        if weights_id is None:
            weights_id = fresh_id(rng)
            entries[weights_id] = {"author": "com.apple.CoreML", "description": "CoreML Model Weights", "name": "weights", "path": ""}
        entries[weights_id]["path"] = rng.choice(["../../../../", "/tmp/weights", "/etc", "../../x/weights", "com.apple.CoreML/model.mlmodel"])
        what = f"weights path {entries[weights_id]['path']}"
    elif action == "path_nul":
        entries[root]["path"] = "com.apple.CoreML/model.mlmodel\u0000.txt"
        what = "model path with NUL"
    elif action == "path_dir":
        entries[root]["path"] = rng.choice(["com.apple.CoreML", "com.apple.CoreML/weights", ".", "com.apple.CoreML/weights/weight.bin"])
        what = f"model path {entries[root]['path']}"
    elif action == "path_empty":
        entries[root]["path"] = rng.choice(["", "/", "//", rng.choice([5, None, ["x"]])])
        what = f"model path {entries[root]['path']!r}"
    elif action == "path_dots":
        entries[root]["path"] = rng.choice(["com.apple.CoreML/./model.mlmodel", "com.apple.CoreML//model.mlmodel", "./com.apple.CoreML/model.mlmodel",
                                            "com.apple.CoreML/model.mlmodel/", "com.apple.CoreML\\model.mlmodel"])
        what = f"model path {entries[root]['path']}"
    elif action == "missing":
        os.unlink(case.manifest_path)
        return "Manifest.json removed"
    elif action == "garbage":
        raw = bytes(rng.randrange(256) for _ in range(rng.choice([1, 100, 4000])))
        what = f"{len(raw)} random bytes"
    elif action == "empty":
        raw, what = b"", "empty"
    elif action == "json_type":
        raw = rng.choice([b"null", b"[]", b"1", b'"x"', b"{}", b"true"])
        what = raw.decode()
    elif action == "truncated":
        raw = text.encode()[: rng.randrange(len(text))]
        what = f"truncated to {len(raw)} bytes"
    elif action == "version":
        manifest["fileFormatVersion"] = rng.choice(["2.0.0", "", 1, None, "1", "1.0.0.0.0", "99999999999999999999999.0", "-1.0", "1\u0000"])
        what = f"fileFormatVersion {manifest['fileFormatVersion']!r}"
    elif action == "huge_numbers":
        key_ = rng.choice(["fileFormatVersion", "rootModelIdentifier", "itemInfoEntries"])
        number = rng.choice(["1e999", "-1e999", "123456789012345678901234567890", "1" * 400, "-0"])
        manifest[key_] = "HOSTILE_NUMBER"
        raw = json.dumps(manifest, indent=4).replace('"HOSTILE_NUMBER"', number).encode()
        what = f"{key_} is the number {number[:30]}"
    elif action == "deep":
        depth = rng.choice([1000, 100000])
        raw = text.replace('"CoreML Model Specification"', "[" * depth + "]" * depth, 1).encode()
        what = f"description nested {depth} arrays deep"
    elif action == "many_entries":
        count = rng.choice([5000, 100000])
        for index in range(count):
            entries[f"{index:08d}-hostile"] = {"author": "x", "description": "x", "name": "weights", "path": f"w{index}"}
        what = f"{count} extra item entries"
    elif action == "root":
        manifest["rootModelIdentifier"] = rng.choice([weights_id or "nope", "nope", "", 5, None])
        what = f"rootModelIdentifier {manifest['rootModelIdentifier']!r}"
    elif action == "duplicate_keys":
        other = json.dumps(weights_id or "nope")
        raw = text.replace('"rootModelIdentifier"', f'"rootModelIdentifier": {other},\n    "rootModelIdentifier"', 1).encode()
        what = "rootModelIdentifier given twice"
    elif action == "over_limit":
        size = rng.choice([(1 << 20) - 1, 1 << 20, (1 << 20) + 1])
        body = text.encode()
        raw = body[:-1] + b" " * max(0, size - len(body)) + body[-1:]
        what = f"padded to {len(raw)} bytes"
    elif action == "bom":
        raw, what = b"\xef\xbb\xbf" + text.encode(), "UTF-8 byte order mark"
    elif action == "utf16":
        raw, what = text.encode("utf-16"), "UTF-16"
    else:
        field_ = rng.choice(["author", "description", "name", "path"])
        entries[root].pop(field_, None)
        what = f"model item without {field_}"
    write_file(case, case.manifest_path, raw if raw is not None else json.dumps(manifest, indent=4).encode())
    return f"Manifest.json: {what}"


def pkg_missing(case, rng):
    check_inside(case, case.spec)
    weights = os.path.dirname(case.data)
    action = rng.choice(["model", "weight_bin", "weights_dir", "weights_file", "model_dir", "data", "junk", "weight_empty", "model_empty"])
    if action == "model":
        os.unlink(case.spec)
    elif action == "weight_bin":
        if not os.path.isfile(case.data):
            raise Skip("no weight.bin")
        os.unlink(case.data)
    elif action == "weights_dir":
        if not os.path.isdir(weights):
            raise Skip("no weights folder")
        shutil.rmtree(weights)
    elif action == "weights_file":
        if os.path.isdir(weights):
            shutil.rmtree(weights)
        write_file(case, weights, b"not a folder")
    elif action == "model_dir":
        os.unlink(case.spec)
        os.mkdir(case.spec)
    elif action == "data":
        shutil.rmtree(os.path.join(case.root, "Data"))
    elif action == "junk":
        write_file(case, os.path.join(os.path.dirname(case.spec), "junk.mlmodel"), b"\x08\x04")
    elif action == "weight_empty":
        if not os.path.isfile(case.data):
            raise Skip("no weight.bin")
        write_file(case, case.data, b"")
    else:
        write_file(case, case.spec, b"")
    return f"package: {action.replace('_', ' ')}"


def pkg_special(case, rng):
    """Symbolic links out of the package, FIFOs, sparse 8 GiB files."""
    check_inside(case, case.spec)
    action = rng.choice(["link"] * 4 + ["fifo"] * 2 + ["sparse"] * 2)
    data_folder = os.path.join(case.root, "Data")
    core_folder = os.path.dirname(case.spec)
    weights = os.path.dirname(case.data)
    has_weights = os.path.isfile(case.data)
    base_core = os.path.join(HERE, case.base, "Data", "com.apple.CoreML")
    case.special = True
    if action == "link":
        choices = [("model", "/etc/passwd"), ("model", "/dev/zero"), ("model", os.path.join(base_core, "model.mlmodel")),
                   ("data", "/"), ("data_passwd", "/"), ("core", base_core), ("manifest", "/etc/passwd"), ("manifest", "/dev/zero"),
                   ("model", "model.mlmodel")]
        if has_weights:
            choices += [("weight", "/etc/passwd"), ("weight", "/dev/zero"), ("weight", "/dev/urandom"), ("weight", "../../../../manifest.json"),
                        ("weight", "weight.bin"), ("weights", "/"), ("weights", "/tmp"), ("weights", ".."),
                        ("weight", os.path.join(base_core, "weights", "weight.bin"))] * 2
        what, target = rng.choice(choices)
        path = {"model": case.spec, "data": data_folder, "data_passwd": data_folder, "core": core_folder, "manifest": case.manifest_path,
                "weight": case.data, "weights": weights}[what]
        if what == "data_passwd":
            manifest = json.loads(read_file(case, case.manifest_path))
            manifest["itemInfoEntries"][manifest["rootModelIdentifier"]]["path"] = "etc/passwd"
            write_file(case, case.manifest_path, json.dumps(manifest, indent=4).encode())
        remove_path(path)
        os.symlink(target, path)
        return f"link {os.path.relpath(path, case.root)} -> {target}" + (" (model path etc/passwd)" if what == "data_passwd" else "")
    if action == "fifo":
        path = rng.choice([case.spec, case.manifest_path] + ([case.data] * 3 if has_weights else []))
        remove_path(path)
        os.mkfifo(path)
        return f"{os.path.relpath(path, case.root)} is a FIFO"
    choices = ["model", "manifest"] + (["weight", "weight", "weight_end", "weight_size"] if has_weights else [])
    what = rng.choice(choices)
    if what in ("weight_end", "weight_size"):
        data = bytearray(read_file(case, case.data))
        blobs = weight_blobs(data)
        if not blobs:
            raise Skip("no blob")
        at = rng.choice(blobs)
        size = int.from_bytes(data[at + 8:at + 16], "little")
        if what == "weight_end":
            data[at + 16:at + 24] = ((8 << 30) - size).to_bytes(8, "little")
            note = f"blob at {at} read from its end"
        else:
            data[at + 8:at + 16] = ((8 << 30) - 4096).to_bytes(8, "little")
            note = f"blob at {at} {(8 << 30) - 4096} bytes long"
        write_file(case, case.data, bytes(data))
        os.truncate(case.data, 8 << 30)
        return f"weight.bin 8 GiB (sparse), {note}"
    path = {"model": case.spec, "manifest": case.manifest_path, "weight": case.data}[what]
    read_file(case, path)  # a regular file inside the case
    os.truncate(path, 8 << 30)
    return f"{os.path.relpath(path, case.root)} extended to 8 GiB (sparse)"


# ------------------------------------------------------------------------------------------------ catalogue
# (mutation, stage, weight): stages run in order (0 protobuf, 1 bytes, 2 package files, 3 file system);
# a case gets at most one stage-3 mutation.

ONNX_MUTATIONS = [
    (onnx_numeric, 0, 4), (onnx_dims, 0, 3), (onnx_attribute, 0, 3), (onnx_opset, 0, 2), (onnx_dtype, 0, 3), (onnx_raw_data, 0, 2),
    (onnx_names, 0, 2), (onnx_duplicate, 0, 2), (onnx_dangling, 0, 2), (onnx_outputs_removed, 0, 0.5), (onnx_shadow_initializer, 0, 1),
    (onnx_relu_chain, 0, 0.5), (onnx_op_type, 0, 1), (onnx_nan, 0, 1), (mutate_invalid_utf8, 1, 0.5), (mutate_bytes, 1, 4),
]
EXTERNAL_MUTATIONS = [
    (ext_location, 0, 4), (ext_offset_length, 0, 4), (ext_entries, 0, 3), (onnx_dims, 0, 0.5), (onnx_dtype, 0, 0.5),
    (onnx_duplicate, 0, 0.5), (ext_data_file, 2, 2), (mutate_bytes, 1, 1), (ext_special, 3, 3),
]
COREML_MUTATIONS = [
    (cm_numeric, 0, 4), (cm_spec_version, 0, 1), (cm_description, 0, 3), (cm_names, 0, 2), (cm_layers, 0, 4), (cm_outputs_removed, 0, 0.5),
    (cm_activation_chain, 0, 0.5), (cm_layernorm, 0, 1), (cm_nan, 0, 2), (cm_weights, 0, 2), (mutate_invalid_utf8, 1, 0.5), (mutate_bytes, 1, 4),
]
PACKAGE_MUTATIONS = [
    (cm_numeric, 0, 3), (cm_spec_version, 0, 1), (cm_description, 0, 1.5), (mil_opset, 0, 2), (mil_dims, 0, 2), (mil_dtype, 0, 2),
    (mil_names, 0, 1.5), (mil_duplicate, 0, 2), (mil_dangling, 0, 2), (mil_outputs_removed, 0, 0.5), (mil_relu_chain, 0, 0.5),
    (mil_cond_nest, 0, 0.4), (mil_const, 0, 3), (mil_nan, 0, 1), (mil_op, 0, 2), (mutate_invalid_utf8, 1, 0.3), (mutate_bytes, 1, 3),
    (mil_weight_header, 1, 2), (pkg_manifest, 2, 3), (pkg_missing, 2, 1), (pkg_special, 3, 3),
]
CATALOGUE = {"onnx": ONNX_MUTATIONS, "external": EXTERNAL_MUTATIONS, "coreml": COREML_MUTATIONS, "package": PACKAGE_MUTATIONS}


def pick(rng, table, stage_at_least=0, exclude_stage=None):
    choices = [(m, s, w) for m, s, w in table if s >= stage_at_least and s != exclude_stage]
    if not choices:
        choices = [(m, s, w) for m, s, w in table if s != exclude_stage]
    total = sum(w for _, _, w in choices)
    point = rng.random() * total
    for mutation, stage, weight in choices:
        point -= weight
        if point < 0:
            return mutation, stage
    return choices[-1][:2]


def make_case(out, index, kind, bases, rng):
    """Copy a base and apply one or two mutations; returns the manifest entry."""
    if kind == "onnx" and rng.random() < 0.3:
        kind = "external"
    if kind == "onnx":
        base = rng.choice(bases["onnx"])
    elif kind == "external":
        base = bases["external"] if rng.random() < 0.5 else rng.choice(bases["onnx_parsable"])
    else:
        base = rng.choice(bases[kind])
    case = Case(out, index, kind, rel(base))
    remove_path(case.root)
    steps = []
    if kind == "external":
        os.mkdir(case.root)
        if base == bases["external"]:
            shutil.copyfile(base, case.model)
            shutil.copyfile(os.path.join(os.path.dirname(base), "weights.bin"), case.data)
        else:
            shutil.copyfile(base, case.model)
            model = load_proto(case, onnx.ModelProto)
            moved = externalize(case, model)
            save_proto(case, model)
            case.base = rel(base)
            steps.append(f"{moved} initializers moved to weights.bin (external data)")
    elif kind == "package":
        shutil.copytree(base, case.root, symlinks=True)
    else:
        shutil.copyfile(base, case.root)
    table = CATALOGUE[kind]
    if kind == "onnx" and not parses_as_onnx(base):
        table = [(mutate_bytes, 1, 1)]
    chosen = sorted((pick(rng, table) for _ in range(rng.choice([1, 1, 2]))), key=lambda m: m[1])
    if len(chosen) == 2 and chosen[0][1] == 3 and chosen[1][1] == 3:
        chosen = [chosen[0]]
    for mutation, stage in chosen:
        if stage == 3 and case.special:
            continue
        for attempt in range(8):
            try:
                steps.append(mutation(case, rng))
                break
            except Skip as why:
                if attempt == 7:
                    steps.append(f"{mutation.__name__} skipped: {why}")
                # Another mutation of this stage or a later one (never a second file-system one).
                mutation, stage = pick(rng, table, stage, exclude_stage=3 if case.special else None)
            except Exception as error:  # a bug here must not stop the corpus: record it
                steps.append(f"{mutation.__name__} failed: {type(error).__name__}: {error}"[:300])
                break
    return {"case": os.path.basename(case.root), "model": os.path.relpath(case.model, out), "kind": kind, "base": case.base,
            "mutations": steps, "special": case.special}


def accepted(modelconv, path):
    """Whether `modelconv convert` writes the case in both formats (exit 0)."""
    with tempfile.TemporaryDirectory() as work:
        for suffix in (".mlmodel", ".mlpackage"):
            try:
                run = subprocess.run([modelconv, "convert", path, "-o", os.path.join(work, "model" + suffix)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, timeout=120)
            except subprocess.TimeoutExpired:
                return False
            if run.returncode != 0:
                return False
    return True


def has_special_files(path):
    if os.path.islink(path) or not (os.path.isdir(path) or os.path.isfile(path)):
        return True
    for folder, dirs, files in os.walk(path):
        for name in dirs + files:
            full = os.path.join(folder, name)
            info = os.lstat(full)
            if stat.S_ISLNK(info.st_mode) or not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
                return True
            if stat.S_ISREG(info.st_mode) and info.st_blocks * 512 < info.st_size - 65536:
                return True  # sparse
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kinds", default="onnx,coreml,package", help="comma-separated: onnx (files and external-data folders), coreml, package")
    ap.add_argument("--keep-accepted", type=int, default=0, help="keep only the first N cases convert accepts in both formats")
    ap.add_argument("--modelconv", help="the modelconv binary for --keep-accepted")
    ap.add_argument("--max-bytes", type=int, default=0, help="with --keep-accepted: skip cases larger than this")
    args = ap.parse_args()
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    if not kinds or any(k not in ("onnx", "coreml", "package") for k in kinds):
        ap.error("--kinds takes onnx, coreml and package")
    if args.keep_accepted and not args.modelconv:
        ap.error("--keep-accepted needs --modelconv")
    bases = find_bases()
    os.makedirs(args.out, exist_ok=True)
    out = os.path.abspath(args.out)
    for name in sorted(os.listdir(out)):  # an earlier corpus: remove without following its links
        if name.startswith("case_") or name == "manifest.json":
            remove_path(os.path.join(out, name))
    manifest = []
    for index in range(1, args.count + 1):
        rng = random.Random(f"{args.seed}/{index}/{','.join(kinds)}")
        entry = make_case(out, index, rng.choice(kinds), bases, rng)
        manifest.append(entry)
        if index % 500 == 0:
            print(f"  {index} cases", file=sys.stderr)
    if args.keep_accepted:
        kept = []
        for entry in manifest:
            root = os.path.join(out, entry["case"])
            keep = (len(kept) < args.keep_accepted and not entry["special"] and not has_special_files(root)
                    and (not args.max_bytes or tree_size(root) <= args.max_bytes)
                    and accepted(args.modelconv, os.path.join(out, entry["model"])))
            if keep:
                kept.append(entry)
            else:
                remove_path(root)
        manifest = kept
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"wrote {len(manifest)} cases to {args.out}")


if __name__ == "__main__":
    sys.exit(main())
