#!/usr/bin/env bash
# Runs a real Apache Hive Metastore 4.0.1 (Thrift) in the foreground, on an embedded Derby
# database of its own:   bash tests/hive/metastore4.sh DIR PORT
# DIR holds its configuration, database and warehouse. Its jars come from Maven Central
# (tests/hive/jars4.sh), fetched once into RUSTBERG_HIVE4 (default ~/.cache/rustberg/hive4).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:?usage: metastore4.sh DIR PORT}"
port="${2:?usage: metastore4.sh DIR PORT}"
hive="${RUSTBERG_HIVE4:-$HOME/.cache/rustberg/hive4}"

bash "$here/jars4.sh" "$hive"

mkdir -p "$dir/conf" "$dir/warehouse"
dir="$(cd "$dir" && pwd)"
cat > "$dir/conf/metastore-site.xml" <<XML
<?xml version="1.0"?>
<configuration>
  <property><name>javax.jdo.option.ConnectionURL</name><value>jdbc:derby:;databaseName=$dir/metastore_db;create=true</value></property>
  <property><name>javax.jdo.option.ConnectionDriverName</name><value>org.apache.derby.jdbc.EmbeddedDriver</value></property>
  <property><name>metastore.warehouse.dir</name><value>file://$dir/warehouse</value></property>
  <property><name>metastore.schema.verification</name><value>false</value></property>
  <property><name>metastore.event.db.notification.api.auth</name><value>false</value></property>
</configuration>
XML

# The distribution's own jars first: Hadoop's carry older copies of some of them.
classpath="$dir/conf:$hive/metastore/lib/*:$hive/hadoop/*"
export METASTORE_HOME="$hive/metastore"
# The schema, transaction tables included, from the distribution's scripts: once.
if [ ! -e "$dir/metastore_db" ]; then
  java -Dderby.stream.error.file="$dir/derby.log" -cp "$classpath" \
    org.apache.hadoop.hive.metastore.tools.schematool.MetastoreSchemaTool -dbType derby -initSchema \
    > "$dir/schema.log" 2>&1
fi
exec java -Xmx512m -Dderby.stream.error.file="$dir/derby.log" -cp "$classpath" \
  org.apache.hadoop.hive.metastore.HiveMetaStore -p "$port"
