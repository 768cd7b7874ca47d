//! The per-instance host state and the capabilities a backend may import.
//!
//! Each import checks at call time what the mount grants: a component can ask for
//! anything, and gets only what its mount's configuration gives it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use wasmtime::component::ResourceTable;
use wasmtime::{ResourceLimiter, StoreLimits};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::attempt::Attempt;
use super::bindings::rustberg::catalog::{clock, config, http, kv, log, types};
use super::bindings::WitError;
use super::contract::Granted;
use super::guest_output::GuestOutput;
use super::http::HttpGrant;
use super::tcp::{self, TcpGrant};
use crate::storage::kv::{self as store, KvError, KvStore};

/// What a mount gives its backend: a name for messages, an optional key space, optional
/// origins to call or to connect to, and configuration values.
pub struct Capabilities {
    /// How the mount is named in messages, e.g. "mount `prod`".
    pub label: String,
    pub kv: Option<KvStore>,
    pub http: Option<HttpGrant>,
    pub tcp: Option<TcpGrant>,
    /// Values the backend reads through `config` (it adds what it discovered at open).
    pub config: RwLock<Vec<(String, String)>>,
    /// How many log lines the backend may still write this second.
    pub log_budget: LogBudget,
}

/// Rows one `kv.scan` returns at most, whatever limit the guest asks for.
pub const MAX_SCAN_ROWS: usize = 10_000;
/// Log lines one mount's backend may write per second; the rest are counted and dropped.
const LOG_LINES_PER_SECOND: u32 = 100;

/// A per-second budget of guest log lines.
#[derive(Debug, Default)]
pub struct LogBudget(std::sync::Mutex<Option<(std::time::Instant, u32, u64)>>);

/// What to do with one guest log line.
enum LogTurn {
    Write,
    Drop,
    /// Write it, after saying how many were dropped in the last second.
    WriteAfterDropping(u64),
}

impl LogBudget {
    fn take(&self) -> LogTurn {
        let now = std::time::Instant::now();
        let mut state = self.0.lock().expect("log budget");
        let (since, written, dropped) = state.get_or_insert((now, 0, 0));
        if now.duration_since(*since) >= std::time::Duration::from_secs(1) {
            let before = *dropped;
            *state = Some((now, 1, 0));
            return if before > 0 { LogTurn::WriteAfterDropping(before) } else { LogTurn::Write };
        }
        if *written < LOG_LINES_PER_SECOND {
            *written += 1;
            LogTurn::Write
        } else {
            *dropped += 1;
            LogTurn::Drop
        }
    }
}

impl Capabilities {
    /// What this mount grants, for the contract check.
    pub fn granted(&self) -> Granted {
        Granted { kv: self.kv.is_some(), http: self.http.is_some(), tcp: self.tcp.is_some() }
    }
}

/// The data of one instance's Store.
pub struct HostState {
    pub(super) grants: Arc<Capabilities>,
    pub(super) limits: MeteredLimits,
    /// When the current call's budget runs out (checked on every epoch tick).
    pub(super) deadline: Instant,
    /// What the guest prints to stdout and stderr.
    pub(super) output: GuestOutput,
    /// The attempt at a change the current call is part of, lent by its caller.
    pub(super) attempt: Attempt,
    wasi: WasiCtx,
    table: ResourceTable,
}

impl HostState {
    pub fn new(grants: Arc<Capabilities>, limits: MeteredLimits) -> Self {
        let output = GuestOutput::default();
        // WASI with nothing granted but the mount's tcp origins: no files, no environment;
        // what it prints is kept for the log.
        let mut wasi = WasiCtx::builder();
        wasi.stdout(output.clone()).stderr(output.clone());
        tcp::sockets(&mut wasi, grants.tcp.as_ref());
        let attempt = Attempt::default();
        Self {
            grants,
            limits,
            deadline: Instant::now(),
            output,
            attempt,
            wasi: wasi.build(),
            table: ResourceTable::new(),
        }
    }
}

/// A store's limits, noting the largest memory they let the guest grow to.
pub struct MeteredLimits {
    limits: StoreLimits,
    peak: Arc<AtomicUsize>,
}

impl MeteredLimits {
    /// `limits`, recording the largest memory granted into `peak` (shared by a pool).
    pub fn new(limits: StoreLimits, peak: Arc<AtomicUsize>) -> Self {
        Self { limits, peak }
    }
}

