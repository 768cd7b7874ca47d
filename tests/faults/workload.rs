//! The mixed workload of every fault scenario: writers spread over the hosts, each
//! doing, at random from its seed:
//! - optimistic commits: read main, then add a child of it required to find main
//!   unchanged (a compare-and-set), on tables that always exist (`t0`…);
//! - multi-table transactions: both tables of a pair (`p0`, `p1`) moved at once, each
//!   required to find its main unchanged, beside single commits to either;
//! - in a namespace of their own (`area`): creates, drops and renames of two table
//!   names, and creates and drops of the namespace itself;
//! - reads of all of them.
//!
//! Every operation is recorded in a [`History`], under the partition of names it
//! touches: each committed table, the pair, the area.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

use super::history::{History, Operation, Outcome};
use crate::support::{child_of_main_request, main_ancestry, schema, token_for};

/// Tables that always exist and take commits, one partition each.
pub const COMMITTED: [&str; 3] = ["t0", "t1", "t2"];
/// Two tables that always exist and take commits alone and together: one partition.
pub const PAIR: [&str; 2] = ["p0", "p1"];
/// Names that come and go, renamed into each other, in a namespace that comes and
/// goes: one partition.
pub const AREA: [&str; 2] = ["a0", "a1"];
/// The client id of the reads after a run.
pub const FINAL_READER: usize = 99;
/// A request unanswered this long is given up: its outcome is unknown.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(8);

/// The partition of a table name.
fn partition(name: &str) -> &str {
    match &name[..1] {
        "p" => "pair",
        "a" => "area",
        _ => name,
    }
}

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

    fn url(&self, path: &str) -> String {
        format!("{}/v1/catalog{path}", self.base)
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
    /// The run's namespace (under a mount, its name first).
    pub namespace: Vec<String>,
    pub history: History,
    /// Sequence numbers for new snapshots, rising across all writers: a snapshot must
    /// come after the table's last one.
    sequence: AtomicI64,
    /// Each committed table's location: its snapshots' manifest lists are named in it.
    locations: BTreeMap<String, String>,
}

/// The reasons for which each operation may be refused with nothing changed.
fn refusal(op: &str, error: &str) -> bool {
    matches!(
        (op, error),
        ("create", "AlreadyExistsException" | "NoSuchNamespaceException")
            | ("drop", "NoSuchTableException" | "NoSuchNamespaceException")
            | ("rename", "NoSuchTableException" | "AlreadyExistsException" | "NoSuchNamespaceException")
            | ("commit" | "txn", "CommitFailedException" | "NoSuchTableException")
            | ("nscreate", "AlreadyExistsException")
            | ("nsdrop", "NoSuchNamespaceException" | "NamespaceNotEmptyException")
    )
}

impl Workload {
    /// Creates namespace `namespace`, its tables that always exist, and the area's
    /// namespace, through `host`.
    pub async fn prepare(host: &Host, namespace: &[String]) -> Workload {
        let mut workload = Workload {
            namespace: namespace.to_vec(),
            history: History::new(),
            sequence: 1.into(),
            locations: BTreeMap::new(),
        };
        for levels in [workload.levels_of(COMMITTED[0]), workload.levels_of(AREA[0])] {
            let created =
                Host::send(host.client.post(host.url("/namespaces")).json(&json!({"namespace": levels}))).await;
            assert_eq!(created.map(|c| c.0), Some(200), "creating namespace {levels:?}");
        }
        for name in COMMITTED.into_iter().chain(PAIR) {
            let op = workload.create(host, 0, name).await;
            assert_eq!(op, Outcome::Ok, "creating table {name}");
            let (_, table) = Host::send(host.client.get(workload.table_url(host, name))).await.unwrap();
            let location = table["metadata"]["location"].as_str().unwrap().to_string();
            workload.locations.insert(name.to_string(), location);
        }
        workload
    }

    /// The namespace of table `name`, as a path segment.
    fn namespace_of(&self, name: &str) -> String {
        self.levels_of(name).join("%1F")
    }

    /// The namespace of table `name`, its levels.
    fn levels_of(&self, name: &str) -> Vec<&str> {
        let mut levels: Vec<&str> = self.namespace.iter().map(String::as_str).collect();
        if partition(name) == "area" {
            levels.push("area");
        }
        levels
    }

    fn table_url(&self, host: &Host, name: &str) -> String {
        host.url(&format!("/namespaces/{}/tables/{name}", self.namespace_of(name)))
    }

