#!/usr/bin/env bash
# Root namespaces created and dropped, by one client (CLIENTS=n: n), one request at a
# time: a create of a fresh name, then its drop, over and over on the embedded redb root. Prints pairs/s
# and how many durable redb transactions (fsyncs) a pair took. The server is pinned to
# core 0, wrk to core 1.
#
#   bash bench/namespace_pairs.sh
#   PROFILE=release DURATION=5s bash bench/namespace_pairs.sh
#   RUSTBERG_BIN=/path/to/an/older/rustberg bash bench/namespace_pairs.sh   # before/after
#   CLIENTS=8 bash bench/namespace_pairs.sh
#
# PEER_BIN also measures, in the same run, the crates.io crate `rustberg` 0.3.0 (another
# Iceberg catalog sharing the name) on an embedded redb file, with its authentication
# off and its audit log written to a file:
#   cargo install rustberg --version 0.3.0 --no-default-features --features cli,storage-s3 --root /tmp/rb030
#   PEER_BIN=/tmp/rb030/bin/rustberg bash bench/namespace_pairs.sh
#
# Needs: wrk, taskset, curl.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
# Clients, each creating and dropping names of its own one request at a time.
CLIENTS=${CLIENTS:-1}

source bench/build.sh
build --bin rustberg
source bench/start_rustberg.sh
start_rustberg 18193
cat > "$work/pairs.lua" <<'LUA'
-- Each wrk thread has one connection and names of its own.
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("id", threads)
end
math.randomseed(os.time() + math.floor(os.clock() * 1e6))
local run, n = math.random(1, 1e9), 0
request = function()
  n = n + 1
  local name = string.format("p_%d_%d_%d", run, id, math.floor((n + 1) / 2))
  if n % 2 == 1 then
    wrk.headers["content-type"] = "application/json"
    return wrk.format("POST", wrk.path .. "/namespaces", nil, '{"namespace":["' .. name .. '"]}')
  end
  return wrk.format("DELETE", wrk.path .. "/namespaces/" .. name)
end
LUA

# pairs URL [wrk args…]: create+drop pairs/s, requests made, and non-2xx answers.
pairs() {
  local url=$1
  shift
  local out
  out=$(taskset -c 1 wrk -t"$CLIENTS" -c"$CLIENTS" -d"$DURATION" -s "$work/pairs.lua" "$@" "$url")
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  requests=$(echo "$out" | awk '/requests in/ {print $1}')
  errors=$(echo "$out" | awk '/Non-2xx/ {print $NF}')
  per_s=$(awk -v r="$rps" 'BEGIN {printf "%.0f", r / 2}')
}

fsyncs() {
  curl -sf "http://127.0.0.1:18193/metrics" | awk '/^rustberg_redb_transactions_total/ {print $2}'
}
before=$(fsyncs)
pairs "http://127.0.0.1:18193/v1/catalog" -H "Authorization: Bearer $token"
after=$(fsyncs)
ours=$per_s
echo "rustberg: pairs/s: $ours  fsyncs per pair: $(awk -v a="$after" -v b="$before" -v n="$requests" 'BEGIN {printf "%.2f", (a - b) / (n / 2)}')  non-2xx: ${errors:-0}"

if [ -n "${PEER_BIN:-}" ]; then
  peer=$(mktemp -d)
  works="$works $peer"
  taskset -c 0 "$PEER_BIN" --catalog-url "file://$peer/catalog.redb" --warehouse "file://$peer/warehouse" \
    --no-auth --insecure-http --dev --host 127.0.0.1 --port 18194 --log-level warn > "$peer/audit.log" 2>&1 &
  for _ in $(seq 100); do curl -sf http://127.0.0.1:18194/v1/config > /dev/null && break; sleep 0.1; done
  pairs "http://127.0.0.1:18194/v1"
  echo "crates.io rustberg 0.3.0: pairs/s: $per_s  non-2xx: ${errors:-0}"
  echo "ratio: $(awk -v a="$ours" -v b="$per_s" 'BEGIN {printf "%.2f", a / b}')x"
fi
