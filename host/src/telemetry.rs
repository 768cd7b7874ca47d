//! Prometheus metrics: every series the server exports, named here once, and the text
//! exposition at `/metrics` (docs/operations.md lists them).

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::{LazyLock, OnceLock, RwLock};
use std::time::Duration;

use metrics::{counter, gauge, histogram, Counter, Histogram};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

/// Handles of the series on the hot paths (every request, every backend call), by a
/// hash of their labels: the registry lookup, and building the labels, happen once per
/// series instead of once per event. (A fast fixed hash: every label comes from a
/// bounded set the server chooses, never as a client wrote it.)
struct Handles<T>(LazyLock<RwLock<HashMap<u64, T>>>);

impl<T> Handles<T> {
    const fn new() -> Self {
        Self(LazyLock::new(Default::default))
    }

    /// Runs `use_it` on the handle for `labels`, made by `make` the first time.
    fn with(&self, labels: &[&str], make: impl FnOnce() -> T, use_it: impl FnOnce(&T)) {
        let key = foldhash::fast::FixedState::default().hash_one(labels);
        if let Some(handle) = self.0.read().expect("metric handles").get(&key) {
            return use_it(handle);
        }
        let mut handles = self.0.write().expect("metric handles");
        use_it(handles.entry(key).or_insert_with(make));
    }
}

static HTTP: Handles<(Counter, Histogram)> = Handles::new();
static BACKEND_CALLS: Handles<Histogram> = Handles::new();

/// Latency buckets, in seconds: from a warm in-memory load to a slow remote.
const BUCKETS: &[f64] =
    &[0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0];

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// How often histogram samples are drained into their buckets. The samples waiting
/// are a large part of the process's memory under load (tens of thousands a second,
/// in blocks the allocator keeps afterwards), so they are drained every second.
const UPKEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Installs the process's recorder (once); later calls reuse it.
pub fn install() -> &'static PrometheusHandle {
    HANDLE.get_or_init(|| {
        let recorder =
            PrometheusBuilder::new().set_buckets(BUCKETS).expect("the buckets are not empty").build_recorder();
        let handle = recorder.handle();
        // A histogram keeps every sample until it is drained into its buckets, which
        // a render or an upkeep does: drained every second whether or not anybody
        // scrapes /metrics, or memory grows with every request.
        let upkeep = handle.clone();
        let drain = move || loop {
            std::thread::sleep(UPKEEP_EVERY);
            upkeep.run_upkeep();
        };
        std::thread::Builder::new().name("metrics-upkeep".into()).spawn(drain).expect("starting a thread");
        // Another recorder may already be set (a test harness): then nothing is recorded
        // into ours, and /metrics shows only what it renders.
        let _ = metrics::set_global_recorder(recorder);
        handle
    })
}

/// The metrics in the Prometheus text format.
pub fn render() -> String {
    install().render()
}

/// A mount's name for a label: `root` for the root catalog.
pub fn mount_label(label: &str) -> String {
    label.strip_prefix("mount `").and_then(|l| l.strip_suffix('`')).unwrap_or("root").to_string()
}

/// One HTTP request: its route template, method, status and mount.
pub fn http_request(route: &str, method: &str, status: u16, mount: &str, took: Duration) {
    let unusual;
    let status = match common_status(status) {
        Some(text) => text,
        None => {
            unusual = status.to_string();
            unusual.as_str()
        }
    };
    let make = || {
        let labels = [
            ("route", route.to_string()),
            ("method", method.to_string()),
            ("status", status.to_string()),
            ("mount", mount.to_string()),
        ];
        (
            counter!("rustberg_http_requests_total", &labels),
            histogram!("rustberg_http_request_duration_seconds", &labels),
        )
    };
    HTTP.with(&[route, method, status, mount], make, |(count, time)| {
        count.increment(1);
        time.record(took.as_secs_f64());
    });
}

/// The common status codes as text, without allocating.
fn common_status(status: u16) -> Option<&'static str> {
    Some(match status {
        200 => "200",
        204 => "204",
        400 => "400",
        401 => "401",
        403 => "403",
        404 => "404",
        409 => "409",
        500 => "500",
        501 => "501",
        503 => "503",
        _ => return None,
    })
}

/// One call into a backend: its mount, export and outcome (`ok`, or the error kind:
/// `trapped`, `timed_out`, `out_of_memory`, `not_found`, …).
pub fn backend_call(mount: &str, export: &'static str, outcome: &'static str, took: Duration) {
    let make = || {
        let labels = [("mount", mount_label(mount)), ("export", export.to_string()), ("outcome", outcome.to_string())];
        histogram!("rustberg_backend_call_duration_seconds", &labels)
    };
    BACKEND_CALLS.with(&[mount, export, outcome], make, |time| time.record(took.as_secs_f64()));
}

