#!/usr/bin/env bash
# Prints the java of the newest JDK under /usr/lib/jvm whose version is at least MAJOR
# (the machines have a Temurin 25 beside the system's Java 17):
#   java="$(bash tests/java/newest-java.sh 21)"
set -euo pipefail
minimum="${1:?usage: newest-java.sh MAJOR}"
found=""
for candidate in /usr/lib/jvm/*/bin/java; do
  major="$("$candidate" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')"
  if [ "${major:-0}" -ge "$minimum" ] 2>/dev/null; then found="$candidate"; fi
done
[ -n "$found" ] || { echo "no Java $minimum or newer under /usr/lib/jvm" >&2; exit 1; }
echo "$found"
