//! The mixed workload of every fault scenario: writers spread over the hosts, each
//! doing, at random from its seed, optimistic commits (read main, then add a child of it
//! required to find main unchanged: a compare-and-set), reads, and creates and drops of
//! a few table names, every operation recorded in a [`History`].

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

use super::history::{History, Operation, Outcome};
use crate::support::{child_of_main_request, main_ancestry, schema, token_for};

/// Tables that always exist and take commits; names that come and go.
pub const COMMITTED: usize = 3;
pub const CHURNED: usize = 2;
/// The client id of the reads after a run.
pub const FINAL_READER: usize = 99;
/// A request unanswered this long is given up: its outcome is unknown.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(8);

/// One host as a writer reaches it: a client of its own, with a deadline per request.
#[derive(Clone)]
pub struct Host {
    base: String,
    client: reqwest::Client,
}

impl Host {
    /// The host at `base`, as the principal `id`.
    pub fn new(base: &str, id: &str, secret: &str) -> Host {
        let mut headers = reqwest::header::HeaderMap::new();
        let token = token_for(base, id, secret);
        headers.insert(reqwest::header::AUTHORIZATION, format!("Bearer {token}").parse().unwrap());
        let client = reqwest::Client::builder().default_headers(headers).timeout(REQUEST_TIMEOUT).build().unwrap();
        Host { base: base.to_string(), client }
    }

    fn table(&self, namespace: &str, name: &str) -> String {
        format!("{}/v1/catalog/namespaces/{namespace}/tables/{name}", self.base)
    }

    /// The status of `request`, and its body; `None` when no answer came.
    async fn send(request: reqwest::RequestBuilder) -> Option<(u16, Value)> {
        let response = request.send().await.ok()?;
        let status = response.status().as_u16();
        let body = response.json::<Value>().await.unwrap_or(Value::Null);
        Some((status, body))
    }

    /// `/ready`'s status (0: no answer).
    pub async fn ready(&self) -> u16 {
        let request = self.client.get(format!("{}/ready", self.base)).timeout(Duration::from_secs(3));
        request.send().await.map_or(0, |r| r.status().as_u16())
    }
}

/// One run's namespace and what its writers share.
pub struct Workload {
    pub namespace: String,
    pub history: History,
    /// Sequence numbers for new snapshots, rising across all writers: a snapshot must
    /// come after the table's last one.
    sequence: AtomicI64,
    /// Each committed table's location: its snapshots' manifest lists are named in it.
    locations: Vec<String>,
}

/// What a write's answer says of it, recorded in `op`.
fn settle(op: &mut Operation, answer: &Option<(u16, Value)>, ok: u16) {
    op.outcome = match answer {
        None => Outcome::Unknown,
        Some((status, _)) if *status == ok => Outcome::Ok,
        Some((status, body)) => {
            op.status = *status;
            op.error = body["error"]["type"].as_str().unwrap_or("(no Iceberg error)").to_string();
            match op.error.as_str() {
                "CommitStateUnknownException" => Outcome::Unknown,
                // The precondition did not hold: a table of that name exists, none does,
                // or main is not where the commit required.
                "AlreadyExistsException" | "NoSuchTableException" | "CommitFailedException"
                    if op.op != "create" || op.error == "AlreadyExistsException" =>
                {
                    Outcome::Refused
                }
                _ => Outcome::Failed,
            }
        }
    };
}

impl Workload {
    /// Creates namespace `namespace` and its committed tables through `host`.
    pub async fn prepare(host: &Host, namespace: &str) -> Workload {
        let mut workload = Workload {
            namespace: namespace.to_string(),
            history: History::new(),
            sequence: 1.into(),
            locations: vec![],
        };
        let created = Host::send(
            host.client.post(format!("{}/v1/catalog/namespaces", host.base)).json(&json!({"namespace": [namespace]})),
        )
        .await;
        assert_eq!(created.map(|c| c.0), Some(200), "creating namespace {namespace}");
        for t in 0..COMMITTED {
            let op = workload.create(host, 0, &format!("t{t}")).await;
            assert_eq!(op, Outcome::Ok, "creating table t{t}");
            let (_, table) = Host::send(host.client.get(host.table(namespace, &format!("t{t}")))).await.unwrap();
            workload.locations.push(table["metadata"]["location"].as_str().unwrap().to_string());
        }
        workload
    }

    async fn create(&self, host: &Host, client: usize, name: &str) -> Outcome {
        let mut op = Operation::new(client, name, "create");
        op.call = self.history.now();
        let url = format!("{}/v1/catalog/namespaces/{}/tables", host.base, self.namespace);
        let answer = Host::send(host.client.post(url).json(&json!({"name": name, "schema": schema()}))).await;
        op.ret = self.history.now();
        settle(&mut op, &answer, 200);
        let outcome = op.outcome;
        self.history.record(op);
        outcome
    }

