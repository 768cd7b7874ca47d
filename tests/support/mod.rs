//! Starts a real `rustberg` process for a test and talks to it over HTTP.
#![allow(dead_code)]

pub mod hive;
pub mod http_faults;
pub mod kafka;
pub mod moto;
pub mod nats;
pub mod peers;
pub mod postgres;
pub mod python;
pub mod spark;
pub mod toxiproxy;
pub mod trino;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

/// A running server on a free loopback port, with its own data directory. It
/// dereferences to an [`Api`] client acting as the server admin it minted at start-up.
pub struct Server {
    child: Child,
    /// Everything the process printed so far.
    output: std::sync::Arc<std::sync::Mutex<String>>,
    pub base: String,
    pub dir: tempfile::TempDir,
    /// `admin:<secret>`, the credential the server minted (when it minted one).
    pub credential: Option<String>,
    admin: Api,
}

/// An HTTP client for the catalog, acting as one caller.
#[derive(Clone)]
pub struct Api {
    pub base: String,
    pub client: reqwest::Client,
}

impl std::ops::Deref for Server {
    type Target = Api;

    fn deref(&self) -> &Api {
        &self.admin
    }
}

/// The folder holding the test components (built by host/build.rs).
/// Tests that run JVMs (a Hive Metastore, Nessie, Spark, Trino, the Java compatibility
/// kit) take turns, each for its whole run: in the one test binary, two of them starting
/// JVMs at once on two cores made a start miss its deadline.
static JVM_TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// An async test's turn to run JVMs.
pub async fn jvm_turn() -> tokio::sync::MutexGuard<'static, ()> {
    JVM_TURN.lock().await
}

/// A test's turn to run JVMs, from outside a runtime.
pub fn jvm_turn_blocking() -> tokio::sync::MutexGuard<'static, ()> {
    JVM_TURN.blocking_lock()
}

pub fn components_dir() -> PathBuf {
    PathBuf::from(env!("RUSTBERG_COMPONENTS_DIR"))
}

impl Server {
    /// Starts a server with extra TOML appended to a config that points every
    /// state at a fresh temporary folder.
    pub fn start(extra_toml: &str) -> Server {
        Self::try_start(extra_toml).unwrap_or_else(|output| panic!("the server did not start:\n{output}"))
    }

    /// Starts a server, or returns everything it printed if it exited instead.
    pub fn try_start(extra_toml: &str) -> Result<Server, String> {
        Self::try_start_in(tempfile::tempdir().unwrap(), extra_toml, &[])
    }

    /// Starts a server with extra environment variables (a mount's `token_env`).
    pub fn try_start_with_env(extra_toml: &str, env: &[(&str, &str)]) -> Result<Server, String> {
        Self::try_start_in(tempfile::tempdir().unwrap(), extra_toml, env)
    }

    /// Stops this server and starts another on the same data directory.
    pub fn restart(self, extra_toml: &str) -> Result<Server, String> {
        self.restart_with_env(extra_toml, &[])
    }

