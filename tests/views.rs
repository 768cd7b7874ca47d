//! Views: create, load, HEAD, list, replace (requirements and updates through the
//! `iceberg` crate's view spec), rename, drop, register.

use crate::support;

use reqwest::Method;
use serde_json::{json, Value};
use support::{assert_error, redb_mount, schema, Server};

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
}

fn version(id: i64, sql: &str) -> Value {
    json!({
        "version-id": id, "schema-id": 0, "timestamp-ms": now_ms() + id,
        "summary": {"engine-name": "spark"},
        "representations": [{"type": "sql", "sql": sql, "dialect": "spark"}],
        "default-namespace": ["db"]
    })
}

#[tokio::test]
async fn view_lifecycle() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&redb_mount("lake", dir.path(), "default"));
    for ns in [json!(["db"]), json!(["other"]), json!(["lake", "db"])] {
        assert_eq!(s.post("/namespaces", json!({"namespace": ns})).await.0, 200);
    }
    let body =
        json!({"name": "v", "schema": schema(), "view-version": version(1, "SELECT 1"), "properties": {"p": "1"}});
    let created = s.post("/namespaces/db/views", body.clone()).await;
    assert_eq!(created.0, 200, "{}", created.1);
    let location = created.1["metadata-location"].as_str().unwrap().to_string();
    assert!(std::path::Path::new(location.strip_prefix("file://").unwrap()).exists(), "metadata file written");
    assert_eq!(created.1["metadata"]["properties"]["p"], "1");
    assert_error(&s.post("/namespaces/db/views", body.clone()).await, 409, "AlreadyExistsException");
    // A table and a view cannot share a name.
    assert_eq!(s.post("/namespaces/db/tables", json!({"name": "t", "schema": schema()})).await.0, 200);
    let clash = json!({"name": "t", "schema": schema(), "view-version": version(1, "SELECT 2")});
    assert_error(&s.post("/namespaces/db/views", clash).await, 409, "AlreadyExistsException");

    let loaded = s.get("/namespaces/db/views/v").await;
    assert_eq!(loaded.0, 200);
    assert_eq!(loaded.1["metadata-location"], location.as_str());
    assert_eq!(s.head("/namespaces/db/views/v").await, 204);
    assert_eq!(s.head("/namespaces/db/views/nope").await, 404);
    assert_error(&s.get("/namespaces/db/views/nope").await, 404, "NoSuchViewException");
    assert_eq!(s.get("/namespaces/db/views").await.1["identifiers"], json!([{"namespace": ["db"], "name": "v"}]));
    assert_eq!(s.get("/namespaces/db/tables").await.1["identifiers"], json!([{"namespace": ["db"], "name": "t"}]));

    // Replace: a new version becomes current.
    let uuid = loaded.1["metadata"]["view-uuid"].clone();
    let replace = json!({
        "requirements": [{"type": "assert-view-uuid", "uuid": uuid}],
        "updates": [
            {"action": "add-view-version", "view-version": version(2, "SELECT 2")},
            {"action": "set-current-view-version", "view-version-id": -1}
        ]
    });
    let replaced = s.post("/namespaces/db/views/v", replace).await;
    assert_eq!(replaced.0, 200, "{}", replaced.1);
    assert_eq!(replaced.1["metadata"]["current-version-id"], 2);
    assert_ne!(replaced.1["metadata-location"], location.as_str());
    let stale = json!({"requirements": [{"type": "assert-view-uuid", "uuid": "00000000-0000-0000-0000-000000000000"}], "updates": []});
    assert_error(&s.post("/namespaces/db/views/v", stale).await, 409, "CommitFailedException");

    // Rename within a backend; never across mounts.
    let rename = |ns: &str, name: &str| json!({"source": {"namespace": ["db"], "name": "v"}, "destination": {"namespace": [ns], "name": name}});
    let across = s
        .send(
            Method::POST,
            "/v1/catalog/views/rename",
            Some(json!({
                "source": {"namespace": ["db"], "name": "v"}, "destination": {"namespace": ["lake", "db"], "name": "v"}
            })),
        )
        .await;
    assert_error(&across, 501, "UnsupportedOperationException");
    assert_eq!(s.send(Method::POST, "/v1/catalog/views/rename", Some(rename("other", "w"))).await.0, 204);
    assert_eq!(s.head("/namespaces/db/views/v").await, 404);
    let moved = s.get("/namespaces/other/views/w").await;
    assert_eq!(moved.1["metadata"]["current-version-id"], 2);

    // Register the view's metadata under another name, then drop both.
    let registered = s
        .post(
            "/namespaces/db/register-view",
            json!({"name": "again", "metadata-location": moved.1["metadata-location"]}),
        )
        .await;
    // The files of a live view cannot be registered again; once it is dropped they can.
    assert_error(&registered, 409, "AlreadyExistsException");
    assert_eq!(s.delete("/namespaces/other/views/w").await.0, 204);
    let registered = s
        .post(
            "/namespaces/db/register-view",
            json!({"name": "again", "metadata-location": moved.1["metadata-location"]}),
        )
        .await;
    assert_eq!(registered.0, 200, "{}", registered.1);
    let table_metadata = s.get("/namespaces/db/tables/t").await.1["metadata-location"].clone();
    let junk =
        s.post("/namespaces/db/register-view", json!({"name": "junk", "metadata-location": table_metadata})).await;
    assert_error(&junk, 400, "BadRequestException");
    assert_eq!(s.delete("/namespaces/db/views/again").await.0, 204);
    assert_error(&s.delete("/namespaces/db/views/again").await, 404, "NoSuchViewException");
    assert_eq!(s.get("/namespaces/lake/views").await, (200, json!({"identifiers": []})), "a mount root holds no views");
}
