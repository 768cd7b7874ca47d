//! `/health` (the server and every mount's state), `/ready`, and `/metrics`
//! (the Prometheus text format).

use axum::http::StatusCode;
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

/// How long the catalog's store may take to answer `/ready`'s probe.
const READY_WITHIN: std::time::Duration = std::time::Duration::from_secs(1);

/// Ready while the store the root catalog lives in (its redb file, or its Postgres
/// database) answers a read within [`READY_WITHIN`]: a host whose database is down or
/// frozen serves nothing of the root catalog, and a load balancer should send its
/// clients to another host. An unreachable mount does not make it unready: the
/// namespaces that still work keep working. The reason names no host or database
/// (anybody may ask); the log has the error.
pub async fn ready(axum::extract::State(state): State) -> (StatusCode, Json<Value>) {
    let unavailable = match tokio::time::timeout(READY_WITHIN, state.host_space.get(b"ready/probe")).await {
        Ok(Ok(_)) => return (StatusCode::OK, Json(json!({ "status": "ready" }))),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "not ready: the catalog's store failed a read");
            "the catalog's store failed a read"
        }
        Err(_) => {
            tracing::warn!("not ready: the catalog's store did not answer within {READY_WITHIN:?}");
            "the catalog's store did not answer in time"
        }
    };
    (StatusCode::SERVICE_UNAVAILABLE, Json(json!({ "status": "unavailable", "reason": unavailable })))
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
