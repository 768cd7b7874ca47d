//! The built-in `hms` backend against a real Apache Hive Metastore (2.3.9; 4.0.1 in the
//! last test), over the mount's `tcp` grant: PyIceberg and Spark through Rustberg and
//! their own HiveCatalogs on the same tables, contention from both sides, DuckDB, the
//! conformance suite, a lock left behind, a metastore that stops or never answers, and
//! addresses it may not reach.

use crate::support;

use serde_json::json;
use support::hive::{hms_mount, Metastore};
use support::python::pytest_with;
use support::{assert_error, assert_history, race_appends, schema, Api, Server};

fn hms_server(metastore: &Metastore) -> Server {
    Server::try_start(&hms_mount("legacy", metastore, "acme"))
        .unwrap_or_else(|output| panic!("the server did not start:\n{output}"))
}

fn pytest_hms(test: &str, metastore: &Metastore, server: &Server) {
    let warehouse = metastore.warehouse();
    let url = metastore.url();
    pytest_with(
        &format!("test_hms.py::{test}"),
        server,
        &[("HMS_URL", &url), ("HMS_WAREHOUSE", &warehouse), ("RUSTBERG_MOUNT", "legacy")],
    );
}

#[test]
fn pyiceberg_and_its_own_hive_catalog_share_tables_through_an_hms_mount() {
    let _turn = support::jvm_turn_blocking();
    let metastore = Metastore::start();
    let server = hms_server(&metastore);
    for test in [
        "test_rustberg_and_hive_catalog_share_tables_both_ways",
        "test_the_metastore_entry_is_what_icebergs_hive_catalog_writes",
        "test_hive_tables_that_are_not_iceberg_stay_out",
        "test_namespaces_have_one_level",
        "test_duckdb_joins_an_hms_table_with_a_root_one",
    ] {
        pytest_hms(test, &metastore, &server);
    }
}

#[test]
fn writers_through_rustberg_and_the_hive_catalog_lose_nothing_and_the_conformance_suite_passes() {
    let _turn = support::jvm_turn_blocking();
    let metastore = Metastore::start();
    let server = hms_server(&metastore);
    pytest_hms("test_writers_through_rustberg_and_the_hive_catalog_lose_nothing", &metastore, &server);

    let report = support::conformance_report("hms", &hms_mount("legacy", &metastore, "acme"), "legacy", &[]);
    assert!(report.contains(" 0 failed"), "{report}");
    assert!(!report.contains("FAIL"), "{report}");
}

#[tokio::test]
async fn a_lock_left_behind_lasts_until_the_metastore_times_it_out_and_a_restarted_metastore_is_found_again() {
    let _turn = support::jvm_turn().await;
    let mut metastore = Metastore::with_lock_timeout(5);
    let server = hms_server(&metastore);
    let warehouse = metastore.warehouse();
    let url = metastore.url();
    pytest_with(
        "test_hms.py::test_a_lock_left_behind_holds_commits_only_until_the_metastore_times_it_out",
        &server,
        &[("HMS_URL", &url), ("HMS_WAREHOUSE", &warehouse), ("RUSTBERG_MOUNT", "legacy"), ("HMS_LOCK_TIMEOUT_S", "5")],
    );

    // The metastore stops: every answer is a 503 naming the mount, never an absence (a
    // change's outcome unknown: the component cannot say whether its call got through).
    metastore.stop();
    let table = "/namespaces/legacy%1Fstuck/tables/t";
    let (unavailable, unknown) = ("ServiceUnavailableException", "CommitStateUnknownException");
    for ((status, body), kind) in [
        (server.get(table).await, unavailable),
        (server.get("/namespaces?parent=legacy").await, unavailable),
        (server.post("/namespaces", json!({"namespace": ["legacy", "other"]})).await, unknown),
    ] {
        assert_error(&(status, body.clone()), 503, kind);
        assert!(body["error"]["message"].as_str().unwrap().contains("mount `legacy`"), "{body}");
    }
    let health: serde_json::Value =
        server.client.get(format!("{}/health", server.base)).send().await.unwrap().json().await.unwrap();
    let legacy = health["mounts"].as_array().unwrap().iter().find(|m| m["mount"] == "mount `legacy`").unwrap().clone();
    assert_eq!(legacy["state"], "unreachable", "{health}");

    // Back on the same port: the mount answers again without a restart of Rustberg, and
    // its first writes land (each starts with a read, which finds the new connection).
    metastore.resume();
    assert_eq!(server.post("/namespaces", json!({"namespace": ["legacy", "after"]})).await.0, 200);
    assert_eq!(support::append_snapshot_to(&server, table, 77).await, 200);
    let (status, body) = server.get(table).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn a_metastore_that_never_answers_fails_the_call_in_time_and_other_addresses_are_refused() {
    // Accepts connections and never answers a byte.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let _held = std::thread::spawn(move || {
        let mut open = Vec::new();
        for stream in silent.incoming() {
            open.push(stream);
        }
    });
    // A port the mount does not grant, with something listening on it.
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other_port = other.local_addr().unwrap().port();
    let config = format!(
        "[mount.mute]\nbackend = \"hms\"\ncatalog_url = \"thrift://127.0.0.1:{port}\"\nowner = \"acme\"\n\
         [mount.mute.plugins]\ncall_timeout_ms = 400\n\
         [mount.astray]\nbackend = \"hms\"\ncatalog_url = \"thrift://127.0.0.1:{port}\"\nowner = \"acme\"\n\
         [mount.astray.config]\naddress = \"127.0.0.1:{other_port}\"\n"
    );
    let server = Server::try_start(&config).unwrap_or_else(|output| panic!("the server did not start:\n{output}"));

    let started = std::time::Instant::now();
    let got = server.get("/namespaces/mute%1Fdb").await;
    assert_error(&got, 503, "ServiceUnavailableException");
    let message = got.1["error"]["message"].as_str().unwrap();
    assert!(message.contains("mount `mute`") && message.contains("did not answer within 400 ms"), "{message}");
    assert!(started.elapsed() < std::time::Duration::from_secs(2), "took {:?}", started.elapsed());

    // The component asks for an address its grant does not name: the connection fails
    // inside it, the request is a 503 naming the mount, and the host logs the refusal.
    let got = server.get("/namespaces/astray%1Fdb").await;
    assert_error(&got, 503, "ServiceUnavailableException");
    let message = got.1["error"]["message"].as_str().unwrap();
    assert!(message.contains("mount `astray`") && message.contains(&other_port.to_string()), "{message}");
    let log = server.output_once_it_says("refused a socket the mount does not grant");
    assert!(log.contains("mount `astray`") && log.contains(&format!("127.0.0.1:{other_port}")), "{log}");
    drop(other);
}

