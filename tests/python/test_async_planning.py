"""Plans that outrun the server's budget (`[planning] budget_ms = 0` here: every one does)
are answered `submitted` and fetched by polling: the completed plan is the one PyIceberg's
own plan_files() makes, and one of more than a page comes in plan tasks; a cancelled
plan says so; PyIceberg 0.12, which cannot poll, is
told `submitted` and gives up, which is why the default budget answers most plans at once.

Environment: RUSTBERG_URL, RUSTBERG_CREDENTIAL (id:secret)."""

import os
import time
import urllib.parse

import pytest
from pyiceberg.catalog import load_catalog
from pyiceberg.expressions import AlwaysTrue, EqualTo

from test_scan_planning import SCHEMA, call, client_side, rows

TABLE = "/v1/catalog/namespaces/polled/tables/sales"


def catalog(**extra):
    settings = {"type": "rest", "uri": os.environ["RUSTBERG_URL"], "credential": os.environ["RUSTBERG_CREDENTIAL"]}
    return load_catalog("rustberg", **settings, **extra)


@pytest.fixture(scope="module")
def table():
    c = catalog()
    c.create_namespace("polled")
    t = c.create_table("polled.sales", SCHEMA)
    t.append(rows((1, "a", None, 10), (2, "b", None, 20)))
    t.append(rows((3, "b", None, 30)))
    t.append(rows((4, "c", None, 40)))
    return c.load_table("polled.sales")


def plan_path(plan_id):
    return TABLE + "/plan/" + urllib.parse.quote(plan_id, safe="")


def poll(plan_id, within_s=30):
    deadline = time.monotonic() + within_s
    while True:
        result = call("GET", plan_path(plan_id))
        if result["status"] != "submitted" or time.monotonic() > deadline:
            return result
        time.sleep(0.05)


@pytest.mark.parametrize(
    "expression,spec_filter",
    [(AlwaysTrue(), True), (EqualTo("category", "b"), {"type": "eq", "term": "category", "value": "b"})],
)
def test_a_submitted_plan_completes_with_what_plan_files_plans(table, expression, spec_filter):
    snapshot = table.current_snapshot().snapshot_id
    submitted = call("POST", TABLE + "/plan", {"snapshot-id": snapshot, "filter": spec_filter})
    assert submitted["status"] == "submitted", submitted
    assert set(submitted) == {"status", "plan-id"}, submitted
    result = poll(submitted["plan-id"])
    assert result["status"] == "completed", result
    expected, _ = client_side(table, snapshot, expression)
    got = {(t["data-file"]["file-path"], frozenset()) for t in result["file-scan-tasks"]}
    assert got == expected
    # Fetched again, the held plan answers the same.
    assert call("GET", plan_path(submitted["plan-id"]))["file-scan-tasks"] == result["file-scan-tasks"]
    # A client done with it cancels it (as Iceberg's Java client does): it is let go.
    assert call("DELETE", plan_path(submitted["plan-id"])) is None
    assert call("GET", plan_path(submitted["plan-id"])) == {"status": "cancelled"}


def test_a_cancelled_plan_answers_cancelled(table):
    submitted = call("POST", TABLE + "/plan", {})
    assert submitted["status"] == "submitted", submitted
    assert call("DELETE", plan_path(submitted["plan-id"])) is None
    assert call("GET", plan_path(submitted["plan-id"])) == {"status": "cancelled"}


def test_pyiceberg_0_12_cannot_poll(table):
    planned = catalog(**{"scan-planning-mode": "server"}).load_table("polled.sales")
    with pytest.raises(NotImplementedError, match="Async scan planning"):
        planned.scan().to_arrow()


def test_a_held_plan_of_more_than_a_page_is_fetched_in_plan_tasks():
    """1,100 files (one manifest each, written with PyIceberg's writers): the completed
    plan answers 1,000 and a plan task for the rest, which fetchScanTasks serves."""
    from pyiceberg.io.pyarrow import PyArrowFileIO
    from pyiceberg.manifest import (
        DataFile,
        DataFileContent,
        FileFormat,
        ManifestEntry,
        ManifestEntryStatus,
        write_manifest,
        write_manifest_list,
    )
    from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
    from pyiceberg.typedef import Record

    c = catalog()
    t = c.create_table("polled.wide", SCHEMA)
    location, io, files = t.location(), PyArrowFileIO(), 1100
    manifests = []
    for n in range(files):
        output = io.new_output(f"{location}/metadata/m-{n:05d}.avro")
        with write_manifest(2, UNPARTITIONED_PARTITION_SPEC, SCHEMA, output, 1, "null") as writer:
            data = DataFile.from_args(
                content=DataFileContent.DATA,
                file_path=f"{location}/data/f-{n:05d}.parquet",
                file_format=FileFormat.PARQUET,
                partition=Record(),
                record_count=1,
                file_size_in_bytes=100,
            )
            data.spec_id = 0
            writer.add_entry(
                ManifestEntry.from_args(
                    status=ManifestEntryStatus.ADDED,
                    snapshot_id=1,
                    sequence_number=1,
                    file_sequence_number=1,
                    data_file=data,
                )
            )
        manifests.append(writer.to_manifest_file())
    manifest_list = f"{location}/metadata/snap-1.avro"
    with write_manifest_list(2, io.new_output(manifest_list), 1, None, 1, "null") as writer:
        writer.add_manifests(manifests)
    snapshot = {
        "snapshot-id": 1,
        "sequence-number": 1,
        "timestamp-ms": int(time.time() * 1000),
        "manifest-list": manifest_list,
        "summary": {"operation": "append"},
        "schema-id": 0,
    }
    path = "/v1/catalog/namespaces/polled/tables/wide"
    updates = [
        {"action": "add-snapshot", "snapshot": snapshot},
        {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 1},
    ]
    call("POST", path, {"requirements": [], "updates": updates})

    submitted = call("POST", path + "/plan", {})
    assert submitted["status"] == "submitted", submitted
    plan = path + "/plan/" + urllib.parse.quote(submitted["plan-id"], safe="")
    deadline = time.monotonic() + 60
    while (result := call("GET", plan))["status"] == "submitted" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert result["status"] == "completed", result
    assert len(result["file-scan-tasks"]) == 1000 and len(result["plan-tasks"]) == 1, len(result["file-scan-tasks"])
    rest = call("POST", path + "/tasks", {"plan-task": result["plan-tasks"][0]})
    assert "plan-tasks" not in rest and "status" not in rest, rest.keys()
    paths = [t["data-file"]["file-path"] for t in result["file-scan-tasks"] + rest["file-scan-tasks"]]
    assert sorted(paths) == [f"{location}/data/f-{n:05d}.parquet" for n in range(files)]
