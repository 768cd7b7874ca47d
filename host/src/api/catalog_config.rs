//! `GET /v1/config`: the prefix and the endpoints this catalog promises.

use axum::Json;
use serde_json::{json, Value};

use super::{State, PREFIX};

pub async fn get_config(axum::extract::State(state): State) -> Json<Value> {
    Json(json!({
        "defaults": {},
        "overrides": { "prefix": PREFIX },
        "idempotency-key-lifetime": super::idempotency::LIFETIME_ISO,
        "endpoints": state.endpoints,
    }))
}
