//! Two rustberg processes over one Postgres database serve one catalog: a namespace
//! created through one is visible through the other at once, and 16 writers split
//! across both lose and duplicate nothing.

mod support;

use serde_json::json;
use support::{assert_history, hash_secret, postgres_database, race_appends, schema, Server};

/// The configuration of every host over database `pg`, with one warehouse folder
/// and the server admin `root` (secret `pw`).
fn shared_config(pg: &str, warehouse: &std::path::Path) -> String {
    format!(
        "[storage]\ncatalog_url = \"{pg}\"\nwarehouse_location = \"file://{}\"\n\
         [auth.principals.root]\ntenant = \"ops\"\nrole = \"admin\"\nserver_admin = true\nsecret_hash = \"{}\"\n",
        warehouse.display(),
        hash_secret("pw")
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hosts_share_one_catalog() {
    let Some(pg) = postgres_database().await else { return };
    let warehouse = tempfile::tempdir().unwrap();
    let config = shared_config(&pg, warehouse.path());
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

/// 16 writers over two hosts commit requirement-free property changes to one table:
/// a writer that loses the compare-and-swap to the other host is re-applied on the new
/// base by the server, so every commit lands and none is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn commits_without_requirements_all_land_across_hosts() {
    let Some(pg) = postgres_database().await else { return };
    let warehouse = tempfile::tempdir().unwrap();
    let config = shared_config(&pg, warehouse.path());
    let (a, b) = (Server::start(&config), Server::start(&config));
    let hosts = [a.login("root", "pw"), b.login("root", "pw")];
    assert_eq!(hosts[0].post("/namespaces", json!({"namespace": ["props"]})).await.0, 200);
    assert_eq!(hosts[0].post("/namespaces/props/tables", json!({"name": "t", "schema": schema()})).await.0, 200);
    let writers = (0..16).map(|w| {
        let host = hosts[w % 2].clone();
        tokio::spawn(async move {
            let mut statuses = vec![];
            for i in 0..5 {
                let update = json!({"updates": [{"action": "set-properties", "updates": {format!("w{w}-{i}"): "x"}}]});
                statuses.push(host.post("/namespaces/props/tables/t", update).await.0);
            }
            statuses
        })
    });
    let statuses: Vec<u16> = futures::future::join_all(writers).await.into_iter().flat_map(Result::unwrap).collect();
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    let (_, table) = hosts[1].get("/namespaces/props/tables/t").await;
    let properties = table["metadata"]["properties"].as_object().unwrap();
    assert_eq!(properties.keys().filter(|k| k.starts_with('w')).count(), 80, "{properties:?}");
}
