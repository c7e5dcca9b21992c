#!/usr/bin/env bash
# Sets up a fresh machine and runs every check: generated protobuf-c code is current, then swift test.
set -euo pipefail
cd "$(dirname "$0")/.."

Scripts/setup.sh
Scripts/check-proto.sh
Scripts/lint.sh
# The build is warning-free and stays so: any compiler warning (a fresh clone compiles every file) fails.
mkdir -p .build
swift build --build-tests 2>&1 | tee .build/build.log
if grep -q "warning:" .build/build.log; then
  echo "test: the build printed compiler warnings (above); fix them" >&2
  exit 1
fi
swift test --skip-build
Scripts/check-example.sh
Scripts/check-plugin-example.sh
# The library's DocC reference builds with no warning (a broken symbol link fails).
Scripts/docs.sh
# The fast-path kernel tests again with oneDNN capped at older instruction sets (it picks kernels from
# the CPU's features; ONEDNN_MAX_CPU_ISA caps them), so they hold whichever kernels a CPU gets. A cap
# above what the CPU has changes nothing.
for isa in SSE41 AVX2; do
  ONEDNN_MAX_CPU_ISA=$isa swift test --skip-build --filter FastKernelTests
done
