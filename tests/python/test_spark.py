"""Spark SQL (PySpark in local mode, Iceberg's Spark runtime, Java's RESTCatalog) against a
running Rustberg: DDL, DML in both write modes, schema evolution, time travel, branches,
procedures, views, renames and purges, one query across the root catalog and two mounts,
a table on S3 written and read with vended credentials only, scans planned by the server
(polled for, and for a reader a read policy restricts, only the files its filter matches), four sessions appending to one table at once, and the bad input the Java
client can send.

Environment: RUSTBERG_URL, RUSTBERG_CREDENTIAL (id:secret), SPARK_JARS (comma-separated jar
paths), RUSTBERG_WAREHOUSE (the root warehouse's folder), the mounts `pg` (native), `partner`
(rest) and `lake` (native, its warehouse on S3, vending through STS), and
RUSTBERG_REMOTE_URL / RUSTBERG_REMOTE_CREDENTIAL: the Rustberg `partner` mounts,
RUSTBERG_RESTRICTED_CREDENTIAL: a reader the policy `kind_c` restricts.
"""

import os
import pathlib
import threading
import time

import pytest

import spark_session

# The catalogs Spark is given: the whole tree (`rb`), which a read-only mount leaves with no
# write endpoints, so the Java client refuses writes there; the root catalog alone and the
# Postgres mount, each through its own prefix (`warehouse`), where Spark writes; and the
# Rustberg that the `partner` mount reads, reached directly to seed it.
CATALOG = "root"


def catalog_settings():
    url, credential = os.environ["RUSTBERG_URL"], os.environ["RUSTBERG_CREDENTIAL"]
    remote = {"uri": os.environ["RUSTBERG_REMOTE_URL"], "credential": os.environ["RUSTBERG_REMOTE_CREDENTIAL"]}
    catalogs = {
        "rb": {"uri": url, "credential": credential},
        "root": {"uri": url, "credential": credential, "warehouse": "root"},
        "pg": {"uri": url, "credential": credential, "warehouse": "pg"},
        "remote": remote,
        # S3 through the credentials each loadTable vends; Spark is given no keys at all.
        "lake": {
            "uri": url,
            "credential": credential,
            "warehouse": "lake",
            "io-impl": "org.apache.iceberg.aws.s3.S3FileIO",
            "header.X-Iceberg-Access-Delegation": "vended-credentials",
        },
        # The root catalog read in pages of two (the client then sends pageToken="" first).
        "paged": {"uri": url, "credential": credential, "warehouse": "root", "rest-page-size": "2"},
        # The root catalog, each load a load (Spark caches tables otherwise).
        "uncached": {"uri": url, "credential": credential, "warehouse": "root", "cache-enabled": "false"},
        # Scans planned by the server (every plan outruns the budget there: polled for).
        "planned": {
            "uri": url,
            "credential": credential,
            "warehouse": "root",
            "scan-planning-mode": "server",
            "cache-enabled": "false",
        },
        # A reader restricted by `[policy.kind_c]` (kind = 'c' on planned_db.t), planning on
        # the server: it reads the files its filter matches and no other.
        "restricted": {
            "uri": url,
            "credential": os.environ["RUSTBERG_RESTRICTED_CREDENTIAL"],
            "warehouse": "root",
            "scan-planning-mode": "server",
            "cache-enabled": "false",
        },
        # A mechanism the spec does not name.
        "misspelled": {
            "uri": url,
            "credential": credential,
            "warehouse": "root",
            "header.X-Iceberg-Access-Delegation": "vended-credential",
        },
    }
    for settings in catalogs.values():
        settings["type"] = "rest"
    return catalogs


@pytest.fixture(scope="module")
def spark():
    # `credential`: OAuth2 client credentials; the Java client fetches and refreshes its token.
    session = spark_session.start("rustberg", catalog_settings())
    yield session
    session.stop()


def rows(spark, query):
    return [tuple(r) for r in spark.sql(query).collect()]


