#!/usr/bin/env bash
# Runs Nessie 0.99.0 (its Quarkus server jar from Maven Central, fetched once into
# ~/.m2) with an in-memory store and one warehouse, `warehouse`, on an S3 bucket, signing
# its clients' requests or vending them STS credentials (as the client asks):
#   bash tests/java/nessie.sh PORT S3_ENDPOINT BUCKET
# Its Iceberg REST API is under http://127.0.0.1:PORT/iceberg (prefix `main|warehouse`).
# Nessie needs Java 21 or newer: the newest JDK under /usr/lib/jvm is used (the machines
# have a Temurin 25 beside Java 17). It listens until killed.
set -euo pipefail
port="${1:?usage: nessie.sh PORT S3_ENDPOINT BUCKET}"
endpoint="${2:?usage: nessie.sh PORT S3_ENDPOINT BUCKET}"
bucket="${3:?usage: nessie.sh PORT S3_ENDPOINT BUCKET}"
version=0.99.0
jar="$HOME/.m2/repository/org/projectnessie/nessie/nessie-quarkus/$version/nessie-quarkus-$version-runner.jar"
if [ ! -s "$jar" ]; then
  mvn -B -q dependency:get -Dartifact="org.projectnessie.nessie:nessie-quarkus:$version:jar:runner" -Dtransitive=false >&2
fi
java="$(bash "$(dirname "$0")/newest-java.sh" 21)"
exec "$java" \
  -Xmx512m \
  -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$port" -Dquarkus.management.enabled=false \
  -Dquarkus.log.level=WARN \
  -Dnessie.version.store.type=IN_MEMORY \
  -Dnessie.catalog.default-warehouse=warehouse \
  -Dnessie.catalog.warehouses.warehouse.location="s3://$bucket/warehouse" \
  -Dnessie.catalog.service.s3.default-options.region=us-east-1 \
  -Dnessie.catalog.service.s3.default-options.endpoint="$endpoint" \
  -Dnessie.catalog.service.s3.default-options.path-style-access=true \
  -Dnessie.catalog.service.s3.default-options.sts-endpoint="$endpoint" \
  -Dnessie.catalog.service.s3.default-options.client-iam.enabled=true \
  -Dnessie.catalog.service.s3.default-options.client-iam.assume-role=arn:aws:iam::123456789012:role/nessie-vend \
  -Dnessie.catalog.service.s3.default-options.access-key=urn:nessie-secret:quarkus:rustberg-tests.s3 \
  -Drustberg-tests.s3.name=testing -Drustberg-tests.s3.secret=testing \
  -jar "$jar"
