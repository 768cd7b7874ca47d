#!/usr/bin/env bash
# Fetches a Kafka 4.4.0 broker's jars once, from Maven Central:   bash tests/kafka/jars.sh DIR
# (tests/kafka/pom.xml: kafka_2.13 and kafka-tools, with slf4j 2 pinned; Java 17 runs them).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:?usage: jars.sh DIR}"
[ -e "$dir/kafka_2.13-4.4.0.jar" ] && exit 0
work="$(mktemp -d "${TMPDIR:-/tmp}/rustberg-kafka.XXXXXX")"
trap 'rm -rf "$work"' EXIT
mvn -B -q -f "$here/pom.xml" dependency:copy-dependencies -DoutputDirectory="$work/jars" >&2
mkdir -p "$(dirname "$dir")"
rm -rf "$dir"
mv "$work/jars" "$dir"
