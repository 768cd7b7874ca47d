# Sourced by the benchmarks (after bench/build.sh). `start_rustberg PORT [TOML]` starts
# the rustberg of $bin (dist unless PROFILE says otherwise) on PORT, pinned to core 0,
# with its state in a fresh folder ($work,
# removed at exit with every background job) and TOML added to its configuration,
# waits until it is ready, and logs in as the admin it minted: $token is a bearer
# token, $api the catalog's base URL.

# $RUSTBERG_BIN runs another build (an older one, to measure before and after);
# $RUSTBERG_WRAP is a command to run it under (valgrind, for bench/instructions.sh).
# A set RUST_BACKTRACE makes every internal error capture a backtrace: not what a
# server in production pays.
unset RUST_BACKTRACE

# A run's state is removed when it ends. With KEEP_STATE=1 it is moved aside to
# ${TMPDIR:-/tmp}/rustberg-bench-kept instead (remove that folder when done): on an
# ext4 without a journal, as this machine kind's disk is, creating a file within
# minutes of many deletions costs several times more (the inode allocator skips
# recently freed inodes one by one), so a commit run that follows another run's
# removal measures the removal (docs/performance.md).
remove_state() {
  if [ -n "${KEEP_STATE:-}" ]; then
    mkdir -p "${TMPDIR:-/tmp}/rustberg-bench-kept" && mv "$@" "${TMPDIR:-/tmp}/rustberg-bench-kept/"
  else
    rm -rf "$@"
  fi
}

start_rustberg() {
  local port=$1 extra=${2:-}
  work=$(mktemp -d)
  works="${works:-} $work"
  trap 'kill $(jobs -p) 2>/dev/null || true; remove_state $works' EXIT
  cat > "$work/rustberg.toml" <<TOML
[server]
listen = "127.0.0.1:$port"
data_dir = "$work/data"
$extra
TOML
  # shellcheck disable=SC2086 # the wrapper is a command and its words
  RUST_LOG=warn taskset -c 0 ${RUSTBERG_WRAP:-} "${RUSTBERG_BIN:-$bin/rustberg}" serve --config "$work/rustberg.toml" \
    > "$work/rustberg.log" 2>&1 &
  # Up to a minute: under valgrind a start takes seconds.
  for _ in $(seq 600); do curl -sf "http://127.0.0.1:$port/ready" > /dev/null && break; sleep 0.1; done
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

# The tables the benchmarks load and commit to, made through $api as $token. (The
# namespace bench is made by whichever comes first: a second "already exists" is
# ignored.)
bench_post() { command curl -sf -H "Authorization: Bearer $token" -H 'content-type: application/json' -X POST "$api/$1" -d "$2" > /dev/null; }
bench_namespace() {
  command curl -s -H "Authorization: Bearer $token" -H 'content-type: application/json' -X POST "$api/namespaces" \
    -d '{"namespace":["bench"]}' > /dev/null
}

# bench.events: 12 columns, a partition spec and three commits (a 2,110-byte loadTable).
events_table() {
  bench_namespace
  local fields
  fields=$(for i in $(seq 1 12); do printf '{"id":%d,"name":"c%d","type":"%s","required":false},' "$i" "$i" "$([ $((i % 2)) = 0 ] && echo string || echo long)"; done)
  bench_post namespaces/bench/tables \
    "{\"name\":\"events\",\"schema\":{\"type\":\"struct\",\"schema-id\":0,\"fields\":[${fields%,}]},\"partition-spec\":{\"spec-id\":0,\"fields\":[{\"source-id\":2,\"field-id\":1000,\"name\":\"c2\",\"transform\":\"identity\"}]}}"
  for i in 1 2 3; do
    bench_post namespaces/bench/tables/events \
      "{\"requirements\":[],\"updates\":[{\"action\":\"set-properties\",\"updates\":{\"commit.$i\":\"value-$i\"}}]}"
  done
}

# The listings of bench/listings.sh: 100 root namespaces (bench, n01 … n99) and the
# tables bench.t001 … bench.t100, one column each.
listing_items() {
  bench_namespace
  local i
  for i in $(seq -w 1 99); do bench_post namespaces "{\"namespace\":[\"n$i\"]}"; done
  for i in $(seq -w 1 100); do
    bench_post namespaces/bench/tables \
      "{\"name\":\"t$i\",\"schema\":{\"type\":\"struct\",\"schema-id\":0,\"fields\":[{\"id\":1,\"name\":\"id\",\"type\":\"long\",\"required\":true}]}}"
  done
}

# bench.t0 … bench.t15, one column each.
commit_tables() {
  bench_namespace
  for i in $(seq 0 15); do
    bench_post namespaces/bench/tables \
      "{\"name\":\"t$i\",\"schema\":{\"type\":\"struct\",\"schema-id\":0,\"fields\":[{\"id\":1,\"name\":\"id\",\"type\":\"long\",\"required\":true}]}}"
  done
}

# `create_load PREFIX TAG`: a wrk script whose every request creates a new root
# namespace, TAG-<second the run began>-1, -2, … (two runs of one script, a warm-up
# and a count, create different names).
create_load() {
  cat <<LUA
local n, run = 0, os.time()
request = function()
  n = n + 1
  wrk.headers["content-type"] = "application/json"
  return wrk.format("POST", "$1/namespaces", nil, string.format('{"namespace":["$2-%d-%d"]}', run, n))
end
LUA
}

# `set_property_request PREFIX TABLE`: wrk's request function for the scripts below:
# the n-th request sets property k to n on the table whose suffix the Lua expression
# TABLE gives; the script declares `local n` before it, where the count starts.
set_property_request() {
  cat <<LUA
request = function()
  n = n + 1
  local body = string.format('{"requirements":[],"updates":[{"action":"set-properties","updates":{"k":"%d"}}]}', n)
  wrk.headers["content-type"] = "application/json"
  return wrk.format("POST", "$1/namespaces/bench/tables/t" .. $2, nil, body)
end
LUA
}

# `commit_load PREFIX N [START]`: a wrk script whose every request sets one property
# on the next of the N tables of commit_tables, round robin from table START.
commit_load() {
  echo "local n = ${3:-0}"
  set_property_request "$1" "(n % $2)"
}

# `own_table_load PREFIX FIRST`: a wrk script for one connection per thread (`-tN
# -cN`) in which thread i sets properties on table FIRST+i only: each writer keeps
# to a table of its own.
own_table_load() {
  cat <<LUA
local next_table = $2
function setup(thread)
  thread:set("own_table", next_table)
  next_table = next_table + 1
end
local n = 0
LUA
  set_property_request "$1" own_table
}

# `wrk_rate CONNECTIONS SCRIPT URL`: requests per second of one wrk thread on core 1
# (the servers run on core 0) for $DURATION, as the admin ($token).
wrk_rate() {
  taskset -c 1 wrk -t1 -c"$1" -d"$DURATION" -s "$2" -H "Authorization: Bearer $token" "$3" |
    awk '/Requests\/sec/ {print $2}'
}
