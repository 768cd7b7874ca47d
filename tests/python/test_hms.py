"""An hms mount over a real Hive Metastore: PyIceberg through Rustberg and PyIceberg's own
HiveCatalog pointed straight at the metastore share tables both ways, at the same
snapshots; the metastore's own entries follow Iceberg's HiveCatalog conventions; Hive
tables that are not Iceberg tables stay out; DuckDB joins an hms table with a root one.

HMS_URL is the metastore (thrift://…), HMS_WAREHOUSE the mount's warehouse (file://…),
RUSTBERG_MOUNT the mount's name."""

import json
import os
import socket
import threading

import pyarrow as pa
import pytest
from pyiceberg.catalog import load_catalog
from pyiceberg.catalog.hive import HiveCatalog
from pyiceberg.exceptions import BadRequestError, CommitFailedException, NoSuchTableError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from hive_metastore.ttypes import FieldSchema, LockComponent, LockLevel, LockRequest, LockType, SerDeInfo
from hive_metastore.ttypes import StorageDescriptor, Table

MOUNT = os.environ.get("RUSTBERG_MOUNT", "legacy")
HMS = os.environ.get("HMS_URL", "")
WAREHOUSE = os.environ.get("HMS_WAREHOUSE", "")
SCHEMA = Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "kind", StringType()))
ARROW = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("kind", pa.string())])


def rows(*ids, kind="a"):
    return pa.Table.from_pylist([{"id": i, "kind": kind} for i in ids], schema=ARROW)


def rustberg():
    return load_catalog(
        "rustberg", **{"type": "rest", "uri": os.environ["RUSTBERG_URL"], "credential": os.environ["RUSTBERG_CREDENTIAL"]}
    )


def hive():
    # Waits for the metastore's lock in short steps (its defaults wait up to a minute).
    waits = {"lock-check-min-wait-time": "0.02", "lock-check-max-wait-time": "0.2", "lock-check-retries": "100"}
    return HiveCatalog("hive", uri=HMS, warehouse=WAREHOUSE, **waits)


def ids(table):
    return sorted(table.scan().to_arrow()["id"].to_pylist())


def test_rustberg_and_hive_catalog_share_tables_both_ways():
    ours = rustberg()
    ours.create_namespace(f"{MOUNT}.sales", {"comment": "orders and more", "team": "a"})
    assert (MOUNT, "sales") in ours.list_namespaces(MOUNT)

    # Made through Rustberg, appended by PyIceberg's HiveCatalog, scanned by both.
    table = ours.create_table(f"{MOUNT}.sales.orders", schema=SCHEMA)
    table.append(rows(1, 2))
    theirs = hive().load_table("sales.orders")
    assert theirs.metadata_location == table.metadata_location
    theirs.append(rows(3))
    table = ours.load_table(f"{MOUNT}.sales.orders")
    assert table.current_snapshot().snapshot_id == hive().load_table("sales.orders").current_snapshot().snapshot_id
    assert ids(table) == ids(hive().load_table("sales.orders")) == [1, 2, 3]

    # Made by the HiveCatalog, appended through Rustberg, scanned by both.
    hive().create_table("sales.returns", schema=SCHEMA).append(rows(10))
    returns = ours.load_table(f"{MOUNT}.sales.returns")
    returns.append(rows(11))
    assert ids(hive().load_table("sales.returns")) == ids(ours.load_table(f"{MOUNT}.sales.returns")) == [10, 11]
    assert sorted(ours.list_tables(f"{MOUNT}.sales")) == [(MOUNT, "sales", "orders"), (MOUNT, "sales", "returns")]

    # Namespace properties map as the HiveCatalog maps them.
    props = hive().load_namespace_properties("sales")
    assert props["comment"] == "orders and more" and props["team"] == "a"
    assert props["location"].rstrip("/").endswith("sales.db")
    ours.update_namespace_properties(f"{MOUNT}.sales", removals={"team"}, updates={"tier": "gold"})
    props = hive().load_namespace_properties("sales")
    assert props.get("tier") == "gold" and "team" not in props


def test_the_metastore_entry_is_what_icebergs_hive_catalog_writes():
    ours = rustberg()
    ours.create_namespace(f"{MOUNT}.shape")
    table = ours.create_table(f"{MOUNT}.shape.t", schema=SCHEMA, properties={"write.format.default": "parquet"})
    first = table.metadata_location
    table.append(rows(1))
    table = ours.load_table(f"{MOUNT}.shape.t")
    with hive()._client as client:
        entry = client.get_table("shape", "t")
    assert entry.tableType == "EXTERNAL_TABLE"
    params = entry.parameters
    assert params["EXTERNAL"] == "TRUE" and params["table_type"] == "ICEBERG"
    assert params["metadata_location"] == table.metadata_location
    assert params["previous_metadata_location"] == first
    assert params["write.format.default"] == "parquet"
    assert params["uuid"] == str(table.metadata.table_uuid)
    assert params["current-snapshot-id"] == str(table.current_snapshot().snapshot_id)
    assert params["snapshot-count"] == "1"
    assert json.loads(params["current-schema"])["fields"][0]["name"] == "id"
    sd = entry.sd
    assert [(c.name, c.type) for c in sd.cols] == [("id", "bigint"), ("kind", "string")]
    # The metastore keeps paths as Hadoop writes them (file:/x for file:///x).
    assert sd.location == table.location().replace("file:///", "file:/")
    assert sd.inputFormat == "org.apache.hadoop.mapred.FileInputFormat"
    assert sd.outputFormat == "org.apache.hadoop.mapred.FileOutputFormat"
    assert sd.serdeInfo.serializationLib == "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"

    # A property removed from the table leaves the metastore too; Hive's own stay.
    with table.transaction() as tx:
        tx.remove_properties("write.format.default")
    with hive()._client as client:
        params = client.get_table("shape", "t").parameters
    assert "write.format.default" not in params, params
    assert params["EXTERNAL"] == "TRUE" and "transient_lastDdlTime" in params, params
    assert params["snapshot-count"] == "1"


