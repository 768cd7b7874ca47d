#!/usr/bin/env bash
# What a write costs as the catalog grows: creating a root namespace, a table, a grant
# and a principal, one client at a time, first on a small catalog, then once the
# catalog holds $SCALE more root namespaces and $SCALE grants (default 100,000 each).
# A write must cost the same (within 20 %) at both sizes. The server is pinned to
# core 0, wrk to core 1; the embedded redb root.
#
#   bash bench/writes_at_scale.sh              # 3 s per measurement, 100,000
#   SCALE=20000 DURATION=5s bash bench/writes_at_scale.sh
#
# Needs: wrk (apt-get install wrk), taskset (util-linux), curl, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-3s}
SCALE=${SCALE:-100000}

source bench/build.sh
build --bin rustberg
source bench/start_rustberg.sh
start_rustberg 18187
json='content-type: application/json'
auth="Authorization: Bearer $token"
base=${api%/v1/catalog}
curl -sf -H "$auth" -H "$json" -X POST "$base/management/v1/tenants" -d '{"name":"other"}' > /dev/null
curl -sf -H "$auth" -H "$json" -X POST "$api/namespaces" -d '{"namespace":["bench"]}' > /dev/null

# A wrk script POSTing $1 (a format with one %s: a fresh name) to path $2.
script() {
  cat <<LUA
math.randomseed(os.time() + math.floor(os.clock() * 1e6))
local run, n = math.random(1, 1e9), 0
request = function()
  n = n + 1
  wrk.headers["content-type"] = "application/json"
  return wrk.format("POST", "$2", nil, string.format('$1', string.format("%d_%d", run, n)))
end
LUA
}

# POSTs $1 (a format with one %s: 1..$SCALE) to path $2, $SCALE times from 16
# connections; fails on any answer but 200 or 201.
fill() {
  taskset -c 1 python3 - "$base$2" "$1" "$SCALE" "$token" <<'PY'
import http.client, sys, threading, urllib.parse
url, body, count, token = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
parts = urllib.parse.urlsplit(url)
def work(start):
    conn = http.client.HTTPConnection(parts.hostname, parts.port)
    for n in range(start, count + 1, 16):
        conn.request("POST", parts.path, body.replace("%s", str(n)),
                     {"Authorization": "Bearer " + token, "content-type": "application/json"})
        answer = conn.getresponse()
        answer.read()
        if answer.status not in (200, 201):
            sys.exit(f"{url} #{n}: {answer.status}")
threads = [threading.Thread(target=work, args=(s,)) for s in range(1, 17)]
for t in threads: t.start()
for t in threads: t.join()
PY
}

script '{"namespace":["m%s"]}' /v1/catalog/namespaces > "$work/namespace.lua"
script '{"name":"t%s","schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true}]}}' \
  /v1/catalog/namespaces/bench/tables > "$work/table.lua"
script '{"namespace":["bench"],"table":"g%s","privilege":"read","tenant":"other"}' /management/v1/grants > "$work/grant.lua"
script '{"name":"u%s","tenant":"other","role":"reader"}' /management/v1/principals > "$work/principal.lua"

# One measurement: "<writes/s> <non-2xx>".
rate() {
  local out
  out=$(taskset -c 1 wrk -t1 -c1 -d"$DURATION" -s "$work/$1.lua" -H "$auth" "$base")
  echo "$(awk '/Requests\/sec/ {print $2}' <<< "$out") $(awk '/Non-2xx/ {print $NF}' <<< "$out" | grep . || echo 0)"
}

declare -A small
echo "writes at scale; $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
for op in namespace table grant principal; do
  read -r r refused < <(rate "$op")
  small[$op]="$r $refused"
done
start=$(date +%s)
fill '{"namespace":["p%s"]}' /v1/catalog/namespaces
fill '{"namespace":["p%s"],"privilege":"read","tenant":"other"}' /management/v1/grants
grants=$(curl -sf -H "$auth" "$base/management/v1/grants" | grep -o '"id"' | wc -l)
echo "filled $SCALE root namespaces and grants in $(( $(date +%s) - start )) s; $grants grants in all"
printf '%-12s %16s %16s %8s %10s\n' write "small writes/s" "large writes/s" ratio "non-2xx"
for op in namespace table grant principal; do
  read -r r refused < <(rate "$op")
  read -r before before_refused <<< "${small[$op]}"
  printf '%-12s %16s %16s %8.2f %10s\n' "$op" "$before" "$r" "$(echo "$r / $before" | bc -l)" \
    "$((before_refused + refused))"
done
