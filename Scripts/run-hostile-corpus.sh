#!/usr/bin/env bash
# Runs `modelconv convert` (release build) over a hostile corpus made by Samples/make_hostile_corpus.py and
# classifies every run: a clean exit code (0, 64, 65, 66, 73) is fine; a signal is a crash; a timeout is a
# hang; a run past the memory limit is killed (ulimit -v) and counted as a crash; an output file left after
# a failure is a partial output; a run whose peak resident memory is above the documented bound
# (README, Limits: 320 MiB + 16 x the file's size: the reader child's 256 MiB + 16 x allowance and the parent's own) is over-memory. Every case convert accepts is then read
# back and verified (`modelconv verify SOURCE CONVERTED`) in both formats (.mlmodel and .mlpackage): a
# verify that refuses our own file (exit 65 or 66) is a self-rejection, a parity failure (exit 1) a
# parity failure, a verify above the same bound over both files' sizes plus the tensors it planned
# (its "memory:" line) over-memory; a model verify refuses as needing more memory than it may use is
# counted apart. Each case's line carries its highest peak as a fraction of its bound, and the summary
# the highest of all. Prints a summary and the cases that failed; exits 1 when any did.
#
#   [MODELCONV=path] Scripts/run-hostile-corpus.sh /tmp/hostile [seconds per case (20)] [memory limit in MiB (4096)]
set -uo pipefail
corpus="${1:?usage: run-hostile-corpus.sh CORPUS [seconds] [MiB]}"
seconds="${2:-20}"
mebibytes="${3:-4096}"
cd "$(dirname "$0")/.."
# MODELCONV names a binary to use instead of building the release one.
if [ -n "${MODELCONV:-}" ]; then
  binary="$MODELCONV"
else
  swift build -c release --product modelconv >/dev/null || exit 2
  binary="$PWD/.build/release/modelconv"
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# One command with the time and memory limits, its stdout and stderr to files; prints "STATUS PEAK_KIB".
limited() {
  local rss="$1" stdout="$2" stderr="$3"; shift 3
  ( ulimit -v $((mebibytes * 1024)); timeout -s KILL "$seconds" /usr/bin/time -f "%M" -o "$rss" "$@" >"$stdout" 2>"$stderr" )
  local status=$?
  echo "$status $(tail -n 1 "$rss" 2>/dev/null | tr -dc 0-9)"
}

run_case() {
  local file="$1" name; name="$(basename "$1")"
  local verdict=ok detail="" formats="" worst=0
  local bound_kib=$(( 320 * 1024 + 16 * $(stat -c %s "$file") / 1024 ))
  for format in mlmodel mlpackage; do
    local out="$work/$name.$format"
    read -r status peak < <(limited "$out.rss" /dev/null "$out.err" "$binary" convert "$file" -o "$out")
    case $status in
      0|64|65|66|73) ;;
      137) verdict=hang-or-killed ;;
      *) verdict=crash ;;
    esac
    if [ "$status" -ne 0 ] && [ -e "$out" ]; then verdict=partial-output; fi
    if [ "$status" -ne 0 ] && ! [ -s "$out.err" ] && [ $verdict = ok ]; then verdict=silent-failure; fi
    if [ -n "$peak" ] && [ "$peak" -gt "$bound_kib" ] && [ $verdict = ok ]; then verdict=over-memory; detail="convert peak ${peak} KiB > ${bound_kib} KiB"; fi
    [ -n "$peak" ] && [ $((peak * 1000 / bound_kib)) -gt "$worst" ] && worst=$((peak * 1000 / bound_kib))
    formats="$formats $format:$status"
    if [ "$status" -eq 0 ] && [ $verdict = ok ]; then
      read -r vstatus vpeak < <(limited "$out.vrss" "$out.vout" "$out.verr" "$binary" verify "$file" "$out" --samples 2)
      # verify reads the source and the converted file (the same bound over both sizes) and holds the
      # tensors it planned: its "memory:" line's bytes per sample x samples at once.
      local planned_kib
      planned_kib=$(sed -n 's/^  memory: at most \([0-9.]*\) \([KMG]\)iB .*, \([0-9]*\) at once.*/\1 \2 \3/p' "$out.vout" |
        awk '{ printf "%d", $1 * ($2 == "K" ? 1 : $2 == "M" ? 1024 : 1048576) * $3 }')
      local vbound_kib=$(( bound_kib + 16 * $(du -sb "$out" | cut -f1) / 1024 + ${planned_kib:-0} ))
      # A model one sample of which needs more than verify may use here is refused (65) before it runs:
      # not a self-rejection (both files were read), counted apart.
      if [ "$vstatus" = 65 ] && grep -q "cannot verify: one sample needs" "$out.verr"; then vstatus=too-large; fi
      formats="$formats/verify:$vstatus"
      if [ -n "$vpeak" ] && [ "$vpeak" -gt "$vbound_kib" ] && [ "$vstatus" = 0 ]; then vstatus=over-memory; fi
      [ -n "$vpeak" ] && [ $((vpeak * 1000 / vbound_kib)) -gt "$worst" ] && worst=$((vpeak * 1000 / vbound_kib))
      case $vstatus in
        0|too-large) ;;
        1) verdict=parity-failure; detail="$format: $(grep -m1 -i "fail\|differ" "$out.vout" "$out.verr" | head -c 300)" ;;
        over-memory) verdict=over-memory; detail="$format verify peak ${vpeak} KiB > ${vbound_kib} KiB" ;;
        65|66) verdict=self-rejection; detail="$format: $(head -c 300 "$out.verr")" ;;
        137) verdict=hang-or-killed; detail="$format verify" ;;
        *) verdict=crash; detail="$format verify exit $vstatus" ;;
      esac
    fi
    rm -rf "$out" "$out".*
    [ $verdict = ok ] || break
  done
  echo "$verdict $name$formats peak/bound=$(printf %d.%03d $((worst / 1000)) $((worst % 1000))) ${detail//$'\n'/ }"
}
export -f run_case limited
export binary work seconds mebibytes

ls "$corpus"/*.h5 | xargs -P 2 -I{} bash -c 'run_case "$@"' _ {} > "$work/results.txt"
echo "cases: $(wc -l < "$work/results.txt")"
echo "verdicts:"; awk '{print "  " $1}' "$work/results.txt" | sort | uniq -c
echo "converted and verified (.mlmodel): $(grep -c 'mlmodel:0/verify:0' "$work/results.txt")"
echo "converted and verified (.mlpackage): $(grep -c 'mlpackage:0/verify:0' "$work/results.txt")"
echo "accepted, too large to verify within the memory limit: $(grep -c 'verify:too-large' "$work/results.txt")"
echo "highest peak memory against its bound (convert and verify): $(grep -o 'peak/bound=[0-9.]*' "$work/results.txt" | sort -t= -k2 -n | tail -n 1 | cut -d= -f2)"
failures=$(grep -v "^ok " "$work/results.txt" || true)
if [ -n "$failures" ]; then
  echo "FAILED cases:"; echo "$failures"
  exit 1
fi
echo "no crashes, hangs, partial outputs, silent failures, over-memory runs, self-rejections or parity failures"
