//! The sandbox: every backend, admission gate and plugin sink is a WebAssembly
//! component, run here under the limits and with the capabilities its configuration
//! grants. (The typed calls into it are `backends`.)
//!
//! - `runtime`: the one Engine, the Linker, the epoch ticker; loading a component.
//! - `component_cache`: compiled components on disk, shared and size-bounded.
//! - `contract`: the contract version and the check of a component's imports and
//!   exports against it and its mount's grants.
//! - `kinds`: what a backend, a gate and a sink export, found once per component.
//! - `pool`: per-component warm instances, call deadlines and memory caps.
//! - `host_state`: the capabilities a backend may import (`kv`, `log`, `clock`, `config`, `http`).
//! - `attempt`: one attempt at a change, lent to the calls it makes: reads reused, and a
//!   commit of the host's carried by the backend's own.
//! - `http`: outbound calls to a mount's own origins, with timeouts and a size cap.
//! - `http_credential`: what the host adds to them (bearer, AWS SigV4, OAuth2).
//! - `tcp`: TCP connections (wasi:sockets) to a mount's own addresses, checked by the host.
//! - `builtin`: the components shipped inside the binary.

pub mod attempt;
pub mod bindings;
pub mod builtin;
mod component_cache;
pub mod contract;
mod guest_output;
mod host_state;
pub mod http;
mod http_credential;
mod kinds;
pub mod pool;
mod runtime;
pub mod tcp;

pub use host_state::{Capabilities, HostState, MAX_SCAN_ROWS};
pub use http::HttpGrant;
pub use http_credential::HostCredential;
pub use pool::{InstancePool, LoadedComponent};
pub use runtime::Runtime;
pub use tcp::TcpGrant;

/// Why a backend call failed, and which mount it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendErrorKind {
    NotFound,
    AlreadyExists,
    Conflict,
    Unsupported,
    Unavailable,
    /// Every call slot of the mount stayed taken: the call was never made.
    Busy,
    BadRequest,
    Internal,
    /// The component trapped (a panic, an invalid operation).
    Trapped,
    /// The call ran past its deadline.
    TimedOut,
    /// The component tried to grow past its memory cap.
    OutOfMemory,
    /// The remote a forwarding backend proxies answered something unusable, or refused
    /// the mount's own credential.
    BadGateway,
}

impl BackendErrorKind {
    /// The kind as a metric label.
    pub fn as_label(self) -> &'static str {
        match self {
            BackendErrorKind::NotFound => "not_found",
            BackendErrorKind::AlreadyExists => "already_exists",
            BackendErrorKind::Conflict => "conflict",
            BackendErrorKind::Unsupported => "unsupported",
            BackendErrorKind::Unavailable => "unavailable",
            BackendErrorKind::Busy => "busy",
            BackendErrorKind::BadRequest => "bad_request",
            BackendErrorKind::Internal => "internal",
            BackendErrorKind::Trapped => "trapped",
            BackendErrorKind::TimedOut => "timed_out",
            BackendErrorKind::OutOfMemory => "out_of_memory",
            BackendErrorKind::BadGateway => "bad_gateway",
        }
    }

    /// Whether a failed change certainly did not apply: the backend said why it
    /// refused. After any other failure (a trap, a timeout, an unreachable store)
    /// the change may have applied, and what the host wrote for it must stay.
    pub fn did_not_apply(self) -> bool {
        matches!(
            self,
            BackendErrorKind::NotFound
                | BackendErrorKind::AlreadyExists
                | BackendErrorKind::Conflict
                | BackendErrorKind::Busy
        )
    }

    /// Whether the backend refused the call before doing anything: it said what was
    /// wrong with it.
    pub fn refused(self) -> bool {
        self.did_not_apply() || matches!(self, BackendErrorKind::BadRequest | BackendErrorKind::Unsupported)
    }
}

/// A failed backend call, naming the mount it came from.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{label}: {message}")]
pub struct BackendError {
    /// How the mount is named in messages.
    pub label: String,
    pub kind: BackendErrorKind,
    pub message: String,
}
