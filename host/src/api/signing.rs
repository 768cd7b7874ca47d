//! Remote signing at the edge: the signing configuration a load hands a client, and
//! signRequest, which signs one S3 request for a table the caller may use (see
//! `storage::signing` for what is signed). Every refusal is a 403 in the audit log.

use std::collections::BTreeMap;

use axum::extract::{FromRequestParts, Path, State as AxState};
use axum::http::header::{CACHE_CONTROL, HOST};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use serde::Deserialize;

use super::forwarded::{self, Request};
use super::members::{self, Kind, Resolved};
use super::{credentials, AppState, Endpoint, JsonBody, Query, State};
use crate::audit::Sign;
use crate::auth::Caller;
use crate::error::Error;
use crate::paging::PageTokens;
use crate::storage::location::Location;
use crate::storage::signing::S3Request;
use crate::storage::vending::DataAccess;
use crate::tables;

/// The spec's `remote-signing-config`: nothing a client must pass back; the endpoint is
/// the table's own.
pub const REMOTE_SIGNING_CONFIG: &str = r#"{"properties":{},"headers":{}}"#;

/// Where clients reach this server, as it tells them where to sign: `[server]
/// public_url`, else the scheme `X-Forwarded-Proto` names (or `http`) and the request's
/// `Host`. Kept as the headers (no copy) until a load hands out signing.
pub struct SignerBase {
    configured: Option<std::sync::Arc<str>>,
    host: Option<HeaderValue>,
    proto: Option<HeaderValue>,
}

impl FromRequestParts<std::sync::Arc<AppState>> for SignerBase {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &std::sync::Arc<AppState>) -> Result<Self, Error> {
        Ok(Self {
            configured: state.public_url.clone(),
            host: parts.headers.get(HOST).cloned(),
            proto: parts.headers.get("x-forwarded-proto").cloned(),
        })
    }
}

impl SignerBase {
    pub fn url(&self) -> String {
        if let Some(url) = &self.configured {
            return url.trim_end_matches('/').to_string();
        }
        let text = |v: &Option<HeaderValue>| v.as_ref().and_then(|v| v.to_str().ok()).map(str::to_string);
        let proto = text(&self.proto).filter(|p| p == "https").unwrap_or_else(|| "http".into());
        format!("{proto}://{}", text(&self.host).unwrap_or_else(|| "localhost".into()))
    }
}

