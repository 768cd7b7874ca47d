//! Concurrent commits to one table: every commit either lands in the snapshot log
//! or gets 409; none is lost or duplicated.

mod support;

use std::collections::BTreeSet;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use support::{schema, Server};

const TASKS: i64 = 8;
const COMMITS_PER_TASK: i64 = 6;

/// One optimistic append: read the current main snapshot, add a child of it.
async fn try_append(s: &Server, snapshot_id: i64) -> u16 {
    let (_, table) = s.get("/namespaces/db/tables/t").await;
    let metadata = &table["metadata"];
    let parent = metadata["current-snapshot-id"].as_i64().filter(|id| *id >= 0);
    let sequence = metadata["last-sequence-number"].as_i64().unwrap() + 1;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64;
    let mut snapshot = json!({
        "snapshot-id": snapshot_id,
        "sequence-number": sequence,
        "timestamp-ms": now,
        "manifest-list": format!("file:///nowhere/snap-{snapshot_id}.avro"),
        "summary": {"operation": "append"},
        "schema-id": 0
    });
    if let Some(parent) = parent {
        snapshot["parent-snapshot-id"] = json!(parent);
    }
    let body = json!({
        "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": parent}],
        "updates": [
            {"action": "add-snapshot", "snapshot": snapshot},
            {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": snapshot_id}
        ]
    });
    let (status, response) = s.post("/namespaces/db/tables/t", body).await;
    assert!(status == 200 || status == 409, "a commit either lands or conflicts, got {status}: {response}");
    if status == 409 {
        assert_eq!(response["error"]["type"], "CommitFailedException");
    }
    status
}

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
                match try_append(&s, id).await {
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
    let metadata: &Value = &table["metadata"];
    let snapshots: Vec<i64> =
        metadata["snapshots"].as_array().unwrap().iter().map(|s| s["snapshot-id"].as_i64().unwrap()).collect();
    let unique: BTreeSet<i64> = snapshots.iter().copied().collect();
    assert_eq!(unique.len(), snapshots.len(), "no snapshot recorded twice");
    assert_eq!(unique, landed, "exactly the acknowledged commits are in the table");
    assert!(refused.is_disjoint(&unique), "no refused commit landed");

    // The acknowledged commits form one linear history ending at main.
    let mut chain = BTreeSet::new();
    let mut at = metadata["current-snapshot-id"].as_i64();
    while let Some(id) = at {
        assert!(chain.insert(id), "history has no cycle");
        let snap = metadata["snapshots"].as_array().unwrap().iter().find(|s| s["snapshot-id"] == id).unwrap();
        at = snap["parent-snapshot-id"].as_i64();
    }
    assert_eq!(chain, landed, "every landed commit is an ancestor of main");
    let log: Vec<i64> =
        metadata["snapshot-log"].as_array().unwrap().iter().map(|e| e["snapshot-id"].as_i64().unwrap()).collect();
    assert_eq!(log.len(), landed.len(), "one snapshot-log entry per landed commit");
}
