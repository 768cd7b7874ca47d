"""PyIceberg against a Rustberg whose warehouse is on S3 (moto, checking every
signature), holding no storage keys: every request it sends to S3 was signed by the
catalog, for the table's own files only."""

import os

import pyarrow as pa
import pytest
from pyiceberg.catalog import load_catalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "name", StringType(), required=False),
)
ROWS = pa.Table.from_pylist(
    [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}],
    schema=pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())]),
)


def catalog(credential, **extra):
    return load_catalog(
        "rustberg",
        **{"type": "rest", "uri": os.environ["RUSTBERG_URL"], "credential": credential, **extra},
    )


def test_no_storage_keys_in_the_environment():
    for name in ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"]:
        assert name not in os.environ


def test_writer_creates_appends_and_reads_back():
    # The store signs unasked: the client sends no delegation header at all.
    writer = catalog(os.environ["WRITER_CREDENTIAL"])
    writer.create_namespace("lake")
    table = writer.create_table("lake.signed", SCHEMA)
    assert table.metadata_location.startswith("s3://lake/warehouse/lake/signed")
    properties = table.io.properties
    assert properties["s3.signer"] == "S3V4RestSigner", properties
    assert properties["s3.remote-signing-enabled"] == "true", properties
    assert "s3.access-key-id" not in properties and "s3.session-token" not in properties, properties
    assert type(table.io).__name__ == "FsspecFileIO"
    table.append(ROWS)
    table.append(ROWS)
    read = writer.load_table("lake.signed").scan().to_arrow().sort_by("id")
    assert read.num_rows == 4
    assert read.column("id").to_pylist() == [1, 1, 2, 2]


def test_a_client_that_asks_for_remote_signing_gets_it():
    writer = catalog(os.environ["WRITER_CREDENTIAL"], **{"header.X-Iceberg-Access-Delegation": "remote-signing"})
    table = writer.load_table("lake.signed")
    assert table.io.properties["s3.signer.endpoint"] == "v1/catalog/namespaces/lake/tables/signed/sign"
    assert table.scan().to_arrow().num_rows == 4


def test_reader_reads_and_no_write_of_its_is_signed():
    reader = catalog(os.environ["READER_CREDENTIAL"])
    table = reader.load_table("lake.signed")
    assert table.scan().to_arrow().num_rows == 4
    # Its first data file's PUT is refused by the signer: nothing reaches the bucket.
    with pytest.raises(Exception, match="(?i)sign"):
        table.append(ROWS)
