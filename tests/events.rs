//! Events: one per committed change, none for a refused one, read through
//! `POST /v1/catalog/events` as a listing is (a caller sees only what it may read),
//! kept through kill -9 (the event rides the change's commit), numbered once across two
//! hosts over one Postgres, and pushed to a webhook that was down, signed.

use crate::support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use support::{acme_and_evil_writers, assert_error, hash_secret, postgres_database, schema, Api, Server};

/// Every event after `token` this caller may read, following the continuation tokens;
/// the events and the last token.
async fn all_events(api: &Api, mut query: Value) -> (Vec<Value>, String) {
    let mut events = Vec::new();
    loop {
        let (status, page) = api.post("/events", query.clone()).await;
        assert_eq!(status, 200, "{page}");
        let token = page["next-page-token"].as_str().unwrap().to_string();
        let got = page["events"].as_array().unwrap();
        events.extend(got.iter().cloned());
        if got.is_empty() && query.get("continuation-token").and_then(Value::as_str) == Some(token.as_str()) {
            return (events, token);
        }
        query["continuation-token"] = json!(token);
    }
}

/// The events once the relay has logged at least `at_least` of them (it runs as soon as
/// a change wakes it; a second at most otherwise).
async fn events_after(api: &Api, query: Value, at_least: usize) -> Vec<Value> {
    for _ in 0..100 {
        let (events, _) = all_events(api, query.clone()).await;
        if events.len() >= at_least {
            return events;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (events, _) = all_events(api, query.clone()).await;
    eprintln!("{:?}", api.post("/events", query).await);
    panic!("fewer than {at_least} events were logged: {:?}", kinds(&events));
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["operation"]["operation-type"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn every_change_is_told_once_in_order_and_a_refused_one_not_at_all() {
    let s = Server::start("");
    let (status, config) = s.send(reqwest::Method::GET, "/v1/config", None).await;
    assert_eq!(status, 200);
    assert!(config["endpoints"].as_array().unwrap().contains(&json!("POST /v1/{prefix}/events")), "{config}");

    assert_eq!(s.post("/namespaces", json!({"namespace": ["db"], "properties": {"owner": "ann"}})).await.0, 200);
    let (status, created) = s.post("/namespaces/db/tables", json!({"name": "t", "schema": schema()})).await;
    assert_eq!(status, 200, "{created}");
    let uuid = created["metadata"]["table-uuid"].as_str().unwrap().to_string();
    let first = created["metadata-location"].as_str().unwrap().to_string();
    // A commit, told with its request id, the files before and after and its snapshot.
    let commit = json!({"requirements": [{"type": "assert-table-uuid", "uuid": uuid}], "updates": [
        {"action": "set-properties", "updates": {"k": "v"}},
    ]});
    let answer = s
        .client
        .post(s.url("/namespaces/db/tables/t"))
        .header("x-request-id", "commit-1")
        .json(&commit)
        .send()
        .await
        .unwrap();
    let (status, committed) = support::status_json(answer).await;
    assert_eq!(status, 200, "{committed}");
    let second = committed["metadata-location"].as_str().unwrap().to_string();
    // Refused (a requirement fails): no event.
    let stale = json!({"requirements": [{"type": "assert-table-uuid", "uuid": "00000000-0000-0000-0000-000000000000"}],
        "updates": [{"action": "set-properties", "updates": {"refused": "1"}}]});
    assert_eq!(s.post("/namespaces/db/tables/t", stale).await.0, 409);
    assert_eq!(s.post("/namespaces/db/properties", json!({"updates": {"a": "1"}, "removals": ["owner"]})).await.0, 200);
    let rename =
        json!({"source": {"namespace": ["db"], "name": "t"}, "destination": {"namespace": ["db"], "name": "u"}});
    assert_eq!(s.post("/tables/rename", rename).await.0, 204);
    assert_eq!(s.delete("/namespaces/db/tables/u").await.0, 204);
    assert_eq!(s.delete("/namespaces/db").await.0, 204);

    let events = events_after(&s, json!({}), 7).await;
    assert_eq!(
        kinds(&events),
        [
            "create-namespace",
            "create-table",
            "update-table",
            "update-namespace-properties",
            "rename-table",
            "drop-table",
            "drop-namespace"
        ]
    );
    let ids: BTreeSet<&str> = events.iter().map(|e| e["event-id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), events.len(), "each event has an id of its own");
    let update = &events[2];
    assert_eq!(update["request-id"], "commit-1");
    assert_eq!(update["request-event-count"], 1);
    assert!(update["actor"]["principal"].as_str().is_some_and(|p| !p.is_empty()), "{update}");
    let op = &update["operation"];
    assert_eq!(op["identifier"], json!({"namespace": ["db"], "name": "t"}));
    assert_eq!(op["table-uuid"], uuid.as_str());
    assert_eq!(op["metadata-location-before"], first.as_str());
    assert_eq!(op["metadata-location"], second.as_str());
    assert_eq!(op["updates"][0]["action"], "set-properties");
    assert_eq!(events[1]["operation"]["table-uuid"], uuid.as_str());
    assert_eq!(events[3]["operation"]["updated"], json!(["a"]));
    assert_eq!(events[3]["operation"]["removed"], json!(["owner"]));
    assert_eq!(events[4]["operation"]["source"]["name"], "t");
    assert_eq!(events[4]["operation"]["destination"]["name"], "u");
    assert_eq!(events[4]["operation"]["uuid"], uuid.as_str(), "a rename names what it moved");
    assert_eq!(events[5]["operation"]["table-uuid"], uuid.as_str());
    assert_eq!(events[5]["operation"]["purge"], false);
    assert!(!events.iter().any(|e| e.to_string().contains("refused")), "no event of the refused commit");

    // Filters: by type, by name (a namespace names all within it), by uuid; pages.
    let (only, _) = all_events(&s, json!({"operation-types": ["update-table", "drop-table"]})).await;
    assert_eq!(kinds(&only), ["update-table", "drop-table"]);
    let (named, _) = all_events(&s, json!({"catalog-objects-by-name": [["db", "u"]]})).await;
    assert_eq!(kinds(&named), ["rename-table", "drop-table"], "a rename matches by its new name");
    let (by_uuid, _) = all_events(&s, json!({"catalog-objects-by-id": [{"uuid": uuid, "type": "table"}]})).await;
    assert_eq!(by_uuid.len(), 4);
    let (tables, _) = all_events(&s, json!({"object-types": ["namespace"]})).await;
    assert_eq!(kinds(&tables), ["create-namespace", "update-namespace-properties", "drop-namespace"]);
    let (status, page) = s.post("/events", json!({"page-size": 2})).await;
    assert_eq!(status, 200);
    assert_eq!(page["events"].as_array().unwrap().len(), 2);
    let (_, rest) = s.post("/events", json!({"page-size": 100, "continuation-token": page["next-page-token"]})).await;
    assert_eq!(kinds(rest["events"].as_array().unwrap()), kinds(&events)[2..], "the token resumes after the page");
    assert!(rest["highest-processed-timestamp-ms"].as_i64().unwrap() >= events[6]["timestamp-ms"].as_i64().unwrap());

    assert_error(&s.post("/events", json!({"continuation-token": "not-a-token"})).await, 400, "BadRequestException");
    assert_error(&s.post("/events", json!({"page-sise": 2})).await, 400, "BadRequestException");
    assert_error(&s.post("/events", json!({"custom-filters": {"x": 1}})).await, 400, "BadRequestException");
}

#[tokio::test]
async fn a_caller_sees_only_the_events_of_what_it_may_read() {
    let s = Server::start(&acme_and_evil_writers());
    let (acme, evil) = (s.login("acme", "acme-secret"), s.login("evil", "evil-secret"));
    assert_eq!(acme.post("/namespaces", json!({"namespace": ["acme_ns"]})).await.0, 200);
    assert_eq!(acme.post("/namespaces/acme_ns/tables", json!({"name": "secret", "schema": schema()})).await.0, 200);
    assert_eq!(evil.post("/namespaces", json!({"namespace": ["evil_ns"]})).await.0, 200);

    let everything = events_after(&s, json!({}), 3).await;
    assert_eq!(everything.len(), 3);
    let (seen, _) = all_events(&evil, json!({})).await;
    assert_eq!(kinds(&seen), ["create-namespace"], "{seen:?}");
    assert_eq!(seen[0]["operation"]["namespace"], json!(["evil_ns"]));
    // Asking for acme's names by name or by uuid shows nothing either.
    let (asked, _) = all_events(&evil, json!({"catalog-objects-by-name": [["acme_ns"]]})).await;
    assert!(asked.is_empty(), "{asked:?}");
    let (mine, _) = all_events(&acme, json!({})).await;
    assert_eq!(kinds(&mine), ["create-namespace", "create-table"]);

    // A grant makes acme's table readable to evil, and its events with it.
    s.grant(json!({"namespace": ["acme_ns"], "table": "secret", "privilege": "read", "principal": "evil"})).await;
    let (seen, _) = all_events(&evil, json!({})).await;
    assert_eq!(kinds(&seen), ["create-table", "create-namespace"]);
}

/// Tenants, principals and grants changed through the management API are told as custom
/// events (`x-…`), read by server admins only; a refused change is not told.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_of_tenants_principals_and_grants_are_told_to_server_admins() {
    use reqwest::Method;
    let s = Server::start(&acme_and_evil_writers());
    let evil = s.login("evil", "evil-secret");
    assert_eq!(s.send(Method::POST, "/management/v1/tenants", Some(json!({"name": "initech"}))).await.0, 201);
    let principal = json!({"name": "milton", "tenant": "initech", "role": "reader"});
    let (status, created) = s.send(Method::POST, "/management/v1/principals", Some(principal)).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(s.post("/namespaces", json!({"namespace": ["stapler"]})).await.0, 200);
    let grant = s.grant(json!({"namespace": ["stapler"], "privilege": "read", "tenant": "initech"})).await;
    let revoke = format!("/management/v1/grants/{}", grant["id"].as_str().unwrap());
    assert_eq!(s.send(Method::DELETE, &revoke, None).await.0, 204);
    // Refused (evil is no admin): not told.
    let refused = evil.send(Method::POST, "/management/v1/tenants", Some(json!({"name": "evilcorp"}))).await;
    assert_eq!(refused.0, 403);
    assert_eq!(s.send(Method::DELETE, "/management/v1/principals/milton", None).await.0, 204);
    assert_eq!(s.send(Method::DELETE, "/management/v1/tenants/initech", None).await.0, 204);

    let told = events_after(&s, json!({}), 7).await;
    let custom: Vec<&str> = told.iter().filter_map(|e| e["operation"]["custom-type"].as_str()).collect();
    assert_eq!(
        custom,
        [
            "x-tenant-created",
            "x-principal-created",
            "x-grant-created",
            "x-grant-revoked",
            "x-principal-deleted",
            "x-tenant-deleted"
        ],
        "{told:?}"
    );
    let principal_event = told.iter().find(|e| e["operation"]["custom-type"] == "x-principal-created").unwrap();
    assert_eq!(principal_event["operation"]["operation-type"], "custom");
    assert_eq!(principal_event["operation"]["principal"]["name"], "milton");
    assert!(principal_event["operation"]["principal"].get("client-secret").is_none(), "no secret in an event");
    let granted = told.iter().find(|e| e["operation"]["custom-type"] == "x-grant-created").unwrap();
    assert_eq!(granted["operation"]["grant"]["id"], grant["id"]);
    // A writer of another tenant reads none of them.
    let (seen, _) = all_events(&evil, json!({})).await;
    assert!(seen.iter().all(|e| e["operation"]["operation-type"] != "custom"), "{seen:?}");
}

/// A table's create (also a staged one) and register in the root catalog carry their
/// events in their own commit: with events on, they make no more commits than with
/// events off, and each is told.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tables_create_and_register_carry_their_events_in_their_commit() {
    async fn commits(s: &Server) -> u64 {
        let text = reqwest::get(format!("{}/metrics", s.base)).await.unwrap().text().await.unwrap();
        text.lines()
            .filter(|l| l.starts_with("rustberg_kv_commits_total{") && l.contains("store=\"redb\""))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap() as u64)
            .sum()
    }
    let mut made = Vec::new();
    for config in ["[events]\nenabled = false\n", ""] {
        let s = Server::start(config);
        assert_eq!(s.post("/namespaces", json!({"namespace": ["db"]})).await.0, 200);
        let before = commits(&s).await;
        let (status, created) = s.post("/namespaces/db/tables", json!({"name": "t", "schema": schema()})).await;
        assert_eq!(status, 200, "{created}");
        let staged = json!({"name": "s", "schema": schema(), "stage-create": true});
        let (status, staged) = s.post("/namespaces/db/tables", staged).await;
        assert_eq!(status, 200, "{staged}");
        let complete = json!({
            "requirements": [{"type": "assert-create"}],
            "updates": [
                {"action": "assign-uuid", "uuid": staged["metadata"]["table-uuid"]},
                {"action": "upgrade-format-version", "format-version": 2},
                {"action": "add-schema", "schema": staged["metadata"]["schemas"][0]},
                {"action": "set-current-schema", "schema-id": -1},
                {"action": "add-spec", "spec": {"spec-id": 0, "fields": []}},
                {"action": "set-default-spec", "spec-id": -1},
                {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
                {"action": "set-default-sort-order", "sort-order-id": -1},
                {"action": "set-location", "location": staged["metadata"]["location"]},
            ],
        });
        let (status, completed) = s.post("/namespaces/db/tables/s", complete).await;
        assert_eq!(status, 200, "{completed}");
        let creating = commits(&s).await - before;
        // An unregister is a drop, whose event is written after it (not counted here).
        assert_eq!(s.post("/namespaces/db/tables/t/unregister", json!({})).await.0, 200);
        let before_register = commits(&s).await;
        let register = json!({"name": "t", "metadata-location": created["metadata-location"]});
        let (status, registered) = s.post("/namespaces/db/register", register).await;
        assert_eq!(status, 200, "{registered}");
        let registering = commits(&s).await - before_register;
        made.push((creating, registering));
        if config.is_empty() {
            let told = events_after(&s, json!({}), 5).await;
            assert_eq!(
                kinds(&told),
                ["create-namespace", "create-table", "create-table", "drop-table", "register-table"]
            );
        }
    }
    assert_eq!(made[0], made[1], "the same commits with events off and on: (creates, register)");
}

const WRITERS: usize = 16;

/// The property key an `update-table` event of the storm set.
fn key_of(event: &Value) -> Option<String> {
    let updates = event["operation"]["updates"].as_array()?;
    updates.iter().find_map(|u| u["updates"].as_object()?.keys().next().cloned())
}

/// kill -9 in a storm of 16 writers: after the restart, every change that is there
/// (acknowledged or not) has exactly one event, every acknowledged one is there, and no
/// event tells of a change that is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn after_kill_9_every_change_has_exactly_one_event() {
    let config = format!(
        "[auth.principals.ann]\ntenant = \"acme\"\nrole = \"writer\"\nsecret_hash = \"{}\"\n",
        hash_secret("pw")
    );
    let s = Server::start(&config);
    let ann = s.login("ann", "pw");
    assert_eq!(ann.post("/namespaces", json!({"namespace": ["db"]})).await.0, 200);
    for w in 0..WRITERS {
        assert_eq!(
            ann.post("/namespaces/db/tables", json!({"name": format!("t{w}"), "schema": schema()})).await.0,
            200
        );
    }
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> =
        (0..WRITERS).map(|w| tokio::spawn(support::write_storm(ann.clone(), w, stop.clone()))).collect();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let s = s.restart(&config).expect("the server starts again after kill -9");
    stop.store(true, Ordering::Relaxed);
    let mut acked = Vec::new();
    for writer in writers {
        acked.push(writer.await.unwrap());
    }
    let ann = s.login("ann", "pw");

    // What is there now: the namespaces, and each table's properties.
    let (_, listed) = ann.get("/namespaces").await;
    let present_namespaces: BTreeSet<String> =
        support::namespace_names(&listed).into_iter().map(|n| n[0].clone()).filter(|n| n != "db").collect();
    let mut present_keys = BTreeSet::new();
    for w in 0..WRITERS {
        let (_, table) = ann.get(&format!("/namespaces/db/tables/t{w}")).await;
        for key in table["metadata"]["properties"].as_object().unwrap().keys().filter(|k| k.starts_with('w')) {
            present_keys.insert(key.clone());
        }
    }
    for a in &acked {
        assert!(a.namespaces.iter().all(|n| present_namespaces.contains(n)), "an acknowledged namespace was lost");
        assert!(a.properties.iter().all(|k| present_keys.contains(k)), "an acknowledged commit was lost");
    }
    let page_size = json!({"page-size": 1000});
    let events = events_after(&s, page_size, 1 + WRITERS + present_namespaces.len() + present_keys.len()).await;
    let mut by_id = BTreeMap::new();
    for event in &events {
        by_id.insert(event["event-id"].as_str().unwrap().to_string(), event.clone());
    }
    assert_eq!(by_id.len(), events.len(), "no event is logged twice");
    let mut told_namespaces = BTreeMap::<String, usize>::new();
    let mut told_keys = BTreeMap::<String, usize>::new();
    for event in by_id.values() {
        match event["operation"]["operation-type"].as_str().unwrap() {
            "create-namespace" => {
                *told_namespaces.entry(event["operation"]["namespace"][0].as_str().unwrap().into()).or_default() += 1
            }
            "update-table" => *told_keys.entry(key_of(event).unwrap()).or_default() += 1,
            _ => {}
        }
    }
    told_namespaces.remove("db");
    assert_eq!(
        told_namespaces.keys().cloned().collect::<BTreeSet<_>>(),
        present_namespaces,
        "one event per namespace there"
    );
    assert!(told_namespaces.values().all(|n| *n == 1));
    assert_eq!(told_keys.keys().cloned().collect::<BTreeSet<_>>(), present_keys, "one event per commit there");
    assert!(told_keys.values().all(|n| *n == 1));
    let acked_total: usize = acked.iter().map(|a| a.namespaces.len() + a.properties.len()).sum();
    eprintln!(
        "{acked_total} changes acknowledged before the kill; {} events, each of a change that is there",
        events.len()
    );
}

/// Two hosts over one Postgres, both committing: every commit is logged once, numbered
/// without a gap, whichever host's relay moved it; the events ride the commits there too.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hosts_over_postgres_log_each_event_once() {
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
    assert_eq!(b.post("/namespaces/db/tables", json!({"name": "t", "schema": schema()})).await.0, 200);
    let mut tasks = Vec::new();
    for w in 0..8 {
        let host = if w % 2 == 0 { a.clone() } else { b.clone() };
        tasks.push(tokio::spawn(async move {
            let mut landed = 0;
            for n in 0..10 {
                let commit = json!({"requirements": [], "updates": [{"action": "set-properties", "updates": {format!("w{w}k{n}"): "1"}}]});
                landed += usize::from(host.post("/namespaces/db/tables/t", commit).await.0 == 200);
            }
            landed
        }));
    }
    let mut landed = 0;
    for task in tasks {
        landed += task.await.unwrap();
    }
    let events = events_after(&b, json!({"page-size": 1000, "operation-types": ["update-table"]}), landed).await;
    let keys: BTreeSet<String> = events.iter().filter_map(key_of).collect();
    assert_eq!(keys.len(), landed, "each landed commit told once: {} events", events.len());
    assert_eq!(events.len(), landed);
    // Read from the other host, the log is the same.
    let (from_a, _) = all_events(&a, json!({"page-size": 1000})).await;
    assert_eq!(from_a.len(), landed + 2);
}

/// A webhook receiver that is down when the changes are made gets every event once it
/// comes up, each a CloudEvent signed as Standard Webhooks specifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_down_for_a_while_gets_every_event_signed() {
    use base64::Engine as _;
    use hmac::Mac as _;

    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let key = b"a webhook secret of thirty-two b";
    let secret = format!("whsec_{}", base64::engine::general_purpose::STANDARD.encode(key));
    let s = Server::start(&format!(
        "[events.webhook.hook]\nurl = \"http://127.0.0.1:{port}/hook\"\nsecret = \"{secret}\"\n"
    ));
    for n in 0..5 {
        assert_eq!(s.post("/namespaces", json!({"namespace": [format!("ns{n}")]})).await.0, 200);
    }
    // Down for a while: the deliveries fail and back off.
    tokio::time::sleep(Duration::from_secs(std::env::var("WEBHOOK_DOWN_SECS").map_or(60, |v| v.parse().unwrap())))
        .await;
    let received: Arc<Mutex<Vec<(axum::http::HeaderMap, bytes::Bytes)>>> = Arc::default();
    let store = received.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: axum::http::HeaderMap, body: bytes::Bytes| {
            let store = store.clone();
            async move {
                store.lock().unwrap().push((headers, body));
                axum::http::StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let deadline = std::time::Instant::now() + Duration::from_secs(45);
    while received.lock().unwrap().len() < 5 {
        assert!(std::time::Instant::now() < deadline, "only {} of 5 delivered", received.lock().unwrap().len());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let received = received.lock().unwrap().clone();
    let mut namespaces = Vec::new();
    for (headers, body) in &received {
        let header = |name: &str| headers[name].to_str().unwrap().to_string();
        let (id, timestamp) = (header("webhook-id"), header("webhook-timestamp"));
        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(key).unwrap();
        mac.update(format!("{id}.{timestamp}.").as_bytes());
        mac.update(body);
        let expected = format!("v1,{}", base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes()));
        assert_eq!(header("webhook-signature"), expected, "a valid signature");
        assert_eq!(header("content-type"), "application/cloudevents+json");
        let envelope: Value = serde_json::from_slice(body).unwrap();
        assert_eq!(envelope["specversion"], "1.0");
        assert_eq!(envelope["id"], id.as_str());
        assert_eq!(envelope["type"], "org.apache.iceberg.create-namespace");
        assert_eq!(envelope["data"]["event-id"], id.as_str());
        namespaces.push(envelope["data"]["operation"]["namespace"][0].as_str().unwrap().to_string());
    }
    assert_eq!(namespaces, ["ns0", "ns1", "ns2", "ns3", "ns4"], "every event, once, in order");
}

/// Four writers commit to four tables of `s` for a few seconds, while `restart` kills and
/// starts again the broker a sink of `s` publishes to; the ids of the log's events
/// afterwards, in the log's order, and the broker.
async fn storm_through_a_restart<B: Send + 'static>(
    s: &Server,
    mut broker: B,
    restart: fn(&mut B),
) -> (B, Vec<String>) {
    assert_eq!(s.post("/namespaces", json!({"namespace": ["db"]})).await.0, 200);
    for w in 0..4 {
        assert_eq!(s.post("/namespaces/db/tables", json!({"name": format!("t{w}"), "schema": schema()})).await.0, 200);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..4).map(|w| tokio::spawn(support::write_storm((**s).clone(), w, stop.clone()))).collect();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let broker = tokio::task::spawn_blocking(move || {
        restart(&mut broker);
        broker
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    stop.store(true, Ordering::Relaxed);
    for writer in writers {
        writer.await.unwrap();
    }
    // Every acknowledged change's event is pending at least; the relay logs it at once.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let logged = events_after(s, json!({"page-size": 1000}), 6).await;
    (broker, logged.iter().map(|e| e["event-id"].as_str().unwrap().to_string()).collect())
}

/// NATS JetStream killed (SIGKILL) and started again mid-storm: every event of the log is
/// in the stream once, with its id as the message id, on the subject of its namespace.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nats_restarted_mid_storm_loses_nothing() {
    use futures::StreamExt as _;

    let nats = support::nats::Nats::start();
    let s = Server::start(&format!("[events.nats.bus]\nurl = \"{}\"\nsubject_prefix = \"lake\"\n", nats.url()));
    let (nats, logged) =
        storm_through_a_restart(&s, nats, |nats| nats.kill_and_restart(Duration::from_millis(1500))).await;
    let ids: BTreeSet<String> = logged.into_iter().collect();

    let client = async_nats::connect(nats.url()).await.unwrap();
    let jetstream = async_nats::jetstream::new(client);
    let mut stream = jetstream.get_stream("ICEBERG_EVENTS").await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while stream.info().await.unwrap().state.messages < ids.len() as u64 {
        assert!(std::time::Instant::now() < deadline, "the stream holds fewer messages than the log has events");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let stored = stream.info().await.unwrap().state.messages as usize;
    let consumer = stream.create_consumer(async_nats::jetstream::consumer::pull::Config::default()).await.unwrap();
    let (mut published, mut subjects) = (Vec::new(), BTreeSet::new());
    while published.len() < stored {
        let mut batch = consumer.fetch().max_messages(500).messages().await.unwrap();
        while let Some(message) = batch.next().await {
            let message = message.unwrap();
            let id = message.headers.as_ref().and_then(|h| h.get("Nats-Msg-Id")).unwrap().to_string();
            let envelope: Value = serde_json::from_slice(&message.payload).unwrap();
            assert_eq!(envelope["id"], id.as_str());
            subjects.insert(message.subject.to_string());
            published.push(id);
            message.ack().await.unwrap();
        }
    }
    assert_eq!(published.len(), stored);
    let unique: BTreeSet<String> = published.iter().cloned().collect();
    assert_eq!(unique.len(), published.len(), "no event twice in the stream");
    assert_eq!(unique, ids, "every event of the log, and nothing else");
    assert!(subjects.contains("lake.db"), "{subjects:?}");
    eprintln!("{} events through a NATS restart, each once", ids.len());
}

/// Kafka killed (SIGKILL) and started again mid-storm: every event of the log is in the
/// topic, in the log's order once repeats are dropped by the record key (the event id),
/// each record the event's CloudEvent.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kafka_restarted_mid_storm_loses_nothing() {
    let kafka = support::kafka::Kafka::start();
    let s = Server::start(&format!("[events.kafka.bus]\nbrokers = [\"{}\"]\ntopic = \"lake\"\n", kafka.broker()));
    let (kafka, ids) =
        storm_through_a_restart(&s, kafka, |kafka| kafka.kill_and_restart(Duration::from_millis(1500))).await;

    let client = rskafka::client::ClientBuilder::new(vec![kafka.broker()]).build().await.unwrap();
    let unknown = rskafka::client::partition::UnknownTopicHandling::Retry;
    let partition = client.partition_client("lake", 0, unknown).await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut published: Vec<String> = Vec::new();
    let mut offset = 0;
    loop {
        let (records, _) = partition.fetch_records(offset, 1..4_000_000, 500).await.unwrap();
        for record in records {
            offset = record.offset + 1;
            let key = String::from_utf8(record.record.key.unwrap()).unwrap();
            let envelope: Value = serde_json::from_slice(&record.record.value.unwrap()).unwrap();
            assert_eq!(envelope["id"], key.as_str(), "a record is keyed by its event's id");
            assert_eq!(record.record.headers["content-type"], b"application/cloudevents+json");
            published.push(key);
        }
        let mut seen = BTreeSet::new();
        let first: Vec<String> = published.iter().filter(|id| seen.insert(id.to_string())).cloned().collect();
        if first.len() >= ids.len() {
            assert_eq!(first, ids, "every event of the log, in its order, and nothing else");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the topic holds {} of {} events", first.len(), ids.len());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    eprintln!("{} events through a Kafka restart ({} records)", ids.len(), published.len());
}

/// Changes made through a native mount (a redb file of its own) and a read-write rest
/// mount (another Rustberg) are told, under the mount's name; a change made directly in
/// the remote catalog is not (this server never sees it).
#[tokio::test]
async fn changes_through_every_kind_of_mount_are_told() {
    let remote = Server::start("");
    let token = remote.admin_token();
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "{}[mount.partner]\nbackend = \"rest\"\ncatalog_url = \"{}\"\nowner = \"default\"\ntoken_env = \"PARTNER_TOKEN\"\nread_only = false\n",
        support::redb_mount("prod", dir.path(), "default"),
        remote.base
    );
    let s = Server::try_start_with_env(&config, &[("PARTNER_TOKEN", &token)]).unwrap_or_else(|out| panic!("{out}"));
    for mount in ["prod", "partner"] {
        assert_eq!(s.post("/namespaces", json!({"namespace": [mount, "db"]})).await.0, 200);
        let (status, table) =
            s.post(&format!("/namespaces/{mount}%1Fdb/tables"), json!({"name": "t", "schema": schema()})).await;
        assert_eq!(status, 200, "{table}");
        let commit = json!({"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]});
        let (status, committed) = s.post(&format!("/namespaces/{mount}%1Fdb/tables/t"), commit).await;
        assert_eq!(status, 200, "{committed}");
        assert_eq!(s.delete(&format!("/namespaces/{mount}%1Fdb/tables/t")).await.0, 204);
    }
    assert_eq!(remote.post("/namespaces", json!({"namespace": ["direct"]})).await.0, 200);

    let events = events_after(&s, json!({}), 8).await;
    assert_eq!(events.len(), 8, "{:?}", kinds(&events));
    for (mount, told) in [("prod", &events[..4]), ("partner", &events[4..])] {
        assert_eq!(kinds(told), ["create-namespace", "create-table", "update-table", "drop-table"], "{mount}");
        assert_eq!(told[0]["operation"]["namespace"], json!([mount, "db"]));
        let update = &told[2]["operation"];
        assert_eq!(update["identifier"], json!({"namespace": [mount, "db"], "name": "t"}));
        assert!(update["table-uuid"].as_str().is_some_and(|u| !u.is_empty()), "{mount}: {update}");
        assert!(update["metadata-location"].as_str().is_some_and(|l| l.ends_with(".metadata.json")), "{update}");
    }
    let (by_mount, _) = all_events(&s, json!({"catalog-objects-by-name": [["partner"]]})).await;
    assert_eq!(by_mount.len(), 4, "a mount's name selects its events");
    assert!(!events.iter().any(|e| e.to_string().contains("direct")), "a change made at the remote is not told here");
}
