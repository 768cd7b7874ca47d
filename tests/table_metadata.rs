//! The host holds table metadata (its files, and memory); the native backend records
//! only the pointer. A table must load and commit the same after a restart, when
//! nothing is held and the metadata comes from its file, gzip-compressed or not.

use crate::support;

use serde_json::{json, Value};
use support::{append_snapshot, append_snapshot_to, schema, Server};

/// The metadata file a load names, read from the warehouse as it lies on disk.
fn file_of(loaded: &Value) -> Vec<u8> {
    let location = loaded["metadata-location"].as_str().unwrap();
    std::fs::read(location.strip_prefix("file://").unwrap()).unwrap()
}

/// A table with three snapshots: the same metadata before and after a restart, and
/// a commit after the restart builds on it.
#[tokio::test]
async fn a_table_loads_and_commits_the_same_after_a_restart() {
    let s = Server::start("");
    assert_eq!(s.post("/namespaces", json!({"namespace": ["db"]})).await.0, 200);
    assert_eq!(s.post("/namespaces/db/tables", json!({"name": "t", "schema": schema()})).await.0, 200);
    for id in 1..=3 {
        assert_eq!(append_snapshot(&s, id).await, 200);
    }
    let (status, before) = s.get("/namespaces/db/tables/t").await;
    assert_eq!(status, 200);
    assert_eq!(before["metadata"]["snapshots"].as_array().unwrap().len(), 3);
    let on_disk: Value = serde_json::from_slice(&file_of(&before)).unwrap();
    assert_eq!(before["metadata"], on_disk, "the served metadata is the file's");

    let s = s.restart("").unwrap();
    let (status, after) = s.get("/namespaces/db/tables/t").await;
    assert_eq!(status, 200);
    assert_eq!(after, before, "read from its file after the restart");
    assert_eq!(append_snapshot(&s, 4).await, 200, "a commit after the restart");
    let (_, committed) = s.get("/namespaces/db/tables/t").await;
    assert_eq!(committed["metadata"]["current-snapshot-id"], 4);
    assert_eq!(committed["metadata"]["snapshots"].as_array().unwrap().len(), 4);
}

/// A table whose metadata files are gzip-compressed is served uncompressed JSON,
/// before and after a restart, and the body's length is declared.
#[tokio::test]
async fn gzip_metadata_is_served_as_json() {
    let s = Server::start("");
    assert_eq!(s.post("/namespaces", json!({"namespace": ["db"]})).await.0, 200);
    let create = json!({"name": "z", "schema": schema(),
        "properties": {"write.metadata.compression-codec": "gzip"}});
    let (status, created) = s.post("/namespaces/db/tables", create).await;
    assert_eq!(status, 200, "{created}");
    assert_eq!(append_snapshot_to(&s, "/namespaces/db/tables/z", 1).await, 200);
    let (_, before) = s.get("/namespaces/db/tables/z").await;
    let location = before["metadata-location"].as_str().unwrap();
    assert!(location.ends_with(".gz.metadata.json"), "{location}");
    assert_eq!(file_of(&before)[..2], [0x1f, 0x8b], "the file is gzip-compressed");

    let s = s.restart("").unwrap();
    let response = s.client.get(s.url("/namespaces/db/tables/z")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let length: usize = response.headers()["content-length"].to_str().unwrap().parse().unwrap();
    let body = response.bytes().await.unwrap();
    assert_eq!(length, body.len());
    let after: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(after["metadata"], before["metadata"]);
    assert_eq!(append_snapshot_to(&s, "/namespaces/db/tables/z", 2).await, 200, "a commit on the compressed metadata");
    let (_, committed) = s.get("/namespaces/db/tables/z").await;
    assert_eq!(committed["metadata"]["snapshots"].as_array().unwrap().len(), 2);
    assert!(committed["metadata-location"].as_str().unwrap().ends_with(".gz.metadata.json"));
}

/// A table's metadata file that disappeared fails the load with Iceberg's
/// `NotFoundException` naming the file (what Iceberg's own catalogs answer, and what
/// its compatibility kit checks), never `NoSuchTableException` and never the copy the
/// host still holds: the file is the record. The table itself is still there, and
/// loads again once its file is back. Held or read after a restart alike.
#[tokio::test]
async fn a_missing_metadata_file_is_not_a_missing_table() {
    let s = Server::start("");
    assert_eq!(s.post("/namespaces", json!({"namespace": ["db"]})).await.0, 200);
    assert_eq!(s.post("/namespaces/db/tables", json!({"name": "t", "schema": schema()})).await.0, 200);
    let (_, loaded) = s.get("/namespaces/db/tables/t").await;
    let metadata_location = loaded["metadata-location"].as_str().unwrap().to_string();
    gone_and_back(&s, &metadata_location).await;
    let s = s.restart("").unwrap();
    gone_and_back(&s, &metadata_location).await;
}

/// Moves table `db.t`'s metadata file away (the load fails) and back (it loads).
async fn gone_and_back(s: &Server, metadata_location: &str) {
    let file = metadata_location.strip_prefix("file://").unwrap();
    let moved = format!("{file}.away");
    std::fs::rename(file, &moved).unwrap();
    let (status, body) = s.get("/namespaces/db/tables/t").await;
    assert_eq!((status, body["error"]["type"].as_str()), (404, Some("NotFoundException")), "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains(&format!("Failed to open input stream for file: {metadata_location}")), "{body}");
    assert_eq!(s.head("/namespaces/db/tables/t").await, 204, "the table itself is still recorded");
    std::fs::rename(&moved, file).unwrap();
    assert_eq!(s.get("/namespaces/db/tables/t").await.0, 200);
}
