#!/usr/bin/env bash
# Runs `modelconv convert` (release build) over a hostile corpus made by Samples/make_hostile_corpus.py (Keras
# .h5) or Samples/make_hostile_corpus_onnx_coreml.py (ONNX and Core ML) and classifies every run. A case is a
# file (*.h5, *.onnx, *.mlmodel), a package folder (*.mlpackage) or a folder holding model.onnx and its external
# data (CASE/model.onnx). A clean exit code (0, 64, 65, 66, 73) is fine; a signal is a crash; a run the time
# limit kills is a hang (a FIFO the tool waits on counts so); a run killed otherwise (SIGKILL, out of memory) is
# killed; a run past the memory limit (ulimit -v) fails to allocate and usually crashes; an output file left
# after a failure is a partial output; a failure with nothing on stderr a silent failure; a run whose peak
# resident memory is above the documented bound (Docs/Fixtures.md, and Docs/Keras.md's Limits: 320 MiB + 16 x the case's size: the reader
# child's 256 MiB + 16 x allowance and the parent's own) is over-memory. A case's size is the smaller of its
# apparent size and its allocated blocks, so a sparse 8 GiB file counts for the few KB it occupies. Every case
# convert accepts is then read back and verified (`modelconv verify SOURCE CONVERTED`) in both formats (.mlmodel
# and .mlpackage): a verify that refuses our own file (exit 65 or 66) is a self-rejection, a parity failure
# (exit 1) a parity failure, a verify above the same bound over both files' sizes plus the tensors it planned
# (its "memory:" line) over-memory; a model verify refuses as needing more memory than it may use is counted
# apart. A listing of each case (type, size, mode, mtime and ctime of every entry, MD5 of its regular files and
# of the regular files its links point at) is taken before and after: any change is source-modified. Each
# case's line carries its highest peak as a fraction of its bound, and the summary the highest of all. Prints a
# summary and the cases that failed (with the first line of their stderr); exits 1 when any did.
#
#   [MODELCONV=path] [JOBS=2] [RESULTS=file] Scripts/run-hostile-corpus.sh /tmp/hostile [seconds per case (20)] [memory limit in MiB (4096)]
#
# JOBS cases run at once (xargs -P). The runner itself never opens a case's special files (FIFOs, devices),
# and does not hash files over 64 MiB (sparse ones): their size and times are compared.
set -uo pipefail
corpus="${1:?usage: run-hostile-corpus.sh CORPUS [seconds] [MiB]}"
seconds="${2:-20}"
mebibytes="${3:-4096}"
corpus="$(cd "$corpus" && pwd)" || exit 2
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
  # (The group's own stderr goes nowhere: bash's "Killed" notice when the time limit kills the run.)
  { ( ulimit -v $((mebibytes * 1024)); timeout -s KILL "$seconds" /usr/bin/time -f "%M" -o "$rss" "$@" >"$stdout" 2>"$stderr" ); } 2>/dev/null
  local status=$?
  echo "$status $(tail -n 1 "$rss" 2>/dev/null | tr -dc 0-9)"
}

# What a case is made of, to compare before and after: every entry's type, size, mode, mtime, ctime and link
# target; the MD5 of every regular file up to 64 MiB and of every regular file (up to 64 MiB) a link names.
# Never opens a FIFO or a device.
snapshot() {
  local root="$1" link target
  find "$root" -printf '%y %s %m %T@ %C@ %P -> %l\n' 2>&1 | LC_ALL=C sort
  find "$root" -type f -size -65537k -print0 2>/dev/null | LC_ALL=C sort -z | xargs -0 -r md5sum 2>&1
  find "$root" -type l -print0 2>/dev/null | LC_ALL=C sort -z | while IFS= read -r -d '' link; do
    target="$(readlink -f "$link" 2>/dev/null)" || continue
    if [ -f "$target" ] && [ "$(stat -c %s "$target")" -le 67108864 ]; then echo "$link => $(md5sum "$target" 2>&1)"; fi
  done
}

# The bytes a case occupies: the smaller of its apparent size and its allocated blocks (a sparse file counts
# for what is on disk).
case_bytes() {
  local apparent allocated
  apparent=$(du -s --apparent-size --block-size=1 "$1" 2>/dev/null | cut -f1)
  allocated=$(du -s --block-size=1 "$1" 2>/dev/null | cut -f1)
  echo $(( ${apparent:-0} < ${allocated:-0} ? ${apparent:-0} : ${allocated:-0} ))
}

# The first line of a file of stderr, on one line and short.
first_line() { head -n 1 "$1" 2>/dev/null | tr -d '\000-\010\013-\037' | head -c 200; }

