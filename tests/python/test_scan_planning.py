"""Server-side scan planning (POST .../plan) answers what PyIceberg's own client-side
plan_files() answers, for the same snapshot and filter, on a partitioned table with
several snapshots, copy-on-write deletes (PyIceberg) and a positional delete file
(DuckDB)."""

import datetime
import json
import os
import urllib.error
import urllib.parse
import urllib.request

import pyarrow as pa
import pytest
from pyiceberg.catalog import load_catalog
from pyiceberg.expressions import (
    AlwaysTrue,
    And,
    EqualTo,
    GreaterThanOrEqual,
    In,
    IsNull,
    LessThan,
    Not,
    NotEqualTo,
    Or,
)
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import IdentityTransform
from pyiceberg.types import DateType, LongType, NestedField, StringType

from test_duckdb import attach_rustberg

URL = os.environ["RUSTBERG_URL"]
TABLE = "/v1/catalog/namespaces/planning/tables/sales"

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "category", StringType(), required=False),
    NestedField(3, "day", DateType(), required=False),
    NestedField(4, "amount", LongType(), required=False),
)
ARROW = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("category", pa.string()),
        pa.field("day", pa.date32()),
        pa.field("amount", pa.int64()),
    ]
)
D1, D2, D3 = datetime.date(2026, 1, 1), datetime.date(2026, 1, 2), datetime.date(2026, 1, 3)

# The same filter as a PyIceberg expression and as the REST spec's JSON.
FILTERS = [
    (AlwaysTrue(), True),
    (EqualTo("category", "b"), {"type": "eq", "term": "category", "value": "b"}),
    (GreaterThanOrEqual("amount", 50), {"type": "gt-eq", "term": "amount", "value": 50}),
    (
        And(EqualTo("category", "c"), LessThan("day", D3)),
        {
            "type": "and",
            "left": {"type": "eq", "term": "category", "value": "c"},
            "right": {"type": "lt", "term": "day", "value": "2026-01-03"},
        },
    ),
    (In("category", {"a", "c"}), {"type": "in", "term": "category", "values": ["a", "c"]}),
    (
        Or(IsNull("amount"), EqualTo("id", 3)),
        {
            "type": "or",
            "left": {"type": "is-null", "term": "amount"},
            "right": {"type": "eq", "left": {"type": "reference", "name": "id"}, "right": 3},
        },
    ),
    (NotEqualTo("category", "b"), {"type": "not-eq", "term": "category", "value": "b"}),
    (Not(EqualTo("day", D1)), {"type": "not", "child": {"type": "eq", "term": "day", "value": "2026-01-01"}}),
    (EqualTo("category", "zzz"), {"type": "eq", "term": "category", "value": "zzz"}),
]


