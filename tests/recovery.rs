//! What goes with a backend change is carried through whatever happens to the
//! change: a backend that fails after applying it, or a crash between the backend's
//! commit and the host's. A root namespace always has its owner, and a dropped
//! resource never keeps its grants.

use crate::support;

use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};
use support::{acme_and_evil_writers, assert_error, components_dir, schema, Api, Server};

/// The root catalog is the flaky component: its creates and drops of `unknown-…`
/// apply and then trap, so the host is told nothing but a failure.
#[tokio::test]
async fn a_change_that_fails_after_applying_still_carries_its_effects() {
    let s = Server::start(&format!("[storage]\nbackend = \"{}\"\n", components_dir().join("flaky.wasm").display()));
    let admin: &Api = &s;
    assert_eq!(admin.send(Method::POST, "/management/v1/tenants", Some(json!({"name": "other"}))).await.0, 201);

    // The namespace was created: it must have its owner, or nobody could ever see it.
    let created = admin.post("/namespaces", json!({"namespace": ["unknown-a"]})).await;
    assert_eq!(created.0, 500, "{}", created.1);
    assert_eq!(admin.get("/namespaces/unknown-a").await.0, 200, "the interrupted create recorded its owner");
    assert_error(&admin.post("/namespaces", json!({"namespace": ["unknown-a"]})).await, 409, "AlreadyExistsException");

    assert_eq!(admin.post("/namespaces", json!({"namespace": ["db"]})).await.0, 200);
    let table = admin.post("/namespaces/db/tables", json!({"name": "unknown-t", "schema": schema()})).await;
    assert_eq!(table.0, 500, "{}", table.1);
    assert_eq!(admin.get("/namespaces/db/tables/unknown-t").await.0, 200);
    let on_table = json!({"namespace": ["db"], "table": "unknown-t", "privilege": "read", "tenant": "other"});
    let on_table = admin.grant(on_table).await["id"].as_str().unwrap().to_string();
    let on_namespace = admin.grant(json!({"namespace": ["unknown-a"], "privilege": "write", "tenant": "other"})).await
        ["id"]
        .as_str()
        .unwrap()
        .to_string();
    let on_db = admin.grant(json!({"namespace": ["db"], "privilege": "read", "tenant": "other"})).await["id"]
        .as_str()
        .unwrap()
        .to_string();

    // The drops applied: the grants on what they dropped must go with them.
    assert_eq!(admin.delete("/namespaces/db/tables/unknown-t").await.0, 500);
    assert_eq!(admin.get("/namespaces/db/tables/unknown-t").await.0, 404);
    assert_eq!(admin.delete("/namespaces/unknown-a").await.0, 500);
    assert_eq!(admin.get("/namespaces/unknown-a").await.0, 404);
    let left: Vec<String> = admin.grants().await.iter().map(|g| g["id"].as_str().unwrap().to_string()).collect();
    assert!(!left.contains(&on_table), "the dropped table's grant is gone: {left:?}");
    assert!(!left.contains(&on_namespace), "the dropped namespace's grant is gone: {left:?}");
    assert!(left.contains(&on_db), "the grant on what was not dropped stays: {left:?}");
}

/// Writes keys into a stopped server's host key space.
async fn write_host_keys(file: &std::path::Path, writes: &[(&str, Option<Value>)]) {
    use rustberg::storage::kv::{KvStore, RedbStore, Write};
    let host = KvStore::Redb(RedbStore::open(file).unwrap().space("rustberg:host").unwrap());
    let writes: Vec<Write> = writes
        .iter()
        .map(|(key, value)| Write {
            key: key.as_bytes().to_vec(),
            value: value.as_ref().map(|v| match v {
                Value::String(s) => s.as_bytes().to_vec(),
                v => serde_json::to_vec(v).unwrap(),
            }),
        })
        .collect();
    host.commit(&[], &writes).await.unwrap();
}

async fn host_keys(file: &std::path::Path, prefix: &str) -> Vec<String> {
    use rustberg::storage::kv::{prefix_end, KvStore, RedbStore};
    let host = KvStore::Redb(RedbStore::open(file).unwrap().space("rustberg:host").unwrap());
    let end = prefix_end(prefix.as_bytes());
    let entries = host.scan(prefix.as_bytes(), end.as_deref(), 1000).await.unwrap();
    entries.into_iter().map(|e| String::from_utf8_lossy(&e.key).into_owned()).collect()
}