def test_ddl_and_dml_in_both_write_modes(spark):
    spark.sql(f"CREATE NAMESPACE {CATALOG}.shop")
    for mode in ("copy-on-write", "merge-on-read"):
        table = f"{CATALOG}.shop.events_{mode.replace('-', '_')}"
        spark.sql(
            f"CREATE TABLE {table} (id bigint, ts timestamp, data string) USING iceberg "
            f"PARTITIONED BY (days(ts), bucket(8, id)) TBLPROPERTIES ('format-version'='2', "
            f"'write.delete.mode'='{mode}', 'write.update.mode'='{mode}', 'write.merge.mode'='{mode}')"
        )
        spark.sql(
            f"INSERT INTO {table} VALUES (1, timestamp'2026-01-01 10:00:00', 'a'), "
            "(2, timestamp'2026-01-02 11:00:00', 'b'), (3, timestamp'2026-01-02 12:00:00', 'c')"
        )
        spark.sql(f"UPDATE {table} SET data = 'B' WHERE id = 2")
        spark.sql(f"DELETE FROM {table} WHERE id = 3")
        spark.createDataFrame([(2, "bb"), (4, "d")], "id bigint, data string").createOrReplaceTempView("changes")
        spark.sql(
            f"MERGE INTO {table} t USING changes c ON t.id = c.id "
            "WHEN MATCHED THEN UPDATE SET t.data = c.data "
            "WHEN NOT MATCHED THEN INSERT (id, ts, data) VALUES (c.id, timestamp'2026-01-03 00:00:00', c.data)"
        )
        assert rows(spark, f"SELECT id, data FROM {table} ORDER BY id") == [(1, "a"), (2, "bb"), (4, "d")], mode


def test_schema_evolution(spark):
    table = f"{CATALOG}.shop.evolving"
    spark.sql(f"CREATE TABLE {table} (id int, name string) USING iceberg")
    spark.sql(f"INSERT INTO {table} VALUES (1, 'one')")
    spark.sql(f"ALTER TABLE {table} ADD COLUMN price float")
    spark.sql(f"ALTER TABLE {table} RENAME COLUMN name TO label")
    spark.sql(f"ALTER TABLE {table} ALTER COLUMN id TYPE bigint")
    spark.sql(f"ALTER TABLE {table} ALTER COLUMN price TYPE double")
    spark.sql(f"INSERT INTO {table} VALUES (2, 'two', 2.5)")
    spark.sql(f"ALTER TABLE {table} DROP COLUMN price")
    schema = {f.name: f.dataType.simpleString() for f in spark.table(table).schema.fields}
    assert schema == {"id": "bigint", "label": "string"}
    assert rows(spark, f"SELECT id, label FROM {table} ORDER BY id") == [(1, "one"), (2, "two")]


def test_time_travel_branches_and_tags(spark):
    table = f"{CATALOG}.shop.history"
    spark.sql(f"CREATE TABLE {table} (id int) USING iceberg TBLPROPERTIES ('format-version'='2')")
    spark.sql(f"INSERT INTO {table} VALUES (1)")
    first, committed_at = rows(spark, f"SELECT snapshot_id, committed_at FROM {table}.snapshots")[0]
    spark.sql(f"INSERT INTO {table} VALUES (2)")
    assert rows(spark, f"SELECT id FROM {table} VERSION AS OF {first}") == [(1,)]
    assert rows(spark, f"SELECT id FROM {table} TIMESTAMP AS OF '{committed_at}'") == [(1,)]
    spark.sql(f"ALTER TABLE {table} CREATE TAG first_load AS OF VERSION {first}")
    spark.sql(f"ALTER TABLE {table} CREATE BRANCH audit")
    spark.sql(f"INSERT INTO {table}.branch_audit VALUES (3)")
    assert rows(spark, f"SELECT count(*) FROM {table}") == [(2,)], "main is untouched"
    assert rows(spark, f"SELECT count(*) FROM {table} VERSION AS OF 'audit'") == [(3,)]
    assert rows(spark, f"SELECT id FROM {table} VERSION AS OF 'first_load'") == [(1,)]
    spark.sql(f"CALL {CATALOG}.system.fast_forward('shop.history', 'main', 'audit')")
    assert rows(spark, f"SELECT count(*) FROM {table}") == [(3,)], "main fast-forwarded to audit"


def test_maintenance_procedures(spark):
    table = f"{CATALOG}.shop.compacted"
    spark.sql(f"CREATE TABLE {table} (id int, data string) USING iceberg")
    for i in range(4):
        spark.sql(f"INSERT INTO {table} VALUES ({i}, 'x{i}')")
    rewritten = spark.sql(
        f"CALL {CATALOG}.system.rewrite_data_files(table => 'shop.compacted', options => map('min-input-files', '2'))"
    ).collect()[0]
    assert rewritten["rewritten_data_files_count"] == 4
    now = rows(spark, "SELECT date_format(current_timestamp(), 'yyyy-MM-dd HH:mm:ss.SSS')")[0][0]
    spark.sql(
        f"CALL {CATALOG}.system.expire_snapshots(table => 'shop.compacted', older_than => TIMESTAMP '{now}', "
        "retain_last => 1)"
    )
    assert rows(spark, f"SELECT count(*) FROM {table}.snapshots") == [(1,)]
    spark.sql(f"CALL {CATALOG}.system.remove_orphan_files(table => 'shop.compacted', dry_run => true)")
    assert rows(spark, f"SELECT count(*) FROM {table}") == [(4,)]


