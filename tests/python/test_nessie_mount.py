"""Nessie, mounted read-write behind Rustberg: PyIceberg, DuckDB and Spark write and read
through the mount holding no storage keys; every byte goes through credentials Nessie
vended for its own warehouse (on moto), handed on unchanged."""

import os

import pyarrow as pa
from pyiceberg.catalog import load_catalog

from test_duckdb import attach_rustberg, create_with_rows


def rustberg():
    return load_catalog(
        "rustberg",
        **{
            "type": "rest",
            "uri": os.environ["RUSTBERG_URL"],
            "credential": os.environ["RUSTBERG_CREDENTIAL"],
            "header.X-Iceberg-Access-Delegation": "vended-credentials",
        },
    )


def nessie():
    return load_catalog(
        "nessie",
        **{
            "type": "rest",
            "uri": os.environ["NESSIE_URL"],
            "warehouse": "warehouse",
            "header.X-Iceberg-Access-Delegation": "vended-credentials",
        },
    )


def test_no_storage_keys_in_the_environment():
    for name in ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"]:
        assert name not in os.environ


def test_pyiceberg_writes_and_reads_through_the_mount():
    catalog = rustberg()
    catalog.create_namespace("lake.sales")
    created = create_with_rows(
        catalog, "lake.sales.orders", [("id", "long", True), ("amount", "long", False)],
        [{"id": 1, "amount": 10}, {"id": 2, "amount": 20}],
    )
    # Nessie places it in its own warehouse (its metadata location is a Nessie URL: it
    # renders table metadata on demand).
    assert created.location().startswith("s3://nessie/warehouse/"), created.location()
    table = catalog.load_table("lake.sales.orders")
    table.append(pa.Table.from_pylist([{"id": 3, "amount": 30}], schema=table.schema().as_arrow()))
    assert sorted(catalog.load_table("lake.sales.orders").scan().to_arrow()["amount"].to_pylist()) == [10, 20, 30]
    # Nessie holds it: the same table, read directly, at the same snapshot.
    direct = nessie().load_table("sales.orders")
    mounted = catalog.load_table("lake.sales.orders")
    assert direct.current_snapshot().snapshot_id == mounted.current_snapshot().snapshot_id
    assert sorted(direct.scan().to_arrow()["id"].to_pylist()) == [1, 2, 3]
    files = [task.file.file_path for task in mounted.scan().plan_files()]
    assert files and all(f.startswith("s3://nessie/warehouse/") for f in files), files


def test_duckdb_reads_through_the_mount():
    rows = attach_rustberg().execute('SELECT sum(amount) FROM rb."lake.sales".orders').fetchall()
    assert rows == [(60,)]


def test_pyiceberg_renames_and_drops_through_the_mount():
    catalog = rustberg()
    catalog.rename_table("lake.sales.orders", "lake.sales.orders_v2")
    assert ("sales", "orders_v2") in nessie().list_tables("sales")
    catalog.drop_table("lake.sales.orders_v2")
    assert nessie().list_tables("sales") == []
    catalog.drop_namespace("lake.sales")
    assert ("sales",) not in nessie().list_namespaces()
