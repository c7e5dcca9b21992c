#!/usr/bin/env bash
# Fails if a spec target (Sources/CoreMLSpec, Sources/ONNXSpec) does not match what
# Scripts/regen-proto.sh would generate from its schemas (generated .pb-c.c/.pb-c.h files and the
# include/<module>.h umbrella). Works from any directory.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

# shellcheck source=regen-proto.sh
source Scripts/regen-proto.sh   # defines spec_targets and generate_into (does not regenerate)

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

stale=0

# Generated sources: the set of *.pb-c.{c,h} files and their contents must
# match exactly (include/ is compared separately below).
list_generated() {
    (cd "$1" && LC_ALL=C ls -1 -- *.pb-c.c *.pb-c.h 2>/dev/null || true)
}

for target in "${spec_targets[@]}"; do
    read -r schemas module guard <<< "$target"
    expected="$tmp/$module"
    actual="Sources/$module"
    generate_into "$schemas" "$expected" "$module" "$guard"

    if ! diff -u <(list_generated "$expected") <(list_generated "$actual") >/dev/null; then
        echo "generated file list differs:" >&2
        diff -u --label expected --label "$actual" \
            <(list_generated "$expected") <(list_generated "$actual") >&2 || true
        stale=1
    fi
    for f in $(list_generated "$expected"); do
        if [[ -f "$actual/$f" ]] && ! cmp -s "$expected/$f" "$actual/$f"; then
            echo "differs: $actual/$f" >&2
            stale=1
        fi
    done

    # Umbrella header must include every generated header.
    if ! cmp -s "$expected/include/$module.h" "$actual/include/$module.h"; then
        echo "differs: $actual/include/$module.h" >&2
        stale=1
    fi
done

if [[ "$stale" -ne 0 ]]; then
    echo "generated protobuf-c code is stale: run Scripts/regen-proto.sh" >&2
    exit 1
fi
echo "generated protobuf-c code is up to date"
