#!/usr/bin/env bash
# Runs a real Apache Hive Metastore 2.3.9 (Thrift) in the foreground, on an embedded Derby
# database of its own:   bash tests/hive/metastore.sh DIR PORT
# DIR holds its configuration, database and warehouse. HIVE_LOCK_TIMEOUT_S (default 300)
# is the metastore's lock timeout (hive.txn.timeout).
#
# The jars come from the source distribution of pyspark 3.5.5 on PyPI, which carries Hive's
# metastore and its dependencies (deps/jars); they are fetched once into RUSTBERG_HIVE_JARS.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:?usage: metastore.sh DIR PORT}"
port="${2:?usage: metastore.sh DIR PORT}"
jars="${RUSTBERG_HIVE_JARS:-$HOME/.cache/rustberg/hive/jars}"

bash "$here/jars.sh" "$jars"

mkdir -p "$dir/conf" "$dir/warehouse"
dir="$(cd "$dir" && pwd)"
cat > "$dir/conf/hive-site.xml" <<XML
<?xml version="1.0"?>
<configuration>
  <property><name>javax.jdo.option.ConnectionURL</name><value>jdbc:derby:;databaseName=$dir/metastore_db;create=true</value></property>
  <property><name>hive.metastore.warehouse.dir</name><value>file://$dir/warehouse</value></property>
  <!-- No schematool scripts are in the jars: DataNucleus makes the schema. -->
  <property><name>datanucleus.schema.autoCreateAll</name><value>true</value></property>
  <property><name>hive.metastore.schema.verification</name><value>false</value></property>
  <!-- The async logger needs a disruptor jar the distribution does not carry. -->
  <property><name>hive.async.log.enabled</name><value>false</value></property>
  <!-- Locks (lock, check_lock, unlock), which Iceberg's HiveCatalogs take to commit. -->
  <property><name>hive.txn.manager</name><value>org.apache.hadoop.hive.ql.lockmgr.DbTxnManager</value></property>
  <property><name>hive.support.concurrency</name><value>true</value></property>
  <!-- Locks not heartbeated for this long are removed by the housekeeper, which runs
       (every second here) only where the compactor's initiator is on. -->
  <property><name>hive.txn.timeout</name><value>${HIVE_LOCK_TIMEOUT_S:-300}s</value></property>
  <property><name>hive.compactor.initiator.on</name><value>true</value></property>
  <property><name>hive.timedout.txn.reaper.start</name><value>1s</value></property>
  <property><name>hive.timedout.txn.reaper.interval</name><value>1s</value></property>
</configuration>
XML

classpath="$dir/conf:$jars/*"
# The transaction tables, which autoCreateAll does not make: once per database.
if [ ! -e "$dir/metastore_db/.transactions" ]; then
  java -Dderby.stream.error.file="$dir/derby.log" -cp "$classpath" "$here/PrepareTransactions.java" > "$dir/prepare.log" 2>&1
  touch "$dir/metastore_db/.transactions"
fi
exec java -Xmx512m -Dderby.stream.error.file="$dir/derby.log" -cp "$classpath" org.apache.hadoop.hive.metastore.HiveMetaStore -p "$port"
