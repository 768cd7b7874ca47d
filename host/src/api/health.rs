//! `/health` (the server and every mount's state), `/ready`, and `/metrics`
//! (the Prometheus text format).

use axum::Json;
use serde_json::{json, Value};

use super::State;

/// The server's status; every mount's state (`ok`, or `unreachable` with the last
/// error that said so) only for an authenticated caller: error texts name hosts and
/// databases, which are nobody else's business.
pub async fn health(axum::extract::State(state): State, headers: axum::http::HeaderMap) -> Json<Value> {
    let authenticated =
        headers.contains_key(axum::http::header::AUTHORIZATION) && state.auth.authenticate(&headers).await.is_ok();
    if !authenticated {
        return Json(json!({ "status": "ok" }));
    }
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

/// Every metric, in the Prometheus text format (see `telemetry`). The pools' gauges are
/// read now, at the scrape, rather than kept up to date on every backend call.
pub async fn metrics(axum::extract::State(state): State) -> String {
    for mount in state.mounts.all() {
        let (idle, busy) = mount.backend.occupancy();
        crate::telemetry::pool_state(mount.backend.label(), idle, busy);
    }
    crate::telemetry::render()
}
