#!/usr/bin/env bash
# Regenerate every fixture in Samples/Fixtures, Samples/Digits and Samples/DigitsMobile.
#
#   Samples/make_fixtures.sh            # venvs in Samples/.venv (created if missing)
#   VENV_DIR=/path Samples/make_fixtures.sh
#   PYTHON=python3.11 Samples/make_fixtures.sh
#
# Needs Python 3.11 (TensorFlow 2.15 has no wheels for newer Pythons) and PyPI access for the first run.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV_DIR="${VENV_DIR:-$HERE/.venv}"
PYTHON="${PYTHON:-python3}"
OUT="$HERE/Fixtures"

make_venv() {  # name requirements-file
    local dir="$VENV_DIR/$1"
    if [ ! -x "$dir/bin/python" ]; then
        echo "== creating $dir"
        "$PYTHON" -m venv "$dir"
        "$dir/bin/pip" install --upgrade pip >/dev/null
        "$dir/bin/pip" install -r "$2"
    fi
}

make_venv tfkeras215 "$HERE/requirements-tfkeras215.txt"
make_venv keras3 "$HERE/requirements-keras3.txt"
PY215="$VENV_DIR/tfkeras215/bin/python"
PY3="$VENV_DIR/keras3/bin/python"

rm -rf "$OUT" "$HERE/Digits" "$HERE/DigitsMobile"
"$PY215" "$HERE/make_fixtures.py" --dialect tfkeras215 --out "$OUT"   # also writes Fixtures/bad
"$PY3"   "$HERE/make_fixtures.py" --dialect tfkeras2   --out "$OUT"
"$PY3"   "$HERE/make_fixtures.py" --dialect keras3     --out "$OUT"
"$PY215" "$HERE/make_fixtures.py" --legacy             --out "$OUT"   # after tfkeras215
"$PY215" "$HERE/make_digits.py" --out "$HERE/Digits"
"$PY215" "$HERE/make_digits_mobile.py" --out "$HERE/DigitsMobile"
# layer fixtures (recurrent, 1-D, wrappers, normalization, preprocessing, Keras 1): Fixtures/layers, own manifest
"$PY215" "$HERE/make_layer_fixtures.py" --dialect tfkeras215 --out "$OUT/layers"
"$PY3"   "$HERE/make_layer_fixtures.py" --dialect keras3     --out "$OUT/layers"
"$PY215" "$HERE/make_layer_fixtures.py" --keras1             --out "$OUT/layers"
"$PY215" "$HERE/make_coreml_golden.py" --fixtures "$OUT" --digits "$HERE/Digits" --out "$OUT/coremltools"  # after the above
# the hostile sample SelfConsistencyTests reads back: seeded cases convert accepts in both formats (needs a release build)
(cd "$HERE/.." && swift build -c release --product modelconv >/dev/null)
"$PY215" "$HERE/make_hostile_corpus.py" --out "$OUT/hostile" --count 400 --seed 2323 --keep-accepted 24 \
  --modelconv "$HERE/../.build/release/modelconv" --max-bytes 40000

du -sh "$HERE/Fixtures" "$HERE/Digits" "$HERE/DigitsMobile"
