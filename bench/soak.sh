#!/usr/bin/env bash
# Soak: two hosts under a steady commit load for $DURATION (default 30m) — one on its
# embedded redb file, one on PostgreSQL (at $PG, default postgres://postgres@127.0.0.1:5432)
# — each taking set-properties commits from 8 connections over 16 tables (every commit
# a new metadata file and a compare-and-swap of the pointer). Every $EVERY seconds
# (default 60) it prints, per host: resident memory, open file descriptors, the redb
# file's size, and the Postgres connections the database counts for its host; then the
# growth of each from the first sample to the last (docs/reliability.md).
#
#   bash bench/soak.sh                 # 30 minutes
#   DURATION=2m EVERY=10 bash bench/soak.sh
#   SOAK_TOML=$'[events]\nenabled = false' bash bench/soak.sh   # more configuration for both
#
# Needs: wrk (apt-get install wrk), taskset (util-linux), curl, psql.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-30m}
EVERY=${EVERY:-60}
PG=${PG:-postgres://postgres@127.0.0.1:5432}
source bench/build.sh
# $RUSTBERG_BIN: a rustberg already built (then nothing is built).
[ -n "${RUSTBERG_BIN:-}" ] || build --bin rustberg
source bench/start_rustberg.sh

psql "$PG/postgres" -qc 'drop database if exists rustberg_soak' -c 'create database rustberg_soak' > /dev/null
start_rustberg 18191 "${SOAK_TOML:-}"
redb_api=$api redb_token=$token redb_work=$work
commit_tables
start_rustberg 18192 "${SOAK_TOML:-}
[storage]
catalog_url = \"$PG/rustberg_soak\"
warehouse_location = \"file://$work/warehouse\""
pg_api=$api pg_token=$token
commit_tables
commit_load "/v1/catalog" 16 > "$work/load.lua"

pid_on() { ss -ltnp "sport = :$1" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2; }
redb_pid=$(pid_on 18191) pg_pid=$(pid_on 18192)
redb_file=$(find "$redb_work/data" -name '*.redb' -printf '%s %p\n' | sort -n | tail -1 | cut -d' ' -f2)

# `sample`: one line per host: rss (kB), fds, redb bytes, Postgres connections.
sample() {
  local rss fds
  for host in redb pg; do
    local pid_var="${host}_pid"
    local pid=${!pid_var}
    rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
    fds=$(ls "/proc/$pid/fd" | wc -l)
    if [ "$host" = redb ]; then
      printf '%-6s %8s %10s %5s %14s %8s\n' "$1" redb "$rss" "$fds" "$(stat -c %s "$redb_file")" -
    else
      local connections
      connections=$(psql "$PG/postgres" -Atc "select count(*) from pg_stat_activity where datname = 'rustberg_soak'")
      printf '%-6s %8s %10s %5s %14s %8s\n' "$1" postgres "$rss" "$fds" - "$connections"
    fi
  done
}

echo "soak: $DURATION, a sample every ${EVERY}s; $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
printf '%-6s %8s %10s %5s %14s %8s\n' minute host "rss kB" fds "redb bytes" "pg conns"
taskset -c 1 wrk -t1 -c8 -d"$DURATION" -s "$work/load.lua" -H "Authorization: Bearer $redb_token" \
  "${redb_api%/v1/catalog}" > "$work/redb.wrk" &
redb_load=$!
taskset -c 1 wrk -t1 -c8 -d"$DURATION" -s "$work/load.lua" -H "Authorization: Bearer $pg_token" \
  "${pg_api%/v1/catalog}" > "$work/pg.wrk" &
pg_load=$!
minute=0
sample "$minute" | tee "$work/samples"
while kill -0 "$redb_load" 2>/dev/null; do
  sleep "$EVERY"
  minute=$((minute + EVERY / 60))
  kill -0 "$redb_load" 2>/dev/null && sample "$minute" | tee -a "$work/samples"
done
wait "$pg_load" || true
for host in redb pg; do
  echo "$host: $(awk '/Requests\/sec/ {print $2}' "$work/$host.wrk") commits/s, $(awk '/Non-2xx/ {print $NF}' "$work/$host.wrk" | grep . || echo 0) non-2xx"
done
# Growth from the first sample to the last.
for host in redb postgres; do
  grep " $host " "$work/samples" | awk -v host="$host" 'NR == 1 {r = $3; f = $4; b = $5; c = $6} {lr = $3; lf = $4; lb = $5; lc = $6}
    END {printf "%s growth: rss %+d kB, fds %+d, redb %s, pg conns %s\n", host, lr - r, lf - f,
      (b == "-" ? "-" : sprintf("%+.0f bytes", lb - b)), (c == "-" ? "-" : sprintf("%d -> %d", c, lc))}'
done
