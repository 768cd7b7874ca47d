"""What the tests of AWS-backed mounts share: moto's S3 settings for PyIceberg, a small
two-column table, and the Rustberg catalog under test.

MOTO_URL is moto; RUSTBERG_URL and RUSTBERG_CREDENTIAL are the server and its admin."""

import os

import pyarrow as pa
from pyiceberg.catalog import load_catalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

MOTO = os.environ.get("MOTO_URL", "")
S3 = {
    "s3.endpoint": MOTO,
    "s3.access-key-id": "testing",
    "s3.secret-access-key": "testing",
    "s3.region": "us-east-1",
    "s3.force-virtual-addressing": "false",
}
ARROW = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("kind", pa.string())])
SCHEMA = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "kind", StringType()))


def rows(*items):
    return pa.Table.from_pylist([{"id": i, "kind": k} for i, k in items], schema=ARROW)


def rustberg():
    return load_catalog(
        "rustberg",
        **{"type": "rest", "uri": os.environ["RUSTBERG_URL"], "credential": os.environ["RUSTBERG_CREDENTIAL"], **S3},
    )
