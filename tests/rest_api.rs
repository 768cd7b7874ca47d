//! The Iceberg REST API against a real server on the embedded default:
//! status codes, bodies and error types.

use crate::support;

use serde_json::{json, Value};
use support::{assert_error, namespace_names, schema, Server};

/// The namespaces of a listing, dotted.
fn names(body: &Value) -> Vec<String> {
    namespace_names(body).iter().map(|ns| ns.join(".")).collect()
}

#[tokio::test]
async fn config_advertises_prefix_and_endpoints() {
    let s = Server::start("");
    let r = s.client.get(format!("{}/v1/config", s.base)).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["overrides"]["prefix"], "catalog");
    let endpoints: Vec<&str> = body["endpoints"].as_array().unwrap().iter().map(|e| e.as_str().unwrap()).collect();
    assert!(endpoints.contains(&"GET /v1/{prefix}/namespaces"));
    assert!(endpoints.contains(&"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}"));
    assert!(endpoints.contains(&"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/plan"));
    // Not implemented: absent from the list and answered with 501.
    assert!(!endpoints.iter().any(|e| e.contains("/functions")));
    assert!(endpoints.contains(&"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/unregister"));
    assert!(endpoints.contains(&"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/sign"));
    let functions = s.get("/namespaces/db/functions").await;
    assert_error(&functions, 501, "UnsupportedOperationException");
    // A sign request names the request to sign.
    assert_error(&s.post("/namespaces/db/tables/t/sign", json!({})).await, 400, "BadRequestException");
    assert_error(&s.get("/no/such/route").await, 404, "NotFoundException");
}

#[tokio::test]
async fn namespace_lifecycle() {
    let s = Server::start("");
    let created = s.post("/namespaces", json!({"namespace": ["sales"], "properties": {"owner": "ana"}})).await;
    assert_eq!(created.0, 200, "{}", created.1);
    assert_eq!(created.1, json!({"namespace": ["sales"], "properties": {"owner": "ana"}}));
    assert_error(&s.post("/namespaces", json!({"namespace": ["sales"]})).await, 409, "AlreadyExistsException");
    // Nested namespaces need their parent.
    assert_error(&s.post("/namespaces", json!({"namespace": ["nope", "x"]})).await, 404, "NoSuchNamespaceException");
    assert_eq!(s.post("/namespaces", json!({"namespace": ["sales", "eu"]})).await.0, 200);
    assert_error(&s.post("/namespaces", json!({"namespace": []})).await, 400, "BadRequestException");
    assert_error(&s.post("/namespaces", json!({"nonsense": 1})).await, 400, "BadRequestException");

    let loaded = s.get("/namespaces/sales").await;
    assert_eq!(
        (loaded.0, &loaded.1["namespace"], &loaded.1["properties"]["owner"]),
        (200, &json!(["sales"]), &json!("ana"))
    );
    assert_eq!(s.get("/namespaces/sales%1Feu").await.1["namespace"], json!(["sales", "eu"]));
    assert_eq!(s.head("/namespaces/sales").await, 204);
    assert_eq!(s.head("/namespaces/missing").await, 404);
    assert_error(&s.get("/namespaces/missing").await, 404, "NoSuchNamespaceException");

    let (status, top) = s.get("/namespaces").await;
    assert_eq!(status, 200);
    assert_eq!(names(&top), vec!["sales"]);
    let (_, children) = s.get("/namespaces?parent=sales").await;
    assert_eq!(names(&children), vec!["sales.eu"]);
    assert_error(&s.get("/namespaces?parent=missing").await, 404, "NoSuchNamespaceException");

    // Properties: updated, removed and missing are always present.
    let update = s
        .post("/namespaces/sales/properties", json!({"removals": ["owner", "ghost"], "updates": {"tier": "gold"}}))
        .await;
    assert_eq!(update, (200, json!({"updated": ["tier"], "removed": ["owner"], "missing": ["ghost"]})));
    // A namespace says where its tables go: its location, derived from the warehouse's
    // where it records none (docs/storage.md), as a nested one's from its parent's.
    let warehouse = format!("file://{}/data/warehouse", s.dir.path().display());
    assert_eq!(
        s.get("/namespaces/sales").await.1["properties"],
        json!({"tier": "gold", "location": format!("{warehouse}/sales")})
    );
    assert_eq!(s.get("/namespaces/sales%1Feu").await.1["properties"]["location"], format!("{warehouse}/sales/eu"));
    let placed = json!({"namespace": ["placed"], "properties": {"location": format!("{warehouse}/elsewhere")}});
    assert_eq!(s.post("/namespaces", placed).await.0, 200);
    assert_eq!(s.post("/namespaces", json!({"namespace": ["placed", "inner"]})).await.0, 200);
    let inner = s.get("/namespaces/placed%1Finner").await.1;
    assert_eq!(inner["properties"]["location"], format!("{warehouse}/elsewhere/inner"), "{inner}");
    assert_eq!(s.delete("/namespaces/placed%1Finner").await.0, 204);
    assert_eq!(s.delete("/namespaces/placed").await.0, 204);
    assert_error(
        &s.post("/namespaces/sales/properties", json!({"removals": ["a"], "updates": {"a": "1"}})).await,
        422,
        "UnprocessableEntityException",
    );
    assert_error(
        &s.post("/namespaces/missing/properties", json!({"updates": {"a": "1"}})).await,
        404,
        "NoSuchNamespaceException",
    );

    // Drop: 409 while not empty, then 204, then 404.
    assert_error(&s.delete("/namespaces/sales").await, 409, "NamespaceNotEmptyException");
    assert_eq!(s.delete("/namespaces/sales%1Feu").await.0, 204);
    assert_eq!(s.delete("/namespaces/sales").await.0, 204);
    assert_error(&s.delete("/namespaces/sales").await, 404, "NoSuchNamespaceException");
    assert_eq!(names(&s.get("/namespaces").await.1), Vec::<String>::new());
}

