#!/usr/bin/env bash
# updateTable throughput: requirement-free set-properties commits (each one a new
# metadata file and a compare-and-swap of the pointer), sequentially and from 16
# connections spread over 16 tables, on the embedded redb root, and 16 connections
# creating root namespaces, then one (each one commit: the backend's create, which
# carries the owner's record and the location's claim); then 16 connections split
# over two hosts sharing one PostgreSQL database (if one answers at $PG, default
# postgres://postgres@127.0.0.1:5432), twice: each writer on a table of its own (8
# tables per host; since 2026-12-04), then every writer on every table, round robin
# (so nearly every commit follows the other host's and reads its file), each
# measured after an unmeasured run of the same length (since 2026-12-03; earlier
# figures began from fresh tables).
# Servers are pinned to core 0, wrk to core 1. A 409 is a commit that did not land:
# wrk's non-2xx count shows them.
#
#   bash bench/commits.sh            # 10 s per run
#   DURATION=30s bash bench/commits.sh
#
# Needs: wrk (apt-get install wrk), taskset (util-linux), curl; psql for the Postgres run.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
PG=${PG:-postgres://postgres@127.0.0.1:5432}
source bench/build.sh
build --bin rustberg
source bench/start_rustberg.sh

# wrk against one host: "<commits/s> <non-2xx>". THREADS (default 1) wrk threads.
run() {
  local out
  out=$(taskset -c 1 wrk -t"${THREADS:-1}" -c"$1" -d"$DURATION" -s "$2" -H "Authorization: Bearer $3" "$4")
  echo "$(awk '/Requests\/sec/ {print $2}' <<< "$out") $(awk '/Non-2xx/ {print $NF}' <<< "$out" | grep . || echo 0)"
}

echo "updateTable; $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
printf '%-34s %12s %10s\n' run "commits/s" "non-2xx"
start_rustberg 18184
commit_tables
commit_load "/v1/catalog" 1 > "$work/one.lua"
commit_load "/v1/catalog" 16 > "$work/spread.lua"
read -r rate refused < <(run 1 "$work/one.lua" "$token" "http://127.0.0.1:18184")
printf '%-34s %12s %10s\n' "redb, sequential, one table" "$rate" "$refused"
read -r rate refused < <(run 16 "$work/spread.lua" "$token" "http://127.0.0.1:18184")
printf '%-34s %12s %10s\n' "redb, 16 writers on 16 tables" "$rate" "$refused"
create_load "/v1/catalog" created > "$work/create.lua"
read -r rate refused < <(run 16 "$work/create.lua" "$token" "http://127.0.0.1:18184")
printf '%-34s %12s %10s\n' "redb, 16 writers creating roots" "$rate" "$refused"
create_load "/v1/catalog" alone > "$work/alone.lua"
read -r rate refused < <(run 1 "$work/alone.lua" "$token" "http://127.0.0.1:18184")
printf '%-34s %12s %10s\n' "redb, one writer creating roots" "$rate" "$refused"

command -v psql > /dev/null && psql "$PG/postgres" -qc 'select 1' > /dev/null 2>&1 || { echo "no PostgreSQL at $PG: skipped"; exit 0; }
psql "$PG/postgres" -qc 'drop database if exists rustberg_bench' -c 'create database rustberg_bench' > /dev/null
shared="$work/shared"
mkdir -p "$shared/warehouse"
secret=bench-secret
hash=$(printf '%s' "$secret" | "$bin/rustberg" hash-secret)
for port in 18185 18186; do
  cat > "$shared/$port.toml" <<TOML
[server]
listen = "127.0.0.1:$port"
data_dir = "$shared/data-$port"
[storage]
catalog_url = "$PG/rustberg_bench"
warehouse_location = "file://$shared/warehouse"
[auth.principals.root]
tenant = "ops"
role = "admin"
server_admin = true
secret_hash = "$hash"
TOML
  RUST_LOG=warn taskset -c 0 "${RUSTBERG_BIN:-$bin/rustberg}" serve --config "$shared/$port.toml" > "$shared/$port.log" 2>&1 &
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/ready" > /dev/null && break; sleep 0.1; done
done
token=$(curl -sf "http://127.0.0.1:18185/v1/oauth/tokens" -d grant_type=client_credentials \
  -d client_id=root -d "client_secret=$secret" | sed 's/.*"access_token":"\([^"]*\)".*/\1/')
api="http://127.0.0.1:18185/v1/catalog"
commit_tables
# Both hosts at once, unmeasured first (the hosts open their connections and the
# tables' metadata logs fill to 100 entries, as on a catalog in use), then measured:
# LABEL, then each host's script.
two_hosts() {
  run 8 "$2" "$token" "http://127.0.0.1:18185" > /dev/null &
  run 8 "$3" "$token" "http://127.0.0.1:18186" > /dev/null
  wait $!
  run 8 "$2" "$token" "http://127.0.0.1:18185" > "$work/a" &
  run 8 "$3" "$token" "http://127.0.0.1:18186" > "$work/b"
  wait $!
  read -r a_rate a_refused < "$work/a"
  read -r b_rate b_refused < "$work/b"
  printf '%-34s %12s %10s\n' "$1" "$(echo "$a_rate + $b_rate" | bc)" "$((a_refused + b_refused))"
}
own_table_load "/v1/catalog" 0 > "$work/own-a.lua"
own_table_load "/v1/catalog" 8 > "$work/own-b.lua"
THREADS=8 two_hosts "Postgres, 2 hosts, own table each" "$work/own-a.lua" "$work/own-b.lua"
# The second host starts half-way round, so the hosts meet on a table only by chance.
commit_load "/v1/catalog" 16 8 > "$work/spread-b.lua"
two_hosts "Postgres, 2 hosts, 16 on 16 tables" "$work/spread.lua" "$work/spread-b.lua"
kill $(jobs -p) 2>/dev/null || true
wait 2>/dev/null || true
psql "$PG/postgres" -qc 'drop database if exists rustberg_bench' > /dev/null
