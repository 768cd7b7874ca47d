"""lakana-server, an independent Iceberg REST catalog, mounted read-only in Rustberg."""

import os

import pyarrow as pa
from pyiceberg.catalog import load_catalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField


def test_seed_lakana():
    """Writes straight to lakana (which needs its environment name as the prefix)."""
    lakana = load_catalog(
        "lakana",
        **{"type": "rest", "uri": os.environ["LAKANA_URL"], "token": os.environ["LAKANA_TOKEN"],
           "warehouse": "dev", "prefix": "dev"},
    )
    table = lakana.create_table("bronze.orders", schema=Schema(NestedField(1, "id", LongType(), required=True)))
    table.append(pa.Table.from_pylist([{"id": 1}, {"id": 2}], schema=pa.schema([pa.field("id", pa.int64(), nullable=False)])))


def test_read_through_rustberg():
    catalog = load_catalog(
        "rustberg",
        **{"type": "rest", "uri": os.environ["RUSTBERG_URL"], "credential": os.environ["RUSTBERG_CREDENTIAL"]},
    )
    assert ("lk", "bronze") in catalog.list_namespaces("lk")
    assert ("lk", "bronze", "orders") in catalog.list_tables("lk.bronze")
    assert catalog.table_exists("lk.bronze.orders")
    rows = catalog.load_table("lk.bronze.orders").scan().to_arrow()
    assert sorted(rows["id"].to_pylist()) == [1, 2]
