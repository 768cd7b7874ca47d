#!/usr/bin/env bash
# What events cost: updateTable throughput (requirement-free set-properties commits,
# sequential and from 16 connections over 16 tables, on the embedded redb root) with
# `[events] enabled = false`, with events on (written, logged, no sink), and with a
# webhook too, in one run, and their ratios to off; then the publish lag under the
# 16-writer load: from an event's timestamp (taken as its commit is prepared) to its
# delivery at a local webhook receiver, p50 and p99.
# Servers are pinned to core 0, wrk to core 1, the receiver shares core 1.
#
#   bash bench/events.sh             # 10 s per run
#   DURATION=30s bash bench/events.sh
#
# Needs: wrk, taskset, curl, python3.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
source bench/build.sh
build --bin rustberg
source bench/start_rustberg.sh

# A webhook receiver that writes, per delivery, now minus the event's timestamp (ms).
receiver=$(mktemp -d)
cat > "$receiver/receive.py" <<'PY'
import http.server, json, sys, time
out = open(sys.argv[2], "a", buffering=1)
class Hook(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        out.write(f"{time.time() * 1000 - body['data']['timestamp-ms']:.1f}\n")
        self.send_response(204)
        self.end_headers()
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Hook).serve_forever()
PY
taskset -c 1 python3 "$receiver/receive.py" 18191 "$receiver/lag.txt" &

echo "events; $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
printf '%-32s %9s %9s %9s %7s %7s\n' run "off c/s" "on c/s" "hook c/s" on hook
declare -A rates
for mode in off on hook; do
  case $mode in
    off) extra=$'[events]\nenabled = false' port=18187 ;;
    on) extra='' port=18188 ;;
    hook) extra=$'[events.webhook.lag]\nurl = "http://127.0.0.1:18191/hook"\nsecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"' port=18189 ;;
  esac
  start_rustberg "$port" "$extra"
  commit_tables
  commit_load "/v1/catalog" 1 > "$work/one.lua"
  commit_load "/v1/catalog" 16 > "$work/spread.lua"
  wrk_rate 1 "$work/one.lua" "http://127.0.0.1:$port" > /dev/null # warm-up
  : > "$receiver/lag.txt"
  rates[$mode-1]=$(wrk_rate 1 "$work/one.lua" "http://127.0.0.1:$port")
  rates[$mode-16]=$(wrk_rate 16 "$work/spread.lua" "http://127.0.0.1:$port")
  [ $mode = hook ] && { sleep 2; cp "$receiver/lag.txt" "$receiver/lag-on.txt"; }
  kill "$(jobs -p | tail -1)" 2>/dev/null || true
done
for c in 1 16; do
  label=$([ $c = 1 ] && echo "redb, sequential, one table" || echo "redb, 16 writers on 16 tables")
  printf '%-32s %9s %9s %9s %7s %7s\n' "$label" "${rates[off-$c]}" "${rates[on-$c]}" "${rates[hook-$c]}" \
    "$(awk -v a="${rates[on-$c]}" -v b="${rates[off-$c]}" 'BEGIN {printf "%.3f", a / b}')" \
    "$(awk -v a="${rates[hook-$c]}" -v b="${rates[off-$c]}" 'BEGIN {printf "%.3f", a / b}')"
done
sort -n "$receiver/lag-on.txt" | awk '{v[NR] = $1} END {
  if (NR == 0) { print "no deliveries"; exit }
  printf "publish lag to the webhook, %d events: p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", NR, v[int(NR * 0.5) + 1], v[int(NR * 0.99) + 1], v[NR] }'
rm -rf "$receiver"
