#!/usr/bin/env bash
# Instructions per loadTable request, counted by callgrind: the same figure on any
# machine, however busy (wall-clock ratios move with the machine; this does not). The
# server and the no-op handler serving the same body each run under valgrind, and
# answer $DURATION of wrk at concurrency 1 with counting on; printed: instructions per
# request of both (user space only: the kernel's share is not counted), their ratio,
# and the functions that cost rustberg most, per request. Then instructions per
# updateTable commit, from 16 writers on 16 tables (the load of bench/commits.sh).
#
#   bash bench/instructions.sh
#   DURATION=20s TOP=40 bash bench/instructions.sh
#   RUSTBERG_BIN=/path/to/older/rustberg bash bench/instructions.sh
#
# Needs: valgrind, wrk (apt-get install wrk), taskset (util-linux), curl.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
TOP=${TOP:-25}
port=18196

source bench/build.sh
build --bin rustberg --example noop_server
# A set RUST_BACKTRACE makes every internal error capture a backtrace (the iceberg
# crate makes errors it throws away on every commit): not what production pays.
unset RUST_BACKTRACE
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
# valgrind cannot reserve what the default instance pool does (a terabyte of address
# space): one warm instance, 64 MiB of memory.
cat > "$work/rustberg.toml" <<TOML
[server]
listen = "127.0.0.1:$port"
data_dir = "$work/data"
[plugins]
pool_size = 1
memory_limit_mib = 64
TOML

counted() { # counted NAME COMMAND…: runs COMMAND under callgrind, counting off
  RUST_LOG=warn taskset -c 0 valgrind --tool=callgrind --instr-atstart=no \
    --callgrind-out-file="$work/$1.out" "${@:2}" > "$work/$1.log" 2>&1 &
  pid=$!
}
ready() { for _ in $(seq 600); do curl -sf "$1" > /dev/null && return; sleep 0.2; done; echo "not ready: $1" >&2; exit 1; }
# Counts what $pid does while it answers $DURATION of URL (from CONNECTIONS, default
# 1, with wrk's further ARGS); prints the requests answered. Each count is dumped to a
# file of its own (NAME.out.1, .2, …).
measure() { # measure URL [CONNECTIONS [ARGS…]]
  local n c=${2:-1}
  taskset -c 1 wrk -t1 -c"$c" -d2s -H "$auth" "${@:3}" "$1" > /dev/null
  callgrind_control -i on "$pid" > /dev/null 2>&1
  n=$(taskset -c 1 wrk -t1 -c"$c" -d"$DURATION" -H "$auth" "${@:3}" "$1" | awk '/requests in/ {print $1}')
  callgrind_control -i off "$pid" > /dev/null 2>&1
  callgrind_control -d "$pid" > /dev/null 2>&1
  sleep 1
  echo "$n"
}

counted rustberg "${RUSTBERG_BIN:-$bin/rustberg}" serve --config "$work/rustberg.toml"
ready "http://127.0.0.1:$port/ready"
credential=$(grep -o 'credential admin:[^ ]*' "$work/rustberg.log" | head -1 | cut -d' ' -f2)
token=$(curl -sf "http://127.0.0.1:$port/v1/oauth/tokens" -d grant_type=client_credentials \
  -d "client_id=${credential%%:*}" -d "client_secret=${credential#*:}" | sed 's/.*"access_token":"\([^"]*\)".*/\1/')
auth="Authorization: Bearer $token"
api="http://127.0.0.1:$port/v1/catalog"
json='content-type: application/json'
curl -sf -H "$auth" -X POST "$api/namespaces" -H "$json" -d '{"namespace":["bench"]}' > /dev/null
fields=$(for i in $(seq 1 12); do printf '{"id":%d,"name":"c%d","type":"%s","required":false},' "$i" "$i" "$([ $((i % 2)) = 0 ] && echo string || echo long)"; done)
# The table of bench/load_table.sh: the same 2,110-byte body.
curl -sf -H "$auth" -X POST "$api/namespaces/bench/tables" -H "$json" \
  -d "{\"name\":\"events\",\"schema\":{\"type\":\"struct\",\"schema-id\":0,\"fields\":[${fields%,}]},\"partition-spec\":{\"spec-id\":0,\"fields\":[{\"source-id\":2,\"field-id\":1000,\"name\":\"c2\",\"transform\":\"identity\"}]}}" > /dev/null
url="$api/namespaces/bench/tables/events"
for i in 1 2 3; do
  curl -sf -H "$auth" -X POST "$url" -H "$json" \
    -d "{\"requirements\":[],\"updates\":[{\"action\":\"set-properties\",\"updates\":{\"commit.$i\":\"value-$i\"}}]}" > /dev/null
done
curl -sf -H "$auth" "$url" > "$work/body.json"
rustberg_requests=$(measure "$url")
# Commits: requirement-free set-properties on 16 tables, round robin.
for i in $(seq 0 15); do
  curl -sf -H "$auth" -X POST "$api/namespaces/bench/tables" -H "$json" \
    -d "{\"name\":\"t$i\",\"schema\":{\"type\":\"struct\",\"schema-id\":0,\"fields\":[{\"id\":1,\"name\":\"id\",\"type\":\"long\",\"required\":true}]}}" > /dev/null
done
cat > "$work/commits.lua" <<'LUA'
local n = 0
request = function()
  n = n + 1
  local body = string.format('{"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"%d"}}]}', n)
  wrk.headers["content-type"] = "application/json"
  return wrk.format("POST", "/v1/catalog/namespaces/bench/tables/t" .. (n % 16), nil, body)
end
LUA
commits=$(measure "http://127.0.0.1:$port" 16 -s "$work/commits.lua")
kill "$pid"; wait "$pid" 2>/dev/null || true

counted noop "$bin/examples/noop_server" "$work/body.json" "127.0.0.1:$((port + 1))"
ready "http://127.0.0.1:$((port + 1))/"
noop_requests=$(measure "http://127.0.0.1:$((port + 1))/v1/catalog/namespaces/bench/tables/events")
kill "$pid"; wait "$pid" 2>/dev/null || true

total() { callgrind_annotate "$work/$1" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}'; }
rb=$(( $(total rustberg.out.1) / rustberg_requests ))
noop=$(( $(total noop.out.1) / noop_requests ))
echo "body: $(wc -c < "$work/body.json") bytes; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "instructions per request: no-op $noop, loadTable $rb ($(awk -v a="$rb" -v b="$noop" 'BEGIN {printf "%.1f", a / b}')x)"
echo "instructions per updateTable commit, 16 writers on 16 tables: $(( $(total rustberg.out.2) / commits ))"
echo "rustberg, instructions per loadTable by function (self cost):"
callgrind_annotate "$work/rustberg.out.1" 2>/dev/null \
  | awk -v n="$rustberg_requests" -v top="$TOP" '/file:function/ {on = 1; next} on && /^ *[0-9,]+ / && shown < top {
      v = $1; gsub(",", "", v); sub(/^ *[0-9,]+ \( *[0-9.]+%\) +/, ""); printf "%8.0f  %s\n", v / n, substr($0, 1, 120); shown++ }'