#[tokio::test]
async fn namespace_paging_walks_everything_once() {
    let s = Server::start("");
    let mut expected = vec![];
    for i in 0..25 {
        let name = format!("ns{i:02}");
        assert_eq!(s.post("/namespaces", json!({"namespace": [name]})).await.0, 200);
        expected.push(name);
    }
    // Without a pageToken: everything, no token.
    let (_, all) = s.get("/namespaces").await;
    assert_eq!(names(&all), expected);
    assert!(all.get("next-page-token").is_none());

    let mut seen = vec![];
    let mut token = String::new();
    let mut pages = 0;
    loop {
        let (status, page) = s.get(&format!("/namespaces?pageToken={token}&pageSize=10")).await;
        assert_eq!(status, 200);
        pages += 1;
        seen.extend(names(&page));
        match page["next-page-token"].as_str() {
            Some(next) => token = next.to_string(),
            None => break,
        }
    }
    assert_eq!(seen, expected);
    assert_eq!(pages, 3);

    // A token this server did not issue restarts the listing rather than seeking.
    let (status, restarted) = s.get("/namespaces?pageToken=bm90LW91cnM.AAAA&pageSize=5").await;
    assert_eq!(status, 200);
    assert_eq!(names(&restarted), expected[..5].to_vec());
}

async fn create_table(s: &Server, ns: &str, name: &str) -> Value {
    let (status, body) = s.post(&format!("/namespaces/{ns}/tables"), json!({"name": name, "schema": schema()})).await;
    assert_eq!(status, 200, "{body}");
    body
}

