//! `/health` (the server and every mount's state), `/ready`, and `/metrics`
//! (counters in the Prometheus text format).

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

/// Counters the server keeps.
#[derive(Default)]
pub struct Counters {
    /// reportMetrics calls received, by report type.
    reports: std::sync::Mutex<std::collections::BTreeMap<String, u64>>,
}

impl Counters {
    pub fn count_report(&self, kind: &str) {
        *self.reports.lock().expect("counters").entry(kind.to_string()).or_default() += 1;
    }
}

/// The counters, in the Prometheus text format.
pub async fn metrics(axum::extract::State(state): State) -> String {
    let mut out = String::from(
        "# HELP rustberg_metrics_reports_total Metrics reports received from clients.\n\
         # TYPE rustberg_metrics_reports_total counter\n",
    );
    for (kind, count) in state.counters.reports.lock().expect("counters").iter() {
        out.push_str(&format!("rustberg_metrics_reports_total{{report_type=\"{kind}\"}} {count}\n"));
    }
    out
}
