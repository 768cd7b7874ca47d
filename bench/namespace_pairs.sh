#!/usr/bin/env bash
# Root namespaces created and dropped, one client, one request at a time: a create of
# a fresh name, then its drop, over and over on the embedded redb root. Prints pairs/s
# and how many durable redb transactions (fsyncs) a pair took. The server is pinned to
# core 0, wrk to core 1.
#
#   bash bench/namespace_pairs.sh
#   PROFILE=release DURATION=5s bash bench/namespace_pairs.sh
#   RUSTBERG_BIN=/path/to/an/older/rustberg bash bench/namespace_pairs.sh   # before/after
#
# Needs: wrk, taskset, curl.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}

source bench/build.sh
build --bin rustberg
source bench/start_rustberg.sh
start_rustberg 18193
cat > "$work/pairs.lua" <<'LUA'
math.randomseed(os.time() + math.floor(os.clock() * 1e6))
local run, n = math.random(1, 1e9), 0
request = function()
  n = n + 1
  local name = string.format("p_%d_%d", run, math.floor((n + 1) / 2))
  if n % 2 == 1 then
    wrk.headers["content-type"] = "application/json"
    return wrk.format("POST", "/v1/catalog/namespaces", nil, '{"namespace":["' .. name .. '"]}')
  end
  return wrk.format("DELETE", "/v1/catalog/namespaces/" .. name)
end
LUA
fsyncs() {
  curl -sf "http://127.0.0.1:18193/metrics" | awk '/^rustberg_redb_transactions_total/ {print $2}'
}
before=$(fsyncs)
out=$(taskset -c 1 wrk -t1 -c1 -d"$DURATION" -s "$work/pairs.lua" -H "Authorization: Bearer $token" \
  "http://127.0.0.1:18193")
after=$(fsyncs)
requests=$(echo "$out" | awk '/requests in/ {print $1}')
errors=$(echo "$out" | awk '/Non-2xx/ {print $NF}')
rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
echo "pairs/s: $(awk -v r="$rps" 'BEGIN {printf "%.0f", r / 2}')  fsyncs per pair: $(awk -v a="$after" -v b="$before" -v n="$requests" 'BEGIN {printf "%.2f", (a - b) / (n / 2)}')  non-2xx: ${errors:-0}"
