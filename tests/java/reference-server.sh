#!/usr/bin/env bash
# Runs Iceberg's own reference REST catalog server (RESTCatalogServer from the test
# fixtures of iceberg-open-api 1.11.0: a JDBC catalog on in-memory SQLite, no auth):
#   bash tests/java/reference-server.sh PORT WAREHOUSE_DIR
# Its classpath is resolved from Maven Central once (reference-server/pom.xml) and kept
# beside the jars in ~/.m2. It listens on 0.0.0.0:PORT until killed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
port="${1:?usage: reference-server.sh PORT WAREHOUSE_DIR}"
warehouse="${2:?usage: reference-server.sh PORT WAREHOUSE_DIR}"
classpath="${HOME}/.m2/rustberg-reference-server-$(sha256sum "$here/reference-server/pom.xml" | cut -c1-12).classpath"
if [ ! -s "$classpath" ]; then
  mvn -B -q -f "$here/reference-server/pom.xml" dependency:build-classpath -Dmdep.outputFile="$classpath.tmp" >&2
  mv "$classpath.tmp" "$classpath"
fi
mkdir -p "$warehouse"
export CATALOG_REST_PORT="$port" CATALOG_WAREHOUSE="$warehouse"
exec java -cp "$(cat "$classpath")" org.apache.iceberg.rest.RESTCatalogServer
