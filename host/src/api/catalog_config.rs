//! `GET /v1/config`: the prefix and the endpoints this catalog promises.
//!
//! `?warehouse=<mount>` targets one mount: its own prefix (see `mount_prefix`) and the
//! endpoints that mount serves; `?warehouse=root` the root catalog without the mounts.
//! Any other warehouse (clients send one by default, the Java client `rck_warehouse` or a
//! path) is the whole tree.

use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{Query, State};
use crate::prefixes::{CATALOG as PREFIX, ROOT as ROOT_PREFIX};

#[derive(Deserialize)]
pub struct ConfigQuery {
    warehouse: Option<String>,
}

pub async fn get_config(axum::extract::State(state): State, Query(q): Query<ConfigQuery>) -> Json<Value> {
    let (prefix, endpoints) = match q.warehouse.as_deref() {
        Some(ROOT_PREFIX) => (ROOT_PREFIX, &state.root_endpoints),
        Some(w) => match state.mount_endpoints.get(w) {
            Some(endpoints) => (w, endpoints),
            None => (PREFIX, &state.endpoints),
        },
        None => (PREFIX, &state.endpoints),
    };
    Json(json!({
        "defaults": {},
        "overrides": { "prefix": prefix },
        "idempotency-key-lifetime": super::idempotency::LIFETIME_ISO,
        "endpoints": endpoints,
    }))
}