    /// Sends `request` as `op`, records it with its outcome (`ok`: the status that
    /// says it took effect) and returns the outcome.
    async fn perform(&self, mut op: Operation, request: reqwest::RequestBuilder, ok: u16) -> Outcome {
        op.call = self.history.now();
        let answer = Host::send(request).await;
        op.ret = self.history.now();
        op.outcome = match answer {
            None => Outcome::Unknown,
            Some((status, _)) if status == ok => Outcome::Ok,
            Some((status, body)) => {
                op.status = status;
                op.error = body["error"]["type"].as_str().unwrap_or("(no Iceberg error)").to_string();
                if op.error == "CommitStateUnknownException" {
                    Outcome::Unknown
                } else if refusal(op.op, &op.error) {
                    Outcome::Refused
                } else {
                    Outcome::Failed
                }
            }
        };
        let outcome = op.outcome;
        self.history.record(op);
        outcome
    }

    async fn create(&self, host: &Host, client: usize, name: &str) -> Outcome {
        let op = Operation::new(client, partition(name), "create", name);
        let url = host.url(&format!("/namespaces/{}/tables", self.namespace_of(name)));
        self.perform(op, host.client.post(url).json(&json!({"name": name, "schema": schema()})), 200).await
    }

    async fn drop_table(&self, host: &Host, client: usize, name: &str) -> Outcome {
        let op = Operation::new(client, partition(name), "drop", name);
        self.perform(op, host.client.delete(self.table_url(host, name)), 204).await
    }

    async fn rename(&self, host: &Host, client: usize, from: &str, to: &str) -> Outcome {
        let mut op = Operation::new(client, partition(from), "rename", from);
        op.to = to.to_string();
        let body = json!({
            "source": {"namespace": self.levels_of(from), "name": from},
            "destination": {"namespace": self.levels_of(to), "name": to},
        });
        self.perform(op, host.client.post(host.url("/tables/rename")).json(&body), 204).await
    }

    /// Creates (`drop` false) or drops the area's namespace.
    async fn area_namespace(&self, host: &Host, client: usize, drop: bool) -> Outcome {
        if drop {
            let op = Operation::new(client, "area", "nsdrop", "");
            let url = host.url(&format!("/namespaces/{}", self.namespace_of(AREA[0])));
            self.perform(op, host.client.delete(url), 204).await
        } else {
            let op = Operation::new(client, "area", "nscreate", "");
            let body = json!({"namespace": self.levels_of(AREA[0])});
            self.perform(op, host.client.post(host.url("/namespaces")).json(&body), 200).await
        }
    }

