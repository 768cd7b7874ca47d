#!/usr/bin/env bash
# Runs a real Apache Hive Metastore 4.0.1 (Thrift) in the foreground, on a PostgreSQL
# database of its own, `hive4_PORT`, at 127.0.0.1:5432 (user `postgres`, trust), as Hive 4
# is run in production:   bash tests/hive/metastore4.sh DIR PORT
# Not on its embedded Derby: there, 4.0.1's lock tables block its own alter_table (a
# rename, a view's commit, contended commits) until Derby's lock timeout, again on every
# retry, and it compares metadata locations as CLOBs, which Derby refuses.
# DIR holds its configuration and warehouse; the database is made anew when DIR has none
# yet, and kept across restarts. Its jars come from Maven Central (tests/hive/jars4.sh),
# fetched once into RUSTBERG_HIVE4 (default ~/.cache/rustberg/hive4).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:?usage: metastore4.sh DIR PORT}"
port="${2:?usage: metastore4.sh DIR PORT}"
hive="${RUSTBERG_HIVE4:-$HOME/.cache/rustberg/hive4}"

bash "$here/jars4.sh" "$hive"

mkdir -p "$dir/conf" "$dir/warehouse"
dir="$(cd "$dir" && pwd)"
database="hive4_$port"
cat > "$dir/conf/metastore-site.xml" <<XML
<?xml version="1.0"?>
<configuration>
  <property><name>javax.jdo.option.ConnectionURL</name><value>jdbc:postgresql://127.0.0.1:5432/$database</value></property>
  <property><name>javax.jdo.option.ConnectionDriverName</name><value>org.postgresql.Driver</value></property>
  <property><name>javax.jdo.option.ConnectionUserName</name><value>postgres</value></property>
  <property><name>javax.jdo.option.ConnectionPassword</name><value></value></property>
  <property><name>metastore.warehouse.dir</name><value>file://$dir/warehouse</value></property>
  <property><name>metastore.schema.verification</name><value>false</value></property>
  <property><name>metastore.event.db.notification.api.auth</name><value>false</value></property>
</configuration>
XML

# The distribution's own jars first: Hadoop's carry older copies of some of them.
classpath="$dir/conf:$hive/metastore/lib/*:$hive/hadoop/*"
export METASTORE_HOME="$hive/metastore"
# The database and its schema, transaction tables included, from the distribution's
# scripts: once per DIR (a database left by an earlier run on this port is replaced).
if [ ! -e "$dir/schema.log" ]; then
  psql -h 127.0.0.1 -U postgres -d postgres -qc "DROP DATABASE IF EXISTS $database" -c "CREATE DATABASE $database"
  java -cp "$classpath" org.apache.hadoop.hive.metastore.tools.schematool.MetastoreSchemaTool \
    -dbType postgres -initSchema -userName postgres -passWord unused > "$dir/schema.log.part" 2>&1
  mv "$dir/schema.log.part" "$dir/schema.log"
fi
exec java -Xmx512m -cp "$classpath" \
  org.apache.hadoop.hive.metastore.HiveMetaStore -p "$port"
