//! Operating the server: request ids through responses and logs, structured logs,
//! graceful shutdown, and a health page that tells outsiders only the status.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{components_dir, Server};

fn misbehaving(extra: &str) -> Server {
    Server::start(&format!(
        "[storage]\nbackend = \"{}\"\n[plugins]\ncall_timeout_ms = 1500\n{extra}",
        components_dir().join("misbehave.wasm").display()
    ))
}

/// Sends createNamespace `name` with `X-Request-Id: id` (when given); the status and
/// the id the response carries.
async fn create(s: &Server, name: &str, id: Option<&str>) -> (u16, String) {
    let mut request = s.client.post(s.url("/namespaces")).json(&json!({"namespace": [name]}));
    if let Some(id) = id {
        request = request.header("X-Request-Id", id);
    }
    let response = request.send().await.unwrap();
    let echoed = response.headers().get("x-request-id").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
    (response.status().as_u16(), echoed)
}

#[tokio::test]
async fn a_request_id_is_returned_and_carried_by_the_requests_log_lines() {
    let s = misbehaving("");
    let (_, generated) = create(&s, "fine", None).await;
    assert!(uuid_like(&generated), "a generated id: {generated:?}");
    let (status, echoed) = create(&s, "trap", Some("trace-me-42")).await;
    assert_eq!((status, echoed.as_str()), (500, "trace-me-42"));
    let log = s.output_once_it_says("the backend trapped");
    let line = log.lines().find(|l| l.contains("the backend trapped")).unwrap();
    assert!(line.contains("trace-me-42"), "the log line carries the request id: {line}");
}

fn uuid_like(id: &str) -> bool {
    id.len() == 36 && id.chars().filter(|c| *c == '-').count() == 4
}

#[tokio::test]
async fn json_logs_carry_the_request_id_as_a_field() {
    let s = misbehaving("[log]\nformat = \"json\"\n");
    create(&s, "trap", Some("json-7")).await;
    let log = s.output_once_it_says("the backend trapped");
    let event: Value = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["fields"]["message"] == "the backend trapped")
        .unwrap_or_else(|| panic!("no JSON line for the trap in:\n{log}"));
    assert_eq!(event["span"]["request_id"], "json-7", "{event}");
    assert_eq!(event["level"], "WARN");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_requests_in_flight_finish_and_exits_0() {
    let mut s = misbehaving("");
    let in_flight = {
        let (client, url) = (s.client.clone(), s.url("/namespaces"));
        // `loop` runs until its 1.5 s budget is spent, then answers 500.
        tokio::spawn(async move { client.post(url).json(&json!({"namespace": ["loop"]})).send().await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    s.signal("TERM");
    let answered = in_flight.await.unwrap().expect("the request in flight is answered, not cut");
    assert_eq!(answered.status().as_u16(), 500);
    let status = s.exit_within(Duration::from_secs(10)).expect("the server exits");
    assert!(status.success(), "exit status 0: {status:?}");
    let log = s.output_once_it_says("rustberg: stopped");
    assert!(log.contains("SIGTERM: finishing the requests in flight") && log.contains("rustberg: stopped"), "{log}");
}

fn check_config(text: &str) -> (i32, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rustberg.toml");
    std::fs::write(&file, text.replace("{dir}", dir.path().to_str().unwrap())).unwrap();
    let output =
        std::process::Command::new(env!("CARGO_BIN_EXE_rustberg")).arg("check-config").arg(&file).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    (output.status.code().unwrap_or(-1), text, dir)
}

#[test]
fn check_config_finds_what_serve_would_refuse_without_serving() {
    let (code, out, _dir) = check_config(
        "[server]\ndata_dir = \"{dir}/data\"\n\
         [mount.prod]\nbackend = \"native\"\ncatalog_url = \"redb://{dir}/prod.redb\"\nowner = \"acme\"\n",
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains(": ok"), "{out}");

    let greedy = components_dir().join("greedy.wasm");
    let (code, out, dir) = check_config(&format!(
        "[server]\ndata_dir = \"{{dir}}/data\"\n\
         [mount.grabby]\nbackend = \"{}\"\ncatalog_url = \"redb://{{dir}}/grabby.redb\"\nowner = \"acme\"\n\
         [mount.far]\nbackend = \"native\"\ncatalog_url = \"postgres://nobody@127.0.0.1:9/none\"\nowner = \"acme\"\n\
         [mount.lost]\nbackend = \"native\"\ncatalog_url = \"redb://{{dir}}/missing/lost.redb\"\nowner = \"acme\"\n\
         [mount.partner]\nbackend = \"rest\"\ncatalog_url = \"https://partner.example\"\nowner = \"acme\"\n\
         token_env = \"RUSTBERG_TEST_UNSET_TOKEN\"\n",
        greedy.display()
    ));
    assert_eq!(code, 1, "{out}");
    for expected in [
        "mount `grabby`: backend: the component imports `rustberg:catalog/http@",
        "mount `far`: catalog_url: cannot connect",
        "mount `lost`: catalog_url: the folder of",
        "mount `partner`: auth: token_env RUSTBERG_TEST_UNSET_TOKEN is not set",
    ] {
        assert!(out.contains(expected), "{expected}:\n{out}");
    }
    assert!(!dir.path().join("grabby.redb").exists() && !dir.path().join("data").exists(), "nothing is created");
}
