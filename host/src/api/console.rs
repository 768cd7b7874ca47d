//! The web console at `/ui`: plain modules with no build step, embedded in the binary
//! (`host/console/`), so it needs no other server, no CDN and no Node. The page calls
//! the same REST and management API with the signed-in user's own token: it sees
//! exactly what the user may see.

use axum::extract::{Path, State as AxState};
use axum::http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, X_CONTENT_TYPE_OPTIONS};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use serde_json::json;

use super::State;
use crate::error::Error;

/// Every asset: its name under `/ui/`, its type, its bytes.
const ASSETS: &[(&str, &str, &str)] = &[
    ("index.html", "text/html; charset=utf-8", include_str!("../../console/index.html")),
    ("style.css", "text/css; charset=utf-8", include_str!("../../console/style.css")),
    ("app.js", "text/javascript; charset=utf-8", include_str!("../../console/app.js")),
    ("api.js", "text/javascript; charset=utf-8", include_str!("../../console/api.js")),
    ("signin.js", "text/javascript; charset=utf-8", include_str!("../../console/signin.js")),
    ("ui.js", "text/javascript; charset=utf-8", include_str!("../../console/ui.js")),
    ("mounts.js", "text/javascript; charset=utf-8", include_str!("../../console/mounts.js")),
    ("browse.js", "text/javascript; charset=utf-8", include_str!("../../console/browse.js")),
    ("table.js", "text/javascript; charset=utf-8", include_str!("../../console/table.js")),
    ("manage.js", "text/javascript; charset=utf-8", include_str!("../../console/manage.js")),
    ("audit.js", "text/javascript; charset=utf-8", include_str!("../../console/audit.js")),
    ("policies.js", "text/javascript; charset=utf-8", include_str!("../../console/policies.js")),
];

pub fn routes() -> Router<std::sync::Arc<super::AppState>> {
    Router::new()
        .route("/ui", get(|| async { Redirect::permanent("/ui/") }))
        .route("/ui/", get(|state: State| async move { asset(state, "index.html") }))
        .route("/ui/config.json", get(config))
        .route("/ui/{file}", get(|state: State, Path(file): Path<String>| async move { asset(state, &file) }))
}

/// The issuer's origin, where the console exchanges its sign-in code for a token.
fn issuer_origin(state: &super::AppState) -> Option<String> {
    state.console_oidc.as_ref().map(|(issuer, _)| origin_of(issuer))
}

/// How the console signs in: with client credentials always, and with OpenID Connect
/// (authorization code and PKCE) where the issuer has a client for it.
async fn config(AxState(state): State) -> Response {
    let oidc =
        state.console_oidc.as_ref().map(|(issuer, client_id)| json!({ "issuer": issuer, "client-id": client_id }));
    let mut response = axum::Json(json!({ "oidc": oidc })).into_response();
    secure(&mut response, issuer_origin(&state).as_deref());
    response
}

fn asset(AxState(state): State, name: &str) -> Response {
    let Some((_, content_type, body)) = ASSETS.iter().find(|(n, _, _)| *n == name) else {
        return Error::NotFound(format!("no console asset {name}")).into_response();
    };
    let mut response = (StatusCode::OK, [(CONTENT_TYPE, *content_type)], *body).into_response();
    secure(&mut response, issuer_origin(&state).as_deref());
    response
}

/// Nothing from elsewhere runs or loads; requests go to this server, and to the
/// issuer's token endpoint when the console signs in there. The page may not be framed.
fn secure(response: &mut Response, issuer_origin: Option<&str>) {
    let connect = issuer_origin.map(|o| format!(" {o}")).unwrap_or_default();
    let policy = format!(
        "default-src 'self'; connect-src 'self'{connect}; img-src 'self' data:; style-src 'self'; \
         script-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    );
    let headers = response.headers_mut();
    if let Ok(policy) = HeaderValue::from_str(&policy) {
        headers.insert(CONTENT_SECURITY_POLICY, policy);
    }
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
}

/// `scheme://host[:port]` of a URL (nothing for one that does not parse: then the page
/// may reach this server only).
fn origin_of(url: &str) -> String {
    url::Url::parse(url).map(|u| u.origin().ascii_serialization()).unwrap_or_default()
}
