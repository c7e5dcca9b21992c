#!/usr/bin/env bash
# Builds Examples/PluginExample, whose models ModelConverter's build-tool plugin converts (and verifies)
# from its modelconv.json at build time, and runs it (it loads the bundled model with Bundle.module and
# inspects it through the library). Then checks the plugin's incremental behaviour:
#   - a second build with nothing changed converts nothing;
#   - a label changed in the manifest is converted again on the next build, and the app sees it;
#   - an entry with "verify": true whose parity check fails fails the build, with verify's first mismatch.
# The manifest is restored afterwards. SCRATCH: the example's build folder (default: a new temporary one).
set -euo pipefail
cd "$(dirname "$0")/.."
EXAMPLE=Examples/PluginExample
MANIFEST=$EXAMPLE/Sources/PluginExample/modelconv.json
SCRATCH="${SCRATCH:-$(mktemp -d /tmp/plugin-example.XXXXXX)}"
backup="$(mktemp)"
cp "$MANIFEST" "$backup"
trap 'cp "$backup" "$MANIFEST"; rm -f "$backup"' EXIT
fail() { echo "check-plugin-example: $*" >&2; exit 1; }
build() { swift build --package-path "$EXAMPLE" --scratch-path "$SCRATCH" 2>&1; }

log="$(build)" || { echo "$log"; fail "the example does not build"; }
grep -q "Converting digits" <<<"$log" || { echo "$log"; fail "the first build did not convert the model"; }
out="$("$SCRATCH/debug/PluginExample")"
echo "$out"
grep -q "labels: zero, one, two, three, four" <<<"$out" || fail "the bundled model does not have the manifest's labels"

# SwiftPM relinks the plugin's tool once after a clean build, which runs the command again: one settling
# build, then one that must convert nothing.
build >/dev/null || fail "the second build failed"
log="$(build)" || fail "the third build failed"
if grep -q "Converting digits" <<<"$log"; then echo "$log"; fail "a build with nothing changed converted the model again"; fi

sed -i 's/"three"/"THREE"/' "$MANIFEST"
log="$(build)" || { echo "$log"; fail "the build after a label change failed"; }
grep -q "Converting digits" <<<"$log" || { echo "$log"; fail "a changed label did not convert the model again"; }
grep -q "labels: zero, one, two, THREE, four" <<<"$("$SCRATCH/debug/PluginExample")" || fail "the app does not see the changed label"

# float16 weights checked with no tolerance: the parity check fails, and so does the build.
python3 - "$MANIFEST" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["models"][0].update({"precision": "float16", "atol": 0, "rtol": 0})
json.dump(m, open(sys.argv[1], "w"), indent=2)
PY
if log="$(build)"; then echo "$log"; fail "a parity failure did not fail the build"; fi
grep -q "FAIL" <<<"$log" || { echo "$log"; fail "the failed build does not show verify's mismatch"; }
grep -m1 "FAIL" <<<"$log"
echo "check-plugin-example: ok (built, ran, skipped when unchanged, rebuilt on a label change, failed on a parity failure)"