impl ResourceLimiter for MeteredLimits {
    fn memory_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        let allowed = self.limits.memory_growing(current, desired, maximum)?;
        if allowed {
            self.peak.fetch_max(desired, Ordering::Relaxed);
        }
        Ok(allowed)
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.limits.memory_grow_failed(error)
    }

    fn table_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        self.limits.table_growing(current, desired, maximum)
    }

    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.limits.table_grow_failed(error)
    }

    fn instances(&self) -> usize {
        self.limits.instances()
    }

    fn tables(&self) -> usize {
        self.limits.tables()
    }

    fn memories(&self) -> usize {
        self.limits.memories()
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

fn kv_error(e: KvError) -> WitError {
    match e {
        KvError::Conflict => WitError::Conflict("a check did not hold".into()),
        KvError::Store(m) => WitError::Unavailable(m),
    }
}

impl HostState {
    fn no_space(&self) -> WitError {
        WitError::Unsupported(format!("{} grants no key space", self.grants.label))
    }
}

fn entry(e: store::Entry) -> kv::Entry {
    kv::Entry { key: e.key, value: e.value, version: e.version }
}

impl types::Host for HostState {}

impl kv::Host for HostState {
    async fn get(&mut self, key: Vec<u8>) -> wasmtime::Result<Result<Option<kv::Entry>, WitError>> {
        let Some(space) = &self.grants.kv else { return Ok(Err(self.no_space())) };
        if let Some(read) = self.attempt.read_before(&key) {
            return Ok(Ok(read.map(entry)));
        }
        let read = space.get(&key).await.map_err(kv_error);
        if let Ok(read) = &read {
            self.attempt.note(&key, read);
        }
        Ok(read.map(|e| e.map(entry)))
    }

    async fn scan(
        &mut self,
        start: Vec<u8>,
        end: Option<Vec<u8>>,
        limit: u32,
    ) -> wasmtime::Result<Result<Vec<kv::Entry>, WitError>> {
        let Some(space) = &self.grants.kv else { return Ok(Err(self.no_space())) };
        Ok(space
            .scan(&start, end.as_deref(), (limit as usize).min(MAX_SCAN_ROWS))
            .await
            .map(|rows| rows.into_iter().map(entry).collect())
            .map_err(kv_error))
    }

    async fn commit(
        &mut self,
        checks: Vec<kv::Check>,
        writes: Vec<kv::Write>,
    ) -> wasmtime::Result<Result<(), WitError>> {
        let checks: Vec<store::Check> = checks
            .into_iter()
            .map(|c| match c {
                kv::Check::Absent(k) => store::Check::Absent(k),
                kv::Check::Present(k) => store::Check::Present(k),
                kv::Check::AtVersion((k, v)) => store::Check::AtVersion(k, v),
                kv::Check::PrefixEmpty(p) => store::Check::PrefixEmpty(p),
            })
            .collect();
        let writes: Vec<store::Write> =
            writes.into_iter().map(|w| store::Write { key: w.key, value: w.value }).collect();
        let Some(space) = &self.grants.kv else { return Ok(Err(self.no_space())) };
        let commit = store::Commit { checks, writes, durability: store::Durability::Now };
        Ok(self.attempt.commit(space, commit).await.map_err(kv_error))
    }
}

impl log::Host for HostState {
    async fn log(&mut self, level: log::Level, message: String) -> wasmtime::Result<()> {
        let mount = self.grants.label.as_str();
        match self.grants.log_budget.take() {
            LogTurn::Write => {}
            LogTurn::Drop => return Ok(()),
            LogTurn::WriteAfterDropping(dropped) => {
                tracing::warn!(mount, dropped, "the backend logged too much: lines dropped")
            }
        }
        match level {
            log::Level::Trace => tracing::trace!(mount, "{message}"),
            log::Level::Debug => tracing::debug!(mount, "{message}"),
            log::Level::Info => tracing::info!(mount, "{message}"),
            log::Level::Warn => tracing::warn!(mount, "{message}"),
            log::Level::Error => tracing::error!(mount, "{message}"),
        }
        Ok(())
    }
}

impl clock::Host for HostState {
    async fn now_millis(&mut self) -> wasmtime::Result<u64> {
        Ok(SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0))
    }
}

impl config::Host for HostState {
    async fn get(&mut self, key: String) -> wasmtime::Result<Option<String>> {
        let config = self.grants.config.read().expect("mount config");
        Ok(config.iter().find(|(k, _)| *k == key).map(|(_, v)| v.clone()))
    }

    async fn keys(&mut self) -> wasmtime::Result<Vec<String>> {
        let config = self.grants.config.read().expect("mount config");
        let keys: std::collections::BTreeSet<String> = config.iter().map(|(k, _)| k.clone()).collect();
        Ok(keys.into_iter().collect())
    }
}

impl http::Host for HostState {
    async fn send(&mut self, req: http::Request) -> wasmtime::Result<Result<http::Response, WitError>> {
        Ok(match &self.grants.http {
            Some(grant) => {
                let sent = grant.send(req).await;
                let status = sent.as_ref().map_or_else(|_| "unavailable".to_string(), |r| r.status.to_string());
                crate::telemetry::remote_call(&self.grants.label, &status);
                sent
            }
            None => Err(WitError::Unsupported(format!("{} grants no outbound HTTP", self.grants.label))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backend_logs_at_most_its_budget_per_second() {
        let budget = LogBudget::default();
        let written = (0..1000).filter(|_| !matches!(budget.take(), LogTurn::Drop)).count();
        assert_eq!(written, LOG_LINES_PER_SECOND as usize);
    }

    #[tokio::test]
    async fn a_scan_returns_at_most_its_cap_whatever_the_guest_asks() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::storage::kv::RedbStore::open(&dir.path().join("k.redb")).unwrap();
        let space = KvStore::Redb(store.space("s").unwrap());
        let rows: Vec<store::Write> = (0..MAX_SCAN_ROWS + 5)
            .map(|i| store::Write { key: format!("k{i:06}").into_bytes(), value: Some(vec![]) })
            .collect();
        space.commit(&[], &rows).await.unwrap();
        let grants = Capabilities {
            label: "mount `m`".into(),
            kv: Some(space),
            http: None,
            tcp: None,
            config: Default::default(),
            log_budget: Default::default(),
        };
        let mut state = HostState::new(
            Arc::new(grants),
            MeteredLimits::new(wasmtime::StoreLimitsBuilder::new().build(), Default::default()),
        );
        let got = kv::Host::scan(&mut state, vec![], None, u32::MAX).await.unwrap().unwrap();
        assert_eq!(got.len(), MAX_SCAN_ROWS);
        let small = kv::Host::scan(&mut state, vec![], None, 3).await.unwrap().unwrap();
        assert_eq!(small.len(), 3);
    }
}
