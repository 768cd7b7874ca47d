"""A table in somebody else's catalog, read through a rest mount: PyIceberg scans it,
and DuckDB joins it with a table of Rustberg's own."""

import os

from pyiceberg.catalog import load_catalog

from test_duckdb import attach_rustberg, create_with_rows


def connect(uri, credential):
    return load_catalog(uri, **{"type": "rest", "uri": uri, "credential": credential})


def test_prepare_both_catalogs():
    """Runs before the mount exists: a table in the remote, and one in Rustberg's own root."""
    remote = connect(os.environ["REMOTE_URL"], os.environ["REMOTE_CREDENTIAL"])
    remote.create_namespace("sales")
    create_with_rows(
        remote, "sales.orders", [("id", "long", True), ("amount", "long", False)],
        [{"id": 1, "amount": 10}, {"id": 2, "amount": 20}],
    )
    local = connect(os.environ["RUSTBERG_URL"], os.environ["RUSTBERG_CREDENTIAL"])
    local.create_namespace("web")
    create_with_rows(
        local, "web.events", [("order_id", "long", True), ("page", "string", False)], [{"order_id": 2, "page": "/pay"}]
    )


def test_read_and_join_through_a_rest_mount():
    local = connect(os.environ["RUSTBERG_URL"], os.environ["RUSTBERG_CREDENTIAL"])
    mounted = local.load_table("partner.sales.orders")
    assert sorted(mounted.scan().to_arrow()["amount"].to_pylist()) == [10, 20]

    rows = attach_rustberg().execute(
        'SELECT o.id, o.amount, e.page FROM rb."partner.sales".orders o JOIN rb.web.events e ON e.order_id = o.id'
    ).fetchall()
    assert rows == [(2, 20, "/pay")]
