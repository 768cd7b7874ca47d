//! `[server]`, `[log]`, `[audit]` and `[component_cache]`: how the process serves, logs
//! and keeps compiled components, and the limits every plugin call runs under.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

/// `[log]`
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogConfig {
    pub format: LogFormat,
}

/// How log lines are written (to stderr; the filter is `RUST_LOG`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line, with the fields of the request's span (its request id).
    Json,
}

/// `[audit]`: one JSON line per authorization decision that changes something or
/// vends credentials (`crate::audit`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuditConfig {
    pub enabled: bool,
    /// Appended to; default: stdout.
    pub file: Option<PathBuf>,
    /// Also record decisions that only read (loads, the parent of a listing).
    pub reads: bool,
}

impl Default for AuditConfig {
    fn default() -> Self {
        Self { enabled: true, file: None, reads: false }
    }
}

/// `[component_cache]`: compiled components, one file per component content and
/// engine, shared by every data directory (and process) that points at it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ComponentCacheConfig {
    /// Default: `$XDG_CACHE_HOME/rustberg/components`, else `~/.cache/rustberg/components`,
    /// else `<data_dir>/component-cache`.
    pub dir: Option<PathBuf>,
    /// The cache is kept under this size: the entries used longest ago go first.
    pub max_mib: u64,
}

impl Default for ComponentCacheConfig {
    fn default() -> Self {
        Self { dir: None, max_mib: 2048 }
    }
}

/// `[server]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// Address and port to listen on.
    pub listen: SocketAddr,
    /// Where the embedded default keeps its state (catalog file, warehouse).
    pub data_dir: PathBuf,
    /// After SIGTERM or SIGINT, how long requests in flight may take to finish, in seconds.
    pub shutdown_grace_secs: u64,
    /// The URL clients reach the server at (e.g. `https://catalog.example.com`), where it
    /// names itself to them (the remote signer); unset: taken from each request's `Host`.
    pub public_url: Option<String>,
}

/// `[plugins]`: the limits every backend call runs under.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PluginLimits {
    /// Wall-clock budget of one backend call, in milliseconds.
    pub call_timeout_ms: u64,
    /// Linear memory one backend instance may grow to, in MiB.
    pub memory_limit_mib: u64,
    /// Warm instances kept per mount.
    pub pool_size: usize,
    /// Calls after which an instance is discarded and replaced by a fresh one.
    pub recycle_after_calls: u64,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8181)),
            data_dir: PathBuf::from("rustberg-data"),
            shutdown_grace_secs: 30,
            public_url: None,
        }
    }
}

impl Default for PluginLimits {
    fn default() -> Self {
        Self { call_timeout_ms: 5_000, memory_limit_mib: 256, pool_size: 64, recycle_after_calls: 10_000 }
    }
}

impl PluginLimits {
    pub fn call_timeout(&self) -> Duration {
        Duration::from_millis(self.call_timeout_ms)
    }

    pub fn memory_limit_bytes(&self) -> usize {
        (self.memory_limit_mib as usize) << 20
    }
}
