#!/usr/bin/env bash
# Instructions per loadTable request, counted by callgrind: the same figure on any
# machine, however busy (wall-clock ratios move with the machine; this does not). The
# server and the no-op handler serving the same body each run under valgrind, and
# answer $DURATION of wrk at concurrency 1 with counting on; printed: instructions per
# request of both (user space only: the kernel's share is not counted), their ratio,
# and the functions that cost rustberg most, per request. Then instructions per
# updateTable commit, from 16 writers on 16 tables (the load of bench/commits.sh), per
# listing of 100 namespaces and of 100 tables (those of bench/listings.sh), and per
# root namespace create from 16 writers.
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
source bench/start_rustberg.sh
out=$(mktemp -d)
works="$out"

# Counts what $pid does while it answers $DURATION of URL (from CONNECTIONS, default
# 1, with wrk's further ARGS); prints the requests answered. Each count is dumped to a
# file of its own (NAME.out.1, .2, …).
measure() { # measure URL [CONNECTIONS [ARGS…]]
  local n c=${2:-1}
  taskset -c 1 wrk -t1 -c"$c" -d2s -H "Authorization: Bearer $token" "${@:3}" "$1" > /dev/null
  callgrind_control -i on "$pid" > /dev/null 2>&1
  n=$(taskset -c 1 wrk -t1 -c"$c" -d"$DURATION" -H "Authorization: Bearer $token" "${@:3}" "$1" | awk '/requests in/ {print $1}')
  callgrind_control -i off "$pid" > /dev/null 2>&1
  callgrind_control -d "$pid" > /dev/null 2>&1
  sleep 1
  echo "$n"
}
counting() { echo "valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=$out/$1.out"; }

# valgrind cannot reserve what the default instance pool does (a terabyte of address
# space): one warm instance, 64 MiB of memory.
RUSTBERG_WRAP=$(counting rustberg) start_rustberg "$port" $'[plugins]\npool_size = 1\nmemory_limit_mib = 64'
pid=$!
events_table
url="$api/namespaces/bench/tables/events"
curl -sf -H "Authorization: Bearer $token" "$url" > "$out/body.json"
rustberg_requests=$(measure "$url")
# Commits: the 16 writers on 16 tables of bench/commits.sh.
commit_tables
commit_load /v1/catalog 16 > "$out/commits.lua"
commits=$(measure "http://127.0.0.1:$port" 16 -s "$out/commits.lua")
# Listings of 100 items: the ones of bench/listings.sh.
listing_items
namespace_listings=$(measure "$api/namespaces?pageToken=&pageSize=100")
table_listings=$(measure "$api/namespaces/bench/tables?pageToken=&pageSize=100")
# Root namespace creates from 16 writers, as bench/commits.sh makes them.
create_load /v1/catalog created > "$out/creates.lua"
creates=$(measure "http://127.0.0.1:$port" 16 -s "$out/creates.lua")
kill "$pid"; wait "$pid" 2>/dev/null || true

noop_url="http://127.0.0.1:$((port + 1))"
taskset -c 0 $(counting noop) "$bin/examples/noop_server" "$out/body.json" "127.0.0.1:$((port + 1))" > "$out/noop.log" 2>&1 &
pid=$!
for _ in $(seq 600); do curl -sf "$noop_url/" > /dev/null && break; sleep 0.1; done
noop_requests=$(measure "$noop_url/v1/catalog/namespaces/bench/tables/events")
kill "$pid"; wait "$pid" 2>/dev/null || true

total() { callgrind_annotate "$out/$1" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}'; }
rb=$(( $(total rustberg.out.1) / rustberg_requests ))
noop=$(( $(total noop.out.1) / noop_requests ))
echo "body: $(wc -c < "$out/body.json") bytes; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "instructions per request: no-op $noop, loadTable $rb ($(awk -v a="$rb" -v b="$noop" 'BEGIN {printf "%.1f", a / b}')x)"
echo "instructions per updateTable commit, 16 writers on 16 tables: $(( $(total rustberg.out.2) / commits ))"
echo "instructions per listing of 100: listNamespaces $(( $(total rustberg.out.3) / namespace_listings )), listTables $(( $(total rustberg.out.4) / table_listings ))"
echo "instructions per root namespace create, 16 writers: $(( $(total rustberg.out.5) / creates ))"
# The $TOP functions of count FILE that cost most, per request of N.
top() { # top FILE N
  callgrind_annotate "$out/$1" 2>/dev/null \
    | awk -v n="$2" -v top="$TOP" '/file:function/ {on = 1; next} on && /^ *[0-9,]+ / && shown < top {
        v = $1; gsub(",", "", v); sub(/^ *[0-9,]+ \( *[0-9.]+%\) +/, ""); printf "%8.0f  %s\n", v / n, substr($0, 1, 120); shown++ }'
}
echo "rustberg, instructions per loadTable by function (self cost):"
top rustberg.out.1 "$rustberg_requests"
echo "rustberg, instructions per listNamespaces of 100 by function (self cost):"
top rustberg.out.3 "$namespace_listings"
echo "rustberg, instructions per listTables of 100 by function (self cost):"
top rustberg.out.4 "$table_listings"