/// A crash between a backend's commit and the host's leaves an intent; the next start
/// settles each by what the backend holds, before it answers anybody.
#[tokio::test]
async fn start_up_settles_what_a_crash_left_half_done() {
    let mut s = Server::start("");
    for ns in ["half", "kept"] {
        assert_eq!(s.post("/namespaces", json!({"namespace": [ns]})).await.0, 200);
    }
    // Stopped, not killed: it leaves nothing to settle of its own (the intents below
    // are all there is).
    s.signal("TERM");
    assert!(s.exit_within(Duration::from_secs(30)).is_some_and(|status| status.success()), "{}", s.output());
    let dir = s.stop();
    let file = dir.path().join("data/catalog.redb");
    let tenant_grant = |id: &str, ns: &str| json!({"id": id, "resource": {"namespace": [ns]}, "privilege": "read", "grantee": {"tenant": "default"}});
    write_host_keys(
        &file,
        &[
            // `half` was created in the backend; the crash came before its owner.
            ("owner/half", None),
            ("intent/own/half", Some(json!({"at": 0, "effect": "own", "root": "half", "tenant": "default"}))),
            // `never` was not created: no owner may appear for it.
            ("intent/own/never", Some(json!({"at": 0, "effect": "own", "root": "never", "tenant": "default"}))),
            // `ghost` was dropped; the crash came before its grants were revoked.
            ("grant/g-ghost", Some(tenant_grant("g-ghost", "ghost"))),
            ("intent/0001", Some(json!({"at": 0, "effect": "forget", "resource": {"namespace": ["ghost"]}}))),
            // The drop of `kept` never happened: its grant stays.
            ("grant/g-kept", Some(tenant_grant("g-kept", "kept"))),
            ("intent/0002", Some(json!({"at": 0, "effect": "forget", "resource": {"namespace": ["kept"]}}))),
        ],
    )
    .await;

    let s = Server::start_in(dir, "");
    assert!(s.output().contains("start-up repair settled 4 interrupted change(s); 0 left"), "{}", s.output());
    assert_eq!(s.get("/namespaces/half").await.0, 200, "the created namespace got its owner");
    let (_, top) = s.get("/namespaces").await;
    assert_eq!(top["namespaces"], json!([["half"], ["kept"]]));
    let ids: Vec<String> = s.grants().await.iter().map(|g| g["id"].as_str().unwrap().to_string()).collect();
    assert_eq!(ids, ["g-kept"], "the dropped namespace's grant went; the other stayed");
    let dir = s.stop();
    let file = dir.path().join("data/catalog.redb");
    assert_eq!(host_keys(&file, "intent/").await, Vec::<String>::new(), "every intent was settled");
    assert_eq!(host_keys(&file, "owner/").await, ["owner/half", "owner/kept"]);
}

/// A root catalog whose namespace creates wait as long as their `test.delay-ms`
/// property says, with a writer in each of the tenants acme and evil.
fn slow_creates_for_two_tenants() -> (Server, Api, Api) {
    let principals = acme_and_evil_writers();
    let flaky = components_dir().join("flaky.wasm");
    let s = Server::start(&format!("[storage]\nbackend = \"{}\"\n{principals}", flaky.display()));
    let (acme, evil) = (s.login("acme", "acme-secret"), s.login("evil", "evil-secret"));
    (s, acme, evil)
}

/// Where the server's warehouse is, as its start-up output says.
fn warehouse(s: &Server) -> String {
    let output = s.output();
    let line = output.lines().find_map(|l| l.strip_prefix("rustberg: warehouse ")).expect("the warehouse is printed");
    line.trim().to_string()
}

/// Another tenant's namespace placed at `location` or inside it is refused.
async fn location_is_held(evil: &Api, location: &str) {
    for over in [location.to_string(), format!("{location}/x")] {
        let got = evil.post("/namespaces", json!({"namespace": ["evil"], "properties": {"location": over}})).await;
        assert!(got.0 == 400 || got.0 == 409, "a namespace at {over} was not refused: {} {}", got.0, got.1);
    }
}

/// A root namespace another request is still creating is refused to a second creator
/// (409), who must not settle the first create's intent while it is under way: taken
/// for a failed create and abandoned, it let the second creator own the name, and the
/// first, failing after all, released the location claim both had relied on, so
/// another namespace could then be placed over the created one's files.
#[tokio::test(flavor = "multi_thread")]
async fn a_root_being_created_is_not_settled_by_a_second_creator() {
    let (s, acme, evil) = slow_creates_for_two_tenants();

    // acme's create waits in the backend for a second and a half; evil asks meanwhile.
    let slow = json!({"namespace": ["contested"], "properties": {"test.delay-ms": "1500"}});
    let (created, second) = tokio::join!(acme.post("/namespaces", slow), async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        evil.post("/namespaces", json!({"namespace": ["contested"]})).await
    });
    assert_error(&second, 409, "AlreadyExistsException");
    assert_eq!(created.0, 200, "{}", created.1);
    assert_eq!(acme.get("/namespaces/contested").await.0, 200, "acme owns what it created");
    assert_error(&evil.get("/namespaces/contested").await, 404, "NoSuchNamespaceException");

    // The created namespace still holds its location.
    location_is_held(&evil, &format!("{}/contested", warehouse(&s))).await;
}

/// Two creates of one nested namespace at once: one lands, the other answers 409, and
/// the namespace keeps its location's claim (the creates share it: the one that failed
/// must not release it from under the one that landed).
#[tokio::test(flavor = "multi_thread")]
async fn two_creates_of_one_namespace_leave_it_its_location() {
    let (s, acme, _) = slow_creates_for_two_tenants();
    assert_eq!(acme.post("/namespaces", json!({"namespace": ["db"]})).await.0, 200);
    let slow = json!({"namespace": ["db", "x"], "properties": {"test.delay-ms": "1500"}});
    let (first, second) = tokio::join!(acme.post("/namespaces", slow), async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        acme.post("/namespaces", json!({"namespace": ["db", "x"]})).await
    });
    let mut statuses = [first.0, second.0];
    statuses.sort();
    assert_eq!(statuses, [200, 409], "one create lands: {} {}", first.1, second.1);
    // Only a table of `db` may be placed inside `db`'s location (`db`'s claim keeps
    // every other out): not over `db.x`'s.
    for over in ["db/x", "db/x/t"] {
        let body = json!({"name": "t", "schema": schema(), "location": format!("{}/{over}", warehouse(&s))});
        let got = acme.post("/namespaces/db/tables", body).await;
        assert!(got.0 == 400 || got.0 == 409, "a table at {over} was not refused: {} {}", got.0, got.1);
    }
}