#[tokio::test]
async fn table_lifecycle() {
    let s = Server::start("");
    s.post("/namespaces", json!({"namespace": ["db"]})).await;
    s.post("/namespaces", json!({"namespace": ["other"]})).await;

    let created = create_table(&s, "db", "events").await;
    let location = created["metadata-location"].as_str().unwrap().to_string();
    assert!(location.starts_with("file:///") && location.ends_with(".metadata.json"), "{location}");
    assert!(std::path::Path::new(location.strip_prefix("file://").unwrap()).exists(), "metadata file written");
    assert_eq!(created["metadata"]["format-version"], 2);
    assert_eq!(created["config"], json!({}));
    assert!(created.get("storage-credentials").is_none());

    assert_error(
        &s.post("/namespaces/db/tables", json!({"name": "events", "schema": schema()})).await,
        409,
        "AlreadyExistsException",
    );
    assert_error(
        &s.post("/namespaces/missing/tables", json!({"name": "t", "schema": schema()})).await,
        404,
        "NoSuchNamespaceException",
    );
    assert_error(&s.post("/namespaces/db/tables", json!({"name": "t"})).await, 400, "BadRequestException");
    // A client-supplied location must lie inside the warehouse.
    assert_error(
        &s.post("/namespaces/db/tables", json!({"name": "t", "schema": schema(), "location": "file:///tmp/elsewhere"}))
            .await,
        400,
        "BadRequestException",
    );

    let loaded = s.get("/namespaces/db/tables/events").await;
    assert_eq!(loaded.0, 200);
    assert_eq!(loaded.1["metadata-location"], location.as_str());
    assert_eq!(loaded.1["metadata"], created["metadata"]);
    assert_eq!(s.head("/namespaces/db/tables/events").await, 204);
    assert_eq!(s.head("/namespaces/db/tables/nope").await, 404);
    assert_error(&s.get("/namespaces/db/tables/nope").await, 404, "NoSuchTableException");
    assert_error(&s.get("/namespaces/missing/tables").await, 404, "NoSuchNamespaceException");

    // Commit: a property update writes a new metadata file and moves the pointer.
    let uuid = created["metadata"]["table-uuid"].clone();
    let commit = s
        .post(
            "/namespaces/db/tables/events",
            json!({
                "requirements": [{"type": "assert-table-uuid", "uuid": uuid}],
                "updates": [{"action": "set-properties", "updates": {"k": "v"}}]
            }),
        )
        .await;
    assert_eq!(commit.0, 200, "{}", commit.1);
    let new_location = commit.1["metadata-location"].as_str().unwrap();
    assert_ne!(new_location, location);
    assert_eq!(commit.1["metadata"]["properties"]["k"], "v");
    assert_eq!(commit.1["metadata"]["metadata-log"][0]["metadata-file"], location.as_str());
    assert_eq!(s.get("/namespaces/db/tables/events").await.1["metadata-location"], new_location);

    // A failed requirement is 409 CommitFailedException and changes nothing.
    let stale = s
        .post(
            "/namespaces/db/tables/events",
            json!({
                "requirements": [{"type": "assert-table-uuid", "uuid": "00000000-0000-0000-0000-000000000000"}],
                "updates": [{"action": "set-properties", "updates": {"k": "lost"}}]
            }),
        )
        .await;
    assert_error(&stale, 409, "CommitFailedException");
    assert_eq!(s.get("/namespaces/db/tables/events").await.1["metadata"]["properties"]["k"], "v");
    assert_error(
        &s.post("/namespaces/db/tables/nope", json!({"requirements": [], "updates": []})).await,
        404,
        "NoSuchTableException",
    );

    // Listing, renaming across namespaces, dropping.
    create_table(&s, "db", "alpha").await;
    let (_, listed) = s.get("/namespaces/db/tables").await;
    assert_eq!(
        listed["identifiers"],
        json!([{"namespace": ["db"], "name": "alpha"}, {"namespace": ["db"], "name": "events"}])
    );
    let rename = |from: &str, to_ns: &str, to: &str| json!({"source": {"namespace": ["db"], "name": from}, "destination": {"namespace": [to_ns], "name": to}});
    let r = s.client.post(s.url("/tables/rename")).json(&rename("events", "other", "moved")).send().await.unwrap();
    assert_eq!(r.status(), 204);
    assert_eq!(s.get("/namespaces/other/tables/moved").await.1["metadata-location"], new_location);
    assert_eq!(s.head("/namespaces/db/tables/events").await, 404);
    assert_error(&s.post("/tables/rename", rename("events", "other", "x")).await, 404, "NoSuchTableException");
    assert_error(&s.post("/tables/rename", rename("alpha", "missing", "x")).await, 404, "NoSuchNamespaceException");
    create_table(&s, "other", "taken").await;
    assert_error(&s.post("/tables/rename", rename("alpha", "other", "taken")).await, 409, "AlreadyExistsException");

    // The files of a live table cannot be registered again; dropped without a purge,
    // they belong to nobody and can be; a purge then deletes them.
    let twice = s.post("/namespaces/db/register", json!({"name": "again", "metadata-location": new_location})).await;
    assert_error(&twice, 409, "AlreadyExistsException");
    assert_eq!(s.delete("/namespaces/other/tables/moved").await.0, 204);
    let registered =
        s.post("/namespaces/db/register", json!({"name": "again", "metadata-location": new_location})).await;
    assert_eq!(registered.0, 200, "{}", registered.1);
    assert_eq!(registered.1["metadata-location"], new_location);
    assert_error(
        &s.post("/namespaces/db/register", json!({"name": "junk", "metadata-location": format!("{location}.missing")}))
            .await,
        400,
        "BadRequestException",
    );
    assert_eq!(s.delete("/namespaces/db/tables/again?purgeRequested=true").await.0, 204);
    let file = std::path::PathBuf::from(new_location.strip_prefix("file://").unwrap());
    for _ in 0..100 {
        if !file.exists() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(!file.exists(), "purged");
    assert_error(&s.delete("/namespaces/db/tables/again").await, 404, "NoSuchTableException");
}

#[tokio::test]
async fn staged_create_is_committed_with_assert_create() {
    let s = Server::start("");
    s.post("/namespaces", json!({"namespace": ["db"]})).await;
    let staged =
        s.post("/namespaces/db/tables", json!({"name": "staged", "schema": schema(), "stage-create": true})).await;
    assert_eq!(staged.0, 200, "{}", staged.1);
    assert!(staged.1.get("metadata-location").is_none());
    assert_eq!(s.head("/namespaces/db/tables/staged").await, 404, "a staged table is not recorded");

    let metadata = &staged.1["metadata"];
    let commit = json!({
        "requirements": [{"type": "assert-create"}],
        "updates": [
            {"action": "assign-uuid", "uuid": metadata["table-uuid"]},
            {"action": "upgrade-format-version", "format-version": 2},
            {"action": "add-schema", "schema": metadata["schemas"][0]},
            {"action": "set-current-schema", "schema-id": -1},
            {"action": "add-spec", "spec": {"spec-id": 0, "fields": []}},
            {"action": "set-default-spec", "spec-id": -1},
            {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
            {"action": "set-default-sort-order", "sort-order-id": -1},
            {"action": "set-location", "location": metadata["location"]},
            {"action": "set-properties", "updates": {"created": "staged"}}
        ]
    });
    let done = s.post("/namespaces/db/tables/staged", commit.clone()).await;
    assert_eq!(done.0, 200, "{}", done.1);
    assert_eq!(done.1["metadata"]["table-uuid"], metadata["table-uuid"]);
    assert_eq!(done.1["metadata"]["properties"]["created"], "staged");
    assert_eq!(s.head("/namespaces/db/tables/staged").await, 204);
    // The same create again fails its assert-create.
    assert_error(&s.post("/namespaces/db/tables/staged", commit).await, 409, "CommitFailedException");
}

#[tokio::test]
async fn metrics_reports_are_accepted_and_counted() {
    let s = Server::start("");
    s.post("/namespaces", json!({"namespace": ["db"]})).await;
    create_table(&s, "db", "t").await;
    let report = json!({
        "report-type": "scan-report", "table-name": "db.t", "snapshot-id": 1, "filter": true,
        "schema-id": 0, "projected-field-ids": [1], "projected-field-names": ["id"], "metrics": {}
    });
    let r = s.client.post(s.url("/namespaces/db/tables/t/metrics")).json(&report).send().await.unwrap();
    assert_eq!(r.status(), 204);
    assert_error(
        &s.post("/namespaces/db/tables/t/metrics", json!({"report-type": "nonsense"})).await,
        400,
        "BadRequestException",
    );
    assert_error(&s.post("/namespaces/db/tables/nope/metrics", report).await, 404, "NoSuchTableException");
    let text = s.client.get(format!("{}/metrics", s.base)).send().await.unwrap().text().await.unwrap();
    assert!(text.contains("rustberg_metrics_reports_total{report_type=\"scan-report\"} 1"), "{text}");
}

#[tokio::test]
async fn idempotency_keys_replay_the_final_response() {
    let s = Server::start("");
    let config: Value = s.client.get(format!("{}/v1/config", s.base)).send().await.unwrap().json().await.unwrap();
    assert_eq!(config["idempotency-key-lifetime"], "PT30M");
    let create = |key: &'static str| {
        s.client
            .post(s.url("/namespaces"))
            .header("Idempotency-Key", key)
            .json(&json!({"namespace": ["once"], "properties": {"n": "1"}}))
            .send()
    };
    let first = create("01937c3a-0000-7000-8000-000000000001").await.unwrap();
    assert_eq!(first.status(), 200);
    let first: Value = first.json().await.unwrap();
    // The retry is not a second create (which would be 409): it is the first answer again.
    let again = create("01937c3a-0000-7000-8000-000000000001").await.unwrap();
    assert_eq!(again.status(), 200);
    assert_eq!(again.json::<Value>().await.unwrap(), first);
    // A new key is a new operation.
    assert_eq!(create("01937c3a-0000-7000-8000-000000000002").await.unwrap().status(), 409);
    // The same key with another body is another request: refused, not answered with the first.
    let other = s
        .client
        .post(s.url("/namespaces"))
        .header("Idempotency-Key", "01937c3a-0000-7000-8000-000000000001")
        .json(&json!({"namespace": ["twice"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 422);
    assert_eq!(s.head("/namespaces/twice").await, 404, "nothing ran");
}

/// A page token belongs to one listing: used on another (other namespace, or views
/// instead of tables), it restarts that listing instead of seeking in it.
#[tokio::test]
async fn a_page_token_from_another_listing_restarts_it() {
    let s = Server::start("");
    for ns in ["x", "y"] {
        assert_eq!(s.post("/namespaces", json!({"namespace": [ns]})).await.0, 200);
    }
    for name in ["k", "l", "m"] {
        create_table(&s, "x", name).await;
    }
    for name in ["a", "b", "c", "n", "o"] {
        create_table(&s, "y", name).await;
    }
    let (_, first) = s.get("/namespaces/x/tables?pageToken=&pageSize=2").await;
    let token = first["next-page-token"].as_str().expect("more tables follow").to_string();
    let (status, other) = s.get(&format!("/namespaces/y/tables?pageToken={token}&pageSize=2")).await;
    assert_eq!(status, 200, "{other}");
    let names: Vec<&str> =
        other["identifiers"].as_array().unwrap().iter().map(|i| i["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["a", "b"], "restarted, not resumed after x's cursor");
    let (_, views) = s.get(&format!("/namespaces/x/views?pageToken={token}&pageSize=2")).await;
    assert_eq!(views["identifiers"], json!([]));
}

/// The router serves exactly the endpoints `Endpoint` names: each is routed (an
/// anonymous call is 401, not "no route"), and on the same paths every other method is
/// not (405; HEAD goes wherever GET does). The spec's endpoints the host does not serve yet answer 501.
#[tokio::test]
async fn the_router_serves_exactly_the_endpoints_the_type_names() {
    use rustberg::api::Endpoint;
    let s = Server::start("");
    let anonymous = s.anonymous();
    let concrete = |path: &str| {
        format!(
            "{}/v1/catalog{}",
            s.base,
            path.replace("{namespace}", "a").replace("{table}", "t").replace("{view}", "v").replace("{plan-id}", "p")
        )
    };
    let methods = [reqwest::Method::GET, reqwest::Method::HEAD, reqwest::Method::POST, reqwest::Method::DELETE];
    let paths: std::collections::BTreeSet<&str> = Endpoint::ALL.iter().map(|e| e.path()).collect();
    for path in paths {
        for method in &methods {
            // HTTP serves HEAD wherever GET is served (axum answers it with the GET handler).
            let served = Endpoint::ALL.iter().any(|e| {
                e.path() == path && (e.method() == *method || (*method == reqwest::Method::HEAD && e.method() == "GET"))
            });
            let status = anonymous.client.request(method.clone(), concrete(path)).send().await.unwrap().status();
            let expected = if served { 401 } else { 405 };
            assert_eq!(status.as_u16(), expected, "{method} {path}");
        }
    }
    for (method, path) in [(reqwest::Method::GET, "/namespaces/{namespace}/functions")] {
        let got = anonymous.client.request(method.clone(), concrete(path)).send().await.unwrap().status();
        assert_eq!(got.as_u16(), 501, "{method} {path}");
    }
}

/// `snapshots=refs` loads only the snapshots a branch or tag references; `all` (the
/// default) every one; anything else is a 400. The rest of the metadata is the same.
#[tokio::test]
async fn a_load_with_snapshots_refs_carries_only_the_referenced_snapshots() {
    let s = Server::start("");
    assert_eq!(s.post("/namespaces", json!({"namespace": ["db"]})).await.0, 200);
    assert_eq!(s.post("/namespaces/db/tables", json!({"name": "t", "schema": schema()})).await.0, 200);
    for id in [1, 2, 3] {
        assert_eq!(support::append_snapshot(&s, id).await, 200);
    }
    let tag = json!({"requirements": [], "updates": [
        {"action": "set-snapshot-ref", "ref-name": "v1", "type": "tag", "snapshot-id": 1}]});
    assert_eq!(s.post("/namespaces/db/tables/t", tag).await.0, 200);
    let ids = |body: &Value| -> Vec<i64> {
        body["metadata"]["snapshots"].as_array().unwrap().iter().map(|s| s["snapshot-id"].as_i64().unwrap()).collect()
    };
    let (status, all) = s.get("/namespaces/db/tables/t").await;
    assert_eq!((status, ids(&all)), (200, vec![1, 2, 3]));
    assert_eq!(ids(&s.get("/namespaces/db/tables/t?snapshots=all").await.1), [1, 2, 3]);
    let (status, refs) = s.get("/namespaces/db/tables/t?snapshots=refs").await;
    assert_eq!((status, ids(&refs)), (200, vec![1, 3]), "main's head and the tag's snapshot");
    assert_eq!(refs["metadata-location"], all["metadata-location"]);
    assert_eq!(refs["metadata"]["refs"], all["metadata"]["refs"]);
    assert_eq!(refs["metadata"]["snapshot-log"], all["metadata"]["snapshot-log"]);
    assert_error(&s.get("/namespaces/db/tables/t?snapshots=some").await, 400, "BadRequestException");
}

/// unregisterTable answers the last metadata location and metadata, removes the table
/// and keeps every file; a commit through an old handle gets 404; the location is free
/// again, so the same files register again.
#[tokio::test]
async fn unregister_forgets_a_table_and_keeps_its_files() {
    let s = Server::start("");
    assert_eq!(s.post("/namespaces", json!({"namespace": ["db"]})).await.0, 200);
    let (status, created) = s.post("/namespaces/db/tables", json!({"name": "t", "schema": schema()})).await;
    assert_eq!(status, 200, "{created}");
    let uuid = created["metadata"]["table-uuid"].clone();
    let set = json!({"requirements": [{"type": "assert-table-uuid", "uuid": uuid}],
                     "updates": [{"action": "set-properties", "updates": {"k": "v"}}]});
    let (status, committed) = s.post("/namespaces/db/tables/t", set.clone()).await;
    assert_eq!(status, 200, "{committed}");

    let (status, unregistered) = s.post("/namespaces/db/tables/t/unregister", json!({})).await;
    assert_eq!(status, 200, "{unregistered}");
    let location = committed["metadata-location"].as_str().unwrap();
    assert_eq!(unregistered["metadata-location"], location, "the last commit's metadata");
    assert_eq!(unregistered["metadata"]["properties"]["k"], "v");
    assert!(unregistered.get("config").is_none(), "{unregistered}");
    assert_error(&s.get("/namespaces/db/tables/t").await, 404, "NoSuchTableException");
    assert_error(&s.post("/namespaces/db/tables/t", set).await, 404, "NoSuchTableException");
    assert_error(&s.post("/namespaces/db/tables/t/unregister", json!({})).await, 404, "NoSuchTableException");
    let file = location.strip_prefix("file://").unwrap();
    assert!(std::path::Path::new(file).exists(), "the metadata file is kept: {file}");

    // The location's claim went with the table: the same files register again.
    let register = json!({"name": "t2", "metadata-location": location});
    let (status, registered) = s.post("/namespaces/db/register", register).await;
    assert_eq!(status, 200, "{registered}");
    assert_eq!(s.get("/namespaces/db/tables/t2").await.1["metadata"]["properties"]["k"], "v");
}

/// A load's answer, raw: status, headers and body bytes.
async fn load_raw(s: &Server, path: &str, headers: &[(&str, &str)]) -> (u16, reqwest::header::HeaderMap, Vec<u8>) {
    let mut request = s.client.get(s.url(path));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let r = request.send().await.unwrap();
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    (status, headers, r.bytes().await.unwrap().to_vec())
}

fn etag_of(headers: &reqwest::header::HeaderMap) -> String {
    headers.get("etag").expect("an ETag").to_str().unwrap().to_string()
}

/// loadTable and loadView answer with an ETag, private to the caller; If-None-Match
/// with it gets 304 and no body until the table changes. Each representation
/// (snapshots=all or refs, with or without vended credentials) has its own tag, and the
/// answers to create, update and register carry the tag a load then has.
#[tokio::test]
async fn loads_carry_etags_and_a_matching_if_none_match_gets_304() {
    let s = Server::start("");
    assert_eq!(s.post("/namespaces", json!({"namespace": ["db"]})).await.0, 200);
    let created = s.client.post(s.url("/namespaces/db/tables")).json(&json!({"name": "t", "schema": schema()}));
    let created = created.send().await.unwrap();
    assert_eq!(created.status(), 200);
    let created_tag = etag_of(created.headers());

    let (status, headers, body) = load_raw(&s, "/namespaces/db/tables/t", &[]).await;
    assert_eq!(status, 200);
    let tag = etag_of(&headers);
    assert_eq!(tag, created_tag, "the create answered the tag a load has");
    assert_eq!(headers["cache-control"], "private");
    assert_eq!(headers["vary"], "Authorization");
    assert!(!body.is_empty());

    for sent in [tag.clone(), format!("W/{tag}"), format!("\"other\", {tag}")] {
        let (status, headers, body) = load_raw(&s, "/namespaces/db/tables/t", &[("if-none-match", &sent)]).await;
        assert_eq!((status, body.len()), (304, 0), "If-None-Match: {sent}");
        assert_eq!(etag_of(&headers), tag);
        assert_eq!(headers["cache-control"], "private");
    }
    for other in ["\"0123\"", "*"] {
        assert_eq!(load_raw(&s, "/namespaces/db/tables/t", &[("if-none-match", other)]).await.0, 200, "{other}");
    }

    // Another representation of the same metadata: another tag, and the first is no match.
    let inm = [("if-none-match", tag.as_str())];
    let (status, headers, _) = load_raw(&s, "/namespaces/db/tables/t?snapshots=refs", &inm).await;
    assert_eq!(status, 200);
    let refs_tag = etag_of(&headers);
    let vended = [("if-none-match", tag.as_str()), ("x-iceberg-access-delegation", "vended-credentials")];
    let (status, headers, _) = load_raw(&s, "/namespaces/db/tables/t", &vended).await;
    assert_eq!(status, 200);
    let vended_tag = etag_of(&headers);
    assert!(refs_tag != tag && vended_tag != tag && vended_tag != refs_tag);
    let vended = [("if-none-match", vended_tag.as_str()), ("x-iceberg-access-delegation", "vended-credentials")];
    assert_eq!(load_raw(&s, "/namespaces/db/tables/t", &vended).await.0, 304);

    // A commit changes the tag, and answers the new one.
    let set = json!({"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]});
    let committed = s.client.post(s.url("/namespaces/db/tables/t")).json(&set).send().await.unwrap();
    assert_eq!(committed.status(), 200);
    let committed_tag = etag_of(committed.headers());
    assert!(committed_tag != tag);
    let (status, headers, body) = load_raw(&s, "/namespaces/db/tables/t", &inm).await;
    assert_eq!(status, 200, "the table changed");
    assert_eq!(etag_of(&headers), committed_tag);
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(body["metadata"]["properties"]["k"], "v");

    // A registration answers the tag its loads have.
    let location = body["metadata-location"].as_str().unwrap();
    let registered = s.client.post(s.url("/namespaces/db/tables/t/unregister")).json(&json!({}));
    assert_eq!(registered.send().await.unwrap().status(), 200);
    let register = json!({"name": "t", "metadata-location": location});
    let registered = s.client.post(s.url("/namespaces/db/register")).json(&register).send().await.unwrap();
    assert_eq!(registered.status(), 200);
    let registered_tag = etag_of(registered.headers());
    let inm = [("if-none-match", registered_tag.as_str())];
    assert_eq!(load_raw(&s, "/namespaces/db/tables/t", &inm).await.0, 304);

    // Views: created, loaded, replaced.
    let view = json!({
        "name": "v", "schema": schema(),
        "view-version": {"version-id": 1, "timestamp-ms": 1_700_000_000_000_i64, "schema-id": 0,
            "summary": {"engine-name": "spark"},
            "default-namespace": ["db"],
            "representations": [{"type": "sql", "sql": "select 1", "dialect": "spark"}]}
    });
    let created = s.client.post(s.url("/namespaces/db/views")).json(&view).send().await.unwrap();
    assert_eq!(created.status(), 200);
    let view_tag = etag_of(created.headers());
    let inm = [("if-none-match", view_tag.as_str())];
    let (status, headers, body) = load_raw(&s, "/namespaces/db/views/v", &inm).await;
    assert_eq!((status, body.len(), etag_of(&headers)), (304, 0, view_tag.clone()));
    let set = json!({"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]});
    let replaced = s.client.post(s.url("/namespaces/db/views/v")).json(&set).send().await.unwrap();
    assert_eq!(replaced.status(), 200);
    let replaced_tag = etag_of(replaced.headers());
    let (status, headers, _) = load_raw(&s, "/namespaces/db/views/v", &inm).await;
    assert_eq!((status, etag_of(&headers)), (200, replaced_tag));
}