def token():
    client_id, secret = os.environ["RUSTBERG_CREDENTIAL"].split(":", 1)
    body = urllib.parse.urlencode(
        {"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret, "scope": "catalog"}
    ).encode()
    with urllib.request.urlopen(URL + "/v1/oauth/tokens", body) as response:
        return json.load(response)["access_token"]


def call(method, path, body=None):
    request = urllib.request.Request(
        URL + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": "Bearer " + token(), "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request) as response:
            text = response.read()
            return json.loads(text) if text else None
    except urllib.error.HTTPError as e:
        raise AssertionError(f"{method} {path} answered {e.code}: {e.read().decode()}") from None


def rows(*items):
    return pa.Table.from_pylist([dict(zip(ARROW.names, i)) for i in items], schema=ARROW)


@pytest.fixture(scope="module")
def table():
    catalog = load_catalog(
        "rustberg", **{"type": "rest", "uri": URL, "credential": os.environ["RUSTBERG_CREDENTIAL"]}
    )
    catalog.create_namespace("planning")
    spec = PartitionSpec(
        PartitionField(source_id=2, field_id=1000, transform=IdentityTransform(), name="category"),
        PartitionField(source_id=3, field_id=1001, transform=IdentityTransform(), name="day"),
    )
    t = catalog.create_table("planning.sales", SCHEMA, partition_spec=spec)
    t.append(rows((1, "a", D1, 10), (2, "b", D1, 20), (3, "b", D1, None)))
    t.append(rows((4, "b", D2, 50), (5, "c", D2, 60)))
    t.append(rows((6, "c", D3, 70), (7, "a", D3, 5), (8, "c", D3, 80)))
    # A delete that drops whole files, then one that rewrites part of a file.
    t.delete(EqualTo("category", "a"))
    t.delete(EqualTo("id", 8))
    t.append(rows((9, "d", D1, 90)))
    # DuckDB deletes with merge-on-read: a positional delete file beside a data file.
    con = attach_rustberg()
    con.execute("DELETE FROM rb.planning.sales WHERE id = 5")
    con.close()
    return catalog.load_table("planning.sales")


def client_side(table, snapshot_id, expression):
    """PyIceberg's own plan: (data file, its delete files) per task, and each file's record."""
    tasks = table.scan(row_filter=expression, snapshot_id=snapshot_id).plan_files()
    plan = {(t.file.file_path, frozenset(d.file_path for d in t.delete_files)) for t in tasks}
    files = {t.file.file_path: (t.file.record_count, t.file.file_size_in_bytes) for t in tasks}
    return plan, files


def server_side(snapshot_id, spec_filter):
    result = call("POST", TABLE + "/plan", {"snapshot-id": snapshot_id, "filter": spec_filter})
    assert result["status"] == "completed", result
    assert result["plan-id"]
    deletes = result["delete-files"]
    plan = {
        (
            t["data-file"]["file-path"],
            frozenset(deletes[i]["file-path"] for i in t.get("delete-file-references", [])),
        )
        for t in result["file-scan-tasks"]
    }
    files = {
        t["data-file"]["file-path"]: (t["data-file"]["record-count"], t["data-file"]["file-size-in-bytes"])
        for t in result["file-scan-tasks"]
    }
    return plan, files, result


def test_the_table_has_history(table):
    assert len(table.snapshots()) >= 6


@pytest.mark.parametrize("expression,spec_filter", FILTERS, ids=[str(f[1])[:40] for f in FILTERS])
def test_plan_equals_plan_files_at_every_snapshot(table, expression, spec_filter):
    for snapshot in table.snapshots():
        expected, expected_files = client_side(table, snapshot.snapshot_id, expression)
        got, got_files, _ = server_side(snapshot.snapshot_id, spec_filter)
        assert got == expected, f"snapshot {snapshot.snapshot_id}: server {got} != client {expected}"
        assert got_files == expected_files


def test_incremental_scans_plan_what_the_appends_added(table):
    # The first three snapshots are appends (metadata lists snapshots in no set order).
    history = sorted(table.snapshots(), key=lambda s: s.sequence_number)
    first, _, third = [s.snapshot_id for s in history[:3]]
    for expression, spec_filter in FILTERS:
        before, _ = client_side(table, first, expression)
        after, _ = client_side(table, third, expression)
        expected = {path for path, _ in after} - {path for path, _ in before}
        body = {"start-snapshot-id": first, "end-snapshot-id": third, "filter": spec_filter}
        got = {t["data-file"]["file-path"] for t in call("POST", TABLE + "/plan", body)["file-scan-tasks"]}
        assert got == expected, spec_filter
    # Later snapshots (deletes, an overwrite) contribute only what appends added.
    body = {"start-snapshot-id": first, "end-snapshot-id": table.current_snapshot().snapshot_id}
    whole = call("POST", TABLE + "/plan", body)
    assert {t["data-file"]["file-path"] for t in whole["file-scan-tasks"]} >= expected
    assert not whole["delete-files"]


def test_positional_delete_files_come_with_their_data_file(table):
    _, _, result = server_side(table.current_snapshot().snapshot_id, True)
    with_deletes = [t for t in result["file-scan-tasks"] if t.get("delete-file-references")]
    assert with_deletes, result
    for task in with_deletes:
        for i in task["delete-file-references"]:
            deletes = result["delete-files"][i]
            assert deletes["content"] == "position-deletes"
            assert deletes["partition"] == task["data-file"]["partition"]
    # The rows PyIceberg reads agree with the delete: id 5 is gone.
    assert 5 not in table.scan().to_arrow().column("id").to_pylist()


def test_partition_pruning_reads_only_matching_partitions(table):
    plan, _, result = server_side(table.current_snapshot().snapshot_id, FILTERS[1][1])
    assert plan, "category b has rows"
    for task in result["file-scan-tasks"]:
        assert task["data-file"]["partition"][0] == "b", task
        assert task["residual-filter"] == FILTERS[1][1], "the whole filter is each task's residual"
        assert task["data-file"]["content"] == "data"
        assert task["data-file"]["spec-id"] == 0


def test_default_snapshot_is_current_and_fetch_returns_the_same_plan(table):
    result = call("POST", TABLE + "/plan", {})
    expected, _ = client_side(table, table.current_snapshot().snapshot_id, AlwaysTrue())
    assert {t["data-file"]["file-path"] for t in result["file-scan-tasks"]} == {p for p, _ in expected}
    fetched = call("GET", TABLE + "/plan/" + urllib.parse.quote(result["plan-id"], safe=""))
    assert fetched["status"] == "completed"
    assert fetched["file-scan-tasks"] == result["file-scan-tasks"]
    assert call("DELETE", TABLE + "/plan/" + urllib.parse.quote(result["plan-id"], safe="")) is None


def test_stats_fields_bring_column_statistics(table):
    result = call("POST", TABLE + "/plan", {"stats-fields": ["amount"], "filter": FILTERS[1][1]})
    for task in result["file-scan-tasks"]:
        data_file = task["data-file"]
        assert data_file["value-counts"]["keys"] == [4], data_file
        assert len(data_file["lower-bounds"]["values"]) == 1
    plain = call("POST", TABLE + "/plan", {"filter": FILTERS[1][1]})
    assert all("value-counts" not in t["data-file"] for t in plain["file-scan-tasks"])


@pytest.mark.parametrize("expression,spec_filter", FILTERS, ids=[str(f[1])[:40] for f in FILTERS])
def test_pyiceberg_planning_on_the_server_reads_the_same_rows(table, expression, spec_filter):
    # PyIceberg 0.12 plans through planTableScan (and fetchScanTasks) in this mode.
    planned = load_catalog(
        "planned",
        **{
            "type": "rest",
            "uri": URL,
            "credential": os.environ["RUSTBERG_CREDENTIAL"],
            "scan-planning-mode": "server",
        },
    ).load_table("planning.sales")
    before = plans_answered()
    got = planned.scan(row_filter=expression).to_arrow().sort_by("id")
    assert plans_answered() > before, "PyIceberg did not plan on the server"
    assert got == table.scan(row_filter=expression).to_arrow().sort_by("id")


def plans_answered():
    """How many planTableScan calls the server answered 200, from its metrics."""
    with urllib.request.urlopen(URL + "/metrics") as response:
        metrics = response.read().decode()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith("rustberg_http_requests_total{") and '/plan"' in line and 'status="200"' in line
    )

