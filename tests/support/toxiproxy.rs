//! Toxiproxy, a TCP proxy whose faults (toxics) a test turns on and off over its HTTP
//! API: put between a host and what it reaches, it delays, blackholes, resets or cuts
//! the connections. Built from its Go module at a named version (`@latest` resolves to
//! a 2022 release), once, into ~/.cache/rustberg/toxiproxy.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const VERSION: &str = "v2.12.0";

/// The server binary, built on first use.
fn binary() -> &'static PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
        let dir = PathBuf::from(home).join(".cache/rustberg/toxiproxy").join(VERSION);
        let server = dir.join("server");
        if !server.exists() {
            let status = Command::new("go")
                .args(["install", &format!("github.com/Shopify/toxiproxy/v2/cmd/server@{VERSION}")])
                .env("GOBIN", &dir)
                .status()
                .expect("Go, to build Toxiproxy");
            assert!(status.success(), "building Toxiproxy {VERSION} failed");
        }
        server
    })
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A running Toxiproxy server.
pub struct Toxiproxy {
    child: Child,
    api: String,
    client: reqwest::Client,
}

/// One proxy: what listens on `port` and forwards to its upstream.
pub struct Proxy<'a> {
    server: &'a Toxiproxy,
    name: String,
    pub port: u16,
}

impl Toxiproxy {
    pub fn start() -> Toxiproxy {
        let port = free_port();
        let child = Command::new(binary())
            .args(["-host", "127.0.0.1", "-port", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting Toxiproxy");
        let deadline = Instant::now() + Duration::from_secs(20);
        while !super::listens(port) {
            assert!(Instant::now() < deadline, "Toxiproxy did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        Toxiproxy { child, api: format!("http://127.0.0.1:{port}"), client: reqwest::Client::new() }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut request = self.client.request(method, format!("{}{path}", self.api));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("Toxiproxy's API");
        let status = response.status();
        let text = response.text().await.unwrap();
        assert!(status.is_success(), "Toxiproxy {path}: {status} {text}");
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }

    /// A proxy named `name` to 127.0.0.1:`upstream`, on a port of its own.
    pub async fn proxy(&self, name: &str, upstream: u16) -> Proxy<'_> {
        let port = free_port();
        let body = json!({"name": name, "listen": format!("127.0.0.1:{port}"), "upstream": format!("127.0.0.1:{upstream}"), "enabled": true});
        self.call(reqwest::Method::POST, "/proxies", Some(body)).await;
        Proxy { server: self, name: name.to_string(), port }
    }
}

impl Proxy<'_> {
    /// Adds toxic `name` of `kind` (`latency`, `timeout`, `reset_peer`, `limit_data`,
    /// …) to the answers coming back, with `attributes`.
    pub async fn add(&self, name: &str, kind: &str, attributes: Value) {
        let body =
            json!({"name": name, "type": kind, "stream": "downstream", "toxicity": 1.0, "attributes": attributes});
        self.server.call(reqwest::Method::POST, &format!("/proxies/{}/toxics", self.name), Some(body)).await;
    }

    /// Removes toxic `name`.
    pub async fn remove(&self, name: &str) {
        self.server.call(reqwest::Method::DELETE, &format!("/proxies/{}/toxics/{name}", self.name), None).await;
    }
}

impl Drop for Toxiproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
