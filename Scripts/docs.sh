#!/usr/bin/env bash
# Builds the DocC reference of the ModelConverter library (Sources/ModelConverter/ModelConverter.docc)
# into .build-docs/ModelConverter.doccarchive, and fails on any DocC warning: a broken symbol link
# (``SomeType``), an unknown article, a malformed topic group.
#
# 1. The ModelConverter target (and what it depends on) is built with its own scratch path,
#    .build-docs, so the main .build is left alone; its compile emits the module's symbol graph.
# 2. docc converts the catalog with that symbol graph, warnings as errors.
set -euo pipefail
cd "$(dirname "$0")/.."

scratch=.build-docs
graphs="$PWD/$scratch/symbol-graphs"
module_graphs="$PWD/$scratch/module-symbol-graphs"
archive="$scratch/ModelConverter.doccarchive"
docc=${DOCC:-$(command -v docc || echo "$(dirname "$(command -v swift)")/docc")}

# The module is compiled again every run, so that its symbol graph is always written (an up-to-date
# build would skip the compile, and the graph with it); its dependencies stay built.
rm -rf "$graphs" "$module_graphs" "$archive"
find "$scratch" -maxdepth 3 -type d -name ModelConverter.build -exec rm -rf {} + 2>/dev/null || true
mkdir -p "$graphs" "$module_graphs"

swift build --scratch-path "$scratch" --target ModelConverter \
  -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$graphs" \
  -Xswiftc -symbol-graph-minimum-access-level -Xswiftc public \
  -Xswiftc -symbol-graph-skip-inherited-docs -Xswiftc -symbol-graph-skip-synthesized-members

# Only ModelConverter's own graphs (its symbols and its extensions of other modules' types): every
# module compiled in this build writes one, and the catalog documents this module alone.
shopt -s nullglob
found=("$graphs"/ModelConverter.symbols.json "$graphs"/ModelConverter@*.symbols.json)
if [ ! -f "$graphs/ModelConverter.symbols.json" ]; then
  echo "docs: the build wrote no symbol graph for ModelConverter (in $graphs)" >&2
  exit 1
fi
cp "${found[@]}" "$module_graphs/"

"$docc" convert Sources/ModelConverter/ModelConverter.docc \
  --additional-symbol-graph-dir "$module_graphs" \
  --output-path "$archive" \
  --fallback-display-name ModelConverter \
  --fallback-bundle-identifier ModelConverter \
  --warnings-as-errors
echo "docs: $archive"
