#!/usr/bin/env bash
# Fetches Hive Metastore 2.3.9's jars once:   bash tests/hive/jars.sh DIR
# They are the deps/jars of pyspark 3.5.5's source distribution on PyPI (pinned).
set -euo pipefail
jars="${1:?usage: jars.sh DIR}"
[ -e "$jars/hive-metastore-2.3.9.jar" ] && exit 0
work="$(mktemp -d "${TMPDIR:-/tmp}/rustberg-hive.XXXXXX")"
trap 'rm -rf "$work"' EXIT
python3 -m pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: \
  pyspark==3.5.5 -d "$work"
tar xzf "$work/pyspark-3.5.5.tar.gz" -C "$work" pyspark-3.5.5/deps/jars
mkdir -p "$(dirname "$jars")"
rm -rf "$jars"
mv "$work/pyspark-3.5.5/deps/jars" "$jars"