    async fn drop_table(&self, host: &Host, client: usize, name: &str) {
        let mut op = Operation::new(client, name, "drop");
        op.call = self.history.now();
        let answer = Host::send(host.client.delete(host.table(&self.namespace, name))).await;
        op.ret = self.history.now();
        settle(&mut op, &answer, 204);
        self.history.record(op);
    }

    /// Reads `name`: recorded when answered; its main snapshot (-1: none) if it exists.
    pub async fn read(&self, host: &Host, client: usize, name: &str) -> Option<Option<i64>> {
        let mut op = Operation::new(client, name, "read");
        op.call = self.history.now();
        let answer = Host::send(host.client.get(host.table(&self.namespace, name))).await;
        op.ret = self.history.now();
        let seen = match answer {
            Some((200, table)) => Some(main_of(&table["metadata"])),
            Some((404, _)) => None,
            // No answer, or a failure: a read that saw nothing changes nothing.
            _ => return None,
        };
        op.outcome = Outcome::Ok;
        op.exists = seen.is_some();
        op.snapshot = seen.unwrap_or(-1);
        self.history.record(op);
        Some(seen)
    }

    /// Commits a new snapshot `new` on `name` as main's child, required to find main at
    /// `expect`.
    pub async fn commit(&self, host: &Host, client: usize, name: &str, expect: i64, new: i64) -> Outcome {
        let mut op = Operation::new(client, name, "commit");
        (op.expect, op.new) = (expect, new);
        let sequence = self.sequence.fetch_add(1, Ordering::Relaxed);
        op.call = self.history.now();
        let url = host.table(&self.namespace, name);
        let location = name.strip_prefix('t').and_then(|t| self.locations.get(t.parse::<usize>().ok()?));
        let manifest_list = format!("{}/metadata/snap-{new}.avro", location.expect("a committed table"));
        let request = child_of_main_request((expect >= 0).then_some(expect), new, sequence, &manifest_list);
        let answer = Host::send(host.client.post(url).json(&request)).await;
        op.ret = self.history.now();
        settle(&mut op, &answer, 200);
        let outcome = op.outcome;
        self.history.record(op);
        outcome
    }

    /// Writer `client` on `host` until `stop`, choosing from `seed`.
    pub async fn write(self: Arc<Self>, host: Host, client: usize, seed: u64, stop: Arc<AtomicBool>) {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut made = 0i64;
        while !stop.load(Ordering::Relaxed) {
            let roll = rng.random_range(0..100);
            if roll < 60 {
                let name = format!("t{}", rng.random_range(0..COMMITTED));
                if let Some(Some(main)) = self.read(&host, client, &name).await {
                    made += 1;
                    let new = (client as i64 + 1) * 1_000_000 + made;
                    self.commit(&host, client, &name, main, new).await;
                }
            } else if roll < 75 {
                let name = format!("n{}", rng.random_range(0..CHURNED));
                self.create(&host, client, &name).await;
            } else if roll < 90 {
                let name = format!("n{}", rng.random_range(0..CHURNED));
                self.drop_table(&host, client, &name).await;
            } else {
                let name = format!("n{}", rng.random_range(0..CHURNED));
                self.read(&host, client, &name).await;
            }
        }
    }

    /// After the run: one read of every name through `host`, so that what was
    /// acknowledged must still be there for the history to check.
    pub async fn read_everything(&self, host: &Host) {
        let names = (0..COMMITTED).map(|t| format!("t{t}")).chain((0..CHURNED).map(|n| format!("n{n}")));
        for name in names {
            assert!(self.read(host, FINAL_READER, &name).await.is_some(), "the final read of {name} was answered");
        }
    }

    /// The snapshots of committed table `name` through `host`, and which of them
    /// main descends from.
    pub async fn snapshots(&self, host: &Host, name: &str) -> (Vec<i64>, Vec<i64>) {
        let (status, table) = Host::send(host.client.get(host.table(&self.namespace, name))).await.unwrap();
        assert_eq!(status, 200);
        let metadata = &table["metadata"];
        let all: Vec<i64> = metadata["snapshots"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| s["snapshot-id"].as_i64().unwrap())
            .collect();
        (all, main_ancestry(metadata))
    }
}

/// Main's snapshot in table metadata (-1: none).
fn main_of(metadata: &Value) -> i64 {
    metadata["refs"]["main"]["snapshot-id"].as_i64().unwrap_or(-1)
}
