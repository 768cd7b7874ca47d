//! Trino 476 (tests/java/trino.sh) with Rustberg as its Iceberg REST catalog `rb`, and
//! its SQL over HTTP (`POST /v1/statement`, then `nextUri` until the last page).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::python::repo_root;

/// How long Trino may take to start (a first run fetches and unpacks it).
const START_LIMIT: Duration = Duration::from_secs(600);

/// A running Trino, killed when dropped.
pub struct Trino {
    child: Child,
    base: String,
    dir: tempfile::TempDir,
}

impl Drop for Trino {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Trino {
    /// Trino with the catalog `rb` at `url`, signed in as `credential` (`id:secret`).
    pub fn start(url: &str, credential: &str) -> Trino {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let dir = tempfile::tempdir().unwrap();
        let log = std::fs::File::create(dir.path().join("trino.log")).unwrap();
        let child = Command::new("bash")
            .arg(repo_root().join("tests/java/trino.sh"))
            .args([&port.to_string(), &dir.path().display().to_string(), url, credential])
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .stdin(Stdio::null())
            .spawn()
            .expect("running tests/java/trino.sh (Java 24+ and Maven are needed)");
        let mut trino = Trino { child, base: format!("http://127.0.0.1:{port}"), dir };
        trino.wait_until_started();
        trino
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("trino.log")).unwrap_or_default()
    }

    fn wait_until_started(&mut self) {
        let started = Instant::now();
        while started.elapsed() < START_LIMIT {
            if self.log().contains("SERVER STARTED") {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("Trino exited: {status}\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        panic!("Trino did not start within {START_LIMIT:?}\n{}", self.log());
    }

    /// Runs one statement: its rows, or the error Trino gave. Trino says it started before
    /// its own node has joined the cluster: until then a statement is asked again.
    pub async fn sql(&self, statement: &str) -> Result<Vec<Value>, String> {
        let started = Instant::now();
        loop {
            match self.sql_once(statement).await {
                Err(e) if e.contains("No nodes available") && started.elapsed() < Duration::from_secs(120) => {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                done => return done,
            }
        }
    }

    async fn sql_once(&self, statement: &str) -> Result<Vec<Value>, String> {
        let client = reqwest::Client::new();
        let mut page: Value = client
            .post(format!("{}/v1/statement", self.base))
            .header("X-Trino-User", "test")
            .body(statement.to_string())
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let mut rows = Vec::new();
        loop {
            if let Some(data) = page["data"].as_array() {
                rows.extend(data.iter().cloned());
            }
            if let Some(message) = page["error"]["message"].as_str() {
                return Err(message.to_string());
            }
            let Some(next) = page["nextUri"].as_str() else { return Ok(rows) };
            tokio::time::sleep(Duration::from_millis(50)).await;
            page = client.get(next).send().await.unwrap().json().await.unwrap();
        }
    }
}
