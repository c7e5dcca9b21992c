#!/usr/bin/env bash
# Builds and runs one libFuzzer harness from Fuzz/ under AddressSanitizer.
#
#   Scripts/fuzz.sh <target> <seconds>     targets: keras-config hdf5 keras-archive snapshot
#
# The modules the harness needs are compiled with swiftc -sanitize=fuzzer,address into .build-fuzz/
# (separate from .build); seed corpora come from Samples/Fixtures and Samples/Digits, the working
# corpus and any crash-* files are kept in .build-fuzz/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${1:?usage: Scripts/fuzz.sh <keras-config|hdf5|keras-archive|snapshot> <seconds>}"
seconds="${2:-60}"
out=.build-fuzz
mkdir -p "$out"
flags=(-sanitize=fuzzer,address -parse-as-library -O -g -swift-version 5)
cflags=($(pkg-config --cflags-only-I hdf5-serial libzip | sed 's/-I/-Xcc -I/g'))
libs=($(pkg-config --libs hdf5-serial libzip))

module() {  # name sources... : a static library + swiftmodule in $out
  local name=$1; shift
  if [ ! -f "$out/lib$name.a" ] || [ -n "$(find "$@" -newer "$out/lib$name.a" | head -1)" ]; then
    swiftc "${flags[@]}" "${cflags[@]}" -I "$out" -I Sources/CHDF5 -I Sources/CZip -module-name "$name" \
      -emit-module -emit-module-path "$out/$name.swiftmodule" -emit-library -static -o "$out/lib$name.a" "$@"
  fi
}
module ModelIR Sources/ModelIR/*.swift
module KerasFormat $(find Sources/KerasFormat -name '*.swift')

case "$target" in
  keras-config) harness=Fuzz/KerasConfig.swift ;;
  hdf5) harness=Fuzz/HDF5Reader.swift ;;
  keras-archive) harness=Fuzz/KerasArchive.swift ;;
  snapshot) harness=Fuzz/Snapshot.swift ;;
  *) echo "unknown target $target" >&2; exit 64 ;;
esac
binary="$out/fuzz-$target"
swiftc "${flags[@]}" "${cflags[@]}" -I "$out" -I Sources/CHDF5 -I Sources/CZip "$harness" \
  -L "$out" -lKerasFormat -lModelIR "${libs[@]}" -o "$binary"

corpus="$out/$target/corpus"
seeds="$out/$target/seeds"
mkdir -p "$corpus" "$seeds"
case "$target" in
  keras-config)
    cp Samples/Fixtures/bad/weights_only.json "$seeds/" 2>/dev/null || true
    for f in Samples/Fixtures/*/*.keras; do unzip -p "$f" config.json > "$seeds/$(basename "$f").json" || true; done ;;
  hdf5) find Samples/Fixtures Samples/Digits -name '*.h5' ! -name '*.reference.h5' -size -64k -exec cp {} "$seeds/" \; ;;
  keras-archive) find Samples/Fixtures -name '*.keras' -exec cp {} "$seeds/" \; ;;
  snapshot)  # the reader child's own output for a few fixtures (needs `swift build` first)
    for f in Samples/Fixtures/keras3/batchnorm.h5 Samples/Fixtures/tfkeras215/sequential_plain.h5 Samples/Fixtures/bad/not_hdf5.h5; do
      rm -f "$seeds/$(basename "$f").snap"
      .build/debug/modelconv __read-keras --output "$seeds/$(basename "$f").snap" --cpu 10 --memory 8589934592 --model "$f" || true
    done ;;
esac
cd "$out/$target"
ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 ../fuzz-"$target" -max_total_time="$seconds" -rss_limit_mb=4096 \
  -timeout=10 -max_len=65536 corpus seeds 2>&1 | tail -25
