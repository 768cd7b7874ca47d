"""Spark SQL with Iceberg's own HiveCatalog (Java, straight at a real Hive Metastore) and
with Iceberg's RESTCatalog at Rustberg's hms mount of the same metastore: a table made by
either is appended by the other and read by both, at the same snapshots.

Environment: RUSTBERG_URL, RUSTBERG_CREDENTIAL (id:secret), SPARK_JARS (comma-separated jar
paths), HMS_URL (thrift://…), HMS_WAREHOUSE (the mount's warehouse, file://…) and
RUSTBERG_MOUNT (the hms mount's name).
"""

import os

import pytest

import spark_session


@pytest.fixture(scope="module")
def spark():
    url, credential = os.environ["RUSTBERG_URL"], os.environ["RUSTBERG_CREDENTIAL"]
    catalogs = {
        # Iceberg's HiveCatalog, as a Spark job on that metastore would have it.
        "hive": {"type": "hive", "uri": os.environ["HMS_URL"], "warehouse": os.environ["HMS_WAREHOUSE"]},
        # The hms mount through its own prefix. Neither caches: each query loads.
        "rb": {"type": "rest", "uri": url, "credential": credential, "warehouse": os.environ["RUSTBERG_MOUNT"]},
    }
    for settings in catalogs.values():
        settings["cache-enabled"] = "false"
    session = spark_session.start("rustberg-hive", catalogs)
    yield session
    session.stop()


def values(spark, query):
    return sorted(tuple(r) for r in spark.sql(query).collect())


def snapshots(spark, table):
    return values(spark, f"SELECT snapshot_id FROM {table}.snapshots")


def test_tables_made_by_either_are_appended_and_read_by_both(spark):
    spark.sql("CREATE NAMESPACE hive.sparkdb")

    # Made by Spark's HiveCatalog, appended through Rustberg.
    spark.sql("CREATE TABLE hive.sparkdb.made_by_hive (id bigint, kind string) USING iceberg PARTITIONED BY (kind)")
    spark.sql("INSERT INTO hive.sparkdb.made_by_hive VALUES (1, 'a')")
    spark.sql("INSERT INTO rb.sparkdb.made_by_hive VALUES (2, 'b')")
    for catalog in ["hive", "rb"]:
        assert values(spark, f"SELECT id, kind FROM {catalog}.sparkdb.made_by_hive") == [(1, "a"), (2, "b")]
    assert snapshots(spark, "hive.sparkdb.made_by_hive") == snapshots(spark, "rb.sparkdb.made_by_hive")
    assert len(snapshots(spark, "rb.sparkdb.made_by_hive")) == 2

    # Made through Rustberg, appended and changed by Spark's HiveCatalog.
    spark.sql("CREATE TABLE rb.sparkdb.made_by_rustberg (id bigint) USING iceberg")
    spark.sql("INSERT INTO rb.sparkdb.made_by_rustberg VALUES (1), (2)")
    spark.sql("INSERT INTO hive.sparkdb.made_by_rustberg VALUES (3)")
    spark.sql("DELETE FROM hive.sparkdb.made_by_rustberg WHERE id = 1")
    for catalog in ["hive", "rb"]:
        assert values(spark, f"SELECT id FROM {catalog}.sparkdb.made_by_rustberg") == [(2,), (3,)]
    assert snapshots(spark, "hive.sparkdb.made_by_rustberg") == snapshots(spark, "rb.sparkdb.made_by_rustberg")

    # Both list both tables; a rename by one is seen by the other.
    for catalog in ["hive", "rb"]:
        listed = {r.tableName for r in spark.sql(f"SHOW TABLES IN {catalog}.sparkdb").collect()}
        assert listed == {"made_by_hive", "made_by_rustberg"}, (catalog, listed)
    spark.sql("ALTER TABLE rb.sparkdb.made_by_rustberg RENAME TO sparkdb.renamed")
    assert values(spark, "SELECT id FROM hive.sparkdb.renamed") == [(2,), (3,)]
