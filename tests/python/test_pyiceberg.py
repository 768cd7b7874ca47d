"""PyIceberg end to end against a running Rustberg (RUSTBERG_URL), through the wasm native backend."""

import json
import os
import urllib.parse
import urllib.request

import pyarrow as pa
import pytest
from pyiceberg.catalog import load_catalog
from pyiceberg.exceptions import NamespaceNotEmptyError, NoSuchTableError, UnauthorizedError
from pyiceberg.expressions import EqualTo
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import LongType, NestedField, StringType


@pytest.fixture
def catalog():
    """Connects with client credentials (PyIceberg exchanges them at /v1/oauth/tokens)."""
    return load_catalog(
        "rustberg",
        **{"type": "rest", "uri": os.environ["RUSTBERG_URL"], "credential": os.environ["RUSTBERG_CREDENTIAL"]},
    )


def fetch_token():
    client_id, secret = os.environ["RUSTBERG_CREDENTIAL"].split(":", 1)
    body = urllib.parse.urlencode(
        {"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret, "scope": "catalog"}
    ).encode()
    with urllib.request.urlopen(os.environ["RUSTBERG_URL"] + "/v1/oauth/tokens", body) as response:
        return json.load(response)["access_token"]


ARROW_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("category", pa.string()),
        pa.field("amount", pa.int64()),
    ]
)


def rows(*items):
    return pa.Table.from_pylist([dict(zip(["id", "category", "amount"], i)) for i in items], schema=ARROW_SCHEMA)


def test_end_to_end(catalog):
    catalog.create_namespace("shop", {"team": "sales"})
    assert ("shop",) in catalog.list_namespaces()
    assert catalog.load_namespace_properties("shop")["team"] == "sales"

    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "category", StringType(), required=False),
        NestedField(3, "amount", LongType(), required=False),
    )
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="category"))
    table = catalog.create_table("shop.orders", schema=schema, partition_spec=spec)
    assert ("shop", "orders") in catalog.list_tables("shop")

    table.append(rows((1, "a", 10), (2, "b", 20)))
    first = table.current_snapshot().snapshot_id
    table.append(rows((3, "a", 30)))

    table = catalog.load_table("shop.orders")
    assert len(table.snapshots()) == 2
    assert [e.snapshot_id for e in table.history()][0] == first
    assert table.spec().fields[0].name == "category"

    filtered = table.scan(row_filter=EqualTo("category", "a")).to_arrow()
    assert sorted(filtered["id"].to_pylist()) == [1, 3]

    then = table.scan(snapshot_id=first).to_arrow()
    assert sorted(then["id"].to_pylist()) == [1, 2]

    with table.update_schema() as update:
        update.add_column("note", StringType())
    table = catalog.load_table("shop.orders")
    assert "note" in [f.name for f in table.schema().fields]
    everything = table.scan().to_arrow()
    assert everything.num_rows == 3
    assert everything["note"].null_count == 3

    catalog.create_namespace("archive")
    catalog.rename_table("shop.orders", "archive.orders_2026")
    assert catalog.table_exists("archive.orders_2026")
    assert not catalog.table_exists("shop.orders")
    assert catalog.load_table("archive.orders_2026").scan().to_arrow().num_rows == 3

    with pytest.raises(NamespaceNotEmptyError):
        catalog.drop_namespace("archive")
    catalog.drop_table("archive.orders_2026")
    assert not catalog.table_exists("archive.orders_2026")
    with pytest.raises(NoSuchTableError):
        catalog.load_table("archive.orders_2026")
    catalog.drop_namespace("archive")
    catalog.drop_namespace("shop")
    assert catalog.list_namespaces() == []


def test_stale_writer_is_refused_then_retries(catalog):
    catalog.create_namespace("race")
    schema = Schema(NestedField(1, "id", LongType(), required=True))
    catalog.create_table("race.t", schema=schema)
    one = catalog.load_table("race.t")
    two = catalog.load_table("race.t")
    data = pa.Table.from_pylist([{"id": 1}], schema=pa.schema([pa.field("id", pa.int64(), nullable=False)]))
    one.append(data)
    # `two` still believes the table has no snapshot. Its first commit attempt is
    # refused (409); PyIceberg refreshes and retries, and both appends survive.
    two.append(data)
    table = catalog.load_table("race.t")
    assert len(table.snapshots()) == 2
    assert table.scan().to_arrow().num_rows == 2


def test_token_and_refusals():
    uri = os.environ["RUSTBERG_URL"]
    with_token = load_catalog("by-token", **{"type": "rest", "uri": uri, "token": fetch_token()})
    with_token.create_namespace("via_token")
    assert ("via_token",) in with_token.list_namespaces()
    with pytest.raises(UnauthorizedError):
        load_catalog("forged", **{"type": "rest", "uri": uri, "token": "not-a-token"}).list_namespaces()
    with pytest.raises(Exception):
        load_catalog("wrong", **{"type": "rest", "uri": uri, "credential": "admin:wrong-secret"})
