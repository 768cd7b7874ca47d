#!/usr/bin/env bash
# Restart to first answer and memory: starts the server on one data folder five times
# (the first start compiles the components into the cache; the others find them
# there) and times each from exec to the first 200 of /ready, polled every 0.2 ms;
# then the idle RSS, and the RSS after 100,000 and after 1,000,000 requests
# (loadTable and listNamespaces, alternately, 16 connections).
#
#   bash bench/restart.sh
#
# Needs: wrk (apt-get install wrk), taskset (util-linux), curl, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/build.sh
build --bin rustberg
work=$(mktemp -d)
# The server is started by python, not as a job of this shell: stopped by its config.
trap 'pkill -f "serve --config $work/rustberg.toml" || true; kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
port=18189
cat > "$work/rustberg.toml" <<TOML
[server]
listen = "127.0.0.1:$port"
data_dir = "$work/data"
[component_cache]
dir = "$work/components"
TOML

# Starts the server; prints milliseconds from exec to the first 200 of /ready.
start() {
  python3 - "${RUSTBERG_BIN:-$bin/rustberg}" "$work/rustberg.toml" "$port" "$work/rustberg.log" <<'PY'
import http.client, subprocess, sys, time
binary, config, port, log = sys.argv[1:]
began = time.perf_counter()
subprocess.Popen(["taskset", "-c", "0", binary, "serve", "--config", config],
                 stdout=open(log, "a"), stderr=subprocess.STDOUT, env={"RUST_LOG": "warn"})
while True:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", int(port), timeout=1)
        conn.request("GET", "/ready")
        if conn.getresponse().status == 200:
            break
    except OSError:
        time.sleep(0.0002)
print(f"{(time.perf_counter() - began) * 1000:.1f}")
PY
}
pid() { pgrep -f "serve --config $work/rustberg.toml"; }
rss() { awk '/VmRSS/ {t = $2} /RssAnon/ {a = $2} END {printf "%.1f MB (%.1f MB of it anonymous, the rest pages of the program)", t / 1024, a / 1024}' "/proc/$(pid)/status"; }
stop() { kill "$(pid)"; while pid > /dev/null; do sleep 0.05; done; }

echo "restart; $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "first start (compiles the components): $(start) ms"
stop
for i in 1 2 3 4; do echo "restart $i: $(start) ms"; [ "$i" = 4 ] || stop; done

credential=$(grep -o 'credential admin:[^ ]*' "$work/rustberg.log" | head -1 | cut -d' ' -f2)
token=$(curl -sf "http://127.0.0.1:$port/v1/oauth/tokens" -d grant_type=client_credentials \
  -d "client_id=${credential%%:*}" -d "client_secret=${credential#*:}" | sed 's/.*"access_token":"\([^"]*\)".*/\1/')
api="http://127.0.0.1:$port/v1/catalog"
auth="Authorization: Bearer $token"
curl -sf -H "$auth" -H 'content-type: application/json' -X POST "$api/namespaces" -d '{"namespace":["bench"]}' > /dev/null
curl -sf -H "$auth" -H 'content-type: application/json' -X POST "$api/namespaces/bench/tables" \
  -d '{"name":"t","schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true}]}}' > /dev/null
sleep 1
echo "idle RSS: $(rss)"
cat > "$work/mixed.lua" <<'LUA'
local n, limit = 0, tonumber(os.getenv("REQUESTS"))
request = function()
  n = n + 1
  if n > limit then wrk.thread:stop() end
  return wrk.format("GET", n % 2 == 0 and "/v1/catalog/namespaces/bench/tables/t" or "/v1/catalog/namespaces")
end
LUA
# wrk sends until the limit, then idles until its duration ends.
load() { REQUESTS=$1 taskset -c 1 wrk -t1 -c16 -d"$2" -s "$work/mixed.lua" -H "$auth" "http://127.0.0.1:$port" > /dev/null; }
load 100000 20s
echo "RSS after 100,000 requests: $(rss)"
load 900000 120s
echo "RSS after 1,000,000 requests: $(rss)"
