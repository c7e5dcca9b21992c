#!/usr/bin/env bash
# Runs ONNX's backend tests (libonnx-testdata) through the ONNX importer and the reference runtime and
# makes the ones that pass the new pass lists (Tests/ModelConverterTests/ONNX/BackendPassList.txt, and the
# conversions to Core ML that verify, BackendConversionPassList.txt). Review the diff:
# a test leaving the list is a regression unless it was wrongly passing.
set -euo pipefail
cd "$(dirname "$0")/.."
swift test --filter BackendConformanceTests || true
{
  echo "# ONNX backend tests (libonnx-testdata 1.12) that pass through ONNXGraphImporter and the reference runtime:"
  echo "# each must keep passing (BackendConformanceTests). Regenerate with Scripts/update-onnx-pass-list.sh."
  cat .build/onnx-backend-passing.txt
} > Tests/ModelConverterTests/ONNX/BackendPassList.txt
{
  echo "# ONNX backend tests converted to Core ML whose written model verifies (BackendConformanceTests.passingTestsConvert): 'suite/test format'."
  echo "# Regenerate with Scripts/update-onnx-pass-list.sh."
  cat .build/onnx-backend-conversions-passing.txt
} > Tests/ModelConverterTests/ONNX/BackendConversionPassList.txt
echo "pass list: $(grep -vc '^#' Tests/ModelConverterTests/ONNX/BackendPassList.txt) tests, $(grep -vc '^#' Tests/ModelConverterTests/ONNX/BackendConversionPassList.txt) conversions; tables in .build/onnx-backend-table.txt and .build/onnx-backend-conversions.txt"
