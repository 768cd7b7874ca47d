//! `/health` (the server and every mount's state) and `/ready`.

use axum::Json;
use serde_json::{json, Value};

use super::State;

/// Reports every mount: `ok`, or `unreachable` with the last error that said so.
pub async fn health(axum::extract::State(state): State) -> Json<Value> {
    let mounts: Vec<Value> = state
        .mounts
        .all()
        .map(|m| match m.backend.unreachable() {
            None => json!({ "mount": m.label(), "state": "ok" }),
            Some(error) => json!({ "mount": m.label(), "state": "unreachable", "error": error }),
        })
        .collect();
    Json(json!({ "status": "ok", "mounts": mounts }))
}

/// Ready once the server is serving. An unreachable mount does not make it unready:
/// the namespaces that still work keep working.
pub async fn ready() -> Json<Value> {
    Json(json!({ "status": "ready" }))
}
