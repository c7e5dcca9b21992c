#!/usr/bin/env bash
# Run every benchmark in one go and print the tables (see Benchmarks/README.md).
#
#   Benchmarks/run.sh                         # venv in Benchmarks/.venv, made if missing
#   REPEATS=5 Benchmarks/run.sh               # conversion runs per tool and model (median)
#   MODELCONV=/path/to/modelconv Benchmarks/run.sh
#   VENV_DIR=/tmp/benchvenv PYTHON=python3.11 Benchmarks/run.sh
#   Benchmarks/run.sh --only latency          # other arguments go to bench.py (--help)
#
# Needs Python 3.11 (TensorFlow 2.15 has no wheels for newer Pythons) and PyPI for the first run.
# Builds modelconv with `swift build -c release` only when the default binary is missing.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"
VENV_DIR="${VENV_DIR:-$HERE/.venv}"
PYTHON="${PYTHON:-python3}"
DEFAULT_MODELCONV="$REPO/.build/release/modelconv"
MODELCONV="${MODELCONV:-$DEFAULT_MODELCONV}"
REQUIREMENTS="$HERE/requirements.txt"

# The venv is (re)installed when missing or when requirements.txt changed since it was made.
stamp="$VENV_DIR/.requirements.sha256"
want="$(sha256sum "$REQUIREMENTS" | cut -d' ' -f1)"
if [ ! -x "$VENV_DIR/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ]; then
    echo "== installing $VENV_DIR from $REQUIREMENTS"
    "$PYTHON" -m venv "$VENV_DIR"
    "$VENV_DIR/bin/pip" install --upgrade pip >/dev/null
    "$VENV_DIR/bin/pip" install -r "$REQUIREMENTS"
    echo "$want" > "$stamp"
fi

if [ ! -x "$MODELCONV" ]; then
    if [ "$MODELCONV" = "$DEFAULT_MODELCONV" ]; then
        echo "== building modelconv (swift build -c release)"
        (cd "$REPO" && swift build -c release)
    else
        echo "error: MODELCONV=$MODELCONV is not an executable" >&2
        exit 1
    fi
fi

export MODELCONV REPEATS="${REPEATS:-3}"
exec "$VENV_DIR/bin/python" "$HERE/bench.py" "$@"
