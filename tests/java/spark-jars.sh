#!/usr/bin/env bash
# Fetches Iceberg's Spark runtime and AWS bundle (pinned, from Maven Central into ~/.m2)
# and prints their paths, comma-separated, for `spark.jars`:
#   bash tests/java/spark-jars.sh OUTPUT_DIR
set -euo pipefail
out="${1:?usage: spark-jars.sh OUTPUT_DIR}"
iceberg=1.11.0   # as tests/java/pom.xml (the RCK)
mkdir -p "$out"
jars=()
for artifact in "iceberg-spark-runtime-4.1_2.13" "iceberg-aws-bundle"; do
  jar="$out/$artifact-$iceberg.jar"
  if [ ! -s "$jar" ]; then
    mvn -B -q dependency:copy -Dartifact="org.apache.iceberg:$artifact:$iceberg" -DoutputDirectory="$out" >&2
  fi
  jars+=("$jar")
done
(IFS=,; echo "${jars[*]}")
