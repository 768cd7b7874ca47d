//! Two rustberg processes over one Postgres database serve one catalog: a namespace
//! created through one is visible through the other at once, and 16 writers split
//! across both lose and duplicate nothing.

mod support;

use serde_json::json;
use support::{assert_history, hash_secret, postgres_database, race_appends, schema, Server};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hosts_share_one_catalog() {
    let Some(pg) = postgres_database().await else { return };
    let warehouse = tempfile::tempdir().unwrap();
    let config = format!(
        "[storage]\ncatalog_url = \"{pg}\"\nwarehouse_location = \"file://{}\"\n\
         [auth.principals.root]\ntenant = \"ops\"\nrole = \"admin\"\nserver_admin = true\nsecret_hash = \"{}\"\n",
        warehouse.path().display(),
        hash_secret("pw")
    );
    let (a, b) = (Server::start(&config), Server::start(&config));
    let (a, b) = (a.login("root", "pw"), b.login("root", "pw"));

    assert_eq!(a.post("/namespaces", json!({"namespace": ["db"]})).await.0, 200);
    assert_eq!(b.get("/namespaces/db").await.0, 200, "visible through the other host at once");
    assert_eq!(b.get("/namespaces").await.1["namespaces"], json!([["db"]]));
    assert_eq!(b.post("/namespaces/db/tables", json!({"name": "t", "schema": schema()})).await.0, 200);
    assert_eq!(a.head("/namespaces/db/tables/t").await, 204);

    let hosts = [a.clone(), b.clone()];
    let (landed, refused) = race_appends(&hosts, "/namespaces/db/tables/t", 16, 4).await;
    assert!(!landed.is_empty());
    for host in [&a, &b] {
        let (_, table) = host.get("/namespaces/db/tables/t").await;
        assert_history(&table["metadata"], &landed, &refused);
    }
}
