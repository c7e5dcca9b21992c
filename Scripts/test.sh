#!/usr/bin/env bash
# Sets up a fresh machine and runs every check: generated protobuf-c code is current, then swift test.
set -euo pipefail
cd "$(dirname "$0")/.."

Scripts/setup.sh
Scripts/check-proto.sh
swift build
swift test
Scripts/check-example.sh
# The BLAS kernel tests again under two other OpenBLAS kernel sets, so they hold whichever one a CPU gets.
for core in Prescott Haswell; do
  OPENBLAS_CORETYPE=$core swift test --skip-build --filter FastKernelTests
done
