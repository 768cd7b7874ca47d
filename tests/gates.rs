//! Admission gates and plugin sinks, as components the server runs: a gate refuses a
//! change with a 403 naming itself and its reason, before anything is written (no
//! table, no event), through the root catalog and a mount alike; a gate that traps or
//! hangs refuses too, naming itself, and fails only that change; a plugin sink is
//! handed every event, in order, in batches, and gets again what its receiver refused.

use crate::support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use support::{assert_error, components_dir, redb_mount, schema, Server};

/// The Rust example gate (plugins/examples/gate) as `[gates.house]`: every table, view
/// and namespace needs an `owner`, and nothing is dropped in the mount `prod`.
fn house_gate() -> String {
    format!(
        "[gates.house]\nplugin = \"{}\"\n[gates.house.config]\nrequired_property = \"owner\"\nno_drop_in = \"prod\"\n",
        components_dir().join("example-gate.wasm").display()
    )
}

#[track_caller]
fn refused_by(got: &(u16, Value), gate: &str, reason: &str) {
    assert_error(got, 403, "ForbiddenException");
    let message = got.1["error"]["message"].as_str().unwrap();
    assert!(message.contains(&format!("gate `{gate}`")) && message.contains(reason), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_refuses_with_a_403_naming_itself_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&format!("{}{}", house_gate(), redb_mount("prod", dir.path(), "default")));
    let owned = json!({"owner": "ana"});

    // Namespaces: refused without the property, made with it.
    refused_by(&s.post("/namespaces", json!({"namespace": ["sales"]})).await, "house", "needs the property `owner`");
    assert_eq!(s.head("/namespaces/sales").await, 404, "a refused create leaves nothing");
    assert_eq!(s.post("/namespaces", json!({"namespace": ["sales"], "properties": owned})).await.0, 200);
    // Removing the property is refused; the namespace keeps it.
    let removal = json!({"removals": ["owner"], "updates": {}});
    refused_by(&s.post("/namespaces/sales/properties", removal).await, "house", "may not be removed");
    assert_eq!(s.get("/namespaces/sales").await.1["properties"]["owner"], "ana");

    // Tables, in the root catalog and in the mount.
    let table = |name: &str, properties: Value| json!({"name": name, "schema": schema(), "properties": properties});
    refused_by(&s.post("/namespaces/sales/tables", table("orders", json!({}))).await, "house", "a table needs");
    assert_eq!(s.get("/namespaces/sales/tables/orders").await.0, 404, "a refused create leaves no table");
    assert_eq!(s.post("/namespaces/sales/tables", table("orders", owned.clone())).await.0, 200);
    assert_eq!(s.post("/namespaces", json!({"namespace": ["prod", "x"], "properties": owned})).await.0, 200);
    refused_by(&s.post("/namespaces/prod%1Fx/tables", table("t", json!({}))).await, "house", "a table needs");
    assert_eq!(s.post("/namespaces/prod%1Fx/tables", table("t", owned.clone())).await.0, 200);

    // No drop in `prod`: refused, and the table is still there; the root's drops pass.
    refused_by(&s.delete("/namespaces/prod%1Fx/tables/t").await, "house", "nothing is dropped in `prod`");
    assert_eq!(s.get("/namespaces/prod%1Fx/tables/t").await.0, 200, "the refused drop left the table");
    let rename = json!({"source": {"namespace": ["sales"], "name": "orders"}, "destination": {"namespace": ["sales"], "name": "orders2"}});
    assert_eq!(s.post("/tables/rename", rename).await.0, 204, "what the gate does not refuse passes");
    assert_eq!(s.delete("/namespaces/sales/tables/orders2").await.0, 204);

    // The log has the changes that were made, and none that was refused.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, page) = s.post("/events", json!({"page-size": 100})).await;
    assert_eq!(status, 200, "{page}");
    let told: Vec<(String, Value)> = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["operation"]["operation-type"].as_str().unwrap().to_string(), e["operation"].clone()))
        .collect();
    let kinds: Vec<&str> = told.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        kinds,
        ["create-namespace", "create-table", "create-namespace", "create-table", "rename-table", "drop-table"],
        "{told:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_that_traps_or_hangs_refuses_naming_itself_and_fails_only_that_change() {
    let s = Server::start(&format!(
        "[gates.unruly]\nplugin = \"{}\"\n[gates.unruly.plugins]\ncall_timeout_ms = 300\n",
        components_dir().join("unruly-gate.wasm").display()
    ));
    assert_eq!(s.post("/namespaces", json!({"namespace": ["ns"]})).await.0, 200);
    let table = |name: &str| json!({"name": name, "schema": schema()});
    refused_by(&s.post("/namespaces/ns/tables", table("trap")).await, "unruly", "trapped");
    let started = std::time::Instant::now();
    refused_by(&s.post("/namespaces/ns/tables", table("loop")).await, "unruly", "time limit of 300 ms");
    assert!(started.elapsed() < Duration::from_secs(5), "the hung gate was cut off: {:?}", started.elapsed());
    for name in ["trap", "loop"] {
        assert_eq!(s.get(&format!("/namespaces/ns/tables/{name}")).await.0, 404, "{name}: nothing written");
    }
    // The gate's next instance serves the next change.
    assert_eq!(s.post("/namespaces/ns/tables", table("fine")).await.0, 200);
    let metrics = reqwest::get(format!("{}/metrics", s.base)).await.unwrap().text().await.unwrap();
    assert!(metrics.contains("rustberg_gate_refusals_total{gate=\"unruly\"} 2"), "{metrics}");
}

