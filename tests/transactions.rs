//! commitTransaction: atomic across the tables of one backend; nothing applied when
//! any requirement fails; never across a mount boundary.

use crate::support;

use reqwest::Method;
use serde_json::{json, Value};
use support::{assert_error, redb_mount, schema, Server};

fn change(ns: &[&str], name: &str, requirements: Value, key: &str) -> Value {
    json!({
        "identifier": {"namespace": ns, "name": name},
        "requirements": requirements,
        "updates": [{"action": "set-properties", "updates": {key: "v"}}]
    })
}

async fn commit(s: &Server, changes: Vec<Value>) -> (u16, Value) {
    s.send(Method::POST, "/v1/catalog/transactions/commit", Some(json!({"table-changes": changes}))).await
}

fn metadata_files(s: &Server) -> usize {
    fn count(dir: &std::path::Path) -> usize {
        std::fs::read_dir(dir).map_or(0, |entries| {
            entries
                .flatten()
                .map(|e| {
                    if e.path().is_dir() {
                        count(&e.path())
                    } else {
                        e.file_name().to_string_lossy().ends_with(".metadata.json") as usize
                    }
                })
                .sum()
        })
    }
    count(&s.dir.path().join("data"))
}

#[tokio::test]
async fn transactions_apply_everything_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&redb_mount("lake", dir.path(), "default"));
    for ns in [json!(["db"]), json!(["lake", "db"])] {
        assert_eq!(s.post("/namespaces", json!({"namespace": ns})).await.0, 200);
    }
    for (ns, t) in [("db", "t1"), ("db", "t2"), ("lake%1Fdb", "t3")] {
        assert_eq!(s.post(&format!("/namespaces/{ns}/tables"), json!({"name": t, "schema": schema()})).await.0, 200);
    }
    let config: Value = s.client.get(format!("{}/v1/config", s.base)).send().await.unwrap().json().await.unwrap();
    assert!(config["endpoints"].as_array().unwrap().contains(&json!("POST /v1/{prefix}/transactions/commit")));

    let ok = commit(&s, vec![change(&["db"], "t1", json!([]), "a"), change(&["db"], "t2", json!([]), "a")]).await;
    assert_eq!(ok.0, 204, "{}", ok.1);
    for t in ["t1", "t2"] {
        assert_eq!(s.get(&format!("/namespaces/db/tables/{t}")).await.1["metadata"]["properties"]["a"], "v");
    }

    // The second change's requirement fails: nothing lands, no file is left behind.
    let files = metadata_files(&s);
    let stale = json!([{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 7}]);
    let refused = commit(&s, vec![change(&["db"], "t1", json!([]), "b"), change(&["db"], "t2", stale, "b")]).await;
    assert_error(&refused, 409, "CommitFailedException");
    for t in ["t1", "t2"] {
        assert!(
            s.get(&format!("/namespaces/db/tables/{t}")).await.1["metadata"]["properties"].get("b").is_none(),
            "{t}"
        );
    }
    assert_eq!(metadata_files(&s), files, "no orphaned metadata file");

    let missing =
        commit(&s, vec![change(&["db"], "t1", json!([]), "c"), change(&["db"], "nope", json!([]), "c")]).await;
    assert_error(&missing, 404, "NoSuchTableException");
    assert!(s.get("/namespaces/db/tables/t1").await.1["metadata"]["properties"].get("c").is_none());

    let across =
        commit(&s, vec![change(&["db"], "t1", json!([]), "d"), change(&["lake", "db"], "t3", json!([]), "d")]).await;
    assert_error(&across, 501, "UnsupportedOperationException");
    let message = across.1["error"]["message"].as_str().unwrap();
    assert!(message.contains("root catalog") && message.contains("mount `lake`"), "{message}");

    let twice = commit(&s, vec![change(&["db"], "t1", json!([]), "e"), change(&["db"], "t1", json!([]), "e")]).await;
    assert_error(&twice, 400, "BadRequestException");
}
