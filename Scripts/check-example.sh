#!/usr/bin/env bash
# The library example of Docs/Library.md (and of the DocC article GettingStarted.md) is
# Examples/LibraryExample/Sources/LibraryExample/main.swift, word for word: this checks that, builds
# the example as a separate package depending on ModelConverter, and runs it from the repository root
# (it converts, verifies, inspects, predicts and evaluates the bundled digits sample; a failure exits
# non-zero).
set -euo pipefail
cd "$(dirname "$0")/.."

example=Examples/LibraryExample/Sources/LibraryExample/main.swift
# The first ```swift block after each document's title.
for document in "Docs/Library.md:# The library" "Sources/ModelConverter/ModelConverter.docc/GettingStarted.md:# Getting started"; do
  file=${document%%:*} title=${document#*:}
  awk -v title="$title" '$0 == title { inside = 1 } inside && /^```swift$/ { code = 1; next } code && /^```$/ { exit } code { print }' "$file" > /tmp/library-example.swift
  if ! diff -u /tmp/library-example.swift "$example"; then
    echo "check-example: the library example of $file differs from $example (diff above)" >&2
    exit 1
  fi
done
swift build --package-path Examples/LibraryExample
Examples/LibraryExample/.build/debug/LibraryExample
