#!/usr/bin/env bash
# What an admission gate costs: updateTable throughput (requirement-free set-properties
# commits, sequential and from 16 connections over 16 tables, on the embedded redb
# root, events off so that only the gate differs) with no gate, with the Rust example
# gate (plugins/examples/gate: two rules, a config read per call), and, when the
# plugin kit has built it, the Python example gate, in one run, with their ratios to
# no gate. Servers are pinned to core 0, wrk to core 1.
#
#   bash bench/gates.sh              # 10 s per run
#   DURATION=30s bash bench/gates.sh
#
# Needs: wrk, taskset, curl.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
source bench/build.sh
build --bin rustberg
source bench/start_rustberg.sh

# The components the build made beside the binary (the newest build's).
components=$(dirname "$(ls -t "$bin"/build/rustberg-*/out/example-gate.wasm | head -1)")
python_gate="${CARGO_TARGET_DIR:-target}/release/plugin-kit/examples/python-gate.wasm"
modes="none rust"
[ -f "$python_gate" ] && modes="$modes python"

echo "gates; $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
printf '%-32s' run
for mode in $modes; do printf ' %9s' "$mode c/s"; done
for mode in $modes; do [ "$mode" != none ] && printf ' %7s' "$mode"; done
echo
declare -A rates
port=18200
for mode in $modes; do
  port=$((port + 1))
  case $mode in
    none) gate='' ;;
    rust) gate="[gates.house]"$'\n'"plugin = \"$components/example-gate.wasm\"" ;;
    python) gate="[gates.house]"$'\n'"plugin = \"$python_gate\"" ;;
  esac
  # Every table the load commits to has the property the gates require.
  start_rustberg "$port" "$gate"$'\n'"[events]"$'\n'"enabled = false"
  bench_post namespaces '{"namespace":["bench"],"properties":{"owner":"bench"}}'
  for i in $(seq 0 15); do
    bench_post namespaces/bench/tables \
      "{\"name\":\"t$i\",\"properties\":{\"owner\":\"bench\"},\"schema\":{\"type\":\"struct\",\"schema-id\":0,\"fields\":[{\"id\":1,\"name\":\"id\",\"type\":\"long\",\"required\":true}]}}"
  done
  commit_load "/v1/catalog" 1 > "$work/one.lua"
  commit_load "/v1/catalog" 16 > "$work/spread.lua"
  wrk_rate 1 "$work/one.lua" "http://127.0.0.1:$port" > /dev/null # warm-up
  rates[$mode-1]=$(wrk_rate 1 "$work/one.lua" "http://127.0.0.1:$port")
  rates[$mode-16]=$(wrk_rate 16 "$work/spread.lua" "http://127.0.0.1:$port")
  kill "$(jobs -p | tail -1)" 2>/dev/null || true
done
for c in 1 16; do
  label=$([ $c = 1 ] && echo "redb, sequential, one table" || echo "redb, 16 writers on 16 tables")
  printf '%-32s' "$label"
  for mode in $modes; do printf ' %9s' "${rates[$mode-$c]}"; done
  for mode in $modes; do
    [ "$mode" != none ] && printf ' %7s' "$(awk -v a="${rates[$mode-$c]}" -v b="${rates[none-$c]}" 'BEGIN {printf "%.3f", a / b}')"
  done
  echo
done