    /// Like [`Server::restart`], with extra environment variables.
    pub fn restart_with_env(mut self, extra_toml: &str, env: &[(&str, &str)]) -> Result<Server, String> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let dir = std::mem::replace(&mut self.dir, tempfile::tempdir().unwrap());
        Self::try_start_in(dir, extra_toml, env)
    }

    /// Stops this server; its data directory stays, to start another on it.
    pub fn stop(mut self) -> tempfile::TempDir {
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::mem::replace(&mut self.dir, tempfile::tempdir().unwrap())
    }

    /// Starts a server on the data directory a stopped one left.
    pub fn start_in(dir: tempfile::TempDir, extra_toml: &str) -> Server {
        Self::try_start_in(dir, extra_toml, &[]).unwrap_or_else(|output| panic!("the server did not start:\n{output}"))
    }

    fn try_start_in(dir: tempfile::TempDir, extra_toml: &str, env: &[(&str, &str)]) -> Result<Server, String> {
        let config = dir.path().join("rustberg.toml");
        std::fs::write(&config, Self::config_text(dir.path(), extra_toml)).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_rustberg"))
            .args(["serve", "--config"])
            .arg(&config)
            .env("RUST_LOG", "warn")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawning rustberg");
        let (tx, rx) = mpsc::channel::<String>();
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        let output = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let (tx2, output1, output2) = (tx.clone(), output.clone(), output.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                output1.lock().unwrap().push_str(&format!("{line}\n"));
                let _ = tx.send(line);
            }
        });
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("[rustberg] {line}");
                output2.lock().unwrap().push_str(&format!("{line}\n"));
                let _ = tx2.send(line);
            }
        });
        let mut seen = String::new();
        let mut credential = None;
        loop {
            match rx.recv_timeout(Duration::from_secs(120)) {
                Ok(line) => {
                    seen.push_str(&line);
                    seen.push('\n');
                    if let Some(rest) = line.split("credential admin:").nth(1) {
                        credential = rest.split_whitespace().next().map(|secret| format!("admin:{secret}"));
                    }
                    if let Some(rest) = line.split("listening on http://").nth(1) {
                        let addr = rest.split_whitespace().next().unwrap().to_string();
                        // After the first start the minted admin's secret is only in its file.
                        if credential.is_none() && seen.contains("the one minted at the first start is kept") {
                            let file = dir.path().join("data").join("admin-credential");
                            credential = std::fs::read_to_string(file).ok().map(|c| c.trim().to_string());
                        }
                        let base = format!("http://{addr}");
                        let admin = match &credential {
                            Some(c) => {
                                let (id, secret) = c.split_once(':').unwrap();
                                Api::with_token(&base, &token_for(&base, id, secret))
                            }
                            None => Api { base: base.clone(), client: reqwest::Client::new() },
                        };
                        return Ok(Server { child, output, base, dir, credential, admin });
                    }
                }
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    // Drain what is left.
                    while let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) {
                        seen.push_str(&line);
                        seen.push('\n');
                    }
                    return Err(seen);
                }
            }
        }
    }

    fn config_text(dir: &Path, extra: &str) -> String {
        let data = dir.join("data");
        format!("[server]\nlisten = \"127.0.0.1:0\"\ndata_dir = \"{}\"\n{extra}\n", data.display())
    }

    /// Everything the server printed (its log) so far.
    pub fn output(&self) -> String {
        self.output.lock().unwrap().clone()
    }

    /// The server's output once it holds `needle` (the log is read by another
    /// thread, so a line may land a moment after the response); all of it after 5 s.
    pub fn output_once_it_says(&self, needle: &str) -> String {
        for _ in 0..100 {
            let output = self.output();
            if output.contains(needle) {
                return output;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.output()
    }

    /// The process's id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends the process a signal (`TERM`, `INT`).
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill").arg(format!("-{name}")).arg(self.child.id().to_string()).status().unwrap();
        assert!(status.success(), "kill -{name}");
    }

    /// The process's exit status, once it exits within `timeout`.
    pub fn exit_within(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = std::time::Instant::now() + timeout;
        while std::time::Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// Whether the process is still alive.
    pub fn running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// A client acting as the principal with these client credentials.
    pub fn login(&self, id: &str, secret: &str) -> Api {
        Api::with_token(&self.base, &token_for(&self.base, id, secret))
    }

    /// A bearer token for the admin this server minted.
    pub fn admin_token(&self) -> String {
        let (id, secret) = self.credential.as_deref().expect("a minted admin").split_once(':').unwrap();
        token_for(&self.base, id, secret)
    }

    /// A client sending no credentials.
    pub fn anonymous(&self) -> Api {
        Api { base: self.base.clone(), client: reqwest::Client::new() }
    }
}

/// Exchanges client credentials for a bearer token (blocking: usable anywhere).
pub fn token_for(base: &str, id: &str, secret: &str) -> String {
    let base = base.to_string();
    let (id, secret) = (id.to_string(), secret.to_string());
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let r = reqwest::Client::new()
                .post(format!("{base}/v1/oauth/tokens"))
                .form(&[("grant_type", "client_credentials"), ("client_id", &id), ("client_secret", &secret)])
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200, "token for {id}");
            let body: Value = r.json().await.unwrap();
            body["access_token"].as_str().unwrap().to_string()
        })
    })
    .join()
    .unwrap()
}

