//! The Glue JSON 1.1 API through the host's `http` capability: one POST per operation,
//! `X-Amz-Target: AWSGlue.<Operation>`. The host signs every request (SigV4, the
//! mount's `[auth]`); this component never sees a key.

use serde_json::{json, Value};

use crate::rustberg::catalog::config;
use crate::rustberg::catalog::http::{self, Request};
use crate::rustberg::catalog::types::Error;

/// Calls `operation` with `input`; the parsed answer, or the error Glue's says.
pub fn call(operation: &str, mut input: Value) -> Result<Value, Error> {
    // Another account's catalog, when the mount names one.
    if let Some(catalog_id) = config::get("catalog_id").filter(|c| !c.is_empty()) {
        input["CatalogId"] = json!(catalog_id);
    }
    let request = Request {
        method: "POST".into(),
        path: format!("{}/", config::get("base_path").unwrap_or_default()),
        headers: vec![
            ("Content-Type".into(), "application/x-amz-json-1.1".into()),
            ("X-Amz-Target".into(), format!("AWSGlue.{operation}")),
        ],
        body: input.to_string().into_bytes(),
    };
    let response = http::send(&request)?;
    let body: Value = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
    if (200..300).contains(&response.status) {
        return Ok(body);
    }
    // `__type` is `EntityNotFoundException`, or `com.amazonaws…#EntityNotFoundException`.
    let kind = body["__type"].as_str().unwrap_or_default();
    let kind = kind.rsplit('#').next().unwrap_or(kind).to_string();
    let message = body["message"].as_str().or(body["Message"].as_str()).unwrap_or("").to_string();
    let said = format!("Glue {operation}: {kind} ({}): {message}", response.status);
    Err(match kind.as_str() {
        "EntityNotFoundException" => Error::NotFound(said),
        "AlreadyExistsException" => Error::AlreadyExists(said),
        "ConcurrentModificationException" => Error::Conflict(said),
        "InvalidInputException" | "ValidationException" => Error::BadRequest(said),
        _ => Error::Unavailable(said),
    })
}
