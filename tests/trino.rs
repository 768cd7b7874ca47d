//! Trino 476, the Trino engines in the field run, against Rustberg: its Iceberg REST
//! connector creates, writes and reads tables in schemas it created without a location.
//! Trino 476 stages a create only where loadNamespace names a location (a Trino bug
//! fixed later); Rustberg answers every namespace with the location its tables go under.

use crate::support;

use serde_json::json;
use support::trino::Trino;
use support::{redb_mount, Server};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trino_476_creates_tables_in_schemas_made_without_a_location() {
    let _turn = support::jvm_turn().await;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&redb_mount("prod", dir.path(), "default"));
    let credential = server.credential.clone().unwrap();
    let base = server.base.clone();
    let trino = tokio::task::spawn_blocking(move || Trino::start(&base, &credential)).await.unwrap();
    for (schema, table) in [("sales", "rb.sales.orders"), ("prod.web", "rb.\"prod.web\".orders")] {
        let statements = [
            format!("CREATE SCHEMA rb.\"{schema}\""),
            format!("CREATE TABLE {table} (id bigint, amount bigint)"),
            format!("INSERT INTO {table} VALUES (1, 10), (2, 20)"),
            format!("INSERT INTO {table} VALUES (3, 30)"),
        ];
        for statement in &statements {
            trino.sql(statement).await.unwrap_or_else(|e| panic!("{statement}: {e}"));
        }
        let sum = trino.sql(&format!("SELECT sum(amount), count(*) FROM {table}")).await.unwrap();
        assert_eq!(sum, vec![json!([60, 3])], "{table}");
    }
    // The schema Trino made has no location of its own: the one it was answered is derived.
    let loaded = server.get("/namespaces/sales").await.1;
    let warehouse = format!("file://{}/data/warehouse", server.dir.path().display());
    assert_eq!(loaded["properties"]["location"], format!("{warehouse}/sales"), "{loaded}");
    let table = server.get("/namespaces/sales/tables/orders").await.1;
    assert!(table["metadata"]["location"].as_str().unwrap().starts_with(&format!("{warehouse}/sales/")), "{table}");
}
