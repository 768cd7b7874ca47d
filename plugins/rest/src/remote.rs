//! Talking to the remote catalog through the host's `http` capability, and turning
//! its answers into backend results (only 404 means absent).

use std::sync::OnceLock;

use percent_encoding::percent_decode_str;
use rustberg_remote::path::segment;
use serde::de::DeserializeOwned;

use crate::rustberg::catalog::config;
use crate::rustberg::catalog::http::{self, Request};
use crate::rustberg::catalog::types::Error;

/// The separator of namespace levels in a path when the remote names none (Iceberg's).
pub const DEFAULT_SEPARATOR: &str = "%1F";

/// Where the remote catalog's REST routes are.
pub struct Remote {
    /// The path of `catalog_url` on its origin, without a trailing slash (often empty).
    base_path: String,
    /// The REST prefix the remote's `/v1/config` gave (empty: none).
    prefix: String,
    /// What joins a namespace's levels in a path, as the remote's `/v1/config` gave it
    /// (`namespace-separator`, URL-encoded: `%1F` unless it says otherwise; Iceberg's
    /// reference server says `%2E`).
    separator: String,
    /// The `warehouse` to ask `/v1/config` about, from `catalog_url`'s query.
    pub warehouse: Option<String>,
    /// Whether the remote's `/v1/config` advertised `idempotency-key-lifetime`: only
    /// then does a forwarded write carry the client's `Idempotency-Key`.
    pub idempotency_keys: bool,
}

impl Remote {
    /// What is known before `/v1/config` was read.
    pub fn discover() -> Result<Self, Error> {
        Ok(Remote {
            base_path: config::get("base_path").unwrap_or_default(),
            prefix: String::new(),
            separator: DEFAULT_SEPARATOR.to_string(),
            warehouse: config::get("warehouse").filter(|w| !w.is_empty()),
            idempotency_keys: false,
        })
    }

    /// Everything known after the mount was opened (the prefix is remembered then).
    /// Read from the host once per instance: the host asks for the description, and
    /// remembers the prefix, before it makes any other call, and never changes them.
    pub fn open() -> Result<&'static Self, Error> {
        static OPENED: OnceLock<Remote> = OnceLock::new();
        if let Some(remote) = OPENED.get() {
            return Ok(remote);
        }
        let mut remote = Self::discover()?;
        remote.prefix = config::get("prefix").unwrap_or_default();
        remote.separator = config::get("namespace_separator").unwrap_or_else(|| DEFAULT_SEPARATOR.to_string());
        remote.idempotency_keys = config::get("idempotency_keys").as_deref() == Some("true");
        Ok(OPENED.get_or_init(|| remote))
    }

    /// The path of `catalog_url` on its origin (a relative signer endpoint's base).
    pub fn base(&self) -> &str {
        &self.base_path
    }

    pub fn config_path(&self) -> String {
        match &self.warehouse {
            Some(w) => format!("{}/v1/config?warehouse={}", self.base_path, segment(w)),
            None => format!("{}/v1/config", self.base_path),
        }
    }

    /// `<base>/v1[/<prefix>]`. The prefix goes in as `/v1/config` gave it, as Iceberg's
    /// own clients put it in their paths: a remote that wants it encoded sends it encoded
    /// (Nessie's `main%7Cwarehouse`), and encoding it again would name another prefix.
    pub fn root(&self) -> String {
        match self.prefix.is_empty() {
            true => format!("{}/v1", self.base_path),
            false => format!("{}/v1/{}", self.base_path, self.prefix),
        }
    }

    /// A namespace as one path segment: each level encoded, joined by the remote's
    /// separator as it gave it (as Iceberg's clients build the path).
    pub fn namespace_segment(&self, namespace: &[String]) -> String {
        namespace.iter().map(|level| segment(level)).collect::<Vec<_>>().join(&self.separator)
    }

    /// A namespace as a query value (`parent`), not yet encoded: its levels joined by the
    /// separator decoded (the query is encoded as a whole).
    pub fn namespace_query(&self, namespace: &[String]) -> String {
        namespace.join(&percent_decode_str(&self.separator).decode_utf8_lossy())
    }

    /// `<base>/v1/<prefix>/namespaces/<namespace>/<segments…>?<query>`, every segment and
    /// query part encoded (the namespace as [`Remote::namespace_segment`] has it).
    pub fn path(&self, namespace: Option<&[String]>, segments: &[&str], query: &[(String, String)]) -> String {
        let mut path = self.root();
        if let Some(namespace) = namespace {
            path.push_str("/namespaces/");
            path.push_str(&self.namespace_segment(namespace));
        }
        for part in segments {
            path.push('/');
            path.push_str(&segment(part));
        }
        with_query(path, query)
    }

    /// GETs a path; a 2xx body, or the error its status means. Only a 404 is an
    /// absence; the remote refusing this mount's own credential, or answering with a
    /// status a read never gets, is `internal` (the host answers 502: the remote's fault
    /// as seen from here, not the caller's).
    pub fn get(&self, path: &str, headers: Vec<(String, String)>) -> Result<Vec<u8>, Error> {
        let response = http::send(&Request { method: "GET".into(), path: path.to_string(), headers, body: vec![] })?;
        let status = response.status;
        let detail = || {
            let text = String::from_utf8_lossy(&response.body);
            let text: String = text.chars().take(300).collect();
            format!("GET {path}: HTTP {status}: {text}")
        };
        match status {
            200..=299 => Ok(response.body),
            // Absent, as the remote says it; a 404 of another type (`NotFoundException`:
            // a metadata file missing) is the remote failing to serve what it has.
            404 if says_absent(&response.body) => Err(Error::NotFound(detail())),
            404 => Err(Error::Internal(format!("the remote could not serve it ({})", detail()))),
            400 | 422 => Err(Error::BadRequest(format!("the remote refused the request ({})", detail()))),
            409 => Err(Error::Conflict(format!("the remote refused the request ({})", detail()))),
            401 | 403 => Err(Error::Internal(format!("the remote rejected this mount's credential ({})", detail()))),
            500..=599 => Err(Error::Unavailable(format!("the remote failed ({})", detail()))),
            _ => Err(Error::Internal(format!("the remote answered what a read never gets ({})", detail()))),
        }
    }

    /// Sends one request and hands back the remote's answer, whatever its status.
    pub fn send(
        &self,
        method: &str,
        path: String,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    ) -> Result<http::Response, Error> {
        http::send(&Request { method: method.to_string(), path, headers, body })
    }

    /// GETs a path and parses its JSON body.
    pub fn get_json<T: DeserializeOwned>(&self, path: &str) -> Result<T, Error> {
        let body = self.get(path, vec![])?;
        serde_json::from_slice(&body)
            .map_err(|e| Error::Unavailable(format!("GET {path}: the remote's answer is not valid: {e}")))
    }
}

/// `path?k=v&…`, each key and value encoded.
pub fn with_query(mut path: String, query: &[(String, String)]) -> String {
    for (i, (k, v)) in query.iter().enumerate() {
        path.push(if i == 0 { '?' } else { '&' });
        path.push_str(&format!("{}={}", segment(k), segment(v)));
    }
    path
}

/// Whether a 404's body says the thing asked for is absent: its Iceberg error type is a
/// `NoSuch…Exception`, or it names none.
fn says_absent(body: &[u8]) -> bool {
    let parsed: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let kind = parsed.as_ref().and_then(|v| v.pointer("/error/type")).and_then(|t| t.as_str()).unwrap_or_default();
    kind.is_empty() || kind.starts_with("NoSuch")
}
