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
target=${CARGO_TARGET_DIR:-target}

cargo build --release --quiet --bin rustberg
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

cat > "$work/rustberg.toml" <<TOML
[server]
listen = "127.0.0.1:$RB_PORT"
data_dir = "$work/data"
TOML
RUST_LOG=warn taskset -c 0 "$target/release/rustberg" serve --config "$work/rustberg.toml" > "$work/rustberg.log" 2>&1 &
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$RB_PORT/ready" > /dev/null && break; sleep 0.1; done

credential=$(grep -o 'credential admin:[^ ]*' "$work/rustberg.log" | head -1 | cut -d' ' -f2)
token=$(curl -sf "http://127.0.0.1:$RB_PORT/v1/oauth/tokens" -d grant_type=client_credentials \
  -d "client_id=${credential%%:*}" -d "client_secret=${credential#*:}" | sed 's/.*"access_token":"\([^"]*\)".*/\1/')
api="http://127.0.0.1:$RB_PORT/v1/catalog"
curl -sf -H "Authorization: Bearer $token" -X POST "$api/namespaces" -H 'content-type: application/json' \
  -d '{"namespace":["bench"]}' > /dev/null

# Each wrk connection numbers its own tables, so every request is a new table.
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
