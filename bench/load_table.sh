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
events_table
compare_with_noop "$api/namespaces/bench/tables/events"