/// The configuration of two writers, `acme` and `evil`, each in a tenant of its own name,
/// with the secrets `acme-secret` and `evil-secret`: the two sides of the cross-tenant tests.
pub fn acme_and_evil_writers() -> String {
    ["acme", "evil"]
        .iter()
        .map(|t| {
            format!(
                "[auth.principals.{t}]\ntenant = \"{t}\"\nrole = \"writer\"\nsecret_hash = \"{}\"\n",
                hash_secret(&format!("{t}-secret"))
            )
        })
        .collect()
}

/// Hashes a secret with the server's own `hash-secret` command.
pub fn hash_secret(secret: &str) -> String {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_rustberg"))
        .arg("hash-secret")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    writeln!(child.stdin.take().unwrap(), "{secret}").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

impl Api {
    /// A client sending `Authorization: Bearer <token>`.
    pub fn with_token(base: &str, token: &str) -> Api {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(reqwest::header::AUTHORIZATION, format!("Bearer {token}").parse().unwrap());
        Api { base: base.to_string(), client: reqwest::Client::builder().default_headers(headers).build().unwrap() }
    }

    /// The URL of a path under the catalog prefix, e.g. `/namespaces`.
    pub fn url(&self, path: &str) -> String {
        format!("{}/v1/catalog{path}", self.base)
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        let r = self.client.get(self.url(path)).send().await.unwrap();
        status_json(r).await
    }

    pub async fn head(&self, path: &str) -> u16 {
        self.client.head(self.url(path)).send().await.unwrap().status().as_u16()
    }

    pub async fn delete(&self, path: &str) -> (u16, Value) {
        let r = self.client.delete(self.url(path)).send().await.unwrap();
        status_json(r).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let r = self.client.post(self.url(path)).json(&body).send().await.unwrap();
        status_json(r).await
    }

    /// Makes a grant (as this caller, who must be allowed to); the grant made.
    pub async fn grant(&self, body: Value) -> Value {
        let (status, granted) = self.send(reqwest::Method::POST, "/management/v1/grants", Some(body)).await;
        assert_eq!(status, 201, "{granted}");
        granted
    }

    /// Every grant this caller may see.
    pub async fn grants(&self) -> Vec<Value> {
        let (status, body) = self.send(reqwest::Method::GET, "/management/v1/grants", None).await;
        assert_eq!(status, 200, "{body}");
        body["grants"].as_array().unwrap().clone()
    }

    /// A request to any path of the server, e.g. `/management/v1/grants`.
    pub async fn send(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut request = self.client.request(method, format!("{}{path}", self.base));
        if let Some(body) = body {
            request = request.json(&body);
        }
        status_json(request.send().await.unwrap()).await
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A native mount `name` on a redb file of its own in `dir`, owned by `owner`.
pub fn redb_mount(name: &str, dir: &Path, owner: &str) -> String {
    format!(
        "[mount.{name}]\nbackend = \"native\"\ncatalog_url = \"redb://{}/{name}.redb\"\nowner = \"{owner}\"\n",
        dir.display()
    )
}

/// The namespaces of a listNamespaces answer, each as its levels.
pub fn namespace_names(body: &Value) -> Vec<Vec<String>> {
    serde_json::from_value(body["namespaces"].clone()).unwrap()
}

pub async fn status_json(r: reqwest::Response) -> (u16, Value) {
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    let body = if text.is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap_or(Value::String(text)) };
    (status, body)
}

/// A fresh, empty Postgres database on the machine's server (127.0.0.1:5432, user
/// `postgres`), as a URL. Without a reachable server the test is skipped, visibly;
/// under CI=true it fails instead.
pub async fn postgres_database() -> Option<String> {
    use sqlx::Connection;
    let admin = std::env::var("RUSTBERG_TEST_POSTGRES").unwrap_or("postgres://postgres@127.0.0.1:5432/test".into());
    let mut conn = match sqlx::PgConnection::connect(&admin).await {
        Ok(conn) => conn,
        Err(e) if std::env::var("CI").as_deref() == Ok("true") => panic!("PostgreSQL is required under CI: {e}"),
        Err(e) => {
            eprintln!("SKIPPED: PostgreSQL is not reachable at {admin}: {e}");
            return None;
        }
    };
    let name = format!("rustberg_test_{}", uuid::Uuid::now_v7().simple());
    sqlx::query(&format!("CREATE DATABASE {name}")).execute(&mut conn).await.unwrap();
    let base = admin.rsplit_once('/').unwrap().0;
    Some(format!("{base}/{name}"))
}

/// Asserts an Iceberg error response: status, `error.type`, `error.code`.
#[track_caller]
pub fn assert_error(got: &(u16, Value), status: u16, kind: &str) {
    assert_eq!(got.0, status, "status of {}", got.1);
    assert_eq!(got.1["error"]["type"], kind, "type in {}", got.1);
    assert_eq!(got.1["error"]["code"], status, "code in {}", got.1);
    assert!(got.1["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "message in {}", got.1);
}

/// A minimal table schema for createTable.
pub fn schema() -> Value {
    json!({
        "type": "struct",
        "schema-id": 0,
        "fields": [
            {"id": 1, "name": "id", "type": "long", "required": true},
            {"id": 2, "name": "category", "type": "string", "required": false}
        ]
    })
}

/// One optimistic append to `db.t`: read the current main snapshot, add a child of
/// it. Asserts the commit either landed (200) or conflicted (409).
pub async fn append_snapshot(s: &Api, snapshot_id: i64) -> u16 {
    append_snapshot_to(s, "/namespaces/db/tables/t", snapshot_id).await
}

/// One optimistic append to the table at `path` (e.g. `/namespaces/db/tables/t`).
pub async fn append_snapshot_to(s: &Api, path: &str, snapshot_id: i64) -> u16 {
    let (_, table) = s.get(path).await;
    let (status, response) = s.post(path, append_request(&table["metadata"], snapshot_id)).await;
    assert!(status == 200 || status == 409, "a commit either lands or conflicts, got {status}: {response}");
    if status == 409 {
        assert_eq!(response["error"]["type"], "CommitFailedException");
    }
    status
}

/// `writers` concurrent writers, each making `commits` optimistic appends to the table
/// at `path` through `hosts` (writer `w` through `hosts[w % hosts.len()]`). Returns
/// the snapshot ids that landed and those refused.
pub async fn race_appends(hosts: &[Api], path: &str, writers: i64, commits: i64) -> (BTreeSet<i64>, BTreeSet<i64>) {
    let tasks: Vec<_> = (0..writers)
        .map(|writer| {
            let host = hosts[writer as usize % hosts.len()].clone();
            let path = path.to_string();
            tokio::spawn(async move {
                let (mut landed, mut refused) = (vec![], vec![]);
                for i in 0..commits {
                    let id = 1000 * (writer + 1) + i;
                    match append_snapshot_to(&host, &path, id).await {
                        200 => landed.push(id),
                        _ => refused.push(id),
                    }
                }
                (landed, refused)
            })
        })
        .collect();
    let (mut landed, mut refused) = (BTreeSet::new(), BTreeSet::new());
    for task in tasks {
        let (l, r) = task.await.unwrap();
        landed.extend(l);
        refused.extend(r);
    }
    (landed, refused)
}

/// A commit adding the snapshot `snapshot_id` as the child of main in `metadata`,
/// required to find main where `metadata` has it.
pub fn append_request(metadata: &Value, snapshot_id: i64) -> Value {
    let parent = metadata["current-snapshot-id"].as_i64().filter(|id| *id >= 0);
    let sequence = metadata["last-sequence-number"].as_i64().unwrap() + 1;
    child_of_main_request(parent, snapshot_id, sequence, &format!("file:///nowhere/snap-{snapshot_id}.avro"))
}

/// A commit adding snapshot `snapshot_id` (numbered `sequence`, its manifest list named
/// `manifest_list`, a file that is never read) as main, the child of `parent`, required
/// to find main at `parent` (`None`: no snapshot yet).
pub fn child_of_main_request(parent: Option<i64>, snapshot_id: i64, sequence: i64, manifest_list: &str) -> Value {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64;
    let mut snapshot = json!({
        "snapshot-id": snapshot_id,
        "sequence-number": sequence,
        "timestamp-ms": now,
        "manifest-list": manifest_list,
        "summary": {"operation": "append"},
        "schema-id": 0
    });
    if let Some(parent) = parent {
        snapshot["parent-snapshot-id"] = json!(parent);
    }
    json!({
        "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": parent}],
        "updates": [
            {"action": "add-snapshot", "snapshot": snapshot},
            {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": snapshot_id}
        ]
    })
}

/// Asserts a table's history holds exactly the `landed` snapshots, once each, in one
/// linear chain ending at main, and none of the `refused` ones.
pub fn assert_history(metadata: &Value, landed: &BTreeSet<i64>, refused: &BTreeSet<i64>) {
    let snapshots: Vec<i64> =
        metadata["snapshots"].as_array().unwrap().iter().map(|s| s["snapshot-id"].as_i64().unwrap()).collect();
    let unique: BTreeSet<i64> = snapshots.iter().copied().collect();
    assert_eq!(unique.len(), snapshots.len(), "no snapshot recorded twice");
    assert_eq!(&unique, landed, "exactly the acknowledged commits are in the table");
    assert!(refused.is_disjoint(&unique), "no refused commit landed");

    // The acknowledged commits form one linear history ending at main.
    let chain: BTreeSet<i64> = main_ancestry(metadata).into_iter().collect();
    assert_eq!(&chain, landed, "every landed commit is an ancestor of main");
    let log: Vec<i64> =
        metadata["snapshot-log"].as_array().unwrap().iter().map(|e| e["snapshot-id"].as_i64().unwrap()).collect();
    assert_eq!(log.len(), landed.len(), "one snapshot-log entry per landed commit");
}

/// Main's snapshot in table metadata and its ancestors, newest first (none when the
/// table has no snapshot); panics on a cycle.
pub fn main_ancestry(metadata: &Value) -> Vec<i64> {
    let mut chain = vec![];
    let mut at = metadata["current-snapshot-id"].as_i64().filter(|id| *id >= 0);
    while let Some(id) = at {
        assert!(!chain.contains(&id), "history has no cycle");
        chain.push(id);
        let snap = metadata["snapshots"].as_array().unwrap().iter().find(|s| s["snapshot-id"] == id).unwrap();
        at = snap["parent-snapshot-id"].as_i64();
    }
    chain
}

/// Runs `rustberg plugin test <component>` against mount `mount` of a configuration
/// with `config_text`, with `env` added; what it printed.
/// Whether something listens on 127.0.0.1:`port`. A connection to a port nothing listens
/// on can be made anyway, to itself, when the kernel picks that same port as its source
/// (the picks walk through the range, so a wait that tries often meets it): not that.
pub fn listens(port: u16) -> bool {
    std::net::TcpStream::connect(("127.0.0.1", port))
        .is_ok_and(|stream| stream.local_addr().ok() != stream.peer_addr().ok())
}

pub fn conformance_report(component: &str, config_text: &str, mount: &str, env: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("rustberg.toml");
    std::fs::write(&config, config_text).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_rustberg"))
        .args(["plugin", "test", component, "--config"])
        .arg(&config)
        .args(["--mount", mount])
        .envs(env.iter().copied())
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// What one writer of a [`write_storm`] was told had landed: the root namespaces it
/// created and the property keys it set on its own table.
#[derive(Default)]
pub struct Acknowledged {
    pub namespaces: Vec<String>,
    pub properties: Vec<String>,
}

/// Writes until `stop`, alternating the create of a root namespace `w{w}-{n}` and a
/// commit setting property `w{w}k{n}` on table `db.t{w}`; a request cut off (a server
/// killed) is simply not acknowledged.
pub async fn write_storm(api: Api, w: usize, stop: std::sync::Arc<std::sync::atomic::AtomicBool>) -> Acknowledged {
    let mut acked = Acknowledged::default();
    let mut n = 0;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        n += 1;
        let name = format!("w{w}-{n}");
        let create = api.client.post(api.url("/namespaces")).json(&json!({"namespace": [name]})).send().await;
        if create.is_ok_and(|r| r.status() == 200) {
            acked.namespaces.push(name);
        }
        let key = format!("w{w}k{n}");
        let commit =
            json!({"requirements": [], "updates": [{"action": "set-properties", "updates": {key.clone(): "1"}}]});
        let sent = api.client.post(api.url(&format!("/namespaces/db/tables/t{w}"))).json(&commit).send().await;
        if sent.is_ok_and(|r| r.status() == 200) {
            acked.properties.push(key);
        }
    }
    acked
}
