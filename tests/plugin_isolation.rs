//! A misbehaving backend fails one request, naming its mount and the cause, and
//! the server keeps serving. A component importing what its mount does not grant
//! is refused at start-up.
//!
//! The test component misbehaves in createNamespace by name (`trap`, `loop`,
//! `bomb`): creating a root namespace is the first call a caller can steer into a
//! backend without an owner being recorded first.

use crate::support;

use serde_json::json;
use support::{assert_error, components_dir, Server};

fn misbehaving_server() -> Server {
    let component = components_dir().join("misbehave.wasm");
    Server::start(&format!(
        "[storage]\nbackend = \"{}\"\n[plugins]\ncall_timeout_ms = 300\nmemory_limit_mib = 32\n",
        component.display()
    ))
}

#[tokio::test]
async fn trap_loop_and_memory_bomb_each_fail_one_request() {
    let mut s = misbehaving_server();
    // A create that failed that way may have been made before the failure: its outcome
    // is unknown (504 for a call past its time). Created again, the name's earlier
    // create is settled first, which the backend fails the same way: nothing is done.
    let unknown = "CommitStateUnknownException";
    for (round, (name, cause, status, kind)) in [
        ("trap", "trapped", 500, unknown),
        ("loop", "time limit", 504, unknown),
        ("bomb", "out of memory", 500, unknown),
        ("trap", "trapped", 500, "InternalServerError"),
        ("loop", "time limit", 500, "InternalServerError"),
    ]
    .into_iter()
    .enumerate()
    {
        let got = s.post("/namespaces", json!({"namespace": [name]})).await;
        assert_error(&got, status, kind);
        let message = got.1["error"]["message"].as_str().unwrap();
        assert!(message.contains("root catalog"), "names the mount: {message}");
        assert!(message.contains(cause), "names the cause ({cause}): {message}");
        if name == "trap" {
            // In the guest's own words (its panic message), without the wasm backtrace.
            assert!(message.contains("deliberate trap") && !message.contains("backtrace"), "{message}");
        }
        // The next requests to the same backend work. (This backend keeps nothing:
        // what it created, it cannot find.)
        let fine = format!("fine{round}");
        assert_eq!(s.post("/namespaces", json!({"namespace": [fine]})).await.0, 200);
        assert_error(&s.get(&format!("/namespaces/{fine}")).await, 404, "NoSuchNamespaceException");
        assert_eq!(s.get("/namespaces").await, (200, json!({"namespaces": []})));
        assert!(s.running());
    }
    // The whole story, backtrace included, is in the log, tagged with the mount.
    let log = s.output_once_it_says("the backend trapped");
    assert!(
        log.contains("the backend trapped") && log.contains("deliberate trap") && log.contains("root catalog"),
        "{log}"
    );
}

#[tokio::test]
async fn concurrent_requests_survive_a_looping_one() {
    let s = std::sync::Arc::new(misbehaving_server());
    let looping = {
        let s = s.clone();
        tokio::spawn(async move { s.post("/namespaces", json!({"namespace": ["loop"]})).await })
    };
    // While one call spins, others are served.
    for _ in 0..20 {
        assert_eq!(s.get("/namespaces").await.0, 200);
    }
    assert_error(&looping.await.unwrap(), 504, "CommitStateUnknownException");
}

/// A backend that exports `key-listings` names a prefix and the host scans its keys:
/// what it lists is what its keys say (its own `list-namespaces` answers nothing), a key
/// that is not a name fails the listing naming the mount, and a failure or a trap in
/// the prefix call is the listing's error, never an empty page.
#[tokio::test]
async fn listings_served_from_a_backends_keys_fail_naming_the_mount() {
    let mut s = misbehaving_server();
    assert_eq!(s.post("/namespaces", json!({"namespace": ["listed"]})).await.0, 200);
    assert_eq!(s.get("/namespaces").await, (200, json!({"namespaces": [["listed"]]})));
    let (status, page) = s.get("/namespaces?pageToken=&pageSize=1").await;
    assert_eq!((status, &page["namespaces"]), (200, &json!([["listed"]])), "{page}");

    assert_eq!(s.post("/namespaces", json!({"namespace": ["garbage"]})).await.0, 200);
    let listed = s.get("/namespaces").await;
    assert_error(&listed, 500, "InternalServerError");
    let message = listed.1["error"]["message"].as_str().unwrap();
    assert!(message.contains("root catalog") && message.contains("not a name"), "{message}");

    let trapped = s.get("/namespaces/listed/tables").await;
    assert_error(&trapped, 500, "InternalServerError");
    let message = trapped.1["error"]["message"].as_str().unwrap();
    assert!(message.contains("root catalog") && message.contains("deliberate trap"), "{message}");
    let unavailable = s.get("/namespaces/listed/views").await;
    assert_error(&unavailable, 503, "ServiceUnavailableException");
    assert!(unavailable.1["error"]["message"].as_str().unwrap().contains("somewhere else"), "{}", unavailable.1);
    assert!(s.running());
}

#[test]
fn a_component_importing_more_than_granted_is_refused() {
    let component = components_dir().join("greedy.wasm");
    let output = match Server::try_start(&format!("[storage]\nbackend = \"{}\"\n", component.display())) {
        Ok(_) => panic!("the server started with a component that imports http"),
        Err(output) => output,
    };
    assert!(output.contains("rustberg:catalog/http"), "names the import: {output}");
    assert!(output.contains("root catalog"), "names the mount: {output}");
}

