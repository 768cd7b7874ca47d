"""Spark (Iceberg's Java S3FileIO) against a Rustberg whose warehouse is on S3 (moto,
checking every signature), holding no storage keys: the catalog signs each request."""

import os

import pytest
from spark_session import start


@pytest.fixture(scope="module")
def spark():
    for name in ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"]:
        assert name not in os.environ
    catalog = {
        "type": "rest",
        "uri": os.environ["RUSTBERG_URL"],
        "credential": os.environ["WRITER_CREDENTIAL"],
        "header.X-Iceberg-Access-Delegation": "remote-signing",
    }
    session = start("rustberg-remote-signing", {"signed": catalog})
    yield session
    session.stop()


def test_spark_writes_deletes_and_reads_with_only_signatures(spark):
    spark.sql("CREATE NAMESPACE signed.sparky")
    spark.sql("CREATE TABLE signed.sparky.events (id BIGINT, name STRING) USING iceberg")
    spark.sql("INSERT INTO signed.sparky.events VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    spark.sql("DELETE FROM signed.sparky.events WHERE id = 2")
    rows = spark.sql("SELECT id FROM signed.sparky.events ORDER BY id").collect()
    assert [r.id for r in rows] == [1, 3]
    files = spark.sql("SELECT file_path FROM signed.sparky.events.files").collect()
    assert files and all(f.file_path.startswith("s3://lake/warehouse/sparky/events") for f in files), files
