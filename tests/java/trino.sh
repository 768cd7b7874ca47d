#!/usr/bin/env bash
# Runs Trino 476 (trino-server-core with the Iceberg connector, from Maven Central,
# fetched and unpacked once under ~/.cache/rustberg/trino-476) with one catalog, `rb`:
# Iceberg's REST catalog at URL, signed in with CLIENT_ID:SECRET, its warehouse on the
# local file system:
#   bash tests/java/trino.sh PORT DIR URL CLIENT_ID:SECRET
# DIR holds its configuration, data and log. Trino 476 needs Java 24 or newer: the newest
# JDK under /usr/lib/jvm is used (the machines have a Temurin 25). It runs until killed.
set -euo pipefail
port="${1:?usage: trino.sh PORT DIR URL CLIENT_ID:SECRET}"
dir="${2:?usage: trino.sh PORT DIR URL CLIENT_ID:SECRET}"
url="${3:?usage: trino.sh PORT DIR URL CLIENT_ID:SECRET}"
credential="${4:?usage: trino.sh PORT DIR URL CLIENT_ID:SECRET}"
version=476
home="${RUSTBERG_TRINO_HOME:-$HOME/.cache/rustberg/trino-$version}"
if [ ! -x "$home/bin/launcher" ]; then
  work="$(mktemp -d "${TMPDIR:-/tmp}/rustberg-trino.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  mvn -B -q dependency:copy -Dartifact="io.trino:trino-server-core:$version:tar.gz" -DoutputDirectory="$work" >&2
  mvn -B -q dependency:copy -Dartifact="io.trino:trino-iceberg:$version:zip" -DoutputDirectory="$work" >&2
  tar xzf "$work/trino-server-core-$version.tar.gz" -C "$work"
  mkdir -p "$work/trino-server-core-$version/plugin/iceberg"
  (cd "$work/trino-server-core-$version/plugin/iceberg" && unzip -q "$work/trino-iceberg-$version.zip" \
    && if [ -d "trino-iceberg-$version" ]; then mv "trino-iceberg-$version"/* . && rmdir "trino-iceberg-$version"; fi)
  mkdir -p "$(dirname "$home")"
  rm -rf "$home"
  mv "$work/trino-server-core-$version" "$home"
fi
java="$(bash "$(dirname "$0")/newest-java.sh" 24)"
mkdir -p "$dir/etc/catalog" "$dir/data"
cat > "$dir/etc/node.properties" <<PROPS
node.environment=test
node.id=rustberg-test
node.data-dir=$dir/data
PROPS
cat > "$dir/etc/jvm.config" <<PROPS
-server
-Xmx1G
-XX:+UseG1GC
-Djdk.attach.allowAttachSelf=true
PROPS
cat > "$dir/etc/config.properties" <<PROPS
coordinator=true
node-scheduler.include-coordinator=true
http-server.http.port=$port
discovery.uri=http://127.0.0.1:$port
PROPS
cat > "$dir/etc/catalog/rb.properties" <<PROPS
connector.name=iceberg
iceberg.catalog.type=rest
iceberg.rest-catalog.uri=$url
iceberg.rest-catalog.security=OAUTH2
iceberg.rest-catalog.oauth2.credential=$credential
iceberg.rest-catalog.nested-namespace-enabled=true
fs.native-local.enabled=true
local.location=/
PROPS
export JAVA_HOME="$(dirname "$(dirname "$java")")" PATH="$(dirname "$java"):$PATH"
exec "$home/bin/launcher" run --etc-dir "$dir/etc" --data-dir "$dir/data"
