"""PyIceberg against a Rustberg whose warehouse is on S3 (moto), holding no storage keys:
every byte it writes or reads goes through credentials the catalog vended."""

import os

import pyarrow as pa
import pytest
from pyiceberg.catalog import load_catalog
from pyiceberg.exceptions import ForbiddenError
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


def catalog(credential):
    return load_catalog(
        "rustberg",
        **{
            "type": "rest",
            "uri": os.environ["RUSTBERG_URL"],
            "credential": credential,
            "header.X-Iceberg-Access-Delegation": "vended-credentials",
        },
    )


def test_no_storage_keys_in_the_environment():
    for name in ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"]:
        assert name not in os.environ


def test_writer_creates_appends_and_reads_back():
    writer = catalog(os.environ["WRITER_CREDENTIAL"])
    writer.create_namespace("lake")
    table = writer.create_table("lake.events", SCHEMA)
    assert table.metadata_location.startswith("s3://lake/warehouse/lake/events")
    # The FileIO was configured from the catalog's answer: temporary STS keys.
    assert table.io.properties.get("s3.session-token"), table.io.properties
    table.append(ROWS)
    table.append(ROWS)
    read = writer.load_table("lake.events").scan().to_arrow().sort_by("id")
    assert read.num_rows == 4
    assert read.column("id").to_pylist() == [1, 1, 2, 2]


def test_reader_reads_with_its_own_vended_credentials():
    reader = catalog(os.environ["READER_CREDENTIAL"])
    table = reader.load_table("lake.events")
    assert table.io.properties.get("s3.session-token")
    assert table.scan().to_arrow().num_rows == 4
    with pytest.raises(ForbiddenError):
        table.append(ROWS)
