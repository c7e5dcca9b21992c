#!/usr/bin/env bash
# Runs ONNX's backend tests (libonnx-testdata) through the ONNX importer and the reference runtime and
# makes the ones that pass the new pass list (Tests/ONNXFormatTests/BackendPassList.txt). Review the diff:
# a test leaving the list is a regression unless it was wrongly passing.
set -euo pipefail
cd "$(dirname "$0")/.."
swift test --filter BackendConformanceTests || true
{
  echo "# ONNX backend tests (libonnx-testdata 1.12) that pass through ONNXGraphImporter and the reference runtime:"
  echo "# each must keep passing (BackendConformanceTests). Regenerate with Scripts/update-onnx-pass-list.sh."
  cat .build/onnx-backend-passing.txt
} > Tests/ONNXFormatTests/BackendPassList.txt
echo "pass list: $(grep -vc '^#' Tests/ONNXFormatTests/BackendPassList.txt) tests; table in .build/onnx-backend-table.txt"
