"""DuckDB attaches Rustberg and joins a table in a mount with a table in the root
catalog, like the seed's prod.sales.orders x analytics.web.events."""

import os

import duckdb
import pyarrow as pa
import pytest
from pyiceberg.catalog import load_catalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from test_pyiceberg import fetch_token


def extension(name):
    module = __import__(f"duckdb_extension_{name}")
    return os.path.join(os.path.dirname(module.__file__), "extensions", "v1.5.5", f"{name}.duckdb_extension")


def attach_rustberg():
    """A DuckDB connection with Rustberg attached as `rb` (extensions loaded from the wheels)."""
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    for name in ("httpfs", "avro", "iceberg"):
        con.load_extension(extension(name))
    con.execute(f"CREATE SECRET rb_secret (TYPE iceberg, TOKEN '{fetch_token()}')")
    con.execute(
        f"ATTACH 'catalog' AS rb (TYPE iceberg, ENDPOINT '{os.environ['RUSTBERG_URL']}', "
        "SECRET rb_secret, SUPPORT_NESTED_NAMESPACES true)"
    )
    return con


def create_with_rows(catalog, name, fields, rows):
    """Creates a table of (name, type, required) long/string fields and appends `rows`."""
    types = {"long": (LongType(), pa.int64()), "string": (StringType(), pa.string())}
    schema = Schema(*[NestedField(i + 1, f, types[t][0], required=r) for i, (f, t, r) in enumerate(fields)])
    arrow = pa.schema([pa.field(f, types[t][1], nullable=not r) for f, t, r in fields])
    table = catalog.create_table(name, schema=schema)
    table.append(pa.Table.from_pylist(rows, schema=arrow))
    return table


@pytest.fixture
def catalog():
    return load_catalog(
        "rustberg",
        **{"type": "rest", "uri": os.environ["RUSTBERG_URL"], "credential": os.environ["RUSTBERG_CREDENTIAL"]},
    )


def test_join_across_a_mount_and_the_root(catalog):
    catalog.create_namespace("prod.sales")
    catalog.create_namespace("analytics")
    catalog.create_namespace("analytics.web")
    create_with_rows(
        catalog,
        "prod.sales.orders",
        [("id", "long", True), ("amount", "long", False)],
        [{"id": 1, "amount": 10}, {"id": 2, "amount": 20}, {"id": 3, "amount": 30}],
    )
    create_with_rows(
        catalog,
        "analytics.web.events",
        [("order_id", "long", True), ("page", "string", False)],
        [{"order_id": 1, "page": "/cart"}, {"order_id": 3, "page": "/pay"}, {"order_id": 9, "page": "/x"}],
    )

    con = attach_rustberg()
    rows = con.execute(
        'SELECT o.id, o.amount, e.page FROM rb."prod.sales".orders o '
        'JOIN rb."analytics.web".events e ON e.order_id = o.id ORDER BY o.id'
    ).fetchall()
    assert rows == [(1, 10, "/cart"), (3, 30, "/pay")]
