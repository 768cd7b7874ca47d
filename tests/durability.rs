//! Every acknowledged write survives `kill -9`: a server is killed in the middle of a
//! storm of writes (namespace creates and table commits from 16 writers), started
//! again on its data directory, and every write it answered 200 is there: a created
//! namespace with its owner (the writers are a tenant's, not the server admin, so a
//! namespace whose owner was lost would be hidden from them).

use crate::support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use support::{hash_secret, schema, Server};

const WRITERS: usize = 16;
const SECRET: &str = "pw";

fn config() -> String {
    format!("[auth.principals.ann]\ntenant = \"acme\"\nrole = \"writer\"\nsecret_hash = \"{}\"\n", hash_secret(SECRET))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_acknowledged_write_survives_kill_9() {
    let s = Server::start(&config());
    let ann = s.login("ann", SECRET);
    assert_eq!(ann.post("/namespaces", json!({"namespace": ["db"]})).await.0, 200);
    for w in 0..WRITERS {
        let created = ann.post("/namespaces/db/tables", json!({"name": format!("t{w}"), "schema": schema()})).await;
        assert_eq!(created.0, 200, "{}", created.1);
    }

    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> =
        (0..WRITERS).map(|w| tokio::spawn(support::write_storm(ann.clone(), w, stop.clone()))).collect();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // `restart` kills the process with SIGKILL while the writers are still sending.
    let s = s.restart(&config()).expect("the server starts again after kill -9");
    let ann = s.login("ann", SECRET);
    stop.store(true, Ordering::Relaxed);
    let mut acked = Vec::new();
    for writer in writers {
        acked.push(writer.await.unwrap());
    }
    let namespaces: usize = acked.iter().map(|a| a.namespaces.len()).sum();
    let commits: usize = acked.iter().map(|a| a.properties.len()).sum();
    assert!(namespaces > 0 && commits > 0, "the storm wrote something before the kill");

    for (w, acked) in acked.iter().enumerate() {
        for name in &acked.namespaces {
            assert_eq!(ann.head(&format!("/namespaces/{name}")).await, 204, "acknowledged namespace {name} was lost");
        }
        let (status, table) = ann.get(&format!("/namespaces/db/tables/t{w}")).await;
        assert_eq!(status, 200, "{table}");
        let properties = &table["metadata"]["properties"];
        for key in &acked.properties {
            assert_eq!(properties[key], "1", "acknowledged commit {key} to t{w} was lost: {properties}");
        }
    }
    eprintln!("{namespaces} namespace creates and {commits} commits acknowledged before the kill, all kept");
}
