#!/usr/bin/env bash
# The README's library example is Examples/LibraryExample/Sources/LibraryExample/main.swift, word for
# word: this checks that, builds the example as a separate package depending on ModelConverter, and
# runs it from the repository root (it converts, verifies, inspects, predicts and evaluates the bundled
# digits sample; a failure exits non-zero).
set -euo pipefail
cd "$(dirname "$0")/.."

example=Examples/LibraryExample/Sources/LibraryExample/main.swift
# The first ```swift block after the README's "## The library" heading.
awk '/^## The library/ { inside = 1 } inside && /^```swift$/ { code = 1; next } code && /^```$/ { exit } code { print }' README.md > /tmp/readme-example.swift
if ! diff -u /tmp/readme-example.swift "$example"; then
  echo "check-example: the README's library example differs from $example (diff above)" >&2
  exit 1
fi
swift build --package-path Examples/LibraryExample
Examples/LibraryExample/.build/debug/LibraryExample
