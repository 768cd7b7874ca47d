//! Nessie (0.99.0, the catalog many lakes run) mounted read-write behind Rustberg, its
//! warehouse on moto: PyIceberg, DuckDB and Spark write and read through the mount with
//! the credentials Nessie vends (handed on unchanged), and the remote's prefix
//! (`main%7Cwarehouse`, already encoded) is used as Nessie gives it.

use crate::support;

use serde_json::json;
use support::moto::Moto;
use support::peers::Peer;
use support::python::pytest_with;
use support::{assert_error, schema, Server};

const BUCKET: &str = "nessie";

/// Moto, Nessie on it, and a Rustberg mounting Nessie read-write under `lake`.
async fn nessie_mounted() -> (Moto, Peer, Server) {
    let moto = Moto::start(BUCKET).await;
    let s3 = moto.url.clone();
    let nessie = tokio::task::spawn_blocking(move || Peer::nessie(&s3, BUCKET)).await.unwrap();
    // Listening is not yet serving: the mount reads Nessie's /v1/config when it opens.
    let config = format!("{}/iceberg/v1/config?warehouse=warehouse", nessie.base);
    let started = std::time::Instant::now();
    while !reqwest::get(&config).await.is_ok_and(|r| r.status().is_success()) {
        assert!(started.elapsed().as_secs() < 180, "Nessie did not serve {config}:\n{}", nessie.log());
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    // A JVM warming up on two busy cores answers its first calls slowly.
    let server = Server::start(&format!(
        "[mount.lake]\nbackend = \"rest\"\ncatalog_url = \"{}/iceberg?warehouse=warehouse\"\nowner = \"default\"\n\
         read_only = false\nrequest_timeout_ms = 4500\n",
        nessie.base
    ));
    (moto, nessie, server)
}

/// One Nessie for the whole file: a JVM start is the slow part, and two at once on two
/// busy cores made a start miss its deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nessie_mounted_read_write_serves_the_protocol_and_the_clients() {
    let _turn = support::jvm_turn().await;
    let (_moto, nessie, s) = nessie_mounted().await;
    the_rest_protocol_goes_through(&nessie, &s).await;
    pyiceberg_duckdb_and_spark_write_and_read(&nessie, &s);
}

/// Namespaces and tables created, refused and dropped through the mount, in Nessie.
async fn the_rest_protocol_goes_through(nessie: &Peer, s: &Server) {
    let created = s.post("/namespaces", json!({"namespace": ["lake", "sales"], "properties": {"team": "x"}})).await;
    assert_eq!(created.0, 200, "{}", created.1);
    assert_eq!(created.1["namespace"], json!(["lake", "sales"]));
    let direct = reqwest::get(format!("{}/iceberg/v1/main%7Cwarehouse/namespaces/sales", nessie.base)).await.unwrap();
    assert_eq!(direct.status(), 200, "created in Nessie, under the prefix it gave");
    let create = json!({"name": "orders", "schema": schema(), "stage-create": false});
    let table = s.post("/namespaces/lake%1Fsales/tables", create.clone()).await;
    assert_eq!(table.0, 200, "{}", table.1);
    assert!(table.1["metadata-location"].as_str().unwrap().starts_with("s3://nessie/warehouse/"), "{}", table.1);
    // Nessie answers a clash with no error type: the one its status means here.
    assert_error(&s.post("/namespaces/lake%1Fsales/tables", create).await, 409, "AlreadyExistsException");
    let stale = json!({
        "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 42}],
        "updates": [{"action": "set-properties", "updates": {"k": "v"}}],
    });
    let lost = s.post("/namespaces/lake%1Fsales/tables/orders", stale).await;
    assert_error(&lost, 409, "CommitFailedException");
    assert!(lost.1["error"]["message"].as_str().unwrap().contains("mount `lake`"), "{}", lost.1);
    assert_error(&s.delete("/namespaces/lake%1Fsales").await, 409, "NamespaceNotEmptyException");
    assert_eq!(s.delete("/namespaces/lake%1Fsales/tables/orders").await.0, 204);
    assert_eq!(s.delete("/namespaces/lake%1Fsales").await.0, 204);
}

/// PyIceberg, DuckDB and Spark write and read through the mount, holding no keys.
fn pyiceberg_duckdb_and_spark_write_and_read(nessie: &Peer, server: &Server) {
    let nessie_url = format!("{}/iceberg", nessie.base);
    let env = [("NESSIE_URL", nessie_url.as_str())];
    tokio::task::block_in_place(|| pytest_with("test_nessie_mount.py", server, &env));
    let (venv, jars) = tokio::task::block_in_place(support::spark::spark);
    let credential = server.credential.clone().unwrap();
    let env = [
        ("RUSTBERG_URL", server.base.as_str()),
        ("RUSTBERG_CREDENTIAL", credential.as_str()),
        ("SPARK_JARS", jars.as_str()),
    ];
    tokio::task::block_in_place(|| {
        support::python::run_pytest_in(&venv, "test_spark_nessie.py", &env, 600);
    });
}
