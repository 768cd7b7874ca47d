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

source bench/build.sh
build --bin rustberg --example noop_server
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
compare_with_noop "$api/namespaces/bench/tables/events"
