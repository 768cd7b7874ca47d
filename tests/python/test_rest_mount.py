"""A table in somebody else's catalog, read through a rest mount: PyIceberg scans it,
and DuckDB joins it with a table of Rustberg's own."""

import os

import duckdb
import pyarrow as pa
from pyiceberg.catalog import load_catalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from test_duckdb import extension
from test_pyiceberg import fetch_token


def connect(uri, credential):
    return load_catalog(uri, **{"type": "rest", "uri": uri, "credential": credential})


def test_prepare_both_catalogs():
    """Runs before the mount exists: a table in the remote, and one in Rustberg's own root."""
    remote = connect(os.environ["REMOTE_URL"], os.environ["REMOTE_CREDENTIAL"])
    remote.create_namespace("sales")
    orders = remote.create_table(
        "sales.orders",
        schema=Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "amount", LongType())),
    )
    orders.append(
        pa.Table.from_pylist(
            [{"id": 1, "amount": 10}, {"id": 2, "amount": 20}],
            schema=pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("amount", pa.int64())]),
        )
    )
    local = connect(os.environ["RUSTBERG_URL"], os.environ["RUSTBERG_CREDENTIAL"])
    local.create_namespace("web")
    events = local.create_table(
        "web.events",
        schema=Schema(NestedField(1, "order_id", LongType(), required=True), NestedField(2, "page", StringType())),
    )
    events.append(
        pa.Table.from_pylist(
            [{"order_id": 2, "page": "/pay"}],
            schema=pa.schema([pa.field("order_id", pa.int64(), nullable=False), pa.field("page", pa.string())]),
        )
    )


def test_read_and_join_through_a_rest_mount():
    local = connect(os.environ["RUSTBERG_URL"], os.environ["RUSTBERG_CREDENTIAL"])
    mounted = local.load_table("partner.sales.orders")
    assert sorted(mounted.scan().to_arrow()["amount"].to_pylist()) == [10, 20]

    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    for name in ("httpfs", "avro", "iceberg"):
        con.load_extension(extension(name))
    con.execute(f"CREATE SECRET rb_secret (TYPE iceberg, TOKEN '{fetch_token()}')")
    con.execute(
        f"ATTACH 'catalog' AS rb (TYPE iceberg, ENDPOINT '{os.environ['RUSTBERG_URL']}', "
        "SECRET rb_secret, SUPPORT_NESTED_NAMESPACES true)"
    )
    rows = con.execute(
        'SELECT o.id, o.amount, e.page FROM rb."partner.sales".orders o JOIN rb.web.events e ON e.order_id = o.id'
    ).fetchall()
    assert rows == [(2, 20, "/pay")]