/// A mount runs at most `pool_size` calls at once: a call that finds every slot taken
/// by a stuck one waits briefly, then fails with 503 naming the mount, and the mount
/// serves again once the slot is free.
#[tokio::test(flavor = "multi_thread")]
async fn a_mount_busy_with_stuck_calls_refuses_more_with_503() {
    let component = components_dir().join("misbehave.wasm");
    let s = Server::start(&format!(
        "[storage]\nbackend = \"{}\"\n[plugins]\ncall_timeout_ms = 600\npool_size = 1\n",
        component.display()
    ));
    let stuck = s.post("/namespaces", json!({"namespace": ["loop"]}));
    let waiting = async {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        s.post("/namespaces", json!({"namespace": ["fine"]})).await
    };
    let (stuck, refused) = tokio::join!(stuck, waiting);
    assert_error(&stuck, 504, "CommitStateUnknownException");
    assert_error(&refused, 503, "ServiceUnavailableException");
    let message = refused.1["error"]["message"].as_str().unwrap();
    assert!(message.contains("root catalog") && message.contains("busy"), "{message}");
    assert_eq!(s.post("/namespaces", json!({"namespace": ["fine"]})).await.0, 200, "served again");
}

/// `[mount.x.plugins]` gives one mount its own limits: its calls run under its own
/// deadline and slot count, and while its one slot is stuck the other mounts serve.
#[tokio::test(flavor = "multi_thread")]
async fn a_mount_runs_under_its_own_limits_and_starves_no_other() {
    let component = components_dir().join("misbehave.wasm");
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&format!(
        "[mount.slow]\nbackend = \"{}\"\ncatalog_url = \"redb://{}/slow.redb\"\nowner = \"default\"\n\
         [mount.slow.plugins]\ncall_timeout_ms = 400\npool_size = 1\n",
        component.display(),
        dir.path().display()
    ));
    let stuck = s.post("/namespaces", json!({"namespace": ["slow", "loop"]}));
    let meanwhile = async {
        // Once the stuck call holds the mount's one instance (a busy machine may take
        // longer than a moment to get it there).
        let busy = "rustberg_pool_busy_instances{mount=\"slow\"} 1";
        for _ in 0..30 {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            let metrics = s.client.get(format!("{}/metrics", s.base)).send().await.unwrap().text().await.unwrap();
            if metrics.lines().any(|line| line == busy) {
                break;
            }
        }
        let refused = s.post("/namespaces", json!({"namespace": ["slow", "fine"]})).await;
        let elsewhere = s.post("/namespaces", json!({"namespace": ["served"]})).await;
        (refused, elsewhere)
    };
    let (stuck, (refused, elsewhere)) = tokio::join!(stuck, meanwhile);
    assert_error(&stuck, 504, "CommitStateUnknownException");
    let message = stuck.1["error"]["message"].as_str().unwrap();
    assert!(message.contains("mount `slow`") && message.contains("time limit of 400 ms"), "{message}");
    assert_error(&refused, 503, "ServiceUnavailableException");
    assert!(refused.1["error"]["message"].as_str().unwrap().contains("mount `slow`"), "{}", refused.1);
    assert_eq!(elsewhere.0, 200, "the root catalog kept serving: {}", elsewhere.1);
}

#[test]
fn a_mount_limit_of_zero_is_refused_at_start_up() {
    let output = Server::try_start(
        "[mount.m]\nbackend = \"native\"\ncatalog_url = \"redb:///tmp/never-opened.redb\"\nowner = \"default\"\n\
         [mount.m.plugins]\npool_size = 0\n",
    )
    .err()
    .expect("refused");
    assert!(output.contains("mount.m.plugins.pool_size is 0"), "{output}");
}

/// `[mount.x.config]` reaches the component through `config.get`, and nothing else does.
#[tokio::test]
async fn a_mount_hands_its_settings_to_its_component() {
    let component = components_dir().join("misbehave.wasm");
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&format!(
        "[mount.m]\nbackend = \"{}\"\ncatalog_url = \"redb://{}/m.redb\"\nowner = \"default\"\n\
         [mount.m.config]\nregion = \"eu-west-1\"\n",
        component.display(),
        dir.path().display()
    ));
    let region = s.get("/namespaces/m%1Fconfig%1Fregion").await;
    assert_eq!(region.1["properties"]["value"], "eu-west-1", "{}", region.1);
    let unset = s.get("/namespaces/m%1Fconfig%1Fsecret_access_key").await;
    assert_eq!(unset.1["properties"]["value"], "", "{}", unset.1);
}

/// What a backend returns is checked before a client sees it: no metadata JSON (the
/// WIT allows it) makes the host read the metadata file; JSON cut short is a 502
/// naming the mount, never an invalid 200.
#[tokio::test]
async fn metadata_from_a_backend_is_read_or_refused_never_passed_on_broken() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(&format!(
        "[mount.flaky]\nbackend = \"{}\"\ncatalog_url = \"redb://{}/flaky.redb\"\nowner = \"default\"\n",
        components_dir().join("flaky.wasm").display(),
        dir.path().display()
    ));
    assert_eq!(s.post("/namespaces", json!({"namespace": ["flaky", "db"]})).await.0, 200);
    for name in ["bare-t", "garbled-t"] {
        let created = s.post("/namespaces/flaky%1Fdb/tables", json!({"name": name, "schema": support::schema()})).await;
        assert_eq!(created.0, 200, "{}", created.1);
    }
    let (status, bare) = s.get("/namespaces/flaky%1Fdb/tables/bare-t").await;
    assert_eq!(status, 200, "{bare}");
    assert_eq!(bare["metadata"]["format-version"], 2, "read from the metadata file: {bare}");
    let garbled = s.get("/namespaces/flaky%1Fdb/tables/garbled-t").await;
    assert_error(&garbled, 502, "BadGatewayException");
    let message = garbled.1["error"]["message"].as_str().unwrap();
    assert!(message.contains("mount `flaky`") && message.contains("not valid JSON"), "{message}");
}
