//! Starts a real `rustberg` process for a test and talks to it over HTTP.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

/// A running server on a free loopback port, with its own data directory.
pub struct Server {
    child: Child,
    pub base: String,
    pub dir: tempfile::TempDir,
    pub client: reqwest::Client,
}

/// The folder holding the test components (built by host/build.rs).
pub fn components_dir() -> PathBuf {
    PathBuf::from(env!("RUSTBERG_COMPONENTS_DIR"))
}

impl Server {
    /// Starts a server with extra TOML appended to a config that points every
    /// state at a fresh temporary folder.
    pub fn start(extra_toml: &str) -> Server {
        Self::try_start(extra_toml)
            .unwrap_or_else(|output| panic!("the server did not start:\n{output}"))
    }

    /// Starts a server, or returns everything it printed if it exited instead.
    pub fn try_start(extra_toml: &str) -> Result<Server, String> {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("rustberg.toml");
        std::fs::write(&config, Self::config_text(dir.path(), extra_toml)).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_rustberg"))
            .args(["serve", "--config"])
            .arg(&config)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawning rustberg");
        let (tx, rx) = mpsc::channel::<String>();
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        let tx2 = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("[rustberg] {line}");
                let _ = tx2.send(line);
            }
        });
        let mut seen = String::new();
        loop {
            match rx.recv_timeout(Duration::from_secs(120)) {
                Ok(line) => {
                    seen.push_str(&line);
                    seen.push('\n');
                    if let Some(rest) = line.split("listening on http://").nth(1) {
                        let addr = rest.split_whitespace().next().unwrap().to_string();
                        return Ok(Server {
                            child,
                            base: format!("http://{addr}"),
                            dir,
                            client: reqwest::Client::new(),
                        });
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
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\ndata_dir = \"{}\"\n{extra}\n",
            data.display()
        )
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
        self.client
            .head(self.url(path))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    }

    pub async fn delete(&self, path: &str) -> (u16, Value) {
        let r = self.client.delete(self.url(path)).send().await.unwrap();
        status_json(r).await
    }

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let r = self
            .client
            .post(self.url(path))
            .json(&body)
            .send()
            .await
            .unwrap();
        status_json(r).await
    }

    /// Whether the process is still alive.
    pub fn running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn status_json(r: reqwest::Response) -> (u16, Value) {
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    let body = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    };
    (status, body)
}

/// Asserts an Iceberg error response: status, `error.type`, `error.code`.
#[track_caller]
pub fn assert_error(got: &(u16, Value), status: u16, kind: &str) {
    assert_eq!(got.0, status, "status of {}", got.1);
    assert_eq!(got.1["error"]["type"], kind, "type in {}", got.1);
    assert_eq!(got.1["error"]["code"], status, "code in {}", got.1);
    assert!(
        got.1["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "message in {}",
        got.1
    );
}

/// A minimal table schema for createTable.
pub fn schema() -> Value {
    serde_json::json!({
        "type": "struct",
        "schema-id": 0,
        "fields": [
            {"id": 1, "name": "id", "type": "long", "required": true},
            {"id": 2, "name": "category", "type": "string", "required": false}
        ]
    })
}
