#!/usr/bin/env bash
# What a rest mount adds to a loadTable and to a commit: a second Rustberg (the remote)
# holds a table; the first mounts it read-write as `remote` and serves it as
# remote.bench.t. Its baselines are
# bare proxies in front of the same remote (`host/examples/noop_proxy.rs`), each what
# one HTTP hop on this core costs without a catalog: the mount's own HTTP client behind
# axum ("bare proxy"), hyper's server and client alone ("hyper proxy"), and a relay of
# the bytes with no HTTP library ("tcp relay"). All servers are pinned to core 0, wrk
# (one connection) to core 1; prints the latency percentiles of asking the remote
# directly and through each, and what each adds to the direct median. Then the same for
# a requirement-free commit (set-properties, forwarded to the remote, which writes a
# metadata file and swaps its pointer), and for both the ratio of the mount to the bare
# proxy: the same call made to the remote with the same HTTP client (the goal: at most
# 1.3).
#
#   bash bench/rest_mount.sh               # 10 s per run
#   DURATION=5s bash bench/rest_mount.sh
#
# Needs: wrk (apt-get install wrk), taskset (util-linux), curl.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}

source bench/build.sh
build --bin rustberg --example noop_proxy
source bench/start_rustberg.sh

# The remote, with one table (the loadTable body of bench/load_table.sh's size class).
start_rustberg 18191
remote_token=$token remote_api=$api
json='content-type: application/json'
curl -sf -H "Authorization: Bearer $token" -H "$json" -X POST "$api/namespaces" -d '{"namespace":["bench"]}' > /dev/null
curl -sf -H "Authorization: Bearer $token" -H "$json" -X POST "$api/namespaces/bench/tables" -d '{"name":"t","schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true},{"id":2,"name":"ts","type":"timestamptz","required":false},{"id":3,"name":"payload","type":"string","required":false}]},"partition-spec":{"spec-id":0,"fields":[{"source-id":2,"field-id":1000,"name":"day","transform":"day"}]}}' > /dev/null

# The mounting server, with the remote mounted under its token.
export BENCH_REMOTE_TOKEN=$remote_token
start_rustberg 18192 "$(cat <<TOML
[mount.remote]
backend     = "rest"
catalog_url = "http://127.0.0.1:18191"
owner       = "default"
token_env   = "BENCH_REMOTE_TOKEN"
read_only   = false
TOML
)" || { cat "$work/rustberg.log"; exit 1; }
mount_token=$token mount_api=$api
direct="$remote_api/namespaces/bench/tables/t"
mounted="$mount_api/namespaces/remote%1Fbench/tables/t"
curl -sf -H "Authorization: Bearer $mount_token" "$mounted" > /dev/null || {
  echo "the mounted table does not load"; cat "$work/rustberg.log"; exit 1
}

# p50/p90/p99 in microseconds, from wrk's --latency table.
# With a third argument, each request is what that wrk script makes.
percentiles() {
  taskset -c 1 wrk -t1 -c1 -d"$DURATION" --latency ${3:+-s "$3"} -H "Authorization: Bearer $1" "$2" | awk '
    function us(v) { if (v ~ /us$/) return v + 0; if (v ~ /ms$/) return v * 1000; return v * 1000000 }
    $1 == "50%" { p50 = us($2) } $1 == "90%" { p90 = us($2) } $1 == "99%" { p99 = us($2) }
    /Requests\/sec/ { rps = $2 }
    END { printf "%8.0f %8.0f %8.0f %10s\n", p50, p90, p99, rps }'
}
# The bare proxies, forwarding to the remote.
proxy_port=18193
for mode in client hyper relay; do
  taskset -c 0 "$bin/examples/noop_proxy" "http://127.0.0.1:18191" "127.0.0.1:$proxy_port" "$mode" \
    > "$work/proxy-$mode.log" 2>&1 &
  proxied="http://127.0.0.1:$proxy_port/${direct#http://*/}"
  declare "proxied_$mode=$proxied"
  for _ in $(seq 100); do curl -sf -H "Authorization: Bearer $remote_token" "$proxied" > /dev/null && break; sleep 0.1; done
  proxy_port=$((proxy_port + 1))
done

echo "loadTable, one connection; $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
printf '%-14s %8s %8s %8s %10s\n' path "p50 µs" "p90 µs" "p99 µs" "req/s"
d=$(percentiles "$remote_token" "$direct"); printf '%-14s %s\n' direct "$d"
r=$(percentiles "$remote_token" "$proxied_relay"); printf '%-14s %s\n' "tcp relay" "$r"
h=$(percentiles "$remote_token" "$proxied_hyper"); printf '%-14s %s\n' "hyper proxy" "$h"
p=$(percentiles "$remote_token" "$proxied_client"); printf '%-14s %s\n' "bare proxy" "$p"
m=$(percentiles "$mount_token" "$mounted"); printf '%-14s %s\n' "through mount" "$m"
added() { echo $(( $(awk '{print $1}' <<< "$1") - $(awk '{print $1}' <<< "$d") )); }
echo "added at p50: $(added "$m") µs by the mount; by the bare proxy $(added "$p"), the hyper proxy $(added "$h"), the tcp relay $(added "$r")"
ratio() { awk -v m="$(awk '{print $1}' <<< "$1")" -v p="$(awk '{print $1}' <<< "$2")" 'BEGIN { printf "%.2f", m / p }'; }
echo "loadTable at p50: the mount costs $(ratio "$m" "$p")x the bare proxy"

# Commits: the n-th sets property k to n on the table at the script's path.
commit_script() {
  cat <<LUA
local n = 0
request = function()
  n = n + 1
  local body = string.format('{"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"%d"}}]}', n)
  wrk.headers["content-type"] = "application/json"
  return wrk.format("POST", "$1", nil, body)
end
LUA
}
commit_script "/${direct#http://*/}" > "$work/direct.lua"
commit_script "/${mounted#http://*/}" > "$work/mounted.lua"
echo
echo "updateTable (set-properties, no requirement), one connection"
printf '%-14s %8s %8s %8s %10s\n' path "p50 µs" "p90 µs" "p99 µs" "req/s"
cd_=$(percentiles "$remote_token" "$direct" "$work/direct.lua"); printf '%-14s %s\n' direct "$cd_"
cp_=$(percentiles "$remote_token" "$proxied_client" "$work/direct.lua"); printf '%-14s %s\n' "bare proxy" "$cp_"
cm_=$(percentiles "$mount_token" "$mounted" "$work/mounted.lua"); printf '%-14s %s\n' "through mount" "$cm_"
echo "updateTable at p50: the mount costs $(ratio "$cm_" "$cp_")x the bare proxy, $(ratio "$cm_" "$cd_")x the remote asked directly"
