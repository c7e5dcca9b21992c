#!/usr/bin/env bash
# Runs `modelconv convert` (release build) over a hostile corpus made by Samples/make_hostile_corpus.py and
# classifies every run: a clean exit code (0, 64, 65, 66, 73) is fine; a signal is a crash; a timeout is a
# hang; a run past the memory limit is killed (ulimit -v) and counted as a crash; an output file left after
# a failure is a partial output. Prints a summary and the cases that failed; exits 1 when any did.
#
#   Scripts/run-hostile-corpus.sh /tmp/hostile [seconds per case (20)] [memory limit in MiB (4096)]
set -uo pipefail
corpus="${1:?usage: run-hostile-corpus.sh CORPUS [seconds] [MiB]}"
seconds="${2:-20}"
mebibytes="${3:-4096}"
cd "$(dirname "$0")/.."
swift build -c release --product modelconv >/dev/null || exit 2
binary="$PWD/.build/release/modelconv"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

run_case() {
  local file="$1" out="$work/$(basename "$1").mlmodel"
  ( ulimit -v $((mebibytes * 1024)); timeout -s KILL "$seconds" "$binary" convert "$file" -o "$out" >/dev/null 2>"$out.err" )
  local status=$?
  local verdict=ok
  case $status in
    0|64|65|66|73) ;;
    137) verdict=hang-or-killed ;;
    *) verdict=crash ;;
  esac
  if [ $status -ne 0 ] && [ -e "$out" ]; then verdict=partial-output; fi
  if [ $status -ne 0 ] && ! [ -s "$out.err" ] && [ $verdict = ok ]; then verdict=silent-failure; fi
  echo "$status $verdict $(basename "$file")"
  rm -f "$out" "$out.err"
}
export -f run_case
export binary work seconds mebibytes

ls "$corpus"/*.h5 | xargs -P 2 -I{} bash -c 'run_case "$@"' _ {} > "$work/results.txt"
echo "cases: $(wc -l < "$work/results.txt")"
echo "exit codes:"; awk '{print "  " $1}' "$work/results.txt" | sort | uniq -c
failures=$(grep -v " ok " "$work/results.txt" || true)
if [ -n "$failures" ]; then
  echo "FAILED cases:"; echo "$failures"
  exit 1
fi
echo "no crashes, hangs, partial outputs or silent failures"
