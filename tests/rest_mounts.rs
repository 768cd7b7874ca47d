//! Rest mounts: somebody else's Iceberg REST catalog behind Rustberg, read-only by
//! default and read-write by choice. Against a second Rustberg process, and against a
//! small fake remote that counts its requests and misbehaves on demand (500, 401,
//! never answering).

use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};
use support::{assert_error, schema, Server};

fn rest_mount(name: &str, url: &str, token_env: Option<&str>, extra: &str) -> String {
    let token = token_env.map(|v| format!("token_env = \"{v}\"\n")).unwrap_or_default();
    format!("[mount.{name}]\nbackend = \"rest\"\ncatalog_url = \"{url}\"\nowner = \"default\"\n{token}{extra}")
}

/// The rest component dropped in as a file: the mount grants it `http` and a bearer
/// credential through the same keys any drop-in uses; it declares it cannot write,
/// so the mount is read-only. Without the grant it is refused at start-up.
#[tokio::test]
async fn a_drop_in_component_is_granted_what_its_mount_declares() {
    let remote = Server::start("");
    assert_eq!(remote.post("/namespaces", json!({"namespace": ["sales"]})).await.0, 200);
    let component = support::components_dir().join("rest.wasm");
    let auth = "[mount.partner.auth]\nkind = \"bearer\"\ntoken_env = \"PARTNER_TOKEN\"\n";
    let mount = |grants: &str, auth: &str| {
        format!(
            "[mount.partner]\nbackend = \"{}\"\n{grants}catalog_url = \"{}\"\nowner = \"default\"\n{auth}",
            component.display(),
            remote.base
        )
    };
    let token = remote.admin_token();
    let env = [("PARTNER_TOKEN", token.as_str())];
    let s =
        Server::try_start_with_env(&mount("grants = [\"http\"]\n", auth), &env).unwrap_or_else(|out| panic!("{out}"));
    assert_eq!(s.get("/namespaces/partner%1Fsales").await.0, 200, "reached the remote with the host's credential");
    let refused = s.post("/namespaces", json!({"namespace": ["partner", "new"]})).await;
    assert_error(&refused, 501, "UnsupportedOperationException");
    assert!(refused.1["error"]["message"].as_str().unwrap().contains("read-only"), "{}", refused.1);

    // A file is granted a key space unless its mount says otherwise: a store at its
    // catalog_url, which this one is not.
    let output = Server::try_start_with_env(&mount("", ""), &env).err().expect("refused");
    assert!(output.contains("mount `partner`") && output.contains("the mount grants kv"), "{output}");
    let output = Server::try_start_with_env(&mount("", auth), &env).err().expect("refused");
    assert!(output.contains("mount.partner has a credential for http requests but does not grant http"), "{output}");
}

