"""A Glue mount against moto: PyIceberg through Rustberg and PyIceberg's own GlueCatalog
pointed straight at moto work on the same tables, in both directions.

RUSTBERG_MOUNT names the glue mount; MOTO_URL is moto (Glue and S3); the warehouse is
s3://lake/warehouse."""

import json
import os
import urllib.request

import boto3
import pytest
from pyiceberg.catalog.glue import GlueCatalog
from pyiceberg.exceptions import BadRequestError, NoSuchTableError
from pyiceberg.expressions import EqualTo
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.transforms import IdentityTransform

from on_moto import MOTO, S3, SCHEMA, rows, rustberg

MOUNT = os.environ.get("RUSTBERG_MOUNT", "lake")


def glue():
    return GlueCatalog(
        "glue",
        **{
            "glue.endpoint": MOTO,
            "glue.region": "us-east-1",
            "glue.access-key-id": "testing",
            "glue.secret-access-key": "testing",
            "warehouse": "s3://lake/warehouse",
            **S3,
        },
    )


def test_rustberg_writes_and_glue_catalog_reads_and_writes_back():
    catalog = rustberg()
    catalog.create_namespace(f"{MOUNT}.sales", {"owner": "team-a"})
    assert (MOUNT, "sales") in catalog.list_namespaces(MOUNT)
    spec = PartitionSpec(PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="kind"))
    table = catalog.create_table(f"{MOUNT}.sales.orders", schema=SCHEMA, partition_spec=spec)
    assert table.metadata_location.startswith("s3://lake/warehouse/")
    table.append(rows((1, "a"), (2, "b")))
    table.append(rows((3, "a")))
    table = catalog.load_table(f"{MOUNT}.sales.orders")
    assert sorted(table.scan(row_filter=EqualTo("kind", "a")).to_arrow()["id"].to_pylist()) == [1, 3]

    # Iceberg's own Glue catalog sees the same table, at the same snapshot.
    theirs = glue().load_table("sales.orders")
    assert theirs.current_snapshot().snapshot_id == table.current_snapshot().snapshot_id
    assert theirs.metadata_location == table.metadata_location
    assert glue().load_namespace_properties("sales")["owner"] == "team-a"
    # Glue's own view of it follows Iceberg's conventions.
    entry = boto3.client(
        "glue", endpoint_url=MOTO, region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    ).get_table(DatabaseName="sales", Name="orders")["Table"]
    assert entry["Parameters"]["table_type"] == "ICEBERG"
    assert entry["Parameters"]["metadata_location"] == table.metadata_location
    assert "previous_metadata_location" in entry["Parameters"]
    assert [c["Name"] for c in entry["StorageDescriptor"]["Columns"]] == ["id", "kind"]
    assert entry["StorageDescriptor"]["Columns"][0]["Type"] == "bigint"
    assert entry["StorageDescriptor"]["Location"] == table.location()

    theirs.append(rows((4, "b")))
    # Rustberg serves the snapshot Glue's writer made.
    again = catalog.load_table(f"{MOUNT}.sales.orders")
    assert again.current_snapshot().snapshot_id == glue().load_table("sales.orders").current_snapshot().snapshot_id
    assert sorted(again.scan().to_arrow()["id"].to_pylist()) == [1, 2, 3, 4]
    assert len(again.snapshots()) == 3


def test_a_table_glue_catalog_made_is_listed_loaded_and_scanned_through_rustberg():
    theirs = glue()
    theirs.create_namespace("direct")
    table = theirs.create_table("direct.events", schema=SCHEMA, location="s3://lake/warehouse/direct/events")
    table.append(rows((7, "x"), (8, "y")))
    catalog = rustberg()
    assert (MOUNT, "direct", "events") in catalog.list_tables(f"{MOUNT}.direct")
    ours = catalog.load_table(f"{MOUNT}.direct.events")
    assert ours.current_snapshot().snapshot_id == table.current_snapshot().snapshot_id
    assert sorted(ours.scan(row_filter=EqualTo("kind", "y")).to_arrow()["id"].to_pylist()) == [8]


def test_other_glue_tables_are_not_iceberg_tables_and_glue_has_one_level():
    boto3.client(
        "glue", endpoint_url=MOTO, region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    ).create_table(
        DatabaseName="direct",
        TableInput={"Name": "legacy_csv", "TableType": "EXTERNAL_TABLE", "Parameters": {"classification": "csv"}},
    )
    catalog = rustberg()
    assert (MOUNT, "direct", "legacy_csv") not in catalog.list_tables(f"{MOUNT}.direct")
    with pytest.raises(NoSuchTableError, match="not an Iceberg table"):
        catalog.load_table(f"{MOUNT}.direct.legacy_csv")
    with pytest.raises(BadRequestError, match="one level"):
        catalog.create_namespace(f"{MOUNT}.direct.nested")


def test_duckdb_joins_a_glue_table_with_a_root_table():
    from test_duckdb import attach_rustberg, create_with_rows

    catalog = rustberg()
    catalog.create_namespace("analytics")
    create_with_rows(
        catalog,
        "analytics.clicks",
        [("order_id", "long", True), ("page", "string", False)],
        [{"order_id": 1, "page": "/cart"}, {"order_id": 3, "page": "/pay"}, {"order_id": 9, "page": "/x"}],
    )
    con = attach_rustberg()
    host_port = MOTO.removeprefix("http://")
    con.execute(
        f"CREATE SECRET moto (TYPE s3, KEY_ID 'testing', SECRET 'testing', REGION 'us-east-1', "
        f"ENDPOINT '{host_port}', URL_STYLE 'path', USE_SSL false)"
    )
    rows = con.execute(
        f'SELECT o.id, o.kind, c.page FROM rb."{MOUNT}.sales".orders o '
        'JOIN rb.analytics.clicks c ON c.order_id = o.id ORDER BY o.id'
    ).fetchall()
    assert rows == [(1, "a", "/cart"), (3, "a", "/pay")]
