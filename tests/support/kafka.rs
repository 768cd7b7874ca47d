//! A real Kafka 4.4.0 broker in KRaft mode (broker and controller in one JVM, Java 17),
//! from the jars `tests/kafka/jars.sh` fetches, on free loopback ports, its log in a
//! folder that outlives a kill, so that it can be killed and started again on the same data.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub struct Kafka {
    child: Child,
    pub port: u16,
    dir: tempfile::TempDir,
    jars: PathBuf,
}

/// Where the broker's jars are: `RUSTBERG_KAFKA_JARS`, else `~/.cache/rustberg/kafka/jars`,
/// fetched there by `tests/kafka/jars.sh` when missing.
fn jars() -> PathBuf {
    let jars = std::env::var_os("RUSTBERG_KAFKA_JARS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/rustberg/kafka/jars"));
    let script = super::python::repo_root().join("tests/kafka/jars.sh");
    let status = Command::new("bash").arg(script).arg(&jars).status().expect("running tests/kafka/jars.sh");
    assert!(status.success(), "fetching Kafka's jars failed");
    jars
}

impl Kafka {
    pub fn start() -> Kafka {
        let free = || std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let (port, controller) = (free(), free());
        let dir = tempfile::tempdir().unwrap();
        let properties = dir.path().join("server.properties");
        std::fs::write(
            &properties,
            format!(
                "process.roles=broker,controller\nnode.id=1\n\
                 controller.quorum.voters=1@127.0.0.1:{controller}\n\
                 listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}\n\
                 advertised.listeners=PLAINTEXT://127.0.0.1:{port}\n\
                 controller.listener.names=CONTROLLER\ninter.broker.listener.name=PLAINTEXT\n\
                 listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n\
                 log.dirs={}\nnum.partitions=1\noffsets.topic.replication.factor=1\n\
                 transaction.state.log.replication.factor=1\ntransaction.state.log.min.isr=1\n",
                dir.path().join("log").display()
            ),
        )
        .unwrap();
        let jars = jars();
        let formatted = Command::new("java")
            .arg("-cp")
            .arg(jars.join("*"))
            .args(["kafka.tools.StorageTool", "format", "-t", "cnVzdGJlcmctZXZlbnRzMQ", "-c"])
            .arg(&properties)
            .output()
            .expect("formatting Kafka's log");
        assert!(formatted.status.success(), "{}", String::from_utf8_lossy(&formatted.stderr));
        let child = spawn(&jars, &properties, port);
        Kafka { child, port, dir, jars }
    }

    pub fn broker(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Kills it (SIGKILL), waits `down`, and starts it again on the same ports and log.
    pub fn kill_and_restart(&mut self, down: Duration) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::thread::sleep(down);
        self.child = spawn(&self.jars, &self.dir.path().join("server.properties"), self.port);
    }
}

fn spawn(jars: &std::path::Path, properties: &std::path::Path, port: u16) -> Child {
    let mut child = Command::new("java")
        .args(["-Xmx384m", "-XX:+UseSerialGC", "-cp"])
        .arg(jars.join("*"))
        .arg("kafka.Kafka")
        .arg(properties)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting the Kafka broker");
    for _ in 0..600 {
        if super::listens(port) {
            return child;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("the Kafka broker did not listen on {port}");
}

impl Drop for Kafka {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
