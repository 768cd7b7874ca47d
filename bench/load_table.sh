#!/usr/bin/env bash
# loadTable through the wasm native backend vs. a no-op axum handler returning a
# body of the same size, at concurrency 1 and 16. Each server is pinned to core 0,
# the load generator (wrk) to core 1.
#
#   bash bench/load_table.sh            # 10 s per run
#   DURATION=30s bash bench/load_table.sh
#
# Needs: wrk (apt-get install wrk), taskset (util-linux), curl.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
RB_PORT=${RB_PORT:-18181}
NOOP_PORT=${NOOP_PORT:-18182}
target=${CARGO_TARGET_DIR:-target}

cargo build --release --quiet --bin rustberg --example noop_server
source bench/start_rustberg.sh
start_rustberg "$RB_PORT"
auth="Authorization: Bearer $token"
curl() { command curl -H "$auth" "$@"; }
json='content-type: application/json'
curl -sf -X POST "$api/namespaces" -H "$json" -d '{"namespace":["bench"]}' > /dev/null
fields=$(for i in $(seq 1 12); do printf '{"id":%d,"name":"c%d","type":"%s","required":false},' "$i" "$i" "$([ $((i % 2)) = 0 ] && echo string || echo long)"; done)
curl -sf -X POST "$api/namespaces/bench/tables" -H "$json" \
  -d "{\"name\":\"events\",\"schema\":{\"type\":\"struct\",\"schema-id\":0,\"fields\":[${fields%,}]},\"partition-spec\":{\"spec-id\":0,\"fields\":[{\"source-id\":2,\"field-id\":1000,\"name\":\"c2\",\"transform\":\"identity\"}]}}" > /dev/null
for i in 1 2 3; do
  curl -sf -X POST "$api/namespaces/bench/tables/events" -H "$json" \
    -d "{\"requirements\":[],\"updates\":[{\"action\":\"set-properties\",\"updates\":{\"commit.$i\":\"value-$i\"}}]}" > /dev/null
done
url="$api/namespaces/bench/tables/events"
curl -sf "$url" > "$work/body.json"
size=$(wc -c < "$work/body.json")

taskset -c 0 "$target/release/examples/noop_server" "$work/body.json" "127.0.0.1:$NOOP_PORT" > "$work/noop.log" 2>&1 &
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$NOOP_PORT/" > /dev/null && break; sleep 0.1; done

rps() { taskset -c 1 wrk -t1 -c"$1" -d"$DURATION" -H "$auth" "$2" | awk '/Requests\/sec/ {print $2}'; }

echo "loadTable body: $size bytes; $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
printf '%-12s %14s %14s %8s\n' concurrency "noop req/s" "loadTable req/s" ratio
for c in 1 16; do
  noop=$(rps "$c" "http://127.0.0.1:$NOOP_PORT/v1/catalog/namespaces/bench/tables/events")
  real=$(rps "$c" "$url")
  printf '%-12s %14s %14s %8s\n' "$c" "$noop" "$real" "$(awk -v a="$real" -v b="$noop" 'BEGIN {printf "%.2f", a / b}')"
done
