#!/usr/bin/env bash
# Fetches Hive Metastore 4.0.1 once, from Maven Central:   bash tests/hive/jars4.sh DIR
# DIR/metastore is the standalone metastore's binary distribution (its jars, and the
# schematool scripts that make its Derby database); DIR/hadoop the Hadoop jars it runs
# on (hive4/pom.xml), which the distribution leaves out.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:?usage: jars4.sh DIR}"
[ -e "$dir/metastore/lib/hive-standalone-metastore-server-4.0.1.jar" ] && [ -d "$dir/hadoop" ] && exit 0
work="$(mktemp -d "${TMPDIR:-/tmp}/rustberg-hive4.XXXXXX")"
trap 'rm -rf "$work"' EXIT
mvn -B -q dependency:copy -Dartifact=org.apache.hive:hive-standalone-metastore-server:4.0.1:tar.gz:bin \
  -DoutputDirectory="$work" >&2
tar xzf "$work/hive-standalone-metastore-server-4.0.1-bin.tar.gz" -C "$work"
mvn -B -q -f "$here/hive4/pom.xml" dependency:copy-dependencies -DoutputDirectory="$work/hadoop" >&2
mkdir -p "$dir"
rm -rf "$dir/metastore" "$dir/hadoop"
mv "$work/apache-hive-metastore-4.0.1-bin" "$dir/metastore"
mv "$work/hadoop" "$dir/hadoop"
