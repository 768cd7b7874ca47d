#!/usr/bin/env bash
# loadTable of a small table through the built-in native backend and through the
# Python and JavaScript example backends mounted as drop-in files, on one server, at
# concurrency 4 (issue 47: drop-ins as fast as built-ins). Each is reported against
# the root catalog (native); a native mount shows what being a mount costs. The server
# is pinned to core 0, wrk to core 1.
#
#   bash bench/drop_in_loads.sh
#   PROFILE=release DURATION=5s bash bench/drop_in_loads.sh
#
# Needs: wrk, taskset, curl; python3 and node for the examples' builds.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
RB_PORT=${RB_PORT:-18191}

source bench/build.sh
build --bin rustberg
examples="$(realpath -m "${CARGO_TARGET_DIR:-target}/release/plugin-kit/examples")"
mkdir -p "$examples"
[ -f "$examples/python.wasm" ] || PY_VENV="$examples/../python-venv" bash plugins/examples/python/build.sh "$examples/python.wasm"
[ -f "$examples/javascript.wasm" ] || bash plugins/examples/javascript/build.sh "$examples/javascript.wasm"

source bench/start_rustberg.sh
# The native backend mounted the same way: what a mount costs any backend.
mounts="[mount.native]
backend = \"native\"
catalog_url = \"redb://$(mktemp -d)/native.redb\"
owner = \"default\"
"
for lang in python javascript; do
  mounts+="[mount.$lang]
backend = \"$(realpath "$examples/$lang.wasm")\"
catalog_url = \"redb://$(mktemp -d)/$lang.redb\"
owner = \"default\"
"
done
start_rustberg "$RB_PORT" "$mounts"
for ns in bench native%1Fbench python%1Fbench javascript%1Fbench; do
  namespace=$(printf '%s' "$ns" | sed 's/%1F/","/')
  bench_post namespaces "{\"namespace\":[\"$namespace\"]}"
  bench_post "namespaces/$ns/tables" \
    '{"name":"t","schema":{"type":"struct","fields":[{"id":1,"name":"id","required":true,"type":"long"}]}}'
done
rps() { taskset -c 1 wrk -t1 -c4 -d"$DURATION" -H "Authorization: Bearer $token" "$1" | awk '/Requests\/sec/ {print $2}'; }
native=$(rps "$api/namespaces/bench/tables/t")
printf '%-12s %12s %10s\n' backend "req/s (c4)" "vs root"
printf '%-12s %12s %10s\n' root "$native" 1.00
for lang in native python javascript; do
  real=$(rps "$api/namespaces/$lang%1Fbench/tables/t")
  printf '%-12s %12s %10s\n' "$lang" "$real" "$(awk -v a="$real" -v b="$native" 'BEGIN {printf "%.2f", a / b}')"
done
