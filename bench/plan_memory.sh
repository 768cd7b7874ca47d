#!/usr/bin/env bash
# Planning a table of many manifests (10,000 by default, one data file each): the
# server's resident memory before, its peak while planning at once (the default budget)
# and while holding plans that outran a budget of 0, how long a plan took, and what
# a held plan leaves resident. Manifests and the manifest list are written with
# PyIceberg's writers straight into the table's folder, and one commit adds the snapshot.
#
#   PYTHON=~/.cache/rustberg/test-venv/bin/python bash bench/plan_memory.sh
#   MANIFESTS=1000 bash bench/plan_memory.sh
#
# Needs: curl, python3 with pyiceberg 0.12 ($PYTHON), taskset (util-linux).
set -euo pipefail
cd "$(dirname "$0")/.."
MANIFESTS=${MANIFESTS:-10000}
PYTHON=${PYTHON:-python3}

source bench/build.sh
build --bin rustberg
source bench/start_rustberg.sh
rss() { awk "/^$1:/ {print \$2}" "/proc/$pid/status"; }
mib() { awk -v k="$1" 'BEGIN {printf "%.1f MiB", k / 1024}'; }

run() {
  local budget=$1
  start_rustberg 18194 "[planning]
budget_ms = $budget
max_plans = 64"
  pid=$(pgrep -n -f "$work/rustberg.toml")
  "$PYTHON" - "$api" "$token" "$MANIFESTS" <<'PY'
import json, sys, time, urllib.request
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.manifest import (DataFile, DataFileContent, FileFormat, ManifestEntry,
                                ManifestEntryStatus, write_manifest, write_manifest_list)
from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
from pyiceberg.schema import Schema
from pyiceberg.typedef import Record
from pyiceberg.types import LongType, NestedField

api, token, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
def call(method, path, body=None):
    request = urllib.request.Request(api + path, method=method, data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": "Bearer " + token, "content-type": "application/json"})
    with urllib.request.urlopen(request) as response:
        return json.loads(response.read() or b"null")
schema = Schema(NestedField(1, "id", LongType(), required=True))
call("POST", "/namespaces", {"namespace": ["bench"]})
created = call("POST", "/namespaces/bench/tables", {"name": "many", "schema": {
    "type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": True}]}})
location = created["metadata"]["location"]
io, snapshot_id, started = PyArrowFileIO(), 1, time.monotonic()
manifests = []
for n in range(count):
    path = f"{location}/metadata/m-{n:05d}.avro"
    with write_manifest(2, UNPARTITIONED_PARTITION_SPEC, schema, io.new_output(path), snapshot_id, "null") as writer:
        data = DataFile.from_args(content=DataFileContent.DATA, file_path=f"{location}/data/f-{n:05d}.parquet",
                                  file_format=FileFormat.PARQUET, partition=Record(), record_count=1,
                                  file_size_in_bytes=100)
        data.spec_id = 0
        writer.add_entry(ManifestEntry.from_args(status=ManifestEntryStatus.ADDED, snapshot_id=snapshot_id,
                                                 sequence_number=1, file_sequence_number=1, data_file=data))
    manifests.append(writer.to_manifest_file())
manifest_list = f"{location}/metadata/snap-1.avro"
with write_manifest_list(2, io.new_output(manifest_list), snapshot_id, None, 1, "null") as writer:
    writer.add_manifests(manifests)
snapshot = {"snapshot-id": snapshot_id, "sequence-number": 1, "timestamp-ms": int(time.time() * 1000),
            "manifest-list": manifest_list, "summary": {"operation": "append"}, "schema-id": 0}
call("POST", "/namespaces/bench/tables/many", {"requirements": [], "updates": [
    {"action": "add-snapshot", "snapshot": snapshot},
    {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": snapshot_id}]})
print(f"{count} manifests written and committed in {time.monotonic() - started:.1f} s", file=sys.stderr)
PY
  local before started took
  before=$(rss VmRSS)
  started=$(date +%s%N)
  local answer
  answer=$(curl -sf -H "Authorization: Bearer $token" -H 'content-type: application/json' \
    -X POST "$api/namespaces/bench/tables/many/plan" -d '{}')
  if [ "$budget" = 0 ]; then
    local id
    id=$(sed 's/.*"plan-id":"\([^"]*\)".*/\1/' <<< "$answer")
    until curl -sf -H "Authorization: Bearer $token" "$api/namespaces/bench/tables/many/plan/$id" \
      | grep -q '"status":"completed"'; do sleep 0.05; done
  fi
  took=$(( ($(date +%s%N) - started) / 1000000 ))
  echo "budget ${budget} ms: resident $(mib "$before") before, peak $(mib "$(rss VmHWM)"), $(mib "$(rss VmRSS)") after (plan held: $([ "$budget" = 0 ] && echo yes || echo no)); the plan took $took ms"
  kill "$pid"; wait "$pid" 2>/dev/null || true
}
echo "$MANIFESTS manifests of one data file each; $(nproc) cores"
run 60000
run 0
