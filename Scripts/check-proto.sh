#!/usr/bin/env bash
# Fails if Sources/CoreMLSpec does not match what Scripts/regen-proto.sh would
# generate from Schemas/*.proto (generated .pb-c.c/.pb-c.h files and the
# include/CoreMLSpec.h umbrella). Works from any directory.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

# shellcheck source=regen-proto.sh
source Scripts/regen-proto.sh   # defines generate_into (does not regenerate)

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

generate_into "$tmp"

stale=0

# Generated sources: the set of *.pb-c.{c,h} files and their contents must
# match exactly (include/ is compared separately below).
list_generated() {
    (cd "$1" && LC_ALL=C ls -1 -- *.pb-c.c *.pb-c.h 2>/dev/null || true)
}
if ! diff -u <(list_generated "$tmp") <(list_generated Sources/CoreMLSpec) >/dev/null; then
    echo "generated file list differs:" >&2
    diff -u --label expected --label Sources/CoreMLSpec \
        <(list_generated "$tmp") <(list_generated Sources/CoreMLSpec) >&2 || true
    stale=1
fi
for f in $(list_generated "$tmp"); do
    if [[ -f "Sources/CoreMLSpec/$f" ]] && ! cmp -s "$tmp/$f" "Sources/CoreMLSpec/$f"; then
        echo "differs: Sources/CoreMLSpec/$f" >&2
        stale=1
    fi
done

# Umbrella header must include every generated header.
if ! cmp -s "$tmp/include/CoreMLSpec.h" Sources/CoreMLSpec/include/CoreMLSpec.h; then
    echo "differs: Sources/CoreMLSpec/include/CoreMLSpec.h" >&2
    stale=1
fi

if [[ "$stale" -ne 0 ]]; then
    echo "generated protobuf-c code is stale: run Scripts/regen-proto.sh" >&2
    exit 1
fi
echo "generated protobuf-c code is up to date"
