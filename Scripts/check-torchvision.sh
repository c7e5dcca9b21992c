#!/usr/bin/env bash
# Scripts/check-torchvision.sh: convert every torchvision classification model exported by
# Samples/export_torchvision.py to both Core ML formats and verify each against onnxruntime.
#
# The issue's criterion: every torchvision classification architecture that exports at opset 13-18 converts
# to both formats and passes `verify` and an onnxruntime `--reference`. Run by hand (not in CI; the models are
# large and made outside the repository):
#
#   /tmp/venv-onnx/bin/python Samples/export_torchvision.py                 # writes /tmp/torchvision-onnx
#   Scripts/check-torchvision.sh                                            # every exported model
#   Scripts/check-torchvision.sh resnet18 mobilenet_v2                      # only these
#
# For each model, opset (OPSETS) and format (FORMATS), in that order:
#   modelconv convert MODEL_opsetN.onnx -o OUT.mlpackage|OUT.mlmodel --precision float32
#     (a .mlmodel whose float32 weights pass 2 GiB, which the format cannot hold, is refused by name: the row
#     is then --precision float16, and says so)
#   modelconv verify  MODEL_opsetN.onnx OUT --reference MODEL_opsetN.reference.h5 --samples 2
# each under `timeout $TIMEOUT`, recording the convert exit code (124: timed out) and the first line of its
# error, the convert wall seconds, verify PASS/FAIL (with its exit code and first FAIL/error line) and the verify
# wall seconds. Models whose export failed (the manifest says so) get a row saying that.
#
# Results accumulate in $WORK/results.tsv (a rerun of a model replaces its rows), every command's output is kept
# in $WORK/logs/, and the whole table is rewritten to $TABLE (Markdown, with the machine: nproc, CPU model and
# flags, date, versions) after every model; a summary is printed at the end. Converted models are deleted after
# their verify unless KEEP=1.
#
# Settings (environment):
#   MODELCONV  binary to run               (default: .build/release/modelconv of this repository)
#   MODELS_DIR exported models             (default: /tmp/torchvision-onnx)
#   WORK       converted models, logs, TSV (default: /tmp/torchvision-check)
#   TABLE      Markdown table              (default: Benchmarks/torchvision-onnx.md)
#   OPSETS     default "13 18";  FORMATS default "mlpackage mlmodel";  TIMEOUT seconds per command, default 900
#   PYTHON     the onnx venv's python, only to read versions (default: /tmp/venv-onnx/bin/python)
#   KEEP=1     keep the converted models
#   RENDER=1   only rewrite the table from results.tsv
set -uo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MODELCONV="${MODELCONV:-$ROOT/.build/release/modelconv}"
MODELS_DIR="${MODELS_DIR:-/tmp/torchvision-onnx}"
WORK="${WORK:-/tmp/torchvision-check}"
TABLE="${TABLE:-$ROOT/Benchmarks/torchvision-onnx.md}"
OPSETS="${OPSETS:-13 18}"
FORMATS="${FORMATS:-mlpackage mlmodel}"
TIMEOUT="${TIMEOUT:-900}"
PYTHON="${PYTHON:-/tmp/venv-onnx/bin/python}"
RESULTS="$WORK/results.tsv"
mkdir -p "$WORK/logs" "$WORK/out"
[[ -x "$MODELCONV" ]] || { echo "no modelconv at $MODELCONV (swift build -c release --product modelconv)" >&2; exit 64; }
[[ -f "$RESULTS" ]] || printf 'model\topset\tformat\tconvert_exit\tconvert_s\tverify\tverify_exit\tverify_s\tdetail\n' >"$RESULTS"

# The first line that says what went wrong: an `error:`/`FAIL` line if there is one, else the first line that is
# not a warning, else the first line.
first_error() {
  local file="$1" line
  line="$(grep -m1 -E '^(error|FAIL)|: error:|[0-9]+ operators? (is|are) not supported' "$file")" ||
    line="$(grep -m1 -v -E '^(warning|note)|^\s*$' "$file")" || line="$(head -n1 "$file")"
  printf '%s' "${line:0:400}" | tr '\t|' '  '
}