/// A sink written as a component (the Rust example, plugins/examples/sink) posts the
/// events in batches to a receiver that refuses its first batch: it is sent again, and
/// every event arrives in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_sink_is_handed_every_event_in_order_and_gets_again_what_failed() {
    let received: Arc<Mutex<Vec<Value>>> = Arc::default();
    let refusals = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (store, refused) = (received.clone(), refusals.clone());
    let app = axum::Router::new().route(
        "/sink",
        axum::routing::post(move |headers: axum::http::HeaderMap, body: bytes::Bytes| {
            let (store, refused) = (store.clone(), refused.clone());
            async move {
                assert_eq!(headers["content-type"], "application/cloudevents-batch+json");
                if refused.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                    return axum::http::StatusCode::SERVICE_UNAVAILABLE;
                }
                let batch: Vec<Value> = serde_json::from_slice(&body).unwrap();
                store.lock().unwrap().extend(batch);
                axum::http::StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let s = Server::start(&format!(
        "[events.plugin.lineage]\nplugin = \"{}\"\ngrants = [\"http\"]\nurl = \"http://127.0.0.1:{port}/sink\"\n",
        components_dir().join("example-sink.wasm").display()
    ));
    for n in 0..20 {
        assert_eq!(s.post("/namespaces", json!({"namespace": [format!("ns{n:02}")]})).await.0, 200);
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        // At least once: a batch sent again may repeat events; the id tells them apart.
        let mut seen = std::collections::BTreeSet::new();
        let namespaces: Vec<String> = received
            .lock()
            .unwrap()
            .iter()
            .filter(|e| seen.insert(e["id"].as_str().unwrap().to_string()))
            .map(|e| e["data"]["operation"]["namespace"][0].as_str().unwrap().to_string())
            .collect();
        if namespaces.len() >= 20 {
            let expected: Vec<String> = (0..20).map(|n| format!("ns{n:02}")).collect();
            assert_eq!(namespaces, expected, "every event, in order");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "only {} of 20 delivered", namespaces.len());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(refusals.load(std::sync::atomic::Ordering::SeqCst) >= 2, "the refused batch was sent again");
    let metrics = reqwest::get(format!("{}/metrics", s.base)).await.unwrap().text().await.unwrap();
    assert!(metrics.contains("sink=\"plugin.lineage\""), "{metrics}");
}

/// A gate or sink configuration that cannot work is refused at start and by
/// check-config, naming the section.
#[test]
fn a_gate_that_is_not_a_gate_is_refused_at_start() {
    let native_as_gate = format!("[gates.wrong]\nplugin = \"{}\"\n", components_dir().join("misbehave.wasm").display());
    let refused = Server::try_start(&native_as_gate).err().expect("refused");
    assert!(refused.contains("gates.wrong") && refused.contains("not a gate"), "{refused}");
    let kv_sink = format!(
        "[events.plugin.bad]\nplugin = \"{}\"\ngrants = [\"kv\"]\n",
        components_dir().join("example-sink.wasm").display()
    );
    let refused = Server::try_start(&kv_sink).err().expect("refused");
    assert!(refused.contains("events.plugin.bad grants kv"), "{refused}");
}
