#!/usr/bin/env bash
# Run every benchmark in one go and print the tables (see Benchmarks/README.md).
#
#   Benchmarks/run.sh                         # venv in Benchmarks/.venv, made if missing
#   REPEATS=5 Benchmarks/run.sh               # conversion runs per tool and model (median)
#   MODELCONV=/path/to/modelconv RUNTIME_BENCH=/path/to/runtime-bench Benchmarks/run.sh
#   VENV_DIR=/tmp/benchvenv PYTHON=python3.11 Benchmarks/run.sh
#   Benchmarks/run.sh --only latency,throughput   # other arguments go to bench.py (--help)
#   Benchmarks/run.sh --shared-models /path/to/shared/models
#
# Needs Python 3.11 (TensorFlow 2.15 has no wheels for newer Pythons) and PyPI for the first run.
# Builds modelconv and runtime-bench with `swift build -c release --product ...` only when the
# default binary is missing; a path given in MODELCONV / RUNTIME_BENCH must exist (never built).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"
VENV_DIR="${VENV_DIR:-$HERE/.venv}"
PYTHON="${PYTHON:-python3}"
DEFAULT_MODELCONV="$REPO/.build/release/modelconv"
MODELCONV="${MODELCONV:-$DEFAULT_MODELCONV}"
DEFAULT_RUNTIME_BENCH="$REPO/.build/release/runtime-bench"
RUNTIME_BENCH="${RUNTIME_BENCH:-$DEFAULT_RUNTIME_BENCH}"
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

# ensure_binary VAR PATH DEFAULT PRODUCT: build PRODUCT when PATH is the default and missing.
ensure_binary() {
    local var="$1" path="$2" default="$3" product="$4"
    if [ ! -x "$path" ]; then
        if [ "$path" = "$default" ]; then
            echo "== building $product (swift build -c release --product $product)"
            (cd "$REPO" && swift build -c release --product "$product")
        else
            echo "error: $var=$path is not an executable" >&2
            exit 1
        fi
    fi
}
ensure_binary MODELCONV "$MODELCONV" "$DEFAULT_MODELCONV" modelconv
ensure_binary RUNTIME_BENCH "$RUNTIME_BENCH" "$DEFAULT_RUNTIME_BENCH" runtime-bench

export MODELCONV RUNTIME_BENCH REPEATS="${REPEATS:-3}"
exec "$VENV_DIR/bin/python" "$HERE/bench.py" "$@"
