//! A bounded soak (not timed): 32 clients run a fixed number of mixed reads and writes
//! — namespace creates and drops, grants, table creates, renames and drops, commits to
//! shared tables, idempotent creates — while a quarter of the requests disconnect
//! mid-flight at random points and one rest mount's remote never answers. Afterwards
//! every invariant holds: no ownerless namespace, no grant on a missing resource,
//! every acknowledged commit in its table, no refused one, no stuck idempotency key,
//! and the other mounts kept serving.

use crate::support;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};
use support::{append_request, schema, Api, Server};

const CLIENTS: u64 = 32;
const REQUESTS_PER_CLIENT: u64 = 24;
const SHARED_TABLES: u64 = 4;

/// A remote catalog that answers its configuration and then never answers again.
async fn start_hanging_remote() -> String {
    use axum::routing::get;
    let app = axum::Router::new()
        .route("/v1/config", get(|| async { axum::Json(json!({"defaults": {}, "overrides": {}})) }))
        .fallback(std::future::pending::<()>);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

/// A small deterministic generator (the soak is repeatable).
struct Dice(u64);

impl Dice {
    fn roll(&mut self, sides: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % sides
    }
}

/// What the clients saw, for the checks afterwards.
#[derive(Default)]
struct Seen {
    namespaces: BTreeSet<String>,
    acknowledged: BTreeSet<i64>,
    refused: BTreeSet<i64>,
    unknown: BTreeSet<i64>,
    idempotent: Vec<(String, Value)>,
    served_by_root: usize,
    hung_mount_errors: usize,
    disconnected: usize,
}

/// Sends one request; `None` when the client gave up on it (the disconnect).
async fn send(api: &Api, dice: &mut Dice, method: Method, path: &str, body: Option<Value>) -> Option<(u16, Value)> {
    let got = try_send(api, dice, method, path, body).await;
    if got.is_none() {
        DISCONNECTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    got
}

static DISCONNECTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

async fn try_send(api: &Api, dice: &mut Dice, method: Method, path: &str, body: Option<Value>) -> Option<(u16, Value)> {
    let mut request = api.client.request(method, api.url(path));
    if let Some(body) = body {
        request = request.json(&body);
    }
    if dice.roll(4) == 0 {
        // Hang up somewhere between sending the request and reading the answer.
        request = request.timeout(Duration::from_millis(1 + dice.roll(25)));
    }
    let response = request.send().await.ok()?;
    let status = response.status().as_u16();
    let body = response.json::<Value>().await.unwrap_or(Value::Null);
    Some((status, body))
}

/// One optimistic append to a shared table, the snapshot id chosen by the caller.
async fn append(api: &Api, dice: &mut Dice, table: &str, snapshot_id: i64) -> Option<u16> {
    let path = format!("/namespaces/soak/tables/{table}");
    let (_, loaded) = api.get(&path).await;
    let body = append_request(&loaded["metadata"], snapshot_id);
    send(api, dice, Method::POST, &path, Some(body)).await.map(|r| r.0)
}

async fn client(api: Api, i: u64, seen: Arc<Mutex<Seen>>) {
    let mut dice = Dice(0x9E37_79B9_7F4A_7C15 ^ ((i + 1) * 0x1000_0001));
    let (mut namespaces, mut tables) = (Vec::<String>::new(), Vec::<String>::new());
    for k in 0..REQUESTS_PER_CLIENT {
        let d = &mut dice;
        match d.roll(8) {
            0 => {
                let name = format!("c{i}n{k}");
                seen.lock().unwrap().namespaces.insert(name.clone());
                let got = send(&api, d, Method::POST, "/namespaces", Some(json!({"namespace": [name]}))).await;
                if matches!(got, Some((200, _))) {
                    seen.lock().unwrap().served_by_root += 1;
                    namespaces.push(name);
                }
            }
            1 => {
                if let Some(name) = namespaces.pop() {
                    send(&api, d, Method::DELETE, &format!("/namespaces/{name}"), None).await;
                }
            }
            2 => {
                if let Some(name) = namespaces.last() {
                    let grant = json!({"namespace": [name], "privilege": "read", "tenant": "watchers"});
                    send(&api, d, Method::POST, "/management/v1/grants", Some(grant)).await;
                }
            }
            3 | 4 => {
                let snapshot_id = (i * 1000 + k) as i64;
                let table = format!("t{}", i % SHARED_TABLES);
                let outcome = append(&api, d, &table, snapshot_id).await;
                let mut seen = seen.lock().unwrap();
                match outcome {
                    Some(200) => seen.acknowledged.insert(snapshot_id),
                    Some(409) => seen.refused.insert(snapshot_id),
                    Some(other) if other < 500 => panic!("a commit answered {other}"),
                    _ => seen.unknown.insert(snapshot_id),
                };
            }
            5 => {
                let (from, to) = (format!("x{i}_{k}"), format!("y{i}_{k}"));
                let create = json!({"name": from, "schema": schema()});
                if !matches!(send(&api, d, Method::POST, "/namespaces/soak/tables", Some(create)).await, Some((200, _)))
                {
                    continue;
                }
                let grant = json!({"namespace": ["soak"], "table": from, "privilege": "read", "tenant": "watchers"});
                send(&api, d, Method::POST, "/management/v1/grants", Some(grant)).await;
                let rename = json!({"source": {"namespace": ["soak"], "name": from},
                                    "destination": {"namespace": ["soak"], "name": to}});
                match send(&api, d, Method::POST, "/tables/rename", Some(rename)).await {
                    Some((204, _)) => tables.push(to),
                    _ => tables.push(from),
                }
            }
            6 => {
                if let Some(table) = tables.pop() {
                    send(&api, d, Method::DELETE, &format!("/namespaces/soak/tables/{table}"), None).await;
                } else if let Some((status, _)) = send(&api, d, Method::GET, "/namespaces/far%1Fanything", None).await {
                    assert_eq!(status, 503, "the hung remote is an error, never an absence or a hang");
                    seen.lock().unwrap().hung_mount_errors += 1;
                }
            }
            _ => {
                let key = uuid::Uuid::now_v7().to_string();
                let body = json!({"namespace": [format!("c{i}i{k}")]});
                seen.lock().unwrap().namespaces.insert(format!("c{i}i{k}"));
                seen.lock().unwrap().idempotent.push((key.clone(), body.clone()));
                let mut request = api.client.post(api.url("/namespaces")).header("Idempotency-Key", &key).json(&body);
                if d.roll(2) == 0 {
                    request = request.timeout(Duration::from_millis(1 + d.roll(10)));
                }
                let _ = request.send().await;
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_catalog_keeps_its_invariants_under_disconnects_and_a_hung_mount() {
    let remote = start_hanging_remote().await;
    let s = Server::start(&format!(
        "[mount.far]\nbackend = \"rest\"\ncatalog_url = \"{remote}\"\nowner = \"default\"\nrequest_timeout_ms = 300\n"
    ));
    let admin: Api = (*s).clone();
    assert_eq!(admin.send(Method::POST, "/management/v1/tenants", Some(json!({"name": "watchers"}))).await.0, 201);
    assert_eq!(admin.post("/namespaces", json!({"namespace": ["soak"]})).await.0, 200);
    for t in 0..SHARED_TABLES {
        let (status, body) =
            admin.post("/namespaces/soak/tables", json!({"name": format!("t{t}"), "schema": schema()})).await;
        assert_eq!(status, 200, "{body}");
    }

    let seen = Arc::new(Mutex::new(Seen::default()));
    let clients: Vec<_> = (0..CLIENTS).map(|i| tokio::spawn(client(admin.clone(), i, seen.clone()))).collect();
    for c in clients {
        c.await.unwrap();
    }
    // Requests whose clients hung up run on to their end; give them a moment.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut seen = std::mem::take(&mut *seen.lock().unwrap());
    seen.disconnected = DISCONNECTED.load(std::sync::atomic::Ordering::Relaxed);
    assert!(seen.served_by_root > 0 && seen.hung_mount_errors > 0, "the soak exercised both mounts");
    assert!(seen.disconnected > 0, "some clients hung up mid-request");
    eprintln!(
        "soak: {} commits acknowledged, {} refused, {} unknown; {} requests hung up",
        seen.acknowledged.len(),
        seen.refused.len(),
        seen.unknown.len(),
        seen.disconnected
    );

    // No ownerless namespace: each name is either visible, or free to create.
    for name in &seen.namespaces {
        if admin.head(&format!("/namespaces/{name}")).await == 404 {
            let (status, body) = admin.post("/namespaces", json!({"namespace": [name]})).await;
            assert_eq!(status, 200, "{name} is invisible yet taken: a namespace without its owner ({body})");
        }
    }

    // No grant on a missing resource.
    let (_, grants) = admin.send(Method::GET, "/management/v1/grants", None).await;
    for grant in grants["grants"].as_array().unwrap() {
        let resource = &grant["resource"];
        let path = match (&resource["namespace"], &resource["table"]) {
            (Value::Array(ns), _) => format!("/namespaces/{}", join(ns)),
            (_, Value::Object(t)) => format!(
                "/namespaces/{}/tables/{}",
                join(t["namespace"].as_array().unwrap()),
                t["name"].as_str().unwrap()
            ),
            _ => panic!("an unexpected grant {grant}"),
        };
        assert_eq!(admin.head(&path).await, 204, "a grant outlived what it was on: {grant}");
    }

    // Every acknowledged commit is in its table; no refused one is; nothing else is.
    let mut landed = BTreeSet::new();
    for t in 0..SHARED_TABLES {
        let (_, table) = admin.get(&format!("/namespaces/soak/tables/t{t}")).await;
        let snapshots = table["metadata"]["snapshots"].as_array().cloned().unwrap_or_default();
        landed.extend(snapshots.iter().map(|s| s["snapshot-id"].as_i64().unwrap()));
    }
    assert!(seen.acknowledged.is_subset(&landed), "an acknowledged commit was lost");
    assert!(seen.refused.is_disjoint(&landed), "a refused commit landed");
    let possible: BTreeSet<i64> = seen.acknowledged.union(&seen.unknown).copied().collect();
    assert!(landed.is_subset(&possible), "a commit nobody sent landed");

    // No idempotency key is stuck "still running".
    for (key, body) in &seen.idempotent {
        let again = admin.client.post(admin.url("/namespaces")).header("Idempotency-Key", key).json(body).send().await;
        let again = again.unwrap();
        let status = again.status().as_u16();
        let text = again.text().await.unwrap();
        assert!(!text.contains("still running"), "key {key} is stuck: {status} {text}");
    }
    assert_eq!(admin.get("/namespaces").await.0, 200, "the server serves on");
}

fn join(levels: &[Value]) -> String {
    levels.iter().map(|l| l.as_str().unwrap()).collect::<Vec<_>>().join("%1F")
}
