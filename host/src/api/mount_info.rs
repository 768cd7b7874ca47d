//! `GET /management/v1/mounts`: each mount the caller's tenant owns (every one for a
//! server admin), and the root catalog: its backend and component, grants, owner,
//! warehouse and health. Latency and error rates are in `/metrics`, by mount.

use axum::extract::State as AxState;
use axum::response::IntoResponse;
use axum::Extension;
use serde_json::{json, Value};

use super::State;
use crate::auth::Caller;
use crate::mounts::Mount;

pub async fn list(AxState(state): State, Extension(caller): Extension<Caller>) -> impl IntoResponse {
    let visible = |m: &&Mount| caller.server_admin || m.owner.as_ref().is_none_or(|owner| *owner == caller.tenant);
    let mounts: Vec<Value> = state.mounts.all().filter(visible).map(describe).collect();
    axum::Json(json!({ "mounts": mounts }))
}

fn describe(mount: &Mount) -> Value {
    let (component, granted) = mount.backend.component();
    let health = match mount.backend.unreachable() {
        None => json!({ "state": "ok" }),
        Some(error) => json!({ "state": "unreachable", "error": error }),
    };
    json!({
        "name": mount.name.as_deref().unwrap_or("root"),
        "label": mount.label(),
        "backend": mount.source,
        "component": { "bytes": component.bytes, "sha256": component.sha256, "contract": component.contract },
        "grants": granted.names(),
        "owner": mount.owner,
        "read-only": mount.read_only,
        "warehouse": mount.warehouse.as_ref().map(|w| w.root().to_string()),
        "health": health,
    })
}
