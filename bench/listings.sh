#!/usr/bin/env bash
# listNamespaces and listTables of 100 items (one page, no pageToken) vs. a no-op axum
# handler returning the same bytes, at concurrency 1 and 16; then the same listings'
# first page once the catalog holds $SCALE more root namespaces (default 20,000), to
# show a page costs the same. Servers pinned to core 0, wrk to core 1.
#
#   bash bench/listings.sh                  # 10 s per run
#   DURATION=5s SCALE=100000 bash bench/listings.sh
#
# Needs: wrk (apt-get install wrk), taskset (util-linux), curl, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
SCALE=${SCALE:-20000}

source bench/build.sh
build --bin rustberg --example noop_server
source bench/start_rustberg.sh
start_rustberg 18188
listing_items

echo "listNamespaces, 100 root namespaces"
compare_with_noop "$api/namespaces?pageToken=&pageSize=100"
echo "listTables, 100 tables"
compare_with_noop "$api/namespaces/bench/tables?pageToken=&pageSize=100"

# More root namespaces, named to sort after the first 100.
taskset -c 1 python3 - "$api/namespaces" "$SCALE" "$token" <<'PY'
import http.client, sys, threading, urllib.parse
url, count, token = sys.argv[1], int(sys.argv[2]), sys.argv[3]
parts = urllib.parse.urlsplit(url)
def work(start):
    conn = http.client.HTTPConnection(parts.hostname, parts.port)
    for n in range(start, count, 16):
        conn.request("POST", parts.path, '{"namespace":["z%d"]}' % n,
                     {"Authorization": "Bearer " + token, "content-type": "application/json"})
        answer = conn.getresponse()
        answer.read()
        if answer.status != 200:
            sys.exit(f"create z{n}: {answer.status}")
threads = [threading.Thread(target=work, args=(s,)) for s in range(16)]
for t in threads: t.start()
for t in threads: t.join()
PY
echo "listNamespaces, first 100 of $((SCALE + 100)) root namespaces"
compare_with_noop "$api/namespaces?pageToken=&pageSize=100"