record() {  # model opset format convert_exit convert_s verify verify_exit verify_s detail
  local key="$1	$2	$3	"
  grep -v -F "$key" "$RESULTS" >"$RESULTS.tmp"; mv "$RESULTS.tmp" "$RESULTS"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RESULTS"
}

export_error() {  # model opset: the manifest's export error, if it has one
  "$PYTHON" - "$MODELS_DIR/manifest.json" "$1_opset$2" <<'EOF' 2>/dev/null
import json, sys
entry = json.load(open(sys.argv[1]))["models"].get(sys.argv[2], {})
if entry.get("status") == "export failed":
    print(entry["error"])
EOF
}

check() {  # model opset format
  local model="$1" opset="$2" format="$3" key="$1_opset$2"
  local onnx="$MODELS_DIR/$key.onnx" reference="$MODELS_DIR/$key.reference.h5" out="$WORK/out/$key.$format"
  local log="$WORK/logs/$key.$format" start end code seconds verdict vcode vseconds detail="" note=""
  if [[ ! -f "$onnx" || ! -f "$reference" ]]; then
    detail="$(export_error "$model" "$opset")"
    record "$model" "$opset" "$format" "-" "-" "not exported" "-" "-" "${detail:-no $key.onnx / .reference.h5 in $MODELS_DIR}"
    echo "  $key $format: not exported ${detail:+($detail)}"
    return
  fi
  rm -rf "$out"
  start=$(date +%s.%N)
  timeout "$TIMEOUT" "$MODELCONV" convert "$onnx" -o "$out" --precision float32 >"$log.convert.out" 2>"$log.convert.err"
  code=$?
  end=$(date +%s.%N)
  seconds=$(printf '%.1f' "$(echo "$end - $start" | bc)")
  if [[ $code -eq 65 && "$format" == mlmodel ]] && grep -q "one protobuf message may hold" "$log.convert.err"; then
    # Over 2 GiB of float32 weights cannot be a classic .mlmodel at all (protobuf's limit, refused by name):
    # the row is the float16 network, which halves them.
    note="float16 (the float32 network is over 2 GiB, refused by name); "
    start=$(date +%s.%N)
    timeout "$TIMEOUT" "$MODELCONV" convert "$onnx" -o "$out" --precision float16 >"$log.convert.out" 2>"$log.convert.err"
    code=$?
    end=$(date +%s.%N)
    seconds=$(printf '%.1f' "$(echo "$end - $start" | bc)")
  fi
  if [[ $code -ne 0 ]]; then
    [[ $code -eq 124 ]] && detail="convert timed out after ${TIMEOUT} s" || detail="$(first_error "$log.convert.err")"
    record "$model" "$opset" "$format" "$code" "$seconds" "-" "-" "-" "$detail"
    echo "  $key $format: convert exit $code in $seconds s: $detail"
    rm -rf "$out"
    return
  fi
  start=$(date +%s.%N)
  timeout "$TIMEOUT" "$MODELCONV" verify "$onnx" "$out" --reference "$reference" --samples 2 >"$log.verify.out" 2>"$log.verify.err"
  vcode=$?
  end=$(date +%s.%N)
  vseconds=$(printf '%.1f' "$(echo "$end - $start" | bc)")
  if [[ $vcode -eq 0 ]]; then
    verdict=PASS
  else
    verdict=FAIL
    if [[ $vcode -eq 124 ]]; then detail="verify timed out after ${TIMEOUT} s"
    else cat "$log.verify.out" "$log.verify.err" >"$log.verify.all"; detail="$(first_error "$log.verify.all")"; fi
  fi
  detail="$note$detail"
  record "$model" "$opset" "$format" "$code" "$seconds" "$verdict" "$vcode" "$vseconds" "$detail"
  echo "  $key $format: converted in $seconds s, verify $verdict (exit $vcode, $vseconds s)${detail:+: $detail}"
  [[ "${KEEP:-0}" == 1 ]] || rm -rf "$out"
}

