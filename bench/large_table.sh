#!/usr/bin/env bash
# A table with 2,000 snapshots: loadTable vs. the no-op handler serving the same body
# (concurrency 1, 4 and 16), loadTable with `snapshots=refs` against `all` (body size
# and requests/s), a 304 (If-None-Match) against the full answer, and sequential
# updateTable commits against what parsing
# that metadata once and writing it once cost (host/examples/metadata_cost.rs).
# SUMMARY=minimal gives snapshots with one-key summaries (about 0.75 MB of metadata);
# SUMMARY=realistic gives Spark-like append summaries with 20 partition summaries
# (about 5 MB). Servers pinned to core 0, wrk and the fill to core 1.
#
#   bash bench/large_table.sh                         # minimal, 10 s per run
#   SUMMARY=realistic DURATION=5s bash bench/large_table.sh
#
# Needs: wrk (apt-get install wrk), taskset (util-linux), curl, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
SUMMARY=${SUMMARY:-minimal}
SNAPSHOTS=${SNAPSHOTS:-2000}

source bench/build.sh
build --bin rustberg --example noop_server --example metadata_cost
source bench/start_rustberg.sh
start_rustberg 18193
auth="Authorization: Bearer $token"
json='content-type: application/json'
curl -sf -H "$auth" -H "$json" -X POST "$api/namespaces" -d '{"namespace":["bench"]}' > /dev/null
curl -sf -H "$auth" -H "$json" -X POST "$api/namespaces/bench/tables" -d '{"name":"big","schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true},{"id":2,"name":"ts","type":"timestamptz","required":false}]},"partition-spec":{"spec-id":0,"fields":[{"source-id":2,"field-id":1000,"name":"ts_day","transform":"day"}]}}' > /dev/null

# One commit per snapshot, each adding it and moving main to it.
taskset -c 1 python3 - "$api/namespaces/bench/tables/big" "$token" "$SNAPSHOTS" "$SUMMARY" <<'PY'
import http.client, json, sys, time, urllib.parse
url, token, count, kind = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
parts = urllib.parse.urlsplit(url)
conn = http.client.HTTPConnection(parts.hostname, parts.port)
headers = {"Authorization": "Bearer " + token, "content-type": "application/json"}
conn.request("GET", parts.path, headers=headers)
location = json.loads(conn.getresponse().read())["metadata"]["location"]
def summary(n):
    if kind == "minimal":
        return {"operation": "append"}
    s = {"operation": "append", "spark.app.id": "local-1700000000000-%06d" % n,
         "added-data-files": "20", "added-records": "200000", "added-files-size": "41943040",
         "changed-partition-count": "20", "total-records": str(200000 * n),
         "total-files-size": str(41943040 * n), "total-data-files": str(20 * n),
         "total-delete-files": "0", "total-position-deletes": "0", "total-equality-deletes": "0",
         "engine-version": "3.5.1", "app-id": "local-1700000000000", "engine-name": "spark",
         "iceberg-version": "Apache Iceberg 1.6.1 (commit 8e9d59d299be42b0bca9461457cd1e95dbaad086)"}
    for p in range(20):
        s["partitions.ts_day=2024-%02d-%02d" % (1 + p % 12, 1 + n % 28)] = \
            "added-data-files=1,added-records=10000,added-files-size=2097152"
    return s
for n in range(1, count + 1):
    snapshot = {"snapshot-id": n, "sequence-number": n, "timestamp-ms": int(time.time() * 1000),
                "manifest-list": "%s/metadata/snap-%d-1-00000000-0000-0000-0000-%012d.avro" % (location, n, n),
                "summary": summary(n), "schema-id": 0}
    if n > 1:
        snapshot["parent-snapshot-id"] = n - 1
    body = {"requirements": [], "updates": [
        {"action": "add-snapshot", "snapshot": snapshot},
        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": n}]}
    conn.request("POST", parts.path, json.dumps(body), headers)
    answer = conn.getresponse()
    text = answer.read()
    if answer.status != 200:
        sys.exit(f"commit {n}: {answer.status} {text[:300]}")
PY

table="$api/namespaces/bench/tables/big"
metadata_file=$(curl -sf -H "$auth" "$table" | python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata-location"].removeprefix("file://"))')
echo "$SNAPSHOTS snapshots, $SUMMARY summaries: metadata file of $(wc -c < "$metadata_file") bytes"
echo "loadTable"
CONCURRENCY=${CONCURRENCY:-1 4 16} compare_with_noop "$table"

echo "loadTable with snapshots=all and snapshots=refs (main's head only), c4"
for snapshots in all refs; do
  size=$(curl -sf -H "$auth" "$table?snapshots=$snapshots" | wc -c)
  rps=$(taskset -c 1 wrk -t1 -c4 -d"$DURATION" -H "$auth" "$table?snapshots=$snapshots" | awk '/Requests\/sec/ {print $2}')
  echo "  snapshots=$snapshots: $size bytes, $rps req/s"
done

echo "loadTable answered 304 (If-None-Match: its ETag) against the full answer, c4"
etag=$(curl -sf -D - -o /dev/null -H "$auth" "$table" | awk -F': ' 'tolower($1) == "etag" {print $2}' | tr -d '\r')
status=$(curl -s -o /dev/null -w '%{http_code}' -H "$auth" -H "If-None-Match: $etag" "$table")
[ "$status" = 304 ] || { echo "If-None-Match: $etag answered $status, not 304" >&2; exit 1; }
full=$(taskset -c 1 wrk -t1 -c4 -d"$DURATION" -H "$auth" "$table" | awk '/Requests\/sec/ {print $2}')
cached=$(taskset -c 1 wrk -t1 -c4 -d"$DURATION" -H "$auth" -H "If-None-Match: $etag" "$table" | awk '/Requests\/sec/ {print $2}')
echo "  full: $full req/s; 304: $cached req/s; a 304 costs $(awk -v f="$full" -v c="$cached" 'BEGIN {printf "%.2f", f / c}')x a full load"

echo "updateTable (requirement-free set-properties, one connection)"
cat > "$work/commit.lua" <<'LUA'
local n = 0
request = function()
  n = n + 1
  wrk.headers["content-type"] = "application/json"
  return wrk.format("POST", nil, nil,
    '{"requirements":[],"updates":[{"action":"set-properties","updates":{"bench":"' .. n .. '"}}]}')
end
LUA
commits=$(taskset -c 1 wrk -t1 -c1 -d"$DURATION" -s "$work/commit.lua" -H "$auth" "$table" | awk '/Requests\/sec/ {print $2}')
echo "  $commits commits/s: $(awk -v r="$commits" 'BEGIN {printf "%.2f", 1000 / r}') ms per commit"
echo "  baseline, $(taskset -c 0 "$bin/examples/metadata_cost" "$metadata_file" 30)"
