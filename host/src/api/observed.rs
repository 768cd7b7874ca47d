//! Observation: every request given its id (`request_id`), counted and timed by its
//! route template, method, status and mount (`telemetry::http_request`), and run in
//! its span (its request id, for the log lines it causes), given the context its audit
//! records name (`logs::RequestContext`); the response returns the id.

use std::future::Future;
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::response::Response;
use tracing::Instrument;

use super::request_id::X_REQUEST_ID;
use super::AppState;
use crate::logs::RequestContext;
use crate::telemetry;

/// Runs `request` through `run`, counted, timed, and given its context.
pub async fn observe<F>(state: &AppState, request: Request, run: impl FnOnce(Request, RequestContext) -> F) -> Response
where
    F: Future<Output = Response>,
{
    // Cheap clones (an Arc'd template, a standard method): nothing is formatted per request.
    let route = request.extensions().get::<MatchedPath>().cloned();
    let method = method_label(request.method());
    let mount = mount_of(state, request.uri());
    let request_id = state.request_ids.of(request.headers());
    let span = request_span(&request_id);
    let context = RequestContext { method, route: route.clone(), request_id: request_id.clone() };
    let started = Instant::now();
    let mut response = run(request, context).instrument(span).await;
    let route = route.as_ref().map_or("unmatched", MatchedPath::as_str);
    telemetry::http_request(route, method, response.status().as_u16(), mount, started.elapsed());
    response.headers_mut().insert(X_REQUEST_ID, request_id);
    response
}

/// The span of one request, carried by every log line it causes: its id. (One field,
/// a string: `logs` writes it once, where the formatter would format it for every
/// request.)
fn request_span(id: &axum::http::HeaderValue) -> tracing::Span {
    let id = id.to_str().unwrap_or_default();
    // At ERROR level, so it exists whatever RUST_LOG lets through: a span's level only
    // decides whether it is recorded, and every line of the request should carry it.
    // The field is named as `logs::REQUEST_ID` (a field name cannot be a constant).
    tracing::error_span!(crate::logs::REQUEST_SPAN, request_id = id)
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
fn mount_of<'a>(state: &'a AppState, uri: &axum::http::Uri) -> &'a str {
    // Nearly every such path starts with the catalog's prefix: a comparison, where
    // searching the path for the segment costs a thousand instructions a request.
    let path = uri.path();
    let after = path
        .strip_prefix("/v1/")
        .and_then(|p| p.strip_prefix(crate::prefixes::CATALOG))
        .and_then(|p| p.strip_prefix("/namespaces/"))
        .or_else(|| path.split_once("/namespaces/").map(|(_, after)| after));
    let segment = after.map(|after| {
        let raw = after.split_once('/').map_or(after, |(segment, _)| segment);
        percent_encoding::percent_decode_str(raw).decode_utf8_lossy()
    });
    let parent = || url::form_urlencoded::parse(uri.query()?.as_bytes()).find(|(k, _)| k == "parent").map(|(_, v)| v);
    let Some(namespace) = segment.or_else(parent) else { return "-" };
    let first = namespace.split('\u{1f}').next().unwrap_or_default();
    state.mounts.named().map(|(name, _)| name.as_str()).find(|name| *name == first).unwrap_or("root")
}