def test_hive_tables_that_are_not_iceberg_stay_out():
    ours = rustberg()
    ours.create_namespace(f"{MOUNT}.mixed")
    ours.create_table(f"{MOUNT}.mixed.ice", schema=SCHEMA)
    plain = Table(
        tableName="plain",
        dbName="mixed",
        owner="hive",
        tableType="MANAGED_TABLE",
        parameters={},
        partitionKeys=[],
        sd=StorageDescriptor(
            cols=[FieldSchema(name="x", type="int")],
            location=f"{WAREHOUSE}/mixed.db/plain",
            inputFormat="org.apache.hadoop.mapred.TextInputFormat",
            outputFormat="org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
            serdeInfo=SerDeInfo(serializationLib="org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe", parameters={}),
        ),
    )
    with hive()._client as client:
        client.create_table(plain)
    assert ours.list_tables(f"{MOUNT}.mixed") == [(MOUNT, "mixed", "ice")]
    with pytest.raises(NoSuchTableError, match="not an Iceberg table"):
        ours.load_table(f"{MOUNT}.mixed.plain")


def test_namespaces_have_one_level():
    ours = rustberg()
    ours.create_namespace(f"{MOUNT}.flat")
    with pytest.raises(BadRequestError, match=MOUNT):
        ours.create_namespace(f"{MOUNT}.flat.deeper")


def test_writers_through_rustberg_and_the_hive_catalog_lose_nothing():
    """8 writers through Rustberg and 4 through PyIceberg's HiveCatalog append to one
    table at once: every acknowledged append is in it, every refused one got 409."""
    ours = rustberg()
    ours.create_namespace(f"{MOUNT}.race")
    ours.create_table(f"{MOUNT}.race.t", schema=SCHEMA)
    landed, refused, failures = [], [], []
    lock = threading.Lock()

    def writer(catalog, name, first):
        for i in range(first, first + 3):
            try:
                catalog.load_table(name).append(rows(i))
                with lock:
                    landed.append(i)
            except CommitFailedException:
                with lock:
                    refused.append(i)
            except Exception as e:  # anything else is a failure of the test
                with lock:
                    failures.append(repr(e))

    threads = [threading.Thread(target=writer, args=(rustberg(), f"{MOUNT}.race.t", 100 * w)) for w in range(8)]
    threads += [threading.Thread(target=writer, args=(hive(), "race.t", 1000 + 100 * w)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    assert landed, "some appends land"
    assert ids(ours.load_table(f"{MOUNT}.race.t")) == sorted(landed)
    assert ids(hive().load_table("race.t")) == sorted(landed)


def test_duckdb_joins_an_hms_table_with_a_root_one():
    from test_duckdb import attach_rustberg, create_with_rows

    ours = rustberg()
    ours.create_namespace("web")
    create_with_rows(ours, "web.visits", [("order_id", "long", True), ("page", "string", False)],
                     [{"order_id": 1, "page": "/a"}, {"order_id": 2, "page": "/b"}])
    ours.create_namespace(f"{MOUNT}.shop")
    create_with_rows(ours, f"{MOUNT}.shop.orders", [("id", "long", True), ("item", "string", False)],
                     [{"id": 1, "item": "book"}, {"id": 3, "item": "pen"}])
    con = attach_rustberg()
    got = con.execute(
        f'SELECT o.item, v.page FROM rb."{MOUNT}.shop".orders o JOIN rb.web.visits v ON o.id = v.order_id'
    ).fetchall()
    assert got == [("book", "/a")]


def hold_lock(db, table):
    """Takes the metastore's exclusive lock on db.table and never releases it: what a
    host killed mid-commit leaves behind."""
    with hive()._client as client:
        request = LockRequest(
            component=[LockComponent(level=LockLevel.TABLE, type=LockType.EXCLUSIVE, dbname=db, tablename=table,
                                     isTransactional=True)],
            user="killed",
            hostname=socket.gethostname(),
        )
        return client.lock(request).lockid


def test_a_lock_left_behind_holds_commits_only_until_the_metastore_times_it_out():
    """HMS_LOCK_TIMEOUT_S is the metastore's lock timeout. A lock nobody heartbeats (its
    host was killed mid-commit) holds a commit back until the metastore removes it, and
    no longer: the commit waits (the host retries an attempt that could not lock), then
    lands."""
    import time

    timeout = int(os.environ["HMS_LOCK_TIMEOUT_S"])
    ours = rustberg()
    ours.create_namespace(f"{MOUNT}.stuck")
    table = ours.create_table(f"{MOUNT}.stuck.t", schema=SCHEMA)
    hold_lock("stuck", "t")
    left_at = time.monotonic()
    table.append(rows(1))
    waited = time.monotonic() - left_at
    assert timeout - 1 <= waited < timeout + 10, f"the commit landed after {waited:.1f} s"
    assert ids(ours.load_table(f"{MOUNT}.stuck.t")) == [1]
