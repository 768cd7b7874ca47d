//! Middleware: every routed request counted and timed by its route template, method,
//! status and mount (`telemetry::http_request`), and run with the context its audit
//! records name (`audit::RequestContext`).

use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;

use super::State;
use crate::audit::RequestContext;
use crate::telemetry;

pub async fn observe(axum::extract::State(state): State, request: Request, next: Next) -> Response {
    // Cheap clones (an Arc'd template, a standard method): nothing is formatted per request.
    let route = request.extensions().get::<MatchedPath>().cloned();
    let method = method_label(request.method());
    let mount = mount_of(&state, request.uri());
    let context =
        RequestContext { method, route: route.clone(), request_id: request.headers().get("x-request-id").cloned() };
    let started = Instant::now();
    let response = context.scope(next.run(request)).await;
    let route = route.as_ref().map_or("unmatched", MatchedPath::as_str);
    telemetry::http_request(route, method, response.status().as_u16(), mount, started.elapsed());
    response
}

/// The method as a label: a client may send any token as a method, and each would be
/// a series of its own kept forever, so the ones HTTP defines name themselves and every
/// other is `other`.
fn method_label(method: &axum::http::Method) -> &'static str {
    const DEFINED: &[&str] = &["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE"];
    DEFINED.iter().find(|m| **m == method.as_str()).copied().unwrap_or("other")
}

/// The mount a request addresses: the first level of its `{namespace}` segment (or of
/// `?parent=`), `root` when no mount claims it, `-` when it names no namespace.
fn mount_of<'a>(state: &'a super::AppState, uri: &axum::http::Uri) -> &'a str {
    let segment = uri
        .path()
        .split('/')
        .skip_while(|s| *s != "namespaces")
        .nth(1)
        .map(|raw| percent_encoding::percent_decode_str(raw).decode_utf8_lossy().into_owned());
    let parent = || {
        url::form_urlencoded::parse(uri.query()?.as_bytes()).find(|(k, _)| k == "parent").map(|(_, v)| v.into_owned())
    };
    let Some(namespace) = segment.or_else(parent) else { return "-" };
    let first = namespace.split('\u{1f}').next().unwrap_or_default();
    state.mounts.named().map(|(name, _)| name.as_str()).find(|name| *name == first).unwrap_or("root")
}
