//! The audit log: one JSON line per authorization decision that changes something or
//! hands out storage credentials — who asked, in which tenant, on which route and
//! resource, whether it was allowed, which rule decided (server admin, the owner
//! tenant's role, or a grant by id), and for a vend the scope issued, never a secret.
//!
//! Decisions are made deep inside a request (`authz::Access`); what they record about
//! the request itself (its id, method and route template) is the caller's
//! [`RequestContext`], handed to `Access` with the caller.

use std::io::Write as _;
use std::sync::Mutex;

use axum::extract::MatchedPath;
use serde::{Deserialize, Serialize};

use crate::auth::{Principal, Role};
use crate::config::AuditConfig;
use crate::logs::RequestContext;

/// What was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Allowed,
    Denied,
}

/// The rule that gave the caller what it held: the one that decided an allowed
/// request, and for a denied one what the caller had (or nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Rule<'a> {
    /// A server admin manages everything that has an owner.
    ServerAdmin,
    /// A member of the owner tenant, by its role.
    Owner { tenant: &'a str, role: Role },
    /// A member of some tenant, by its role (creating a root namespace, which the
    /// caller's tenant will own).
    TenantRole { tenant: &'a str, role: Role },
    /// A grant, by id.
    Grant { grant: &'a str },
}

/// What a vend handed out, or why it did not.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Vend {
    /// Credentials for everything under `prefix`: `read` or `read-write`.
    Issued { prefix: String, access: &'static str },
    /// Nothing, for this reason.
    Refused { reason: String },
}

/// A request to object storage the host signed for a client (remote signing), or why
/// it did not.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Sign {
    Signed { method: String, uri: String },
    Refused { method: String, uri: String, reason: String },
}

/// One decision, as the line written.
#[derive(Serialize)]
pub struct Record<'a> {
    /// What was asked: `read`, `write`, `manage`, `create-namespace`, `server-admin`,
    /// `tenant-admin`, `vend`, `sign` or `restrict` (a read policy's answer, allowed, or a route
    /// to the raw files refused to a caller it restricts, denied).
    pub action: &'a str,
    /// What it was asked of (`table db.t`, `namespace db`, `tenant acme`, ...).
    pub resource: String,
    /// The mount the resource is in: its name, `root` for the root catalog, absent
    /// for what is in no catalog (tenants, principals).
    pub mount: Option<&'a str>,
    pub decision: Decision,
    pub rule: Option<Rule<'a>>,
    pub vend: Option<Vend>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sign: Option<Sign>,
    /// The read policies behind a restricted answer, or behind a refusal to a
    /// restricted caller, by id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restricted_by: Option<Vec<String>>,
}

/// The line: the record with who asked and the request it came in.
#[derive(Serialize)]
struct Line<'a> {
    time: String,
    request_id: Option<&'a str>,
    method: Option<&'a str>,
    route: Option<&'a str>,
    principal: &'a str,
    principal_name: &'a str,
    tenant: &'a str,
    #[serde(flatten)]
    record: &'a Record<'a>,
}

enum Sink {
    Stdout,
    File(Mutex<std::fs::File>),
}

/// Where audit records go, and which.
pub struct AuditLog {
    sink: Option<Sink>,
    reads: bool,
    /// The file records go to, for reading them back (none: stdout or off).
    path: Option<std::path::PathBuf>,
}

/// Which records a reader of the log asks for.
#[derive(Debug, Default, Deserialize)]
pub struct AuditQuery {
    /// The principal's name, exactly.
    pub principal: Option<String>,
    /// A part of the resource (`table db.t`, `namespace db`, ...).
    pub resource: Option<String>,
    /// `allowed` or `denied`.
    pub decision: Option<String>,
    /// The mount, exactly (`root` for the root catalog).
    pub mount: Option<String>,
    /// What was asked, exactly (`write`, `manage`, `vend`, ...).
    pub action: Option<String>,
    /// Records at or after this instant (RFC 3339, e.g. `2026-12-06T21:00:00Z`; anything
    /// else is refused with the query).
    pub since: Option<jiff::Timestamp>,
    /// Records before this instant.
    pub until: Option<jiff::Timestamp>,
    /// At most this many, the newest first (default 100, at most 1000).
    pub limit: Option<usize>,
}

/// How much of the file's end a query reads: the newest records, never the whole file.
const TAIL_BYTES: u64 = 8 << 20;

