#!/usr/bin/env bash
# Builds this backend into a component: ./build.sh [OUT.wasm] (default backend.wasm).
# Needs Node.js 20+; installs jco and componentize-js (pinned in package-lock.json).
set -euo pipefail
cd "$(dirname "$0")"
out="$(realpath -m "${1:-backend.wasm}")"
wit="${WIT:-$([ -d wit ] && echo wit || echo ../../../wit)}"
if [ ! -x node_modules/.bin/jco ]; then
  npm ci --no-audit --no-fund --silent
fi
# -d http fetch-event: no wasi:http import (the host refuses it; a backend's HTTP is
# the rustberg:catalog/http import, which carries the mount's credential).
node_modules/.bin/jco componentize backend.js --wit "$wit" -n kv-backend -d http fetch-event -o "$out" >/dev/null
