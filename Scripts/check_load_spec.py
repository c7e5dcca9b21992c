#!/usr/bin/env python3
"""Opens .mlmodel files with coremltools.utils.load_spec and prints what coremltools sees.

Run with the fixture venv (Samples/requirements-tfkeras215.txt), not in CI:
    python Scripts/check_load_spec.py out/*.mlmodel
Exits non-zero if any file fails to load or lacks a model type.
"""
import sys

import coremltools as ct


def describe(path):
    spec = ct.utils.load_spec(path)
    kind = spec.WhichOneof("Type")
    if kind is None:
        raise ValueError("no model type")
    network = getattr(spec, kind)
    layers = [layer.WhichOneof("layer") for layer in network.layers]
    inputs = [(f.name, f.type.WhichOneof("Type")) for f in spec.description.input]
    outputs = [(f.name, f.type.WhichOneof("Type")) for f in spec.description.output]
    return f"spec v{spec.specificationVersion} {kind}: {len(layers)} layers, inputs {inputs}, outputs {outputs}"


def main(paths):
    failed = 0
    for path in paths:
        try:
            print(f"ok   {path}: {describe(path)}")
        except Exception as error:  # report every file, then fail
            failed += 1
            print(f"FAIL {path}: {error}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