impl AuditLog {
    /// Records nothing (tests, tools).
    pub fn off() -> Self {
        Self { sink: None, reads: false, path: None }
    }

    /// As `[audit]` says: stdout unless `file` is set (appended to, created readable
    /// by the server's user only).
    pub fn open(config: &AuditConfig) -> std::io::Result<Self> {
        if !config.enabled {
            return Ok(Self::off());
        }
        let sink = match &config.file {
            None => Sink::Stdout,
            Some(path) => {
                use std::os::unix::fs::OpenOptionsExt as _;
                if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent)?;
                }
                let file = std::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(path)?;
                Sink::File(Mutex::new(file))
            }
        };
        Ok(Self { sink: Some(sink), reads: config.reads, path: config.file.clone() })
    }

    /// The newest records matching `query` that `visible` lets the reader see, read
    /// from the end of the file; `None` when records go to stdout or nowhere.
    pub fn read(
        &self,
        query: &AuditQuery,
        visible: impl Fn(&serde_json::Value) -> bool,
    ) -> std::io::Result<Option<Vec<serde_json::Value>>> {
        use std::io::{Read as _, Seek as _, SeekFrom};
        let Some(path) = &self.path else { return Ok(None) };
        let mut file = std::fs::File::open(path)?;
        let length = file.metadata()?.len();
        let start = length.saturating_sub(TAIL_BYTES);
        file.seek(SeekFrom::Start(start))?;
        let mut bytes = Vec::new();
        file.take(TAIL_BYTES).read_to_end(&mut bytes)?;
        // A read that starts mid-file may start mid-character too.
        let text = String::from_utf8_lossy(&bytes);
        // A read that starts mid-file starts mid-line: that line is dropped.
        let text = if start > 0 { text.split_once('\n').map_or("", |(_, rest)| rest) } else { &text };
        let lines = text.lines();
        let limit = query.limit.unwrap_or(100).min(1000);
        let timed = query.since.is_some() || query.until.is_some();
        let matches = |record: &serde_json::Value| {
            let field = |name: &str| record[name].as_str().unwrap_or_default();
            // A record's time is read only when a window asks for it.
            let in_window = || {
                let Ok(time) = field("time").parse::<jiff::Timestamp>() else { return false };
                query.since.is_none_or(|since| time >= since) && query.until.is_none_or(|until| time < until)
            };
            query.principal.as_deref().is_none_or(|p| field("principal_name") == p)
                && query.resource.as_deref().is_none_or(|r| field("resource").contains(r))
                && query.decision.as_deref().is_none_or(|d| field("decision") == d)
                && query.mount.as_deref().is_none_or(|m| field("mount") == m)
                && query.action.as_deref().is_none_or(|a| field("action") == a)
                && (!timed || in_window())
        };
        let records: Vec<serde_json::Value> = lines
            .rev()
            .filter_map(|line| serde_json::from_str(line).ok())
            .filter(|record| matches(record) && visible(record))
            .take(limit)
            .collect();
        Ok(Some(records))
    }

    /// Whether a decision demanding `action` is recorded: every one that changes
    /// something or vends, reads only when `[audit] reads` asks for them.
    pub fn wants(&self, action: &str) -> bool {
        self.sink.is_some() && (action != "read" || self.reads)
    }

    /// Writes `record`, made for `caller` in `request`, as one line. A line that cannot
    /// be written is logged; the request goes on.
    pub fn record(&self, caller: &Principal, request: &RequestContext, record: &Record) {
        let Some(sink) = &self.sink else { return };
        let line = Line {
            time: jiff::Timestamp::now().to_string(),
            request_id: request.request_id.to_str().ok(),
            method: Some(request.method),
            route: request.route.as_ref().map(MatchedPath::as_str),
            principal: caller.id(),
            principal_name: &caller.name,
            tenant: &caller.tenant,
            record,
        };
        let mut bytes = serde_json::to_vec(&line).expect("an audit record serializes");
        bytes.push(b'\n');
        // One write per line, so concurrent lines never interleave.
        let written = match sink {
            Sink::Stdout => std::io::stdout().lock().write_all(&bytes),
            Sink::File(file) => file.lock().expect("the audit file").write_all(&bytes),
        };
        if let Err(e) = written {
            tracing::error!(error = %e, "an audit record could not be written");
        }
    }
}
