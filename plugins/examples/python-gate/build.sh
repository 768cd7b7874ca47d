#!/usr/bin/env bash
# Builds this gate into a component: ./build.sh [OUT.wasm] (default gate.wasm).
# Needs Python 3.11+; installs componentize-py (pinned) into $PY_VENV (default .venv).
set -euo pipefail
cd "$(dirname "$0")"
out="$(realpath -m "${1:-gate.wasm}")"
wit="${WIT:-$([ -d wit ] && echo wit || echo ../../../wit)}"
venv="${PY_VENV:-.venv}"
if [ ! -x "$venv/bin/componentize-py" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check componentize-py==0.25.1
fi
"$venv/bin/componentize-py" -d "$wit" -w gate componentize app -o "$out"
rm -rf __pycache__