def test_views_and_renames(spark):
    spark.sql(f"CREATE TABLE {CATALOG}.shop.people (id int, name string) USING iceberg")
    spark.sql(f"INSERT INTO {CATALOG}.shop.people VALUES (1, 'ann'), (2, 'bob')")
    spark.sql(f"CREATE VIEW {CATALOG}.shop.first_people AS SELECT name FROM {CATALOG}.shop.people WHERE id = 1")
    assert rows(spark, f"SELECT * FROM {CATALOG}.shop.first_people") == [("ann",)]
    spark.sql(f"ALTER TABLE {CATALOG}.shop.people RENAME TO shop.persons")
    assert rows(spark, f"SELECT count(*) FROM {CATALOG}.shop.persons") == [(2,)]


def test_drop_purge_deletes_only_that_tables_files(spark):
    warehouse = pathlib.Path(os.environ["RUSTBERG_WAREHOUSE"])
    for name in ("doomed", "kept"):
        spark.sql(f"CREATE TABLE {CATALOG}.shop.{name} (id int) USING iceberg")
        spark.sql(f"INSERT INTO {CATALOG}.shop.{name} VALUES (1)")

    def files(name):
        return [p for p in warehouse.rglob("*") if p.is_file() and f"/shop/{name}" in str(p)]

    kept_before = sorted(files("kept"))
    assert files("doomed") and kept_before
    spark.sql(f"DROP TABLE {CATALOG}.shop.doomed PURGE")
    assert files("doomed") == [], "the purged table's files are gone"
    assert sorted(files("kept")) == kept_before, "no other table's file was touched"


def test_one_query_across_the_root_and_two_mounts(spark):
    spark.sql("CREATE NAMESPACE remote.sales")
    spark.sql("CREATE TABLE remote.sales.orders (customer bigint, amount int) USING iceberg")
    spark.sql("INSERT INTO remote.sales.orders VALUES (10, 5), (20, 7)")
    spark.sql("CREATE NAMESPACE pg.sales")
    spark.sql("CREATE TABLE pg.sales.customers (id bigint, name string) USING iceberg")
    spark.sql("INSERT INTO pg.sales.customers VALUES (10, 'acme'), (20, 'globex')")
    spark.sql("CREATE TABLE root.shop.visits (customer bigint, page string) USING iceberg")
    spark.sql("INSERT INTO root.shop.visits VALUES (10, 'home'), (20, 'cart')")
    # One query, one catalog: the whole tree, where the mounts are top-level names.
    joined = rows(
        spark,
        "SELECT c.name, v.page, o.amount FROM rb.shop.visits v "
        "JOIN rb.pg.sales.customers c ON c.id = v.customer "
        "JOIN rb.partner.sales.orders o ON o.customer = c.id ORDER BY c.name",
    )
    assert joined == [("acme", "home", 5), ("globex", "cart", 7)]


def test_the_whole_tree_promises_no_write_a_read_only_mount_would_refuse(spark):
    with pytest.raises(Exception, match="Server does not support endpoint: POST /v1/\\{prefix\\}/namespaces"):
        spark.sql("CREATE NAMESPACE rb.elsewhere")


def test_s3_with_vended_credentials_only(spark):
    assert not any(k.startswith("AWS_") and "KEY" in k for k in os.environ), "Spark must hold no S3 keys"
    spark.sql("CREATE NAMESPACE lake.s3db")
    spark.sql(
        "CREATE TABLE lake.s3db.events (id bigint, ts timestamp, data string) USING iceberg "
        "PARTITIONED BY (days(ts), bucket(8, id))"
    )
    spark.sql(
        "INSERT INTO lake.s3db.events VALUES (1, timestamp'2026-01-01 10:00:00', 'a'), "
        "(2, timestamp'2026-01-02 11:00:00', 'b')"
    )
    # The credentials the loads vended expire: the rest runs on refreshed ones.
    time.sleep(int(os.environ["RUSTBERG_STS_LIFETIME_S"]) + 1)
    spark.sql("DELETE FROM lake.s3db.events WHERE id = 1")
    assert rows(spark, "SELECT id, data FROM lake.s3db.events") == [(2, "b")]
    paths = [r[0] for r in rows(spark, "SELECT file_path FROM lake.s3db.events.files")]
    assert paths and all(p.startswith("s3://lake/warehouse/s3db/events") for p in paths), paths


