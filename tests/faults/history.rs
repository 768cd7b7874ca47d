//! A history of catalog operations as clients saw them (each with its invocation and
//! response times), and the verdict of Porcupine, the linearizability checker, on it
//! (tests/faults/checker, a small Go program).

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use serde::Serialize;

/// What a client was told of an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// It took effect (200, 204; for a read, what it saw).
    Ok,
    /// Refused because its precondition did not hold (409 AlreadyExists for a create,
    /// 404 for a drop, 409 CommitFailed for a commit, …): nothing changed, and the
    /// state then was such that it could not apply, for the reason given.
    Refused,
    /// Any other error but CommitStateUnknownException (a 400, a 503
    /// ServiceUnavailableException, a 409 of a create for another reason): the server
    /// says nothing was written, and the checker holds it to that.
    Failed,
    /// No answer, or CommitStateUnknownException: it may have taken effect, at any
    /// time after its call.
    Unknown,
}

/// One operation on the names of one partition (tests/faults/checker/main.go).
#[derive(Debug, Clone, Serialize)]
pub struct Operation {
    pub client: usize,
    /// The partition: names no operation outside it touches.
    pub key: String,
    /// `read`, `commit` (a compare-and-set of main), `txn` (two of them, all or
    /// nothing), `create`, `drop`, `rename`, `nscreate` or `nsdrop`.
    pub op: &'static str,
    /// The table; for a rename, its new name; for a transaction, the second table.
    pub name: String,
    pub to: String,
    /// A commit's expected main snapshot and the one it sets (-1: none); the second
    /// table's, for a transaction.
    pub expect: i64,
    pub new: i64,
    pub expect_to: i64,
    pub new_to: i64,
    /// What a read saw.
    pub exists: bool,
    pub snapshot: i64,
    /// Nanoseconds since the history began.
    pub call: u64,
    #[serde(rename = "return")]
    pub ret: u64,
    pub outcome: Outcome,
    /// The answer's status (0: none) and error type, for the report.
    pub status: u16,
    pub error: String,
}

impl Operation {
    pub fn new(client: usize, key: &str, op: &'static str, name: &str) -> Operation {
        Operation {
            client,
            key: key.to_string(),
            op,
            name: name.to_string(),
            to: String::new(),
            expect: -1,
            new: -1,
            expect_to: -1,
            new_to: -1,
            exists: false,
            snapshot: -1,
            call: 0,
            ret: 0,
            outcome: Outcome::Unknown,
            status: 0,
            error: String::new(),
        }
    }
}

impl Operation {
    /// The snapshots a commit or transaction sets main to, by table.
    pub fn sets(&self) -> Vec<(&str, i64)> {
        match self.op {
            "commit" => vec![(self.name.as_str(), self.new)],
            "txn" => vec![(self.name.as_str(), self.new), (self.to.as_str(), self.new_to)],
            _ => vec![],
        }
    }
}

/// Every operation of one run, recorded as they complete.
pub struct History {
    began: Instant,
    /// When the fault healed (nanoseconds since the beginning).
    healed: std::sync::atomic::AtomicU64,
    operations: Mutex<Vec<Operation>>,
}

impl History {
    pub fn new() -> History {
        History { began: Instant::now(), healed: u64::MAX.into(), operations: Mutex::default() }
    }

    /// Nanoseconds since the history began.
    pub fn now(&self) -> u64 {
        self.began.elapsed().as_nanos() as u64
    }

    /// Marks the fault healed, now.
    pub fn healed(&self) {
        self.healed.store(self.now(), std::sync::atomic::Ordering::Relaxed);
    }

    /// How long after the fault healed each client's first acknowledged write ended,
    /// by `host_of` its client id; the longest of them.
    pub fn recovery(&self, hosts: usize, host_of: impl Fn(usize) -> usize) -> Option<std::time::Duration> {
        let healed = self.healed.load(std::sync::atomic::Ordering::Relaxed);
        let operations = self.operations.lock().unwrap();
        let first_per_host = (0..hosts).map(|h| {
            operations
                .iter()
                .filter(|o| host_of(o.client) == h && o.op != "read" && o.outcome == Outcome::Ok && o.call >= healed)
                .map(|o| o.ret - healed)
                .min()
        });
        first_per_host.collect::<Option<Vec<u64>>>()?.into_iter().max().map(std::time::Duration::from_nanos)
    }

    pub fn record(&self, operation: Operation) {
        self.operations.lock().unwrap().push(operation);
    }

    pub fn operations(&self) -> Vec<Operation> {
        self.operations.lock().unwrap().clone()
    }
}

/// Porcupine's verdict.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Linearizable,
    /// Not linearizable; the path of a visualization of where it fails.
    Anomaly(String),
}

/// The checker, built once per test run from tests/faults/checker (Go modules from the
/// module proxy, pinned by its go.sum).
fn checker() -> &'static PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/faults/checker");
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("porcupine-checker");
        let built = Command::new("go")
            .args(["build", "-mod=readonly", "-o"])
            .arg(&out)
            .arg(".")
            .current_dir(&source)
            .status()
            .expect("Go, to build the linearizability checker");
        assert!(built.success(), "building the linearizability checker failed");
        out
    })
}

/// Checks `operations` with Porcupine.
pub fn check(operations: &[Operation], name: &str) -> Verdict {
    let visualization = std::env::temp_dir().join(format!("rustberg-{name}-{}.html", std::process::id()));
    let mut child = Command::new(checker())
        .arg(&visualization)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("running the checker");
    let history = serde_json::to_vec(operations).unwrap();
    child.stdin.take().unwrap().write_all(&history).unwrap();
    let out = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    eprintln!("[checker] {name}: {}", said.trim());
    if out.status.code() != Some(0) {
        // Kept to be read again (`checker < history.json`).
        let kept = visualization.with_extension("json");
        std::fs::write(&kept, history).unwrap();
        eprintln!("[checker] the history: {}", kept.display());
    }
    match out.status.code() {
        Some(0) => Verdict::Linearizable,
        Some(1) => Verdict::Anomaly(visualization.display().to_string()),
        other => panic!("the checker could not decide ({other:?}): {said}"),
    }
}
