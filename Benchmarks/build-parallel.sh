#!/usr/bin/env bash
# Benchmarks/build-parallel.sh: `modelconv build` on a manifest of 20 models against 20 sequential
# `modelconv convert` calls of the same models and options, side by side in one run (issue 21's measure:
# build uses every core). Each side runs ROUNDS times, alternating which goes first; reported: the median
# wall seconds, CPU seconds (user + system, from /usr/bin/time) and cores busy (CPU / wall), and the ratio.
# Every model is converted with --verify (4 samples), as a pipeline that checks its models would.
#
#   Benchmarks/build-parallel.sh                      # writes Benchmarks/build-parallel.md
#   MODELCONV=... ROUNDS=5 Benchmarks/build-parallel.sh
#
# The 20 models: the bundled samples, the Keras and ONNX fixtures and, where present, the three shared real
# models (../shared/models), each to an .mlmodel or .mlpackage.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MODELCONV="${MODELCONV:-$ROOT/.build/release/modelconv}"
ROUNDS="${ROUNDS:-3}"
OUT="${OUT:-$ROOT/Benchmarks/build-parallel.md}"
WORK="$(mktemp -d /tmp/build-bench.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
[[ -x "$MODELCONV" ]] || { echo "no modelconv at $MODELCONV (swift build -c release --product modelconv)" >&2; exit 64; }
F="$ROOT/Samples/Fixtures"
SHARED="$ROOT/../shared/models"

# name|source|output extension|extra convert options (space separated)
MODELS=(
  "digits|$ROOT/Samples/Digits/digits_cnn.h5|mlmodel|--image-input input1 --image-scale 1/255 --labels-file $ROOT/Samples/Digits/labels.txt"
  "digits_program|$ROOT/Samples/Digits/digits_cnn.h5|mlpackage|--precision float32"
  "digits_mobile|$ROOT/Samples/DigitsMobile/digits_mobile.h5|mlmodel|--labels-file $ROOT/Samples/DigitsMobile/labels.txt"
  "digits_mobile_program|$ROOT/Samples/DigitsMobile/digits_mobile.h5|mlpackage|--precision float32"
  "activations|$F/tfkeras215/activations.h5|mlmodel|"
  "batchnorm|$F/tfkeras215/batchnorm.h5|mlmodel|"
  "conv_variants|$F/tfkeras215/conv_variants.h5|mlpackage|--precision float32"
  "depthwise_separable|$F/tfkeras215/depthwise_separable.h5|mlmodel|"
  "merge|$F/tfkeras215/merge.h5|mlmodel|"
  "pooling|$F/tfkeras215/pooling.h5|mlpackage|--precision float32"
  "reshape_ops|$F/tfkeras215/reshape_ops.h5|mlmodel|"
  "tiny_cnn|$F/onnx/tiny_cnn.onnx|mlmodel|"
  "tiny_cnn_program|$F/onnx/tiny_cnn_opset18.onnx|mlpackage|--precision float32"
  "mobile_block|$F/onnx/mobile_block.onnx|mlpackage|--precision float32"
  "convnext_block|$F/onnx/convnext_block.onnx|mlmodel|"
  "shuffle_block|$F/onnx/shuffle_block.onnx|mlmodel|"
  "tiny_vit|$F/onnx/tiny_vit.onnx|mlmodel|"
)
if [[ -f "$SHARED/fer2013_mini_XCEPTION.102-0.66.hdf5" ]]; then
  MODELS+=(
    "mini_xception|$SHARED/fer2013_mini_XCEPTION.102-0.66.hdf5|mlmodel|--labels-file $SHARED/fer2013_mini_XCEPTION.labels.txt"
    "emotion_v6|$SHARED/emotion_model_v6_23.hdf5|mlpackage|--labels-file $SHARED/emotion_model_v6_23.labels.txt"
    "teachable_mask|$SHARED/teachable_machine_mask_keras_model.h5|mlmodel|--labels-file $SHARED/teachable_machine_mask_labels.txt"
  )
else
  MODELS+=("dense_classifier|$F/tfkeras215/dense_classifier.h5|mlmodel|" "nested|$F/tfkeras215/nested.h5|mlmodel|" "sequential_plain|$F/tfkeras215/sequential_plain.h5|mlmodel|")
fi

