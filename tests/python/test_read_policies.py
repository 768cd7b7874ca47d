"""A read policy (a row filter and a column mask) on an S3 table (moto): the restricted
reader gets `read-restrictions` and no route to the raw files (no vended credentials,
no signer, no loadCredentials); its server-side plan holds only the files its filter may
match, each with a credential for that file alone, which reads the rows it may see.
The writer, unrestricted, sees no change. PyIceberg writes the data."""

import json
import os
import urllib.error
import urllib.parse
import urllib.request

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyarrow import fs
from pyiceberg.catalog import load_catalog
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

URL = os.environ["RUSTBERG_URL"]
TABLE = "/v1/catalog/namespaces/gov/tables/people"
SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=True),
    NestedField(2, "region", StringType(), required=False),
    NestedField(3, "ssn", StringType(), required=False),
)
ARROW = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("region", pa.string()), pa.field("ssn", pa.string())])
EU = [(1, "eu", "111-11-1111"), (2, "eu", "222-22-2222")]
US = [(3, "us", "333-33-3333")]
FILTER = {"type": "eq", "term": "region", "value": "eu"}


def token(credential):
    client_id, secret = credential.split(":", 1)
    body = urllib.parse.urlencode(
        {"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret, "scope": "catalog"}
    ).encode()
    with urllib.request.urlopen(URL + "/v1/oauth/tokens", body) as response:
        return json.load(response)["access_token"]


def call(bearer, method, path, body=None):
    """(status, JSON body) of one request, asking for vended credentials."""
    request = urllib.request.Request(
        URL + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={
            "Authorization": "Bearer " + bearer,
            "Content-Type": "application/json",
            "X-Iceberg-Access-Delegation": "vended-credentials",
        },
    )
    try:
        with urllib.request.urlopen(request) as response:
            text = response.read()
            return response.status, json.loads(text) if text else None
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


WRITER = os.environ["WRITER_CREDENTIAL"]
READER = os.environ["READER_CREDENTIAL"]


@pytest.fixture(scope="module")
def policy():
    writer = load_catalog(
        "w",
        **{"type": "rest", "uri": URL, "credential": WRITER, "header.X-Iceberg-Access-Delegation": "vended-credentials"},
    )
    writer.create_namespace("gov")
    table = writer.create_table("gov.people", SCHEMA)
    # Two appends: one file of EU rows, one of US rows.
    for rows in (EU, US):
        table.append(pa.Table.from_pylist([dict(zip(ARROW.names, r)) for r in rows], schema=ARROW))
    admin = os.environ["ADMIN_TOKEN"]
    body = {
        "name": "eu only, ssn masked",
        "namespace": ["gov"],
        "table": "people",
        "principal": "reader",
        "row-filter": FILTER,
        "masks": [{"column": "ssn", "action": "show-last-4"}],
    }
    status, saved = call(admin, "POST", "/management/v1/policies", body)
    assert status == 201, saved
    return saved


def test_a_policy_naming_a_missing_column_is_refused(policy):
    body = {"name": "bad", "namespace": ["gov"], "table": "people", "principal": "reader",
            "masks": [{"column": "passport", "action": "replace-with-null"}]}
    status, error = call(os.environ["ADMIN_TOKEN"], "POST", "/management/v1/policies", body)
    assert status == 400, error
    assert 'no column named "passport"' in error["error"]["message"]


def test_the_restricted_reader_loads_read_restrictions_and_no_credentials(policy):
    status, loaded = call(token(READER), "GET", TABLE)
    assert status == 200, loaded
    assert loaded["read-restrictions"] == {
        "required-column-projections": [{"field-id": 3, "action": "show-last-4"}],
        "required-row-filter": {"type": "eq", "term": {"type": "reference", "field-id": 2}, "value": "eu"},
    }
    assert "storage-credentials" not in loaded, loaded
    assert not any(k.startswith("s3.") and "key" in k for k in loaded["config"]), loaded["config"]
    assert "remote-signing-config" not in loaded


def test_the_writer_sees_no_change(policy):
    status, loaded = call(token(WRITER), "GET", TABLE)
    assert status == 200
    assert "read-restrictions" not in loaded
    assert loaded["storage-credentials"][0]["prefix"].startswith("s3://lake/"), loaded


def test_load_credentials_refuses_the_restricted_reader(policy):
    status, error = call(token(READER), "GET", TABLE + "/credentials")
    assert status == 403 and policy["id"] in error["error"]["message"], error


def test_the_signer_refuses_the_restricted_reader_even_for_a_planned_file(policy):
    planned = plan(READER)["file-scan-tasks"][0]["data-file"]["file-path"]
    status, loaded = call(token(WRITER), "GET", TABLE)
    guessed = loaded["metadata"]["location"] + "/data/guessed.parquet"
    for path in (planned, guessed):
        sign = {"region": "us-east-1", "uri": path.replace("s3://lake/", "http://127.0.0.1:1/lake/"),
                "method": "GET", "headers": {}}
        status, error = call(token(READER), "POST", TABLE + "/sign", sign)
        assert status == 403, error


def plan(credential):
    status, planned = call(token(credential), "POST", TABLE + "/plan", {})
    assert status == 200 and planned["status"] == "completed", planned
    return planned


def test_the_plan_holds_only_matching_files_each_with_its_own_credential(policy):
    everything = plan(WRITER)
    assert len(everything["file-scan-tasks"]) == 2
    restricted = plan(READER)
    tasks = restricted["file-scan-tasks"]
    assert len(tasks) == 1, tasks
    path = tasks[0]["data-file"]["file-path"]
    assert tasks[0]["residual-filter"] == FILTER
    credentials = restricted["storage-credentials"]
    assert [c["prefix"] for c in credentials] == [path], credentials
    config = credentials[0]["config"]
    # The one file reads with its own credential, and holds only rows the filter keeps.
    s3 = fs.S3FileSystem(
        access_key=config["s3.access-key-id"],
        secret_key=config["s3.secret-access-key"],
        session_token=config["s3.session-token"],
        endpoint_override=config["s3.endpoint"],
        region=config.get("s3.region", "us-east-1"),
    )
    rows = pq.read_table(path.removeprefix("s3://"), filesystem=s3).to_pylist()
    assert {r["region"] for r in rows} == {"eu"}, rows


def test_plan_tokens_of_one_caller_are_unknown_to_the_other(policy):
    everything = plan(WRITER)
    status, error = call(token(READER), "GET", TABLE + "/plan/" + everything["plan-id"])
    assert status == 404, error


def test_deleting_the_policy_lifts_it(policy):
    admin = os.environ["ADMIN_TOKEN"]
    status, _ = call(admin, "DELETE", "/management/v1/policies/" + policy["id"])
    assert status == 204
    status, loaded = call(token(READER), "GET", TABLE)
    assert status == 200 and "read-restrictions" not in loaded
    assert len(plan(READER)["file-scan-tasks"]) == 2