#[test]
fn plugin_check_reports_the_tcp_grant() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("rustberg.toml");
    std::fs::write(
        &config,
        "[mount.legacy]\nbackend = \"hms\"\ncatalog_url = \"thrift://127.0.0.1:9083\"\nowner = \"acme\"\n",
    )
    .unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_rustberg"))
        .args(["plugin", "check", "hms", "--config"])
        .arg(&config)
        .args(["--mount", "legacy"])
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{report}");
    assert!(report.contains("tcp-backend") && report.contains("grants     types, log, clock, config, tcp"), "{report}");
    let sockets = report.lines().find(|l| l.contains("wasi:sockets/tcp@")).expect("imports wasi:sockets");
    assert!(sockets.contains("granted: tcp"), "{report}");
}

/// Spark SQL with Iceberg's own HiveCatalog (Java) on the metastore and with its
/// RESTCatalog on the hms mount share tables both ways (`tests/python/test_spark_hive.py`).
#[test]
fn spark_and_its_hive_catalog_share_tables_through_an_hms_mount() {
    let _turn = support::jvm_turn_blocking();
    let metastore = Metastore::start();
    let server = hms_server(&metastore);
    let (venv, jars) = support::spark::spark();
    let (warehouse, url) = (metastore.warehouse(), metastore.url());
    let env = [
        ("RUSTBERG_URL", server.base.as_str()),
        ("RUSTBERG_CREDENTIAL", server.credential.as_deref().unwrap()),
        ("SPARK_JARS", jars.as_str()),
        ("HMS_URL", url.as_str()),
        ("HMS_WAREHOUSE", warehouse.as_str()),
        ("RUSTBERG_MOUNT", "legacy"),
    ];
    support::python::run_pytest_in(&venv, "test_spark_hive.py", &env, 600);
}

/// Hive 4.0.1 (which no longer serves `get_table`), on PostgreSQL as it runs in
/// production: the conformance suite passes; 8 writers through Rustberg (each commit
/// under the metastore's lock) lose nothing: every acknowledged append is in the table,
/// every refused one got 409; renames and drops land; and after the metastore restarts,
/// the first writes find it again. PyIceberg 0.12's HiveCatalog and Spark's (Hive 2.3
/// clients) call `get_table`, so they cannot take part (docs/federation.md).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hive_4_metastore_serves_the_mount_too() {
    let _turn = support::jvm_turn().await;
    let mut metastore = Metastore::hive4();
    let report = support::conformance_report("hms", &hms_mount("legacy", &metastore, "acme"), "legacy", &[]);
    assert!(report.contains(" 0 failed"), "{report}\nthe metastore's log:\n{}", metastore.log());
    assert!(!report.contains("FAIL"), "{report}");

    let server = hms_server(&metastore);
    assert_eq!(server.post("/namespaces", json!({"namespace": ["legacy", "race"]})).await.0, 200);
    let created = server.post("/namespaces/legacy%1Frace/tables", json!({"name": "t", "schema": schema()})).await;
    assert_eq!(created.0, 200, "{}", created.1);
    let path = "/namespaces/legacy%1Frace/tables/t";
    let (landed, refused) = race_appends(&[Api::clone(&server)], path, 8, 4).await;
    assert!(!landed.is_empty());
    let (status, table) = server.get(path).await;
    assert_eq!(status, 200);
    assert_history(&table["metadata"], &landed, &refused);

    let renamed = server
        .post(
            "/tables/rename",
            json!({"source": {"namespace": ["legacy", "race"], "name": "t"},
                   "destination": {"namespace": ["legacy", "race"], "name": "u"}}),
        )
        .await;
    assert_eq!(renamed.0, 204, "{}", renamed.1);
    assert_error(&server.get(path).await, 404, "NoSuchTableException");

    // Restarted under the mount's kept connections: the first writes land.
    metastore.stop();
    metastore.resume();
    let moved = "/namespaces/legacy%1Frace/tables/u";
    assert_eq!(support::append_snapshot_to(&server, moved, 1).await, 200);
    assert_eq!(server.post("/namespaces", json!({"namespace": ["legacy", "after"]})).await.0, 200);
    assert_eq!(server.delete(moved).await.0, 204);
    assert_error(&server.get(moved).await, 404, "NoSuchTableException");
}
