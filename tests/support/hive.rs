//! A real Apache Hive Metastore for the hms tests, in a folder of its own: 2.3.9 on an
//! embedded Derby database (tests/hive/metastore.sh), or 4.0.1 on a PostgreSQL database
//! of its own (tests/hive/metastore4.sh).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::python::repo_root;

/// How long a metastore may take to listen (a first start makes its database).
const START_LIMIT: Duration = Duration::from_secs(120);

/// A running metastore; stopped (killed) when dropped.
pub struct Metastore {
    child: Option<Child>,
    dir: tempfile::TempDir,
    pub port: u16,
    lock_timeout_s: u32,
    /// The script that runs it (tests/hive/).
    script: &'static str,
}

impl Drop for Metastore {
    fn drop(&mut self) {
        self.stop();
        if self.script == "metastore4.sh" {
            // Its PostgreSQL database (metastore4.sh names it by the port).
            let _ = Command::new("psql")
                .args(["-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-qc"])
                .arg(format!("DROP DATABASE IF EXISTS hive4_{}", self.port))
                .output();
        }
    }
}

impl Metastore {
    /// A new metastore with the default lock timeout (300 s).
    pub fn start() -> Metastore {
        Self::with_lock_timeout(300)
    }

    /// A new metastore whose locks time out after `lock_timeout_s` without a heartbeat.
    pub fn with_lock_timeout(lock_timeout_s: u32) -> Metastore {
        Self::run("metastore.sh", lock_timeout_s)
    }

    /// A new Hive 4.0.1 metastore on PostgreSQL (its own lock timeout).
    pub fn hive4() -> Metastore {
        Self::run("metastore4.sh", 300)
    }

    fn run(script: &'static str, lock_timeout_s: u32) -> Metastore {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut metastore = Metastore { child: None, dir, port, lock_timeout_s, script };
        metastore.resume();
        metastore
    }

    /// `thrift://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("thrift://127.0.0.1:{}", self.port)
    }

    /// Its own folder (configuration, database, the log).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// A `file://` warehouse folder beside it.
    pub fn warehouse(&self) -> String {
        let path: PathBuf = self.dir.path().join("iceberg");
        std::fs::create_dir_all(&path).unwrap();
        format!("file://{}", path.display())
    }

    /// Stops the metastore (its database stays for [`Metastore::resume`]).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it (again) on the same port and database; returns once it listens.
    pub fn resume(&mut self) {
        assert!(self.child.is_none(), "the metastore is running");
        let log = std::fs::File::create(self.dir.path().join("metastore.log")).unwrap();
        let child = Command::new("bash")
            .arg(repo_root().join("tests/hive").join(self.script))
            .arg(self.dir.path().join("hms"))
            .arg(self.port.to_string())
            .env("HIVE_LOCK_TIMEOUT_S", self.lock_timeout_s.to_string())
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("starting the metastore's script");
        self.child = Some(child);
        let started = Instant::now();
        while !super::listens(self.port) {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("the metastore exited ({status}):\n{}", self.log());
            }
            assert!(started.elapsed() < START_LIMIT, "the metastore did not listen:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// What it wrote so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("metastore.log")).unwrap_or_default()
    }
}

/// An hms mount `name` of `metastore`, with its warehouse and owner `owner`.
pub fn hms_mount(name: &str, metastore: &Metastore, owner: &str) -> String {
    format!(
        "[mount.{name}]\nbackend = \"hms\"\ncatalog_url = \"{}\"\nwarehouse_location = \"{}\"\nowner = \"{owner}\"\n",
        metastore.url(),
        metastore.warehouse()
    )
}
