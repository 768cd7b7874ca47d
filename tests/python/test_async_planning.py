"""Plans that outrun the server's budget (`[planning] budget_ms = 0` here: every one does)
are answered `submitted` and fetched by polling: the completed plan is the one PyIceberg's
own plan_files() makes; a cancelled plan says so; PyIceberg 0.12, which cannot poll, is
told `submitted` and gives up, which is why the default budget answers most plans at once.

Environment: RUSTBERG_URL, RUSTBERG_CREDENTIAL (id:secret)."""

import os
import time
import urllib.parse

import pyarrow as pa
import pytest
from pyiceberg.catalog import load_catalog
from pyiceberg.expressions import AlwaysTrue, EqualTo

from test_scan_planning import ARROW, SCHEMA, call, client_side, rows

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
