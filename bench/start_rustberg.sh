# Sourced by the benchmarks (after bench/build.sh). `start_rustberg PORT [TOML]` starts
# the rustberg of $bin (dist unless PROFILE says otherwise) on PORT, pinned to core 0,
# with its state in a fresh folder ($work,
# removed at exit with every background job) and TOML added to its configuration,
# waits until it is ready, and logs in as the admin it minted: $token is a bearer
# token, $api the catalog's base URL.

# $RUSTBERG_BIN runs another build (an older one, to measure before and after).
# A set RUST_BACKTRACE makes every internal error capture a backtrace: not what a
# server in production pays.
unset RUST_BACKTRACE

start_rustberg() {
  local port=$1 extra=${2:-}
  work=$(mktemp -d)
  works="${works:-} $work"
  trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf $works' EXIT
  cat > "$work/rustberg.toml" <<TOML
[server]
listen = "127.0.0.1:$port"
data_dir = "$work/data"
$extra
TOML
  RUST_LOG=warn taskset -c 0 "${RUSTBERG_BIN:-$bin/rustberg}" serve --config "$work/rustberg.toml" > "$work/rustberg.log" 2>&1 &
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/ready" > /dev/null && break; sleep 0.1; done
  # The admin the server minted is printed at start-up.
  local credential
  credential=$(grep -o 'credential admin:[^ ]*' "$work/rustberg.log" | head -1 | cut -d' ' -f2)
  token=$(curl -sf "http://127.0.0.1:$port/v1/oauth/tokens" -d grant_type=client_credentials \
    -d "client_id=${credential%%:*}" -d "client_secret=${credential#*:}" | sed 's/.*"access_token":"\([^"]*\)".*/\1/')
  api="http://127.0.0.1:$port/v1/catalog"
}

# `compare_with_noop URL`: saves URL's body, starts the no-op handler (pinned to core
# 0, on $NOOP_PORT) serving those bytes for every GET, and prints req/s of both and
# their ratio at each concurrency of $CONCURRENCY (default 1 and 16; $DURATION each;
# wrk pinned to core 1).
compare_with_noop() {
  local url=$1 port=${NOOP_PORT:-18182} auth="Authorization: Bearer $token"
  command curl -sf -H "$auth" "$url" > "$work/body.json"
  taskset -c 0 "$bin/examples/noop_server" "$work/body.json" "127.0.0.1:$port" > "$work/noop.log" 2>&1 &
  for _ in $(seq 100); do command curl -sf "http://127.0.0.1:$port/" > /dev/null && break; sleep 0.1; done
  rps() { taskset -c 1 wrk -t1 -c"$1" -d"$DURATION" -H "$auth" "$2" | awk '/Requests\/sec/ {print $2}'; }
  echo "body: $(wc -c < "$work/body.json") bytes; $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  printf '%-12s %14s %14s %8s\n' concurrency "noop req/s" "req/s" ratio
  for c in ${CONCURRENCY:-1 16}; do
    local noop real
    noop=$(rps "$c" "http://127.0.0.1:$port/${url#http://*/}")
    real=$(rps "$c" "$url")
    printf '%-12s %14s %14s %8s\n' "$c" "$noop" "$real" "$(awk -v a="$real" -v b="$noop" 'BEGIN {printf "%.2f", a / b}')"
  done
  kill %% 2>/dev/null || true
}
