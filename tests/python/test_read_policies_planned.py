"""PyIceberg 0.12 as a reader a read policy restricts, planning on the server: it reads
the rows of the files the policy's filter matches and no other (the table's warehouse is
the server's local one). The writer appends one file per region; the policy (made by the
Rust side) lets the reader see region 'eu'.

Environment: RUSTBERG_URL, WRITER_CREDENTIAL, READER_CREDENTIAL (id:secret each)."""

import os

import pyarrow as pa
from pyiceberg.catalog import load_catalog
from pyiceberg.expressions import GreaterThan
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

URL = os.environ["RUSTBERG_URL"]
SCHEMA = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "region", StringType(), required=False))
ARROW = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("region", pa.string())])


def catalog(credential, **extra):
    return load_catalog("rb", **{"type": "rest", "uri": URL, "credential": credential, **extra})


def test_the_writer_appends_one_file_per_region():
    table = catalog(os.environ["WRITER_CREDENTIAL"]).load_table("gov.people")
    for rows in ([(1, "eu"), (2, "eu")], [(3, "us")]):
        table.append(pa.Table.from_pylist([dict(zip(ARROW.names, r)) for r in rows], schema=ARROW))
    assert len(table.scan().to_arrow()) == 3


def test_the_restricted_reader_planning_on_the_server_reads_only_its_rows():
    reader = catalog(os.environ["READER_CREDENTIAL"], **{"scan-planning-mode": "server"})
    table = reader.load_table("gov.people")
    got = table.scan().to_arrow().sort_by("id").to_pylist()
    assert got == [{"id": 1, "region": "eu"}, {"id": 2, "region": "eu"}]
    assert table.scan(row_filter=GreaterThan("id", 1)).to_arrow().to_pylist() == [{"id": 2, "region": "eu"}]