# The manifest: the same options, as keys.
python3 - "$WORK/modelconv.json" "${MODELS[@]}" <<'EOF'
import json, sys
entries = []
for line in sys.argv[2:]:
    name, source, ext, extra = line.split("|")
    entry = {"name": name, "source": source, "output": f"build/{name}.{ext}", "verify": True, "samples": 4}
    words = extra.split()
    for flag, value in zip(words[::2], words[1::2]):
        entry[flag[2:]] = value
    entries.append(entry)
json.dump({"models": entries}, open(sys.argv[1], "w"), indent=1)
EOF

sequential() {
  rm -rf "$WORK/seq"; mkdir -p "$WORK/seq"
  for line in "${MODELS[@]}"; do
    IFS='|' read -r name source ext extra <<<"$line"
    # shellcheck disable=SC2086
    "$MODELCONV" convert "$source" -o "$WORK/seq/$name.$ext" $extra --verify --samples 4 >/dev/null
  done
}
parallel() { rm -rf "$WORK/build" "$WORK/.modelconv-build.json"; "$MODELCONV" build --manifest "$WORK/modelconv.json" --force >"$WORK/build.log" || { cat "$WORK/build.log" >&2; return 1; }; }

measure() {  # command -> "wall cpu"
  /usr/bin/time -f "%e %U %S" -o "$WORK/time" bash -c "$(declare -f "$1"); $(declare -p MODELS MODELCONV WORK); $1" >/dev/null
  awk '{ printf "%s %.2f\n", $1, $2 + $3 }' "$WORK/time"
}
export -f sequential parallel
declare -a seq_wall seq_cpu par_wall par_cpu
for ((r = 0; r < ROUNDS; r++)); do
  if ((r % 2 == 0)); then read -r w c < <(measure sequential); seq_wall+=("$w"); seq_cpu+=("$c"); read -r w c < <(measure parallel); par_wall+=("$w"); par_cpu+=("$c")
  else read -r w c < <(measure parallel); par_wall+=("$w"); par_cpu+=("$c"); read -r w c < <(measure sequential); seq_wall+=("$w"); seq_cpu+=("$c"); fi
  echo "round $((r + 1)): sequential ${seq_wall[-1]} s wall, ${seq_cpu[-1]} s CPU; build ${par_wall[-1]} s wall, ${par_cpu[-1]} s CPU"
done
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }
sw=$(median "${seq_wall[@]}"); sc=$(median "${seq_cpu[@]}"); pw=$(median "${par_wall[@]}"); pc=$(median "${par_cpu[@]}")
# A second build run with nothing changed: every entry skipped.
"$MODELCONV" build --manifest "$WORK/modelconv.json" >/dev/null
start=$(date +%s.%N); skipped=$("$MODELCONV" build --manifest "$WORK/modelconv.json" --json | tail -n1); end=$(date +%s.%N)
noop=$(printf '%.2f' "$(echo "$end - $start" | bc)")

{
  echo "# modelconv build: 20 models in parallel against 20 sequential converts"
  echo
  echo "Made by \`Benchmarks/build-parallel.sh\` ($(date -u '+%Y-%m-%d %H:%M UTC')). Each side converts the same ${#MODELS[@]} models with"
  echo "the same options and \`--verify --samples 4\`: \`modelconv build --force\` on a manifest (its default \`-j\`, every"
  echo "core) and a shell loop of \`modelconv convert\` calls. Medians of $ROUNDS rounds, sides alternating first."
  echo
  echo "| machine | |"
  echo "| --- | --- |"
  echo "| CPU | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') |"
  echo "| nproc | $(nproc) |"
  echo "| load average at the end | $(cut -d' ' -f1-3 /proc/loadavg) |"
  echo "| modelconv | $("$MODELCONV" --version | head -n1), release build of commit $(git -C "$ROOT" log -1 --format=%h) |"
  echo
  echo "| | wall s | CPU s | cores busy (CPU / wall) |"
  echo "| --- | ---: | ---: | ---: |"
  echo "| 20 x \`modelconv convert\` | $sw | $sc | $(echo "scale=2; $sc / $sw" | bc) |"
  echo "| \`modelconv build\` | $pw | $pc | $(echo "scale=2; $pc / $pw" | bc) |"
  echo "| ratio (build / sequential) | $(echo "scale=2; $pw / $sw" | bc) | $(echo "scale=2; $pc / $sc" | bc) | |"
  echo
  echo "A second \`modelconv build\` with nothing changed: $noop s, summary \`$skipped\`."
} >"$OUT"
cat "$OUT"
