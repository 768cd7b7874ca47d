#!/usr/bin/env bash
# createTable throughput: every request creates a new table (a new default location,
# claimed in the location index) in one namespace, at concurrency 1 and 16. The
# server is pinned to core 0, the load generator (wrk) to core 1. Writes wait for an
# fsync, so this measures durability as much as the code.
#
#   bash bench/create_table.sh            # 10 s per run
#   DURATION=30s bash bench/create_table.sh
#
# Needs: wrk (apt-get install wrk), taskset (util-linux), curl.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
RB_PORT=${RB_PORT:-18183}

source bench/build.sh
build --bin rustberg
source bench/start_rustberg.sh
start_rustberg "$RB_PORT"
curl -sf -H "Authorization: Bearer $token" -X POST "$api/namespaces" -H 'content-type: application/json' \
  -d '{"namespace":["bench"]}' > /dev/null

# Every request creates a table of a new name.
cat > "$work/create.lua" <<'LUA'
-- A run id per wrk run (seeded from the clock) and a counter: every name is new.
math.randomseed(os.time() + math.floor(os.clock() * 1e6))
local run = math.random(1, 1e9)
local counter = 0
request = function()
  counter = counter + 1
  local body = string.format('{"name":"t%d_%d","schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true}]}}', run, counter)
  wrk.headers["content-type"] = "application/json"
  return wrk.format("POST", nil, nil, body)
end
LUA

echo "createTable; $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
printf '%-12s %14s %12s\n' concurrency "creates/s" "non-200"
for c in 1 16; do
  out=$(taskset -c 1 wrk -t1 -c"$c" -d"$DURATION" -s "$work/create.lua" -H "Authorization: Bearer $token" \
    "$api/namespaces/bench/tables")
  # A refused create is not a create: wrk counts every answer, so the failures are shown.
  printf '%-12s %14s %12s\n' "$c" "$(awk '/Requests\/sec/ {print $2}' <<< "$out")" \
    "$(awk '/Non-2xx/ {print $NF}' <<< "$out" | grep . || echo 0)"
done
