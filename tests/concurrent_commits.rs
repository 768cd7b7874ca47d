//! Concurrent commits to one table: every commit either lands in the snapshot log
//! or gets 409; none is lost or duplicated.

mod support;

use std::collections::BTreeSet;

use serde_json::json;
use support::{append_snapshot, assert_history, schema, Server};

const TASKS: i64 = 8;
const COMMITS_PER_TASK: i64 = 6;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_writers_lose_and_duplicate_nothing() {
    let s = std::sync::Arc::new(Server::start(""));
    s.post("/namespaces", json!({"namespace": ["db"]})).await;
    let (status, _) = s.post("/namespaces/db/tables", json!({"name": "t", "schema": schema()})).await;
    assert_eq!(status, 200);

    let mut tasks = vec![];
    for task in 0..TASKS {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            let mut landed = vec![];
            let mut refused = vec![];
            for i in 0..COMMITS_PER_TASK {
                let id = 1000 * (task + 1) + i;
                match append_snapshot(&s, id).await {
                    200 => landed.push(id),
                    _ => refused.push(id),
                }
            }
            (landed, refused)
        }));
    }
    let mut landed = BTreeSet::new();
    let mut refused = BTreeSet::new();
    for task in tasks {
        let (l, r) = task.await.unwrap();
        landed.extend(l);
        refused.extend(r);
    }
    assert!(!landed.is_empty());

    let (_, table) = s.get("/namespaces/db/tables/t").await;
    assert_history(&table["metadata"], &landed, &refused);
}