/// The `config` that turns remote signing on for the table `namespace`.`name`, signed at
/// `base`: the spec's keys, the older ones Java's S3FileIO and PyIceberg read, and how
/// to reach the store (`store`).
pub fn config(base: &str, namespace: &[String], name: &str, store: &[(String, String)]) -> Vec<(String, String)> {
    let endpoint = credentials::table_route(Endpoint::SignRequest, namespace, name);
    let mut config: Vec<(String, String)> = [
        ("s3.remote-signing-enabled", "true"),
        ("signer.uri", base),
        ("signer.endpoint", &endpoint),
        // PyIceberg: its signer, and the one FileIO of its own that signs through it.
        ("s3.signer", "S3V4RestSigner"),
        ("s3.signer.uri", base),
        ("s3.signer.endpoint", &endpoint),
        ("py-io-impl", "pyiceberg.io.fsspec.FsspecFileIO"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    config.extend(store.iter().cloned());
    config
}

/// The keys that name a signer.
const SIGNER_KEYS: [&str; 4] = ["signer.uri", "signer.endpoint", "s3.signer.uri", "s3.signer.endpoint"];

/// A remote catalog's `config` that turns remote signing on, pointed at this server's
/// route for the table instead (`None`: it does not). Left as it is, a client would send
/// its token for this server to the remote's signer, or resolve the remote's relative
/// endpoint against this server, where it names another table. The route asks the
/// remote's signer with the mount's credential (a forwarding mount), or refuses, naming
/// the mount. The signer the remote named rides in the route's query, bound to this
/// table by `tokens` (a staged table cannot be loaded to find it; a client cannot point
/// one table's signing at another's signer).
pub fn confined(
    config: &[(String, String)],
    base: impl FnOnce() -> String,
    tokens: &PageTokens,
    namespace: &[String],
    name: &str,
) -> Option<Vec<(String, String)>> {
    let signs = |(k, v): &(String, String)| match k.as_str() {
        "s3.remote-signing-enabled" => v == "true",
        k => k == "s3.signer" || SIGNER_KEYS.contains(&k),
    };
    if !config.iter().any(signs) {
        return None;
    }
    let setting = |keys: [&str; 2]| keys.iter().find_map(|key| config.iter().find(|(k, _)| k == key)).map(|(_, v)| v);
    let remote = match (setting(["s3.signer.uri", "signer.uri"]), setting(["s3.signer.endpoint", "signer.endpoint"])) {
        (Some(uri), Some(endpoint)) if !endpoint.contains("://") => {
            Some(format!("{}/{}", uri.trim_end_matches('/'), endpoint.trim_start_matches('/')))
        }
        (_, Some(endpoint)) => Some(endpoint.clone()),
        (Some(uri), None) => Some(uri.clone()),
        (None, None) => None,
    };
    let base = base();
    let mut endpoint = credentials::table_route(Endpoint::SignRequest, namespace, name);
    if let Some(remote) = remote {
        let token = tokens.issue(&signer_space(namespace, name), &remote);
        endpoint = format!("{endpoint}?{REMOTE_SIGNER}={token}");
    }
    let mut confined: Vec<(String, String)> =
        config.iter().filter(|(k, _)| !SIGNER_KEYS.contains(&k.as_str())).cloned().collect();
    for (key, value) in SIGNER_KEYS.iter().zip([&base, &endpoint, &base, &endpoint]) {
        confined.push((key.to_string(), value.clone()));
    }
    Some(confined)
}

/// The query parameter of the sign route naming the remote's signer (a token).
const REMOTE_SIGNER: &str = "remote-signer";

/// What a remote signer's token is bound to: one table, as the client names it.
fn signer_space(namespace: &[String], name: &str) -> String {
    format!("signer\u{1f}{}\u{1f}{name}", namespace.join("\u{1f}"))
}

/// The sign route's query.
#[derive(Deserialize)]
pub struct SignQuery {
    #[serde(rename = "remote-signer")]
    remote_signer: Option<String>,
}

/// The spec's `RemoteSignRequest`. Its `region` is not read: the host signs for its
/// store's own region, whatever a client claims.
#[derive(Deserialize)]
pub struct RemoteSignRequest {
    uri: String,
    method: String,
    headers: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    provider: Option<String>,
}

/// signRequest: the headers that sign the client's request with the store's keys, for
/// an object of this table and an operation the caller may do.
pub async fn sign(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path((raw, name)): Path<(String, String)>,
    Query(q): Query<SignQuery>,
    JsonBody(req, raw_body): JsonBody<RemoteSignRequest>,
) -> Result<Response, Error> {
    if req.provider.as_deref().is_some_and(|p| !p.eq_ignore_ascii_case("s3")) {
        return Err(Error::BadRequest(format!("remote signing serves the provider s3, not {:?}", req.provider)));
    }
    let resolved = members::resolve(&state, caller, &raw, name, Endpoint::SignRequest, Kind::Table).await?;
    let Resolved { mount, ident, access } = &resolved;
    let resource = resolved.resource(Kind::Table);
    credentials::refuse_restricted(access, &resource, "sign")?;
    let held = access.held(&resource);
    let refused = |reason: String| {
        let sign = Sign::Refused { method: req.method.clone(), uri: req.uri.clone(), reason: reason.clone() };
        access.audit_sign(&resource, held, sign);
        crate::telemetry::remote_sign("refused");
        tracing::warn!(table = %resource, method = %req.method, uri = %req.uri, %reason, "request not signed");
        Error::Forbidden(format!("{}: not signed: {reason}", mount.label()))
    };
    let data_access = credentials::access_of(held.as_ref(), mount);
    let signed = |uri: String| {
        access.audit_sign(&resource, held, Sign::Signed { method: req.method.clone(), uri });
        crate::telemetry::remote_sign("signed");
        // A client may reuse a read's signature for a while; a write's, never.
        match req.method.as_str() {
            "GET" | "HEAD" => "private",
            _ => "no-cache",
        }
    };
    if mount.backend.forwards() {
        // The remote's storage: its own signer signs, asked by the mount. What the caller
        // may do is decided here: a reader has a read signed, never a write.
        if data_access == DataAccess::Read && !matches!(req.method.as_str(), "GET" | "HEAD") {
            return Err(refused(format!("{} needs write access to the table", req.method)));
        }
        let mut ask = Request::new(Endpoint::SignRequest, raw_body).in_namespace(&ident.namespace).named(&ident.name);
        // The signer the remote named for this table, where the client was told it.
        let space = signer_space(&resolved.namespace(), &ident.name);
        if let Some(signer) = q.remote_signer.and_then(|token| state.tokens.verify(&space, &token)) {
            ask.query = vec![("signer".into(), signer)];
        }
        let answer = forwarded::send(mount, &HeaderMap::new(), ask).await?;
        let cache = signed(req.uri.clone());
        return Ok(([(CACHE_CONTROL, cache)], forwarded::json(answer)).into_response());
    }
    mount.require_endpoint(Endpoint::SignRequest, Some("the host signs only for the warehouses it manages"))?;
    let loaded = tables::servable(mount, tables::load(mount, ident, None).await?).await?;
    let location: Location = tables::location(mount, &loaded.held)?;
    let signer = state.vendor.signer(&location).map_err(|e| refused(e.to_string()))?;
    let request = S3Request { method: &req.method, uri: &req.uri, headers: &req.headers, body: req.body.as_deref() };
    let signed_by_us = signed;
    let signed = match signer.sign(&location, data_access, &request).await {
        Ok(signed) => signed,
        Err(refusal) if refusal.is_forbidden() => return Err(refused(refusal.to_string())),
        Err(failure) => return Err(Error::Internal(format!("{}: {failure}", mount.label()))),
    };
    let body = serde_json::json!({ "uri": signed.uri, "headers": signed.headers });
    let cache = signed_by_us(req.uri.clone());
    Ok(([(CACHE_CONTROL, cache)], axum::Json(body)).into_response())
}
