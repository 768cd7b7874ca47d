//! Talking to the remote catalog through the host's `http` capability, and turning
//! its answers into backend results (only 404 means absent).

use std::sync::OnceLock;

use rustberg_remote::path::segment;
use serde::de::DeserializeOwned;

use crate::rustberg::catalog::config;
use crate::rustberg::catalog::http::{self, Request};
use crate::rustberg::catalog::types::Error;

/// Where the remote catalog's REST routes are.
pub struct Remote {
    /// The path of `catalog_url` on its origin, without a trailing slash (often empty).
    base_path: String,
    /// The REST prefix the remote's `/v1/config` gave (empty: none).
    prefix: String,
    /// The `warehouse` to ask `/v1/config` about, from `catalog_url`'s query.
    pub warehouse: Option<String>,
}

impl Remote {
    /// What is known before `/v1/config` was read.
    pub fn discover() -> Result<Self, Error> {
        Ok(Remote {
            base_path: config::get("base_path").unwrap_or_default(),
            prefix: String::new(),
            warehouse: config::get("warehouse").filter(|w| !w.is_empty()),
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
        Ok(OPENED.get_or_init(|| remote))
    }

    pub fn config_path(&self) -> String {
        match &self.warehouse {
            Some(w) => format!("{}/v1/config?warehouse={}", self.base_path, segment(w)),
            None => format!("{}/v1/config", self.base_path),
        }
    }

    /// `<base>/v1/<prefix>/<segments…>?<query>`, every part encoded.
    pub fn path(&self, segments: &[&str], query: &[(String, String)]) -> String {
        let mut path = format!("{}/v1", self.base_path);
        if !self.prefix.is_empty() {
            path.push('/');
            path.push_str(&segment(&self.prefix));
        }
        for part in segments {
            path.push('/');
            path.push_str(&segment(part));
        }
        for (i, (k, v)) in query.iter().enumerate() {
            path.push(if i == 0 { '?' } else { '&' });
            path.push_str(&format!("{}={}", segment(k), segment(v)));
        }
        path
    }

    /// GETs a path; a 2xx body, or the error its status means.
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
            404 => Err(Error::NotFound(detail())),
            401 | 403 => Err(Error::Unavailable(format!("the remote rejected this mount's credential ({})", detail()))),
            500..=599 => Err(Error::Unavailable(format!("the remote failed ({})", detail()))),
            _ => Err(Error::Internal(format!("the remote refused the request ({})", detail()))),
        }
    }

    /// GETs a path and parses its JSON body.
    pub fn get_json<T: DeserializeOwned>(&self, path: &str) -> Result<T, Error> {
        let body = self.get(path, vec![])?;
        serde_json::from_slice(&body)
            .map_err(|e| Error::Unavailable(format!("GET {path}: the remote's answer is not valid: {e}")))
    }
}