run_case() {
  local file="$1" root name
  # A folder case (CASE/model.onnx with its external data) is named and measured as the folder.
  if [ "$(basename "$file")" = model.onnx ] && [ "$(dirname "$file")" != "$corpus" ]; then root="$(dirname "$file")"; else root="$file"; fi
  name="$(basename "$root")"
  local verdict=ok detail="" formats="" worst=0 stderr_line=""
  local bound_kib=$(( 320 * 1024 + 16 * $(case_bytes "$root") / 1024 ))
  snapshot "$root" > "$work/$name.before"
  for format in mlmodel mlpackage; do
    local out="$work/$name.$format"
    read -r status peak < <(limited "$out.rss" /dev/null "$out.err" "$binary" convert "$file" -o "$out")
    case $status in
      0|64|65|66|73) ;;
      137) if [ -z "$peak" ]; then verdict=hang; detail="$format convert: no exit in ${seconds} s"; else verdict=killed; fi ;;
      *) verdict=crash; detail="$format convert exit $status" ;;
    esac
    [ "$status" -ne 0 ] && stderr_line="$(first_line "$out.err")"
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
      if [ "$vstatus" = 137 ] && [ -z "$vpeak" ]; then vstatus=hang; fi
      formats="$formats/verify:$vstatus"
      if [ -n "$vpeak" ] && [ "$vpeak" -gt "$vbound_kib" ] && [ "$vstatus" = 0 ]; then vstatus=over-memory; fi
      [ -n "$vpeak" ] && [ $((vpeak * 1000 / vbound_kib)) -gt "$worst" ] && worst=$((vpeak * 1000 / vbound_kib))
      case $vstatus in
        0|too-large) ;;
        1) verdict=parity-failure; detail="$format: $(grep -h -m1 -E '^ *FAIL|differ' "$out.vout" "$out.verr" | head -c 300)" ;;
        over-memory) verdict=over-memory; detail="$format verify peak ${vpeak} KiB > ${vbound_kib} KiB" ;;
        65|66) verdict=self-rejection; detail="$format: $(head -c 300 "$out.verr")" ;;
        hang) verdict=hang; detail="$format verify: no exit in ${seconds} s" ;;
        137) verdict=killed; detail="$format verify" ;;
        *) verdict=crash; detail="$format verify exit $vstatus" ;;
      esac
      [ "$vstatus" != 0 ] && [ "$vstatus" != too-large ] && stderr_line="$(first_line "$out.verr")"
    fi
    rm -rf "$out" "$out".*
    [ $verdict = ok ] || break
  done
  snapshot "$root" > "$work/$name.after"
  if ! cmp -s "$work/$name.before" "$work/$name.after"; then
    detail="was $verdict; changed: $(diff "$work/$name.before" "$work/$name.after" | grep -m1 '^>' | head -c 200) ${detail}"
    verdict=source-modified
  fi
  rm -f "$work/$name.before" "$work/$name.after"
  echo "$verdict $name$formats peak/bound=$(printf %d.%03d $((worst / 1000)) $((worst % 1000))) ${detail//$'\n'/ }$([ -n "$stderr_line" ] && [[ "$detail" != *"$stderr_line"* ]] && echo " | stderr: $stderr_line")"
}
export -f run_case limited snapshot case_bytes first_line
export binary work seconds mebibytes corpus

# The cases: files and packages at the top of the corpus, and folders holding model.onnx (external data).
{ find "$corpus" -mindepth 1 -maxdepth 1 \( -name '*.h5' -o -name '*.onnx' -o -name '*.mlmodel' -o -name '*.mlpackage' \) -print
  find "$corpus" -mindepth 2 -maxdepth 2 -name model.onnx -not -path '*.mlpackage/*' -print
} | LC_ALL=C sort > "$work/cases.txt"
# RESULTS names a file to keep every case's line in (written as cases finish: follow a long run with it).
results="${RESULTS:-$work/results.txt}"
xargs -d '\n' -P "${JOBS:-2}" -I{} bash -c 'run_case "$@"' _ {} < "$work/cases.txt" > "$results"
echo "cases: $(wc -l < "$results")"
echo "verdicts:"; awk '{print "  " $1}' "$results" | sort | uniq -c
echo "converted and verified (.mlmodel): $(grep -c 'mlmodel:0/verify:0' "$results")"
echo "converted and verified (.mlpackage): $(grep -c 'mlpackage:0/verify:0' "$results")"
echo "accepted, too large to verify within the memory limit: $(grep -c 'verify:too-large' "$results")"
echo "highest peak memory against its bound (convert and verify): $(grep -o 'peak/bound=[0-9.]*' "$results" | sort -t= -k2 -n | tail -n 1 | cut -d= -f2)"
failures=$(grep -v "^ok " "$results" || true)
if [ -n "$failures" ]; then
  echo "FAILED cases:"; echo "$failures"
  exit 1
fi
echo "no crashes, hangs, kills, partial outputs, silent failures, over-memory runs, self-rejections, parity failures or modified sources"
