# Sourced by the benchmarks. `start_rustberg PORT` starts the release build of
# rustberg on PORT, pinned to core 0, with its state in a fresh folder ($work,
# removed at exit with every background job), waits until it is ready, and logs in
# as the admin it minted: $token is a bearer token, $api the catalog's base URL.
start_rustberg() {
  local port=$1 target=${CARGO_TARGET_DIR:-target}
  work=$(mktemp -d)
  trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
  cat > "$work/rustberg.toml" <<TOML
[server]
listen = "127.0.0.1:$port"
data_dir = "$work/data"
TOML
  RUST_LOG=warn taskset -c 0 "$target/release/rustberg" serve --config "$work/rustberg.toml" > "$work/rustberg.log" 2>&1 &
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/ready" > /dev/null && break; sleep 0.1; done
  # The admin the server minted is printed at start-up.
  local credential
  credential=$(grep -o 'credential admin:[^ ]*' "$work/rustberg.log" | head -1 | cut -d' ' -f2)
  token=$(curl -sf "http://127.0.0.1:$port/v1/oauth/tokens" -d grant_type=client_credentials \
    -d "client_id=${credential%%:*}" -d "client_secret=${credential#*:}" | sed 's/.*"access_token":"\([^"]*\)".*/\1/')
  api="http://127.0.0.1:$port/v1/catalog"
}