#[tokio::test]
async fn a_rustberg_catalog_mounted_read_only() {
    let remote = Server::start("");
    for ns in [json!(["sales"]), json!(["sales", "eu"]), json!(["pages"])] {
        assert_eq!(remote.post("/namespaces", json!({"namespace": ns, "properties": {"team": "x"}})).await.0, 200);
    }
    let created = remote.post("/namespaces/sales/tables", json!({"name": "orders", "schema": schema()})).await;
    assert_eq!(created.0, 200);
    for i in 0..25 {
        assert_eq!(remote.post("/namespaces", json!({"namespace": ["pages", format!("p{i:02}")]})).await.0, 200);
    }

    let token = remote.admin_token();
    let s = Server::try_start_with_env(
        &rest_mount("partner", &remote.base, Some("PARTNER_TOKEN"), ""),
        &[("PARTNER_TOKEN", &token)],
    )
    .unwrap_or_else(|out| panic!("{out}"));
    assert_eq!(s.get("/namespaces").await.1["namespaces"], json!([["partner"]]));
    assert_eq!(
        s.get("/namespaces?parent=partner").await.1["namespaces"],
        json!([["partner", "pages"], ["partner", "sales"]])
    );
    // The remote's answer, the remote's own location (it says where its namespaces live) included.
    let remote_sales = remote.get("/namespaces/sales").await.1["properties"].clone();
    assert_eq!(
        remote_sales["location"].as_str().map(|l| l.ends_with("/warehouse/sales")),
        Some(true),
        "{remote_sales}"
    );
    assert_eq!(
        s.get("/namespaces/partner%1Fsales").await,
        (200, json!({"namespace": ["partner", "sales"], "properties": remote_sales}))
    );
    let listed = s.get("/namespaces/partner%1Fsales/tables").await.1;
    assert_eq!(listed["identifiers"], json!([{"namespace": ["partner", "sales"], "name": "orders"}]));
    let loaded = s.get("/namespaces/partner%1Fsales/tables/orders").await;
    assert_eq!(loaded.0, 200);
    assert_eq!(loaded.1["metadata-location"], created.1["metadata-location"]);
    assert_eq!(loaded.1["metadata"], created.1["metadata"]);
    assert_eq!(s.head("/namespaces/partner%1Fsales/tables/orders").await, 204);
    assert_eq!(s.head("/namespaces/partner%1Fsales/tables/nope").await, 404);
    assert_error(&s.get("/namespaces/partner%1Fnope").await, 404, "NoSuchNamespaceException");

    // Paging inside the mount walks every remote namespace exactly once.
    let (mut seen, mut token) = (vec![], String::new());
    loop {
        let page = s.get(&format!("/namespaces?parent=partner%1Fpages&pageToken={token}&pageSize=10")).await.1;
        seen.extend(page["namespaces"].as_array().unwrap().iter().map(|n| n[2].as_str().unwrap().to_string()));
        match page["next-page-token"].as_str() {
            Some(next) => token = next.to_string(),
            None => break,
        }
    }
    assert_eq!(seen, (0..25).map(|i| format!("p{i:02}")).collect::<Vec<_>>());

    // Writes under the mount: 501 naming it. /v1/config promises no writes.
    for got in [
        s.post("/namespaces", json!({"namespace": ["partner", "new"]})).await,
        s.post("/namespaces/partner%1Fsales/tables", json!({"name": "t", "schema": schema()})).await,
        s.post("/namespaces/partner%1Fsales/tables/orders", json!({"requirements": [], "updates": []})).await,
        s.delete("/namespaces/partner%1Fsales/tables/orders").await,
    ] {
        assert_error(&got, 501, "UnsupportedOperationException");
        assert!(got.1["error"]["message"].as_str().unwrap().contains("mount `partner`"), "{}", got.1);
    }
    let config: Value = s.client.get(format!("{}/v1/config", s.base)).send().await.unwrap().json().await.unwrap();
    for e in config["endpoints"].as_array().unwrap() {
        let e = e.as_str().unwrap();
        // Reads, metrics reports (which the host takes, and which change nothing) and
        // the events query.
        let reads_by_post =
            ["POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics", "POST /v1/{prefix}/events"];
        assert!(e.starts_with("GET ") || e.starts_with("HEAD ") || reads_by_post.contains(&e), "{e}");
    }
    assert_eq!(remote.head("/namespaces/sales/tables/orders").await, 204, "nothing changed at the remote");

    // The mount's loads carry a tag of their own: 304 while the remote's table stays, the
    // table anew once the remote commits.
    let orders = s.url("/namespaces/partner%1Fsales/tables/orders");
    let conditional = |tag: &str| s.client.get(&orders).header("if-none-match", tag).send();
    let first = s.client.get(&orders).send().await.unwrap();
    let tag = first.headers()["etag"].to_str().unwrap().to_string();
    assert_eq!(conditional(&tag).await.unwrap().status(), 304);
    let set = json!({"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]});
    assert_eq!(remote.post("/namespaces/sales/tables/orders", set).await.0, 200);
    let changed = conditional(&tag).await.unwrap();
    assert_eq!(changed.status(), 200);
    assert!(changed.headers()["etag"] != tag.as_str());
    assert_eq!(changed.json::<Value>().await.unwrap()["metadata"]["properties"]["k"], "v");
}

/// A fake remote catalog: ten namespaces in remote pages of three (the last page lists a
/// descendant too), a table whose load echoes the delegation header, and misbehaving
/// namespaces.
#[derive(Default)]
struct Fake {
    list_requests: AtomicUsize,
    commits: AtomicUsize,
    authorization: Mutex<Option<String>>,
    /// Whether its `/v1/config` advertises `idempotency-key-lifetime`.
    honours_idempotency_keys: bool,
    /// The `Idempotency-Key` of each commit it took (`None`: it had none).
    commit_keys: Mutex<Vec<Option<String>>>,
}

const FAKE_NAMESPACES: usize = 10;
const FAKE_PAGE: usize = 3;

async fn fake_config(State(fake): State<Arc<Fake>>) -> Json<Value> {
    // No prefix, no endpoints: a lenient peer must cope.
    let mut config = json!({"defaults": {}, "overrides": {}});
    if fake.honours_idempotency_keys {
        config["idempotency-key-lifetime"] = json!("PT30M");
    }
    Json(config)
}

async fn fake_list(
    State(fake): State<Arc<Fake>>,
    headers: HeaderMap,
    Query(q): Query<std::collections::HashMap<String, String>>,
) -> Json<Value> {
    fake.list_requests.fetch_add(1, Ordering::SeqCst);
    *fake.authorization.lock().unwrap() = headers.get("authorization").map(|v| v.to_str().unwrap().to_string());
    let start: usize = q.get("pageToken").and_then(|t| t.strip_prefix('p')).and_then(|n| n.parse().ok()).unwrap_or(0);
    let end = (start + FAKE_PAGE).min(FAKE_NAMESPACES);
    let mut namespaces: Vec<Value> = (start..end).map(|i| json!([format!("n{i}")])).collect();
    if end == FAKE_NAMESPACES && !q.contains_key("parent") {
        // Some catalogs list every descendant at the top level: not a child, not shown.
        namespaces.push(json!([format!("n{}", end - 1), "deep"]));
    }
    let mut body = json!({"namespaces": namespaces});
    if end < FAKE_NAMESPACES {
        body["next-page-token"] = json!(format!("p{end}"));
    }
    Json(body)
}

async fn fake_namespace(Path(ns): Path<String>) -> Response {
    match ns.as_str() {
        "broken" => (StatusCode::INTERNAL_SERVER_ERROR, "boom").into_response(),
        "denied" => (StatusCode::UNAUTHORIZED, "who are you").into_response(),
        "slow" => {
            tokio::time::sleep(Duration::from_secs(30)).await;
            StatusCode::OK.into_response()
        }
        n if n.starts_with('n') => Json(json!({"namespace": [n]})).into_response(),
        _ => (
            StatusCode::NOT_FOUND,
            Json(json!({"error": {"message": "no", "type": "NoSuchNamespaceException", "code": 404}})),
        )
            .into_response(),
    }
}

async fn fake_table(headers: HeaderMap) -> Json<Value> {
    let metadata =
        json!({"format-version": 2, "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1", "location": "s3://remote/t"});
    let mut body = json!({"metadata-location": "s3://remote/t/metadata/1.json", "metadata": metadata, "config": {"remote": "yes"}});
    body["storage-credentials"] = match headers.get("x-iceberg-access-delegation") {
        Some(_) => json!([{"prefix": "s3://remote/", "config": {"s3.access-key-id": "remote-vended"}}]),
        None => Value::Null,
    };
    Json(body)
}

/// A commit the fake takes and never answers in time (it counts it first).
async fn fake_commit(State(fake): State<Arc<Fake>>, headers: HeaderMap) -> StatusCode {
    let key = headers.get("idempotency-key").map(|v| v.to_str().unwrap().to_string());
    fake.commit_keys.lock().unwrap().push(key);
    fake.commits.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(30)).await;
    StatusCode::OK
}

async fn start_fake() -> (Arc<Fake>, String) {
    start_fake_as(Fake::default()).await
}

async fn start_fake_as(fake: Fake) -> (Arc<Fake>, String) {
    let fake = Arc::new(fake);
    let app = Router::new()
        .route("/v1/config", get(fake_config))
        .route("/v1/namespaces", get(fake_list))
        .route("/v1/namespaces/{ns}", get(fake_namespace))
        .route("/v1/namespaces/{ns}/tables/{t}", get(fake_table).post(fake_commit))
        .with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (fake, url)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paging_costs_one_remote_request_per_remote_page() {
    let (fake, url) = start_fake().await;
    let s = Server::try_start_with_env(&rest_mount("far", &url, Some("FAR_TOKEN"), ""), &[("FAR_TOKEN", "s3cr3t")])
        .unwrap_or_else(|out| panic!("{out}"));
    let all: Vec<Value> = (0..FAKE_NAMESPACES).map(|i| json!(["far", format!("n{i}")])).collect();
    let before = fake.list_requests.load(Ordering::SeqCst);
    assert_eq!(s.get("/namespaces?parent=far").await.1["namespaces"], json!(all));
    let remote_pages = FAKE_NAMESPACES.div_ceil(FAKE_PAGE);
    assert_eq!(fake.list_requests.load(Ordering::SeqCst) - before, remote_pages, "one remote request per page");
    // Client pages the size of the remote's: still one remote request per page.
    let before = fake.list_requests.load(Ordering::SeqCst);
    let (mut seen, mut token) = (vec![], String::new());
    loop {
        let page = s.get(&format!("/namespaces?parent=far&pageToken={token}&pageSize={FAKE_PAGE}")).await.1;
        seen.extend(page["namespaces"].as_array().unwrap().clone());
        match page["next-page-token"].as_str() {
            Some(next) => token = next.to_string(),
            None => break,
        }
    }
    assert_eq!(seen, all);
    assert_eq!(fake.list_requests.load(Ordering::SeqCst) - before, remote_pages);
    // The host added the mount's credential.
    assert_eq!(fake.authorization.lock().unwrap().as_deref(), Some("Bearer s3cr3t"));
    // A token of the remote handed to Rustberg restarts the listing.
    let restarted = s.get("/namespaces?parent=far&pageToken=p3&pageSize=2").await.1;
    assert_eq!(restarted["namespaces"], json!([["far", "n0"], ["far", "n1"]]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_failures_are_errors_naming_the_mount_never_absences() {
    let (_fake, url) = start_fake().await;
    let s = Server::start(&rest_mount("far", &url, None, "request_timeout_ms = 400\n"));
    s.post("/namespaces", json!({"namespace": ["local"]})).await;
    // The remote refusing the mount's own credential is the server's fault, not the
    // caller's: a bad gateway.
    for (ns, cause, status, kind) in [
        ("broken", "the remote failed", 503, "ServiceUnavailableException"),
        ("denied", "rejected this mount's credential", 502, "BadGatewayException"),
        ("slow", "did not answer within 400 ms", 503, "ServiceUnavailableException"),
    ] {
        let got = s.get(&format!("/namespaces/far%1F{ns}")).await;
        assert_error(&got, status, kind);
        let message = got.1["error"]["message"].as_str().unwrap();
        assert!(message.contains("mount `far`") && message.contains(cause), "{ns}: {message}");
        assert_eq!(s.head(&format!("/namespaces/far%1F{ns}")).await, status, "HEAD {ns} is an error, not an absence");
    }
    let health: Value = s.client.get(format!("{}/health", s.base)).send().await.unwrap().json().await.unwrap();
    let far = health["mounts"].as_array().unwrap().iter().find(|m| m["mount"] == "mount `far`").unwrap().clone();
    assert_eq!(far["state"], "unreachable", "{health}");
    assert!(far["error"].as_str().unwrap().contains("did not answer"), "{health}");
    // Without a caller, /health says the status only: error texts name hosts.
    let public: Value = reqwest::get(format!("{}/health", s.base)).await.unwrap().json().await.unwrap();
    assert_eq!(public, serde_json::json!({"status": "ok"}), "no mount details for anonymous callers");
    assert_eq!(s.client.get(format!("{}/ready", s.base)).send().await.unwrap().status(), 200, "still ready");
    assert_eq!(s.get("/namespaces/local").await.0, 200, "the rest keeps working");
    // Only a remote 404 means "not there"; a success clears the health state.
    assert_error(&s.get("/namespaces/far%1Fmissing").await, 404, "NoSuchNamespaceException");
    assert_eq!(s.get("/namespaces/far%1Fn1").await.0, 200);
    let health: Value = s.client.get(format!("{}/health", s.base)).send().await.unwrap().json().await.unwrap();
    assert!(health["mounts"].as_array().unwrap().iter().all(|m| m["state"] == "ok"), "{health}");
}

/// A commit sent and never answered in time may have applied: commit-state-unknown,
/// naming the mount, and sent once (never retried). The client's `Idempotency-Key`, with
/// which it may ask again, reaches only a remote that advertises honouring it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forwarded_commit_that_times_out_is_unknown_and_not_retried() {
    for honours in [false, true] {
        let (fake, url) = start_fake_as(Fake { honours_idempotency_keys: honours, ..Fake::default() }).await;
        let s = Server::start(&rest_mount("far", &url, None, "read_only = false\nrequest_timeout_ms = 400\n"));
        let set = json!({"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]});
        let key = "0190f3a4-7d2e-7c4b-9a1e-3f5d6c7b8a90";
        let sent = s.client.post(s.url("/namespaces/far%1Fn1/tables/t")).header("Idempotency-Key", key).json(&set);
        let unknown = support::status_json(sent.send().await.unwrap()).await;
        assert_error(&unknown, 503, "CommitStateUnknownException");
        let message = unknown.1["error"]["message"].as_str().unwrap();
        assert!(message.contains("mount `far`") && message.contains("did not answer within 400 ms"), "{message}");
        assert_eq!(fake.commits.load(Ordering::SeqCst), 1, "sent once");
        let keys = fake.commit_keys.lock().unwrap().clone();
        assert_eq!(keys, vec![honours.then(|| key.to_string())], "advertised: {honours}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delegation_is_forwarded_and_the_remotes_credentials_returned_unchanged() {
    let (_fake, url) = start_fake().await;
    let s = Server::start(&rest_mount("far", &url, None, ""));
    let plain = s.get("/namespaces/far%1Fn1/tables/t").await;
    assert_eq!(plain.0, 200, "{}", plain.1);
    assert_eq!(plain.1["config"], json!({"remote": "yes"}));
    assert!(plain.1.get("storage-credentials").is_none(), "null from the remote is omitted: {}", plain.1);
    let r = s
        .client
        .get(s.url("/namespaces/far%1Fn1/tables/t"))
        .header("X-Iceberg-Access-Delegation", "vended-credentials")
        .send()
        .await
        .unwrap();
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        body["storage-credentials"],
        json!([{"prefix": "s3://remote/", "config": {"s3.access-key-id": "remote-vended"}}])
    );
    assert_eq!(body["metadata-location"], "s3://remote/t/metadata/1.json");
}

#[tokio::test]
async fn a_remote_that_never_answers_stops_the_start_naming_the_mount() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    // Accept connections and never answer.
    std::thread::spawn(move || {
        let mut held = vec![];
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    let output = match Server::try_start(&rest_mount("mute", &url, None, "request_timeout_ms = 300\n")) {
        Ok(_) => panic!("started"),
        Err(output) => output,
    };
    assert!(output.contains("mount `mute`") && output.contains("did not answer within 300 ms"), "{output}");
    let output = match Server::try_start(&rest_mount("tokenless", &url, Some("UNSET_VARIABLE_FOR_TEST"), "")) {
        Ok(_) => panic!("started"),
        Err(output) => output,
    };
    assert!(output.contains("mount `tokenless`") && output.contains("UNSET_VARIABLE_FOR_TEST"), "{output}");
}

/// The conformance suite runs over the rest backend too, against a second Rustberg: a
/// read-only backend passes what it can be asked (its description, and telling an
/// unreachable remote from an absence) and its write cases are skipped, each named.
#[test]
fn the_conformance_suite_runs_over_a_rest_mount() {
    let remote = Server::start("");
    let token = remote.admin_token();
    let config = rest_mount("partner", &remote.base, Some("PARTNER_TOKEN"), "");
    let report = support::conformance_report("rest", &config, "partner", &[("PARTNER_TOKEN", token.as_str())]);
    for case in ["description", "not found versus unavailable"] {
        assert!(report.contains(&format!("pass  {case} ")), "{case} passes:\n{report}");
    }
    assert!(report.contains("skip  tables (the backend forwards writes to its remote)"), "{report}");
    assert!(report.contains(" 0 failed"), "{report}");
}

/// A remote Rustberg and a read-write mount of it (`read_only = false`), reached with the
/// remote's admin token.
fn read_write_mount_of(remote: &Server, extra: &str) -> Server {
    let token = remote.admin_token();
    let mount = rest_mount("partner", &remote.base, Some("PARTNER_TOKEN"), &format!("read_only = false\n{extra}"));
    Server::try_start_with_env(&mount, &[("PARTNER_TOKEN", &token)]).unwrap_or_else(|out| panic!("{out}"))
}

fn message(got: &(u16, Value)) -> &str {
    got.1["error"]["message"].as_str().unwrap_or_default()
}

/// Every write the remote serves goes through a read-write mount, in the remote's own
/// names; the remote does the compare-and-set, and what it refuses keeps its status and
/// its Iceberg type, naming the mount.
#[tokio::test]
async fn a_rustberg_catalog_mounted_read_write() {
    let remote = Server::start("");
    let s = read_write_mount_of(&remote, "");

    // Namespaces.
    let created = s.post("/namespaces", json!({"namespace": ["partner", "sales"], "properties": {"team": "x"}})).await;
    assert_eq!(created, (200, json!({"namespace": ["partner", "sales"], "properties": {"team": "x"}})));
    assert_eq!(remote.get("/namespaces/sales").await.1["properties"]["team"], "x", "created at the remote");
    let again = s.post("/namespaces", json!({"namespace": ["partner", "sales"]})).await;
    assert_error(&again, 409, "AlreadyExistsException");
    assert!(message(&again).contains("mount `partner`"), "{}", again.1);
    let updated = s.post("/namespaces/partner%1Fsales/properties", json!({"updates": {"tier": "gold"}})).await;
    assert_eq!(updated.1["updated"], json!(["tier"]), "{}", updated.1);
    assert_eq!(remote.get("/namespaces/sales").await.1["properties"]["tier"], "gold");

    // Tables: create, commit, a lost compare-and-set, rename, transactions, drop.
    let orders = s.post("/namespaces/partner%1Fsales/tables", json!({"name": "orders", "schema": schema()})).await;
    assert_eq!(orders.0, 200, "{}", orders.1);
    let at_remote = remote.get("/namespaces/sales/tables/orders").await;
    assert_eq!(at_remote.1["metadata-location"], orders.1["metadata-location"], "the remote wrote it");
    let uuid = orders.1["metadata"]["table-uuid"].clone();
    let set = |k: &str| {
        json!({
            "requirements": [{"type": "assert-table-uuid", "uuid": uuid}],
            "updates": [{"action": "set-properties", "updates": {k: "v"}}],
        })
    };
    let committed = s.post("/namespaces/partner%1Fsales/tables/orders", set("k1")).await;
    assert_eq!(committed.0, 200, "{}", committed.1);
    assert_eq!(remote.get("/namespaces/sales/tables/orders").await.1["metadata"]["properties"]["k1"], "v");
    let stale = json!({
        "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 42}],
        "updates": [{"action": "set-properties", "updates": {"k2": "v"}}],
    });
    let lost = s.post("/namespaces/partner%1Fsales/tables/orders", stale).await;
    assert_error(&lost, 409, "CommitFailedException");
    assert!(message(&lost).contains("mount `partner`"), "{}", lost.1);
    assert!(remote.get("/namespaces/sales/tables/orders").await.1["metadata"]["properties"].get("k2").is_none());
    // An update the remote cannot apply: its 400, naming the mount.
    let bad = json!({"requirements": [], "updates": [{"action": "set-default-spec", "spec-id": 99}]});
    let refused = s.post("/namespaces/partner%1Fsales/tables/orders", bad).await;
    assert_error(&refused, 400, "BadRequestException");
    assert!(message(&refused).contains("mount `partner`"), "{}", refused.1);
    assert_error(&s.get("/namespaces/partner%1Fsales/tables/nope").await, 404, "NoSuchTableException");

    let renamed = s
        .post(
            "/tables/rename",
            json!({"source": {"namespace": ["partner", "sales"], "name": "orders"},
                   "destination": {"namespace": ["partner", "sales"], "name": "orders2"}}),
        )
        .await;
    assert_eq!(renamed.0, 204, "{}", renamed.1);
    assert_eq!(remote.head("/namespaces/sales/tables/orders2").await, 204);
    assert_eq!(remote.head("/namespaces/sales/tables/orders").await, 404);

    assert_eq!(s.post("/namespaces/partner%1Fsales/tables", json!({"name": "b", "schema": schema()})).await.0, 200);
    let both = json!({"table-changes": [
        {"identifier": {"namespace": ["partner", "sales"], "name": "orders2"}, "requirements": [],
         "updates": [{"action": "set-properties", "updates": {"tx": "1"}}]},
        {"identifier": {"namespace": ["partner", "sales"], "name": "b"}, "requirements": [],
         "updates": [{"action": "set-properties", "updates": {"tx": "1"}}]},
    ]});
    let tx = s.post("/transactions/commit", both).await;
    assert_eq!(tx.0, 204, "{}", tx.1);
    for t in ["orders2", "b"] {
        assert_eq!(remote.get(&format!("/namespaces/sales/tables/{t}")).await.1["metadata"]["properties"]["tx"], "1");
    }

    // Views, where the remote serves them.
    let view = json!({
        "name": "v", "schema": schema(),
        "view-version": {"version-id": 1, "timestamp-ms": 1, "schema-id": 0, "summary": {},
            "representations": [{"type": "sql", "sql": "select 1", "dialect": "spark"}],
            "default-namespace": ["sales"]},
        "properties": {},
    });
    let created_view = s.post("/namespaces/partner%1Fsales/views", view).await;
    assert_eq!(created_view.0, 200, "{}", created_view.1);
    assert_eq!(remote.head("/namespaces/sales/views/v").await, 204);
    assert_eq!(s.delete("/namespaces/partner%1Fsales/views/v").await.0, 204);
    assert_eq!(remote.head("/namespaces/sales/views/v").await, 404);

    // A namespace that still holds tables keeps the remote's refusal.
    assert_error(&s.delete("/namespaces/partner%1Fsales").await, 409, "NamespaceNotEmptyException");
    assert_eq!(s.delete("/namespaces/partner%1Fsales/tables/orders2?purgeRequested=true").await.0, 204);
    assert_eq!(s.delete("/namespaces/partner%1Fsales/tables/b").await.0, 204);
    assert_eq!(remote.head("/namespaces/sales/tables/b").await, 404);
    assert_eq!(s.delete("/namespaces/partner%1Fsales").await.0, 204);
    assert_eq!(remote.head("/namespaces/sales").await, 404);

    // The mount promises its writes: /v1/config for it lists them.
    let config: Value =
        s.client.get(format!("{}/v1/config?warehouse=partner", s.base)).send().await.unwrap().json().await.unwrap();
    let endpoints: Vec<&str> = config["endpoints"].as_array().unwrap().iter().map(|e| e.as_str().unwrap()).collect();
    for write in [
        "POST /v1/{prefix}/namespaces",
        "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
        "POST /v1/{prefix}/transactions/commit",
        "POST /v1/{prefix}/namespaces/{namespace}/views",
    ] {
        assert!(endpoints.contains(&write), "{write} in {endpoints:?}");
    }
    assert!(!endpoints.iter().any(|e| e.ends_with("/plan")), "no planning over a remote's manifests");
}

/// The host's rules come first: a location in a warehouse this server governs is refused
/// before anything reaches the remote, and a caller of another tenant finds nothing.
#[tokio::test]
async fn a_read_write_mount_keeps_the_hosts_rules() {
    let remote = Server::start("");
    assert_eq!(remote.post("/namespaces", json!({"namespace": ["sales"]})).await.0, 200);
    let s = read_write_mount_of(&remote, "");
    let root_config: Value = s.client.get(format!("{}/v1/config", s.base)).send().await.unwrap().json().await.unwrap();
    assert!(root_config.is_object());
    assert_eq!(s.post("/namespaces", json!({"namespace": ["local"]})).await.0, 200);
    let local_location = s.get("/namespaces/local").await.1["properties"]["location"].as_str().unwrap().to_string();
    let inside = format!("{local_location}/stolen");
    let refused = s
        .post("/namespaces/partner%1Fsales/tables", json!({"name": "t", "schema": schema(), "location": inside}))
        .await;
    assert_error(&refused, 403, "ForbiddenException");
    assert!(message(&refused).contains("root catalog") || message(&refused).contains("warehouse"), "{}", refused.1);
    assert_eq!(remote.head("/namespaces/sales/tables/t").await, 404, "nothing reached the remote");
    let moved = json!({"requirements": [], "updates": [{"action": "set-location", "location": inside}]});
    assert_eq!(s.post("/namespaces/partner%1Fsales/tables", json!({"name": "t", "schema": schema()})).await.0, 200);
    assert_error(&s.post("/namespaces/partner%1Fsales/tables/t", moved).await, 403, "ForbiddenException");
    let props = json!({"namespace": ["partner", "ns2"], "properties": {"location": local_location}});
    assert_error(&s.post("/namespaces", props).await, 403, "ForbiddenException");
    assert_eq!(remote.head("/namespaces/ns2").await, 404);

    // Another tenant's writer does not see the mount (its owner is `default`).
    let evil = Server::try_start_with_env(
        &format!(
            "{}{}",
            support::acme_and_evil_writers(),
            rest_mount("partner", &remote.base, Some("PARTNER_TOKEN"), "read_only = false\n")
        ),
        &[("PARTNER_TOKEN", &remote.admin_token())],
    )
    .unwrap_or_else(|out| panic!("{out}"));
    let attacker = evil.login("evil", "evil-secret");
    let drop = attacker.delete("/namespaces/partner%1Fsales/tables/t").await;
    assert_eq!(drop.0, 404, "{}", drop.1);
    let write = attacker.post("/namespaces/partner%1Fsales/tables", json!({"name": "x", "schema": schema()})).await;
    assert_eq!(write.0, 404, "{}", write.1);
    assert_eq!(remote.head("/namespaces/sales/tables/t").await, 204, "untouched");
    assert_eq!(remote.head("/namespaces/sales/tables/x").await, 404);
}

/// What the remote answers is mapped once: a refusal of the mount's own credential is a
/// 502 naming the mount, a remote that went away is a 503 (a commit's outcome unknown),
/// and no remote answer reaches a client as 500.
#[tokio::test]
async fn remote_answers_to_writes_are_mapped_exactly() {
    let reader_secret = "reader-secret";
    let remote = Server::start(&format!(
        "[auth.principals.reader]\ntenant = \"default\"\nrole = \"reader\"\nsecret_hash = \"{}\"\n",
        support::hash_secret(reader_secret)
    ));
    assert_eq!(remote.post("/namespaces", json!({"namespace": ["sales"]})).await.0, 200);
    assert_eq!(remote.post("/namespaces/sales/tables", json!({"name": "t", "schema": schema()})).await.0, 200);
    let reader_token = support::token_for(&remote.base, "reader", reader_secret);
    let mount = rest_mount("partner", &remote.base, Some("PARTNER_TOKEN"), "read_only = false\n");
    let s = Server::try_start_with_env(&mount, &[("PARTNER_TOKEN", &reader_token)]).unwrap_or_else(|o| panic!("{o}"));
    assert_eq!(s.get("/namespaces/partner%1Fsales/tables/t").await.0, 200, "the reader reads");
    let denied = s.post("/namespaces/partner%1Fsales/tables", json!({"name": "u", "schema": schema()})).await;
    assert_error(&denied, 502, "BadGatewayException");
    assert!(message(&denied).contains("mount `partner`") && message(&denied).contains("credential"), "{}", denied.1);
    assert_eq!(remote.head("/namespaces/sales/tables/u").await, 404);

    // The remote gone: a commit's outcome is unknown, a read is unavailable; neither 500.
    let s = read_write_mount_of(&remote, "request_timeout_ms = 2000\n");
    let _dir = remote.stop();
    let set = json!({"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]});
    let unknown = s.post("/namespaces/partner%1Fsales/tables/t", set).await;
    assert_error(&unknown, 503, "CommitStateUnknownException");
    assert!(message(&unknown).contains("mount `partner`"), "{}", unknown.1);
    assert_error(&s.get("/namespaces/partner%1Fsales/tables/t").await, 503, "ServiceUnavailableException");
}
