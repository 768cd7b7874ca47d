"""The victim of the two-tenant attack suite (tests/locations.rs): `setup` creates a
table with rows through PyIceberg; `verify` scans it after the attacks and purges."""

import os

import pyarrow as pa
from pyiceberg.catalog import load_catalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "name", StringType(), required=False),
)
ROWS = pa.Table.from_pylist(
    [{"id": i, "name": f"row-{i}"} for i in range(3)],
    schema=pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("name", pa.string())]),
)


def catalog():
    properties = {"type": "rest", "uri": os.environ["RUSTBERG_URL"], "credential": os.environ["VICTIM_CREDENTIAL"]}
    # An S3 warehouse: the victim brings its own keys for moto.
    if "S3_ENDPOINT" in os.environ:
        properties.update(
            {
                "s3.endpoint": os.environ["S3_ENDPOINT"],
                "s3.access-key-id": "victim",
                "s3.secret-access-key": "victim",
                "s3.region": "us-east-1",
                "s3.path-style-access": "true",
            }
        )
    return load_catalog("rustberg", **properties)


def table_name():
    return os.environ["VICTIM_TABLE"]


def test_victim():
    if os.environ["MODE"] == "setup":
        namespace = table_name().rsplit(".", 1)[0]
        catalog().create_namespace(namespace)
        table = catalog().create_table(table_name(), SCHEMA)
        table.append(ROWS)
        table.append(ROWS)
    rows = catalog().load_table(table_name()).scan().to_arrow()
    assert rows.num_rows == 6, rows
    assert sorted(rows.column("id").to_pylist()) == [0, 0, 1, 1, 2, 2]
