//! The S3 Tables REST API through the host's `http` capability. The host signs every
//! request (SigV4, service `s3tables`, the mount's `[auth]`); this component never
//! sees a key.

use rustberg_remote::path::segment;
use serde_json::Value;

use crate::rustberg::catalog::config;
use crate::rustberg::catalog::http::{self, Request};
use crate::rustberg::catalog::types::Error;

/// What S3 Tables answered when it refused.
pub struct Refusal {
    pub status: u16,
    pub said: String,
}

impl Refusal {
    /// The contract's error: 404 is absent, 409 lost a race (or the name is taken),
    /// 400 a bad request; anything else (a rejected credential, throttling, 5xx) says
    /// the service cannot be used now, never that something is absent.
    pub fn into_error(self) -> Error {
        match self.status {
            404 => Error::NotFound(self.said),
            409 => Error::Conflict(self.said),
            400 => Error::BadRequest(self.said),
            _ => Error::Unavailable(self.said),
        }
    }
}

/// The table bucket this mount serves (`[mount.x.config] table_bucket_arn`).
pub fn bucket_arn() -> Result<String, Error> {
    config::get("table_bucket_arn").filter(|a| !a.is_empty()).ok_or_else(|| {
        Error::BadRequest("the mount's [config] needs table_bucket_arn (arn:aws:s3tables:…:bucket/…)".into())
    })
}

/// Sends `method path?query` with an optional JSON body; the parsed answer (null when
/// empty), a refusal, or the transport's error.
pub fn call(
    method: &str,
    path: &str,
    query: &[(&str, &str)],
    body: Option<Value>,
) -> Result<Result<Value, Refusal>, Error> {
    let mut target = format!("{}{path}", config::get("base_path").unwrap_or_default());
    for (i, (key, value)) in query.iter().enumerate() {
        target.push(if i == 0 { '?' } else { '&' });
        target.push_str(&format!("{key}={}", segment(value)));
    }
    let request = Request {
        method: method.into(),
        path: target,
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: body.map(|b| b.to_string().into_bytes()).unwrap_or_default(),
    };
    let response = http::send(&request)?;
    let parsed: Value = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
    if (200..300).contains(&response.status) {
        return Ok(Ok(parsed));
    }
    let kind = response
        .headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("x-amzn-errortype"))
        .map(|(_, v)| v.split(':').next().unwrap_or(v).to_string())
        .unwrap_or_default();
    let message = parsed["message"].as_str().or(parsed["Message"].as_str()).unwrap_or_default();
    let said = format!("S3 Tables {method} {path}: {kind} ({}): {message}", response.status);
    Ok(Err(Refusal { status: response.status, said }))
}

/// `call`, with every refusal as the contract's error.
pub fn send(method: &str, path: &str, query: &[(&str, &str)], body: Option<Value>) -> Result<Value, Error> {
    call(method, path, query, body)?.map_err(Refusal::into_error)
}