    /// Reads `name`: recorded when answered; its main snapshot (-1: none) if it exists.
    pub async fn read(&self, host: &Host, client: usize, name: &str) -> Option<Option<i64>> {
        let mut op = Operation::new(client, partition(name), "read", name);
        op.call = self.history.now();
        let answer = Host::send(host.client.get(self.table_url(host, name))).await;
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

    /// The request that commits snapshot `new` to `name` as main's child, required to
    /// find main at `expect`.
    fn commit_request(&self, name: &str, expect: i64, new: i64) -> Value {
        let sequence = self.sequence.fetch_add(1, Ordering::Relaxed);
        let location = &self.locations[name];
        let manifest_list = format!("{location}/metadata/snap-{new}.avro");
        child_of_main_request((expect >= 0).then_some(expect), new, sequence, &manifest_list)
    }

    /// Commits a new snapshot `new` on `name` as main's child, required to find main at
    /// `expect`.
    pub async fn commit(&self, host: &Host, client: usize, name: &str, expect: i64, new: i64) -> Outcome {
        let mut op = Operation::new(client, partition(name), "commit", name);
        (op.expect, op.new) = (expect, new);
        let request = self.commit_request(name, expect, new);
        self.perform(op, host.client.post(self.table_url(host, name)).json(&request), 200).await
    }

    /// Commits `new` on the pair's first table and `new_second` on its second in one
    /// transaction, each required to find main where `expect` says.
    async fn transaction(&self, host: &Host, client: usize, expect: [i64; 2], new: [i64; 2]) -> Outcome {
        let mut op = Operation::new(client, "pair", "txn", PAIR[0]);
        op.to = PAIR[1].to_string();
        (op.expect, op.new, op.expect_to, op.new_to) = (expect[0], new[0], expect[1], new[1]);
        let changes: Vec<Value> = (0..2)
            .map(|i| {
                let mut change = self.commit_request(PAIR[i], expect[i], new[i]);
                change["identifier"] = json!({"namespace": self.levels_of(PAIR[i]), "name": PAIR[i]});
                change
            })
            .collect();
        let url = host.url("/transactions/commit");
        self.perform(op, host.client.post(url).json(&json!({"table-changes": changes})), 204).await
    }

    /// Writer `client` on `host` until `stop`, choosing from `seed`.
    pub async fn write(self: Arc<Self>, host: Host, client: usize, seed: u64, stop: Arc<AtomicBool>) {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut made = 0i64;
        let mut next_snapshot = || {
            made += 1;
            (client as i64 + 1) * 1_000_000 + made
        };
        while !stop.load(Ordering::Relaxed) {
            let area_name = AREA[rng.random_range(0..AREA.len())];
            let outcome = match rng.random_range(0..100) {
                0..45 => {
                    let name = COMMITTED[rng.random_range(0..COMMITTED.len())];
                    match self.read(&host, client, name).await {
                        Some(Some(main)) => self.commit(&host, client, name, main, next_snapshot()).await,
                        _ => Outcome::Failed,
                    }
                }
                45..55 => {
                    let name = PAIR[rng.random_range(0..PAIR.len())];
                    match self.read(&host, client, name).await {
                        Some(Some(main)) => self.commit(&host, client, name, main, next_snapshot()).await,
                        _ => Outcome::Failed,
                    }
                }
                55..63 => {
                    let first = self.read(&host, client, PAIR[0]).await;
                    let second = self.read(&host, client, PAIR[1]).await;
                    match (first, second) {
                        (Some(Some(first)), Some(Some(second))) => {
                            let new = [next_snapshot(), next_snapshot()];
                            self.transaction(&host, client, [first, second], new).await
                        }
                        _ => Outcome::Failed,
                    }
                }
                63..72 => self.create(&host, client, area_name).await,
                72..79 => self.drop_table(&host, client, area_name).await,
                79..87 => {
                    let other = AREA.iter().find(|n| **n != area_name).unwrap();
                    self.rename(&host, client, area_name, other).await
                }
                87..91 => self.area_namespace(&host, client, false).await,
                91..95 => self.area_namespace(&host, client, true).await,
                _ => match self.read(&host, client, area_name).await {
                    Some(_) => Outcome::Ok,
                    None => Outcome::Failed,
                },
            };
            // As a client would: after a failure, or an answer that never came, it
            // backs off a while before the next request.
            if matches!(outcome, Outcome::Failed | Outcome::Unknown) {
                tokio::time::sleep(Duration::from_millis(rng.random_range(100..300))).await;
            }
        }
    }

    /// After the run: one read of every name through `host`, so that what was
    /// acknowledged must still be there for the history to check.
    pub async fn read_everything(&self, host: &Host) {
        for name in COMMITTED.into_iter().chain(PAIR).chain(AREA) {
            assert!(self.read(host, FINAL_READER, name).await.is_some(), "the final read of {name} was answered");
        }
    }

    /// Whether the namespace of table `name` exists, as `host` sees it.
    pub async fn namespace_exists(&self, host: &Host, name: &str) -> bool {
        let url = host.url(&format!("/namespaces/{}", self.namespace_of(name)));
        match Host::send(host.client.get(url)).await {
            Some((200, _)) => true,
            Some((404, _)) => false,
            other => panic!("loading the namespace of {name}: {other:?}"),
        }
    }

    /// After a run, when the area's namespace is gone: that it can be created again,
    /// whatever the run's failures left below its location.
    pub async fn assert_area_creatable(&self, host: &Host, run: &str) {
        if self.namespace_exists(host, AREA[0]).await {
            return;
        }
        let body = json!({"namespace": self.levels_of(AREA[0])});
        let created = Host::send(host.client.post(host.url("/namespaces")).json(&body)).await;
        assert_eq!(created.map(|c| c.0), Some(200), "{run}: creating the area's namespace again");
    }

    /// Table `name` as `host` loads it (metadata location and metadata), if it exists.
    pub async fn load(&self, host: &Host, name: &str) -> Option<Value> {
        match Host::send(host.client.get(self.table_url(host, name))).await {
            Some((200, table)) => Some(table),
            Some((404, _)) => None,
            other => panic!("loading {name}: {other:?}"),
        }
    }

    /// The snapshots of committed table `name` through `host`, and which of them
    /// main descends from.
    pub async fn snapshots(&self, host: &Host, name: &str) -> (Vec<i64>, Vec<i64>) {
        let (status, table) = Host::send(host.client.get(self.table_url(host, name))).await.unwrap();
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
