# Sourced by every benchmark: `build ARGS…` builds what ARGS name (`--bin rustberg`,
# `--example noop_server`) with the `dist` profile, the build that is deployed, and
# $bin is the folder the binaries land in. `PROFILE=release` measures the tests' build.
profile=${PROFILE:-dist}
bin="${CARGO_TARGET_DIR:-target}/$profile"
build() { cargo build --profile "$profile" --quiet "$@"; }