/// A mount's instance pool: a new instance, or one discarded and why.
pub fn instance_created(mount: &str) {
    counter!("rustberg_pool_instantiations_total", "mount" => mount_label(mount)).increment(1);
}

pub fn instance_discarded(mount: &str, reason: &'static str) {
    counter!("rustberg_pool_discards_total", "mount" => mount_label(mount), "reason" => reason).increment(1);
}

/// A mount's instances at a scrape: idle in the pool, and busy in calls.
pub fn pool_state(mount: &str, idle: usize, busy: usize) {
    gauge!("rustberg_pool_idle_instances", "mount" => mount_label(mount)).set(idle as f64);
    gauge!("rustberg_pool_busy_instances", "mount" => mount_label(mount)).set(busy as f64);
}

/// A kv commit: the store kind and whether it applied (`ok`, `conflict`, `error`).
pub fn kv_commit(store: &'static str, outcome: &'static str) {
    counter!("rustberg_kv_commits_total", "store" => store, "outcome" => outcome).increment(1);
}

/// A kv read (a get or a scan) on Postgres (a round trip) or redb.
pub fn kv_read(postgres: bool) {
    // Every read counts: the two counters are looked up once.
    static READS: LazyLock<[Counter; 2]> =
        LazyLock::new(|| ["redb", "postgres"].map(|store| counter!("rustberg_kv_reads_total", "store" => store)));
    READS[usize::from(postgres)].increment(1);
}

/// A durable write transaction on a redb file (one fsync, shared by the commits in it).
pub fn redb_transaction() {
    static TRANSACTIONS: LazyLock<Counter> = LazyLock::new(|| counter!("rustberg_redb_transactions_total"));
    TRANSACTIONS.increment(1);
}

/// A table metadata file parsed to change or read a table.
pub fn table_metadata_parse() {
    static PARSES: LazyLock<Counter> = LazyLock::new(|| counter!("rustberg_table_metadata_parses_total"));
    PARSES.increment(1);
}

/// An authorization decision: `allowed`, `denied`, or `filtered` (left out of a listing).
pub fn authz_decision(decision: &'static str) {
    // Every request makes one or more: their counters are looked up once.
    static DECISIONS: LazyLock<[(&str, Counter); 3]> = LazyLock::new(|| {
        ["allowed", "denied", "filtered"].map(|d| (d, counter!("rustberg_authz_decisions_total", "decision" => d)))
    });
    match DECISIONS.iter().find(|(d, _)| *d == decision) {
        Some((_, count)) => count.increment(1),
        None => counter!("rustberg_authz_decisions_total", "decision" => decision).increment(1),
    }
}

/// A credential vend: `issued`, or `refused` with the reason.
pub fn vend(outcome: &'static str, reason: &'static str) {
    counter!("rustberg_vends_total", "outcome" => outcome, "reason" => reason).increment(1);
}

/// A remote signing request: `signed` or `refused`.
pub fn remote_sign(outcome: &'static str) {
    counter!("rustberg_remote_signs_total", "outcome" => outcome).increment(1);
}

/// An Idempotency-Key request answered from the stored response.
pub fn idempotent_replay() {
    counter!("rustberg_idempotent_replays_total").increment(1);
}

/// A request a backend sent through the http grant, by the status it got (or
/// `unavailable` when none came).
pub fn remote_call(mount: &str, status: &str) {
    counter!("rustberg_remote_calls_total", "mount" => mount_label(mount), "status" => status.to_string()).increment(1);
}

/// A metrics report a client sent (reportMetrics), by its type.
pub fn metrics_report(kind: &str) {
    counter!("rustberg_metrics_reports_total", "report_type" => kind.to_string()).increment(1);
}

/// Events of changes that landed but could not be written to the outbox.
pub fn events_lost(count: usize) {
    counter!("rustberg_events_lost_total").increment(count as u64);
}

/// Events the relay moved from pending into the log.
pub fn events_logged(count: usize) {
    counter!("rustberg_events_logged_total").increment(count as u64);
}

/// A change a gate refused (or failed on, which refuses).
pub fn gate_refusal(gate: &str) {
    counter!("rustberg_gate_refusals_total", "gate" => gate.to_string()).increment(1);
}

/// An attempt to deliver events to a sink, by its outcome (`delivered`, `failed`,
/// `dead_lettered`).
pub fn event_delivery(sink: &str, outcome: &'static str, count: usize) {
    counter!("rustberg_event_deliveries_total", "sink" => sink.to_string(), "outcome" => outcome)
        .increment(count as u64);
}

/// A planTableScan's answer: `completed` within the budget, `submitted` (held),
/// `refused` (too many held).
pub fn scan_plan(answer: &'static str) {
    counter!("rustberg_scan_plans_total", "answer" => answer).increment(1);
}

/// How many plans are held for their clients.
pub fn scan_plans_held(count: usize) {
    gauge!("rustberg_scan_plans_held").set(count as f64);
}
