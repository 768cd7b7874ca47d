//! A PostgreSQL server of a test's own (the machine's PostgreSQL 15 binaries, a cluster
//! in a temporary folder, a free loopback port), so that the test can stop, kill, pause
//! and restart it without disturbing the tests that share the machine's server.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running (or deliberately stopped) private PostgreSQL.
pub struct PrivatePostgres {
    dir: tempfile::TempDir,
    pub port: u16,
    /// The postmaster, while it runs.
    postmaster: Option<Child>,
    /// Whom the processes run as: PostgreSQL refuses to run as root.
    user: Option<(u32, u32)>,
}

/// The folder of PostgreSQL's programs (Debian's layout first, then `PATH`'s).
fn bin(program: &str) -> PathBuf {
    let debian = PathBuf::from("/usr/lib/postgresql/15/bin").join(program);
    if debian.exists() {
        debian
    } else {
        PathBuf::from(program)
    }
}

/// The `postgres` account's uid and gid when this runs as root.
fn unprivileged() -> Option<(u32, u32)> {
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let id = |flag: &str| {
        let out = Command::new("id").args([flag, "postgres"]).output().expect("id");
        String::from_utf8(out.stdout).unwrap().trim().parse::<u32>().expect("a `postgres` account to run the server as")
    };
    Some((id("-u"), id("-g")))
}

impl PrivatePostgres {
    /// A new cluster, started; `None` (skipped, visibly) when PostgreSQL's programs are
    /// not installed, a failure under CI=true.
    pub fn start() -> Option<PrivatePostgres> {
        if !bin("initdb").exists() && Command::new("initdb").arg("--version").output().is_err() {
            assert_ne!(std::env::var("CI").as_deref(), Ok("true"), "PostgreSQL's programs are required under CI");
            eprintln!("SKIPPED: PostgreSQL's programs (initdb) are not installed");
            return None;
        }
        let dir = tempfile::Builder::new().prefix("rustberg-pg-").tempdir_in("/tmp").unwrap();
        let user = unprivileged();
        if let Some((uid, gid)) = user {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid)).unwrap();
        }
        let data = dir.path().join("data");
        let mut initdb = Command::new(bin("initdb"));
        initdb.args(["-A", "trust", "-U", "postgres", "--no-sync", "-D"]).arg(&data).stdout(Stdio::null());
        if let Some((uid, gid)) = user {
            initdb.uid(uid).gid(gid);
        }
        let status = initdb.status().expect("initdb");
        assert!(status.success(), "initdb failed");
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut postgres = PrivatePostgres { dir, port, postmaster: None, user };
        postgres.resume_service();
        Some(postgres)
    }

    /// The URL of its `postgres` database.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Starts the server (again) and waits until it accepts connections.
    pub fn resume_service(&mut self) {
        assert!(self.postmaster.is_none(), "already running");
        let mut postgres = Command::new(bin("postgres"));
        postgres
            .arg("-D")
            .arg(self.dir.path().join("data"))
            .args(["-p", &self.port.to_string(), "-c", "listen_addresses=127.0.0.1", "-c"])
            .arg(format!("unix_socket_directories={}", self.dir.path().display()))
            .args(["-c", "max_connections=200", "-c", "fsync=on"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some((uid, gid)) = self.user {
            postgres.uid(uid).gid(gid);
        }
        self.postmaster = Some(postgres.spawn().expect("postgres"));
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ready = Command::new(bin("pg_isready"))
                .args(["-q", "-h", "127.0.0.1", "-p", &self.port.to_string()])
                .status()
                .is_ok_and(|s| s.success());
            if ready {
                return;
            }
            assert!(Instant::now() < deadline, "the private PostgreSQL did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The postmaster's pid and its children's (a backend per connection, and the
    /// background workers).
    fn processes(&self) -> Vec<i32> {
        let Some(postmaster) = &self.postmaster else { return vec![] };
        let pid = postmaster.id() as i32;
        let out = Command::new("pgrep").args(["-P", &pid.to_string()]).output().expect("pgrep");
        let children = String::from_utf8(out.stdout).unwrap();
        std::iter::once(pid).chain(children.split_whitespace().filter_map(|p| p.parse().ok())).collect()
    }

    fn signal_all(&self, signal: i32) {
        for pid in self.processes() {
            unsafe { libc::kill(pid, signal) };
        }
    }

    /// Freezes every process of the server (SIGSTOP): connections stay open and
    /// nothing answers, as in a stalled machine.
    pub fn pause(&self) {
        self.signal_all(libc::SIGSTOP);
    }

    /// Thaws what [`PrivatePostgres::pause`] froze.
    pub fn unpause(&self) {
        self.signal_all(libc::SIGCONT);
    }

    /// Kills every process of the server at once (SIGKILL, as a crash of its machine
    /// would end them); [`PrivatePostgres::resume_service`] starts it again, through
    /// crash recovery.
    pub fn crash(&mut self) {
        self.signal_all(libc::SIGKILL);
        if let Some(mut postmaster) = self.postmaster.take() {
            let _ = postmaster.wait();
        }
        // The backends are gone with their parent's death, but give the kernel a moment
        // to free the port and the shared memory.
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline && super::listens(self.port) {
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        self.signal_all(libc::SIGCONT);
        self.signal_all(libc::SIGKILL);
        if let Some(mut postmaster) = self.postmaster.take() {
            let _ = postmaster.wait();
        }
    }
}