def test_scans_planned_by_the_server_are_polled_for_and_read_the_same_rows(spark):
    spark.sql("CREATE NAMESPACE root.planned_db")
    spark.sql("CREATE TABLE root.planned_db.t (id bigint, kind string) USING iceberg PARTITIONED BY (kind)")
    spark.sql("INSERT INTO root.planned_db.t VALUES (1, 'a'), (2, 'b'), (3, 'b')")
    spark.sql("INSERT INTO root.planned_db.t VALUES (4, 'c')")
    spark.sql("DELETE FROM root.planned_db.t WHERE id = 2")
    for where in ["", " WHERE kind = 'b'", " WHERE id > 1"]:
        query = "SELECT id, kind FROM {}.planned_db.t" + where + " ORDER BY id"
        assert rows(spark, query.format("planned")) == rows(spark, query.format("root")), where
    # The restricted reader's plan holds only the partition its policy's filter matches.
    assert rows(spark, "SELECT id, kind FROM restricted.planned_db.t ORDER BY id") == [(4, "c")]
    assert rows(spark, "SELECT id FROM restricted.planned_db.t WHERE kind = 'b'") == []


def test_four_sessions_append_to_one_table_at_once(spark):
    table = f"{CATALOG}.shop.appends"
    spark.sql(
        f"CREATE TABLE {table} (writer int, n int) USING iceberg "
        "TBLPROPERTIES ('commit.retry.num-retries'='30', 'commit.retry.min-wait-ms'='20')"
    )
    # Sessions of their own: each has its own catalog, with its own view of the table.
    sessions = [spark.newSession() for _ in range(4)]
    acknowledged, failed = [], []

    def append(writer):
        for n in range(5):
            try:
                sessions[writer].sql(f"INSERT INTO {table} VALUES ({writer}, {n})")
                acknowledged.append((writer, n))
            except Exception as e:  # noqa: BLE001 - recorded and asserted on below
                failed.append((writer, n, str(e)[:500]))

    threads = [threading.Thread(target=append, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Read in a fresh session: `spark` still holds the table as it created it.
    fresh = spark.newSession()
    landed = set(rows(fresh, f"SELECT writer, n FROM {table}"))
    assert set(acknowledged) <= landed, "every acknowledged append is in the table"
    assert failed == [], failed
    assert len(landed) == 20
    snapshots = rows(fresh, f"SELECT count(*) FROM {table}.snapshots")[0][0]
    assert snapshots == 20, "one snapshot per append"


def test_a_stale_commit_is_a_commit_failure(spark):
    # Spark's SQL reloads a table before changing it, so the stale change is made through
    # the Java API that Spark uses, on two handles of one table.
    spark.sql(f"CREATE TABLE {CATALOG}.shop.stale (id int) USING iceberg")
    jvm = spark._jvm
    catalog = spark._jsparkSession.sessionState().catalogManager().catalog("uncached").icebergCatalog()
    ident = jvm.org.apache.iceberg.catalog.TableIdentifier.parse("shop.stale")
    first, second = catalog.loadTable(ident), catalog.loadTable(ident)
    integer = jvm.org.apache.iceberg.types.Types.IntegerType.get()
    second.updateSchema().addColumn("b", integer).commit()
    # `first` still holds the schema before `b`: its requirements are stale, and a schema
    # change is not retried by the client.
    with pytest.raises(Exception, match="CommitFailedException: Commit failed: Requirement failed"):
        first.updateSchema().addColumn("c", integer).commit()
    columns = [f.name for f in spark.newSession().table(f"{CATALOG}.shop.stale").schema.fields]
    assert columns == ["id", "b"]


def test_namespaces_with_dots_and_non_ascii_names(spark):
    names = ["with.dot", "日本語", "café"]
    for name in names:
        spark.sql(f"CREATE NAMESPACE {CATALOG}.`{name}`")
        spark.sql(f"CREATE TABLE {CATALOG}.`{name}`.t (id int) USING iceberg")
        spark.sql(f"INSERT INTO {CATALOG}.`{name}`.t VALUES (1)")
        assert rows(spark, f"SELECT id FROM {CATALOG}.`{name}`.t") == [(1,)]
        assert rows(spark, f"SHOW TABLES IN {CATALOG}.`{name}`")[0][1] == "t"
    listed = {r[0].strip("`") for r in rows(spark, f"SHOW NAMESPACES IN {CATALOG}")}
    assert set(names) <= listed, listed


def test_pages_from_an_empty_page_token(spark):
    for n in range(5):
        spark.sql(f"CREATE TABLE {CATALOG}.shop.paged_{n} (id int) USING iceberg")
    tables = {r[1] for r in rows(spark, "SHOW TABLES IN paged.shop")}
    assert {f"paged_{n}" for n in range(5)} <= tables
    assert {r[0].strip("`") for r in rows(spark, "SHOW NAMESPACES IN paged")} >= {"shop"}


def test_an_unknown_access_delegation_is_a_bad_request(spark):
    with pytest.raises(Exception, match="BadRequestException.*unknown mechanism"):
        spark.sql("SELECT * FROM misspelled.shop.paged_0").collect()