cpu_flags() {
  local flags
  flags="$(grep -m1 -E '^(flags|Features)' /proc/cpuinfo | cut -d: -f2)"
  for f in avx avx2 fma avx512f avx512bw avx512vl avx512_vnni avx512_bf16 amx_tile; do
    [[ " $flags " == *" $f "* ]] && printf '%s ' "$f"
  done
}

# Every distinct reason in the current failures' logs, one per line as "model<TAB>key<TAB>reason": the layers the
# writer refuses and the operators the importer lacks each become one reason (shapes and counts dropped).
reasons() {
  local model opset format file
  while IFS=$'\t' read -r model opset format _ _ verdict _; do
    [[ "$verdict" == PASS || "$verdict" == "not exported" ]] && continue
    file="$WORK/logs/${model}_opset$opset.$format.convert.err"
    [[ "$verdict" == FAIL ]] && file="$WORK/logs/${model}_opset$opset.$format.verify.all"
    [[ -s "$file" ]] || continue
    grep -m1 -E '^(error|FAIL)|: error:' "$file" | sed 's/; layer /\nlayer /g' |
      sed -E "s/^modelconv: error: [0-9]+ layers cannot be written in this format: //; s/^modelconv: error: //" |
      sed -E "s/^layer '[^']*': //; s/^[^ ]*\.(onnx|mlpackage|mlmodel): //" |
      sed -E 's/^[0-9]+ operators? (is|are) not supported: //; t ops; b done; :ops s/, \(opset [0-9]+\)$//; s/ \([0-9]+ nodes?\)//g; s/, /\n/g; s/^/ONNX operator without a handler: /; s/\n/\nONNX operator without a handler: /g; :done' |
      sed -E "s/\[[0-9, ]+\]/[...]/g; s/operation '[^']*'/operation/; s/'[^']*'/'...'/g" |
      sort -u | sed "s/^/$model\t$model $opset $format\t/"
  done < <(tail -n +2 "$RESULTS")
}

