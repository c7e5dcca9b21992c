#!/usr/bin/env bash
# Builds and runs one libFuzzer harness from Fuzz/ under AddressSanitizer.
#
#   Scripts/fuzz.sh <target> <seconds>     targets: keras-config hdf5 keras-archive snapshot coreml labels
#   Scripts/fuzz.sh <target> 0             build the harness only
#
# The modules the harness needs are compiled with swiftc -sanitize=fuzzer,address into .build-fuzz/
# (separate from .build); the CoreMLSpec C code is compiled with clang -fsanitize=fuzzer-no-link,address.
# Seed corpora come from Samples/Fixtures and Samples/Digits, the working corpus, crash-*/timeout-*/oom-*
# files and the full log (fuzz.log) are kept in .build-fuzz/<target>/.
#
# The run uses libFuzzer's fork mode and keeps going past crashes, timeouts and OOMs
# (FUZZ_FORK=0 stops at the first finding instead); every finding is left as an artifact file.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
target="${1:?usage: Scripts/fuzz.sh <keras-config|hdf5|keras-archive|snapshot|coreml|labels> <seconds>}"
seconds="${2:-60}"
out=.build-fuzz
mkdir -p "$out"
flags=(-sanitize=fuzzer,address -parse-as-library -O -g -swift-version 5 -package-name ModelConverter)
cflags=($(pkg-config --cflags-only-I hdf5-serial libzip libprotobuf-c | sed 's/-I/-Xcc -I/g'))
libs=($(pkg-config --libs hdf5-serial libzip))
includes=(-I "$out" -I Sources/CHDF5 -I Sources/CZip -I Sources/CProtobufC -I "$out/CoreMLSpec")

module() {  # name sources... : a static library + swiftmodule in $out
  local name=$1; shift
  if [ ! -f "$out/lib$name.a" ] || [ -n "$(find "$@" -newer "$out/lib$name.a" | head -1)" ]; then
    swiftc "${flags[@]}" "${cflags[@]}" "${includes[@]}" -module-name "$name" \
      -emit-module -emit-module-path "$out/$name.swiftmodule" -emit-library -static -o "$out/lib$name.a" "$@"
  fi
}
cmodule() {  # CoreMLSpec: protoc-c output, a static library + a module map over its umbrella header
  local sources=(Sources/CoreMLSpec/*.c) objects=()
  mkdir -p "$out/CoreMLSpec"
  printf 'module CoreMLSpec {\n  umbrella header "%s/Sources/CoreMLSpec/include/CoreMLSpec.h"\n  export *\n}\n' "$root" \
    > "$out/CoreMLSpec/module.modulemap"
  if [ ! -f "$out/libCoreMLSpec.a" ] || [ -n "$(find Sources/CoreMLSpec -newer "$out/libCoreMLSpec.a" | head -1)" ]; then
    for c in "${sources[@]}"; do
      local o="$out/CoreMLSpec/$(basename "$c" .c).o"
      clang -fsanitize=fuzzer-no-link,address -O1 -g $(pkg-config --cflags libprotobuf-c) -I Sources/CoreMLSpec/include -c "$c" -o "$o"
      objects+=("$o")
    done
    rm -f "$out/libCoreMLSpec.a"
    ar rcs "$out/libCoreMLSpec.a" "${objects[@]}"
  fi
}
module ModelIR $(find Sources/ModelIR -name '*.swift')
module ModelFormats Sources/ModelFormats/*.swift
module KerasFormat $(find Sources/KerasFormat -name '*.swift')

extra=()
link=(-lKerasFormat -lModelFormats -lModelIR "${libs[@]}")
case "$target" in
  keras-config) harness=(Fuzz/KerasConfig.swift) ;;
  hdf5) harness=(Fuzz/HDF5Reader.swift) ;;
  keras-archive) harness=(Fuzz/KerasArchive.swift) ;;
  snapshot) harness=(Fuzz/Snapshot.swift) ;;
  coreml|labels)
    cmodule
    for part in CoreMLCommon CoreMLReader CoreMLNeuralNetworkWriter CoreMLProgramWriter CoreMLFormat; do
      module "$part" $(find "Sources/$part" -name '*.swift')
    done
    link=(-lCoreMLFormat -lCoreMLReader -lCoreMLNeuralNetworkWriter -lCoreMLProgramWriter -lCoreMLCommon -lCoreMLSpec -lKerasFormat -lModelFormats -lModelIR "${libs[@]}" $(pkg-config --libs libprotobuf-c))
    if [ "$target" = coreml ]; then harness=(Fuzz/CoreML.swift)
    else  # the real parsing code, compiled into the harness rather than all of ModelConverter
      harness=(Fuzz/Labels.swift Sources/ModelConverter/Labels/ClassLabels+Parsing.swift Sources/ModelConverter/API/ConversionError.swift)
    fi ;;
  *) echo "unknown target $target" >&2; exit 64 ;;
esac
binary="$out/fuzz-$target"
if [ ! -f "$binary" ] || [ -n "$(find "${harness[@]}" "$out"/lib*.a -newer "$binary" | head -1)" ]; then
  swiftc "${flags[@]}" "${cflags[@]}" "${includes[@]}" -module-name "Fuzz_${target//-/_}" "${harness[@]}" \
    -L "$out" "${link[@]}" -o "$binary"
fi
[ "$seconds" = 0 ] && exit 0

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
  coreml)
    find Samples/Fixtures -name '*.mlmodel' ! -path '*.mlpackage/*' -exec cp {} "$seeds/" \;
    for p in $(find Samples/Fixtures -name '*.mlpackage' -type d); do
      cp "$p/Data/com.apple.CoreML/model.mlmodel" "$seeds/$(basename "$p").mlmodel" 2>/dev/null || true
    done ;;
  labels)
    printf 'cat,dog,bird' > "$seeds/list.txt"
    printf '0 With Mask\n1 Without Mask\n' > "$seeds/teachable.txt"
    printf '3\n1\n-0\n2\n' > "$seeds/integers.txt"
    find Samples -name '*labels*.txt' -size -64k -exec cp {} "$seeds/" \; 2>/dev/null || true ;;
esac
fork=()
[ "${FUZZ_FORK:-1}" = 1 ] && fork=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
cd "$out/$target"
ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 ../fuzz-"$target" -max_total_time="$seconds" -rss_limit_mb=4096 \
  -timeout=10 -max_len=65536 "${fork[@]}" corpus seeds > fuzz.log 2>&1 || true
grep -E 'ERROR:|SUMMARY:|==[0-9]+== *ERROR|deadly signal|ALARM' fuzz.log | sort | uniq -c | sort -rn | head -20 || true
tail -25 fuzz.log
echo "corpus files: $(ls corpus | wc -l)  artifacts: $(ls | grep -cE '^(crash|timeout|oom|leak|slow-unit)-' || true)"
