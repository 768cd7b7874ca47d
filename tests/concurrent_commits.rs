//! Concurrent commits to one table: every commit either lands in the snapshot log
//! or gets 409; none is lost or duplicated.

use crate::support;

use serde_json::json;
use support::{assert_history, race_appends, schema, Api, Server};

const TASKS: i64 = 8;
const COMMITS_PER_TASK: i64 = 6;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_writers_lose_and_duplicate_nothing() {
    let s = Server::start("");
    s.post("/namespaces", json!({"namespace": ["db"]})).await;
    let (status, _) = s.post("/namespaces/db/tables", json!({"name": "t", "schema": schema()})).await;
    assert_eq!(status, 200);

    let (landed, refused) = race_appends(&[Api::clone(&s)], "/namespaces/db/tables/t", TASKS, COMMITS_PER_TASK).await;
    assert!(!landed.is_empty());

    let (_, table) = s.get("/namespaces/db/tables/t").await;
    assert_history(&table["metadata"], &landed, &refused);
}