render() {
  local cpu versions total pass
  cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
  versions="$("$PYTHON" -c 'import json,sys; v=json.load(open(sys.argv[1]))["versions"]; print(", ".join(f"{k} {x}" for k, x in v.items()))' "$MODELS_DIR/manifest.json" 2>/dev/null)"
  total=$(($(wc -l <"$RESULTS") - 1))
  pass=$(awk -F'\t' 'NR > 1 && $6 == "PASS"' "$RESULTS" | wc -l)
  {
    echo "# torchvision classification models: ONNX -> Core ML"
    echo
    echo "Made by \`Scripts/check-torchvision.sh\` from the exports of \`Samples/export_torchvision.py\` (random"
    echo "weights after \`torch.manual_seed(0)\`, eval mode, batch 1, 224x224 (inception_v3 299x299), TorchScript exporter)."
    echo "Each row: \`modelconv convert MODEL.onnx -o X.FORMAT --precision float32\`, then \`modelconv verify MODEL.onnx"
    echo "X.FORMAT --reference MODEL.reference.h5 --samples 2\` (2 random samples plus the 2 onnxruntime reference"
    echo "samples), each under a ${TIMEOUT} s timeout. \"convert s\" and \"verify s\" are wall seconds."
    echo
    echo "| machine | |"
    echo "| --- | --- |"
    echo "| date | $(date -u '+%Y-%m-%d %H:%M UTC') |"
    echo "| CPU | ${cpu:-$(uname -m)} |"
    echo "| nproc | $(nproc) |"
    echo "| CPU flags | $(cpu_flags) |"
    echo "| OS | $(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-?}"), kernel $(uname -r) |"
    echo "| modelconv | $("$MODELCONV" --version 2>/dev/null | head -n1), sources of commit $(git -C "$ROOT" log -1 --format=%h -- Sources Package.swift 2>/dev/null) |"
    echo "| Swift | $(swift --version 2>/dev/null | head -n1 | sed 's/|/ /g') |"
    echo "| export | ${versions:-?} |"
    echo
    echo "$pass of $total (model, opset, format) rows pass. By model (PASS; FAIL: verify failed, with its exit code;"
    echo "exit N: convert failed; timeout; not exported), the details and first errors below:"
    echo
    echo "| model | opset 13 .mlpackage | opset 13 .mlmodel | opset 18 .mlpackage | opset 18 .mlmodel |"
    echo "| --- | --- | --- | --- | --- |"
    tail -n +2 "$RESULTS" | awk -F'\t' '
      { if ($6 == "PASS") v = "PASS"; else if ($6 == "FAIL") v = "FAIL (" $7 ")"; else if ($6 == "not exported") v = "not exported";
        else if ($4 == "124") v = "convert timeout"; else v = "convert exit " $4
        cell[$1 "/" $2 "/" $3] = v; if (!($1 in seen)) { seen[$1] = 1; order[n++] = $1 } }
      END { for (i = 0; i < n; i++) { m = order[i]; printf "| %s", m
              split("13/mlpackage 13/mlmodel 18/mlpackage 18/mlmodel", keys, " ")
              for (k = 1; k <= 4; k++) { c = cell[m "/" keys[k]]; printf " | %s", (c == "" ? "-" : c) }
              print " |" } }' | sort
    echo
    local unchecked
    unchecked="$("$PYTHON" - "$MODELS_DIR/manifest.json" "$RESULTS" <<'EOF' 2>/dev/null
import json, sys
models = sorted({e["model"] for e in json.load(open(sys.argv[1]))["models"].values()})
checked = {line.split("\t")[0] for line in open(sys.argv[2])}
print(", ".join(m for m in models if m not in checked))
EOF
)"
    if [[ -n "$unchecked" ]]; then
      echo "In the manifest but not checked yet (no rows): $unchecked."
      echo
    fi
    echo "Why they fail: each distinct reason in the failing rows' messages (logs in \`$WORK/logs\`), with the rows"
    echo "(model, opset, format) that give it:"
    echo
    echo "| reason | rows | models |"
    echo "| --- | ---: | --- |"
    reasons | awk -F'\t' '{ rows[$3]++; if (!((($3) SUBSEP ($1)) in seen)) { seen[$3, $1] = 1; models[$3] = models[$3] (models[$3] == "" ? "" : ", ") $1 } }
      END { for (r in rows) printf "| %s | %d | %s |\n", r, rows[r], models[r] }' | sort -t'|' -k3,3nr
    echo
    echo "| model | opset | format | convert exit | convert s | verify | verify s | first error |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
    tail -n +2 "$RESULTS" | sort -t$'\t' -k1,1 -k2,2n -k3,3 |
      awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $8, $9 }'
  } >"$TABLE"
}

if [[ "${RENDER:-0}" == 1 ]]; then render; echo "wrote $TABLE"; exit 0; fi

if [[ $# -gt 0 ]]; then
  models=("$@")
else  # every model the manifest knows, in its order, exported or not
  mapfile -t models < <("$PYTHON" -c 'import json,sys
seen = []
for e in json.load(open(sys.argv[1]))["models"].values():
    seen += [e["model"]] if e["model"] not in seen else []
print("\n".join(seen))' "$MODELS_DIR/manifest.json")
fi

echo "modelconv: $MODELCONV; models: ${#models[@]} from $MODELS_DIR; opsets: $OPSETS; formats: $FORMATS; timeout ${TIMEOUT} s"
for model in "${models[@]}"; do
  for opset in $OPSETS; do
    for format in $FORMATS; do
      check "$model" "$opset" "$format"
    done
  done
  render
done
render

echo
echo "Summary ($RESULTS, table $TABLE):"
awk -F'\t' 'NR > 1 {
    n++; if ($6 == "PASS") p++; else if ($4 != "0" && $4 != "-") c++; else if ($6 == "FAIL") f++; else x++
  } END { printf "  %d rows: %d PASS, %d verify FAIL, %d convert failed, %d not exported\n", n, p, f, c, x }' "$RESULTS"
awk -F'\t' 'NR > 1 && $6 != "PASS" { printf "  %s opset %s %s: %s\n", $1, $2, $3, $9 }' "$RESULTS"
