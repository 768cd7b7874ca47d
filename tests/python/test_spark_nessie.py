"""Spark (Iceberg's Java client) writes and reads a table in Nessie through a read-write
rest mount of Rustberg, with the credentials Nessie vends and no keys of its own."""

import os

import spark_session


def test_spark_writes_and_reads_through_a_nessie_mount():
    rustberg = {
        "type": "rest",
        "uri": os.environ["RUSTBERG_URL"],
        "credential": os.environ["RUSTBERG_CREDENTIAL"],
        "io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
        "header.X-Iceberg-Access-Delegation": "vended-credentials",
    }
    spark = spark_session.start("nessie-mount", {"rb": rustberg})
    try:
        spark.sql("CREATE NAMESPACE rb.lake.web")
        spark.sql("CREATE TABLE rb.lake.web.events (id bigint, page string) USING iceberg")
        spark.sql("INSERT INTO rb.lake.web.events VALUES (1, '/a'), (2, '/b')")
        spark.sql("INSERT INTO rb.lake.web.events VALUES (3, '/c')")
        spark.sql("DELETE FROM rb.lake.web.events WHERE id = 2")
        rows = spark.sql("SELECT id, page FROM rb.lake.web.events ORDER BY id").collect()
        assert [(r.id, r.page) for r in rows] == [(1, "/a"), (3, "/c")]
        files = spark.sql("SELECT file_path FROM rb.lake.web.events.files").collect()
        assert files and all(f.file_path.startswith("s3://nessie/warehouse/") for f in files)
    finally:
        spark.stop()
