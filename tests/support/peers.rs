//! Independent Iceberg REST catalogs run on this machine, to mount as `rest` peers:
//! Iceberg's own reference server (tests/java/reference-server.sh) and Nessie
//! (tests/java/nessie.sh, its warehouse on a moto bucket).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::python::repo_root;

/// How long a peer's JVM may take to answer `/v1/config` (a first run resolves its jars).
const START_LIMIT: Duration = Duration::from_secs(300);

/// A running peer on a free loopback port, killed when dropped.
pub struct Peer {
    child: Child,
    /// `http://127.0.0.1:<port>`: its REST routes are under `/v1`.
    pub base: String,
    /// Its own folder (its log, `peer.log`; the reference server's warehouse), removed with it.
    pub warehouse: tempfile::TempDir,
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Peer {
    /// Iceberg's reference server (iceberg-open-api 1.11.0's RESTCatalogServer), fresh:
    /// a compatibility-kit run leaves namespaces behind. Its warehouse is a folder.
    pub fn iceberg_reference() -> Peer {
        Self::run("reference-server.sh", |warehouse| vec![warehouse.display().to_string()])
    }

    /// Nessie 0.99.0 with its warehouse `warehouse` in `bucket` of the S3 store at
    /// `s3_endpoint` (moto's). Its Iceberg REST API is under `<base>/iceberg`.
    pub fn nessie(s3_endpoint: &str, bucket: &str) -> Peer {
        Self::run("nessie.sh", |_| vec![s3_endpoint.to_string(), bucket.to_string()])
    }

    /// Runs `tests/java/<script> PORT ARGS…` on a free port; `args` are given the peer's
    /// own folder.
    fn run(script: &str, args: impl FnOnce(&std::path::Path) -> Vec<String>) -> Peer {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let warehouse = tempfile::tempdir().unwrap();
        let log = std::fs::File::create(warehouse.path().join("peer.log")).unwrap();
        let child = Command::new("bash")
            .arg(repo_root().join("tests/java").join(script))
            .arg(port.to_string())
            .args(args(warehouse.path()))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("running tests/java/{script} (Java and Maven are needed): {e}"));
        let mut peer = Peer { child, base: format!("http://127.0.0.1:{port}"), warehouse };
        peer.wait_until_listening(port);
        peer
    }

    /// What it printed so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.warehouse.path().join("peer.log")).unwrap_or_default()
    }

    /// Waits for the port (Jetty opens it once its handlers are started).
    fn wait_until_listening(&mut self, port: u16) {
        let started = Instant::now();
        while started.elapsed() < START_LIMIT {
            if super::listens(port) {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("the peer meant for {} exited: {status}\n{}", self.base, self.log());
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        panic!("the peer at {} did not listen within {START_LIMIT:?}", self.base);
    }
}
