#!/usr/bin/env bash
# An hms mount of a real Hive Metastore (tests/hive/metastore.sh) against the root
# catalog, in one run (issue 48): loadTable of a small table at concurrency $LOADERS (4), and
# sequential updateTable commits (set-properties; through the mount each is
# get_table, lock, get_table, alter_table, unlock); beside each, the same metastore calls
# made from Python's Thrift client alone (the metastore's own speed). The server is pinned to core 0, wrk
# to core 1; the metastore (a JVM on Derby) runs where the machine puts it.
#
#   bash bench/hms.sh
#   PROFILE=release DURATION=5s bash bench/hms.sh
#
# Needs: wrk, taskset, curl, Java 17 (the metastore's jars are fetched once), and the
# test venv .ci/run makes (PyIceberg's Thrift client).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
RB_PORT=${RB_PORT:-18193}
HMS_PORT=${HMS_PORT:-19093}
LOADERS=${LOADERS:-4}   # loadTable's concurrency

source bench/build.sh
build --bin rustberg
source bench/start_rustberg.sh

hms_dir=$(mktemp -d)
bash tests/hive/metastore.sh "$hms_dir/hms" "$HMS_PORT" > "$hms_dir/metastore.log" 2>&1 &
for _ in $(seq 1200); do (exec 3<>"/dev/tcp/127.0.0.1/$HMS_PORT") 2>/dev/null && break; sleep 0.1; done
mkdir -p "$hms_dir/warehouse"
start_rustberg "$RB_PORT" "[mount.legacy]
backend = \"hms\"
catalog_url = \"thrift://127.0.0.1:$HMS_PORT\"
warehouse_location = \"file://$hms_dir/warehouse\"
owner = \"default\"
"
works="$works $hms_dir"
table='{"name":"t","schema":{"type":"struct","fields":[{"id":1,"name":"id","required":true,"type":"long"}]}}'
for ns in bench legacy%1Fbench; do
  bench_post namespaces "{\"namespace\":[\"$(printf '%s' "$ns" | sed 's/%1F/","/')\"]}"
  bench_post "namespaces/$ns/tables" "$table"
done

rps() { taskset -c 1 wrk -t1 -c"$1" -d"$DURATION" -H "Authorization: Bearer $token" "${@:2}" | awk '/Requests\/sec/ {print $2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
commits() {
  cat > "$work/commit.lua" <<LUA
local n = 0
request = function()
  n = n + 1
  wrk.headers["content-type"] = "application/json"
  local body = string.format('{"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"%d"}}]}', n)
  return wrk.format("POST", "/v1/catalog/namespaces/$1/tables/t", nil, body)
end
LUA
  rps 1 -s "$work/commit.lua" "http://127.0.0.1:$RB_PORT"
}

# The metastore alone, from Python's Thrift client (PyIceberg's, in the test venv): what
# the mount's loads and commits are made of, at the same concurrency, no Rustberg in the way.
alone() {
  taskset -c 1 "${RUSTBERG_TEST_VENV:-$HOME/.cache/rustberg/test-venv}/bin/python" - "$HMS_PORT" "$1" "${DURATION%s}" "$LOADERS" <<'PY'
import socket, sys, threading, time
from thrift.protocol import TBinaryProtocol
from thrift.transport import TSocket, TTransport
from hive_metastore import ThriftHiveMetastore
from hive_metastore.ttypes import LockComponent, LockLevel, LockRequest, LockType, UnlockRequest
port, what, seconds = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
def client():
    transport = TTransport.TBufferedTransport(TSocket.TSocket("127.0.0.1", port))
    transport.open()
    return ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocol(transport))
counts = []
def run():
    c, n, end = client(), 0, time.time() + seconds
    while time.time() < end:
        if what == "get":
            c.get_table("bench", "t")
        else:  # a commit's calls: get, lock, get, alter (the same table back), unlock
            t = c.get_table("bench", "t")
            lock = c.lock(LockRequest(component=[LockComponent(type=LockType.EXCLUSIVE, level=LockLevel.TABLE,
                dbname="bench", tablename="t", isTransactional=True)], user="bench", hostname=socket.gethostname()))
            c.get_table("bench", "t")
            c.alter_table("bench", "t", t)
            c.unlock(UnlockRequest(lockid=lock.lockid))
        n += 1
    counts.append(n)
threads = [threading.Thread(target=run) for _ in range(int(sys.argv[4]) if what == "get" else 1)]
for t in threads: t.start()
for t in threads: t.join()
print("%.2f" % (sum(counts) / seconds))
PY
}

# The metastore's JVM gets several times faster as it warms: warm it through both
# paths first, or whichever runs first is measured cold.
rps "$LOADERS" "$api/namespaces/legacy%1Fbench/tables/t" > /dev/null
alone get > /dev/null
root=$(rps "$LOADERS" "$api/namespaces/bench/tables/t")
hms=$(rps "$LOADERS" "$api/namespaces/legacy%1Fbench/tables/t")
printf '%-28s %12s %12s %8s\n' "" root hms "hms/root"
printf '%-28s %12s %12s %8s\n' "loadTable req/s (c$LOADERS)" "$root" "$hms" "$(ratio "$hms" "$root")"
metastore=$(alone get)
printf '%-28s %12s %12s %8s\n' "  the metastore alone" "" "$metastore" "$(ratio "$hms" "$metastore")"
root=$(commits bench)
hms=$(commits legacy%1Fbench)
printf '%-28s %12s %12s %8s\n' "updateTable commits/s (c1)" "$root" "$hms" "$(ratio "$hms" "$root")"
printf '%-28s %12s %12s\n' "ms per commit" "$(awk -v r="$root" 'BEGIN {printf "%.2f", 1000 / r}')" \
  "$(awk -v r="$hms" 'BEGIN {printf "%.2f", 1000 / r}')"
metastore=$(alone commit)
printf '%-28s %12s %12s %8s\n' "  the metastore alone (c1)" "" "$metastore" "$(ratio "$hms" "$metastore")"
