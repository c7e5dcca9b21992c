#!/usr/bin/env bash
# One style, checked: swift-format (shipped with the toolchain) with the project's configuration
# (.swift-format: 2-space indentation, lines of at most 120 characters) finds nothing to change in any
# Swift file of the package, its examples, plugins and fuzz harnesses (build folders aside).
# `Scripts/lint.sh --fix` formats them in place instead.
set -euo pipefail
cd "$(dirname "$0")/.."

mapfile -t files < <(find Package.swift Sources Tests Plugins Examples Fuzz -name '*.swift' -not -path '*/.build*' | sort)
if [ "${1:-}" = "--fix" ]; then
  swift-format format --in-place --parallel "${files[@]}"
else
  swift-format lint --strict --parallel "${files[@]}"
fi
