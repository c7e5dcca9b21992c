#!/usr/bin/env bash
# Sets up a fresh machine and runs every check: generated protobuf-c code is current, then swift test.
set -euo pipefail
cd "$(dirname "$0")/.."

Scripts/setup.sh
Scripts/check-proto.sh
swift build
swift test
