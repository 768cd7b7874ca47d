//! Writes to a mount whose remote catalog applies them itself (a read-write `rest`
//! mount, whose backend exports `forwarding`), and the requests that remote answers for
//! its own storage (signRequest). The host has authorized the request and routed it;
//! here it applies its location rules, sends the client's operation to the backend in
//! the backend's own names, and maps the remote's answer once:
//!
//! - a 2xx is the answer, passed on (the remote's own `config` and
//!   `storage-credentials` included: it vended them for its own storage);
//! - a 4xx keeps its status and its Iceberg error type, its message naming the mount;
//! - the remote refusing the mount's own credential (401, 403) is a 502: the server's
//!   configuration is at fault, not the caller (to a sign request, a 403 is the remote's
//!   signer refusing what was asked, and is kept);
//! - 501 is unsupported; other 5xx are 502 or 503, never 500; on a commit they are
//!   commit-state-unknown, as is a request that was sent and never answered (it is
//!   never retried: it may have applied).

use axum::http::{HeaderMap, StatusCode};
use bytes::Bytes;
use serde_json::Value;

use super::Endpoint;
use crate::error::Error;
use crate::mounts::{Mount, Mounts};
use crate::paging::PageTokens;
use crate::sandbox::bindings::optional::Forwarded;
use crate::sandbox::BackendErrorKind;
use crate::storage::location::{Location, LocationError};

/// The client's headers a forwarded write carries on.
const PASSED_HEADERS: &[&str] = &["idempotency-key", "x-iceberg-access-delegation"];

/// One request for the remote, in the backend's names: a write, a signRequest, or a read
/// whose answer is wanted as the remote gave it.
pub struct Request<'a> {
    pub endpoint: Endpoint,
    /// The `{namespace}` path parameter, the mount name stripped.
    pub namespace: Option<&'a [String]>,
    /// The `{table}` or `{view}` path parameter.
    pub name: Option<&'a str>,
    pub query: Vec<(String, String)>,
    pub body: Bytes,
}

impl<'a> Request<'a> {
    /// A request with no path parameter and this body.
    pub fn new(endpoint: Endpoint, body: Bytes) -> Self {
        Request { endpoint, namespace: None, name: None, query: vec![], body }
    }

    /// In the namespace `namespace` (the backend's).
    pub fn in_namespace(mut self, namespace: &'a [String]) -> Self {
        self.namespace = Some(namespace);
        self
    }

    /// On the table or view `name`.
    pub fn named(mut self, name: &'a str) -> Self {
        self.name = Some(name);
        self
    }
}

/// Sends `request` to the mount's remote; the body of its 2xx answer, or the error its
/// answer means.
pub async fn send(mount: &Mount, headers: &HeaderMap, request: Request<'_>) -> Result<Bytes, Error> {
    if request.endpoint.mutating() {
        mount.check_writable()?;
    }
    let passed = headers
        .iter()
        .filter(|(name, _)| PASSED_HEADERS.contains(&name.as_str()))
        .filter_map(|(name, value)| Some((name.as_str().to_string(), value.to_str().ok()?.to_string())))
        .collect();
    let forwarded = Forwarded {
        endpoint: request.endpoint.spec().to_string(),
        namespace: request.namespace.map(<[String]>::to_vec),
        name: request.name.map(str::to_string),
        query: request.query,
        headers: passed,
        body: request.body.to_vec(),
    };
    let answer = match mount.backend.forward(forwarded).await {
        Ok(answer) => answer,
        // A change sent and never answered may have applied: never retried here.
        Err(e) if request.endpoint.mutating() && !e.kind.refused() => {
            let status = match e.kind {
                BackendErrorKind::TimedOut => StatusCode::GATEWAY_TIMEOUT,
                _ => StatusCode::SERVICE_UNAVAILABLE,
            };
            return Err(Error::CommitStateUnknown(
                status,
                format!(
                    "the commit state is unknown: {e}; the remote may or may not have applied it: reload and check"
                ),
            ));
        }
        Err(e) => return Err(Error::from_backend(e, |m| Error::NotFound(format!("{}: {m}", mount.label())))),
    };
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::BAD_GATEWAY);
    if status.is_success() {
        // The remote says the change is made, in words that cannot be read: not a
        // failure (a client told so would make it again), but nothing to answer with.
        if request.endpoint.mutating() && !answer.body.is_empty() && !is_json(&answer.body) {
            return Err(Error::CommitStateUnknown(
                StatusCode::BAD_GATEWAY,
                format!(
                    "{}: the remote answered HTTP {status} to the change, but its answer is not JSON: \
                     reload and check",
                    mount.label()
                ),
            ));
        }
        return Ok(Bytes::from(answer.body));
    }
    Err(refusal(mount, request.endpoint, status, &answer.body))
}

/// Sends a drop of `resource` (a namespace, table or view) to the remote, under an intent
/// that forgets the grants held on its name here: once the remote dropped it, nothing
/// created later under the name inherits them, a crash in between included.
pub async fn drop(
    state: &super::AppState,
    mount: &Mount,
    headers: &HeaderMap,
    request: Request<'_>,
    resource: crate::authz::Resource,
) -> Result<(), Error> {
    let dropped = async { send(mount, headers, request).await.map(|_| ()) };
    crate::recovery::with_intent(&state.authz, &state.mounts, crate::authz::Effect::Forget { resource }, dropped).await
}

/// The error a failed read of a forwarding mount means, in the remote's own terms where
/// the backend could not hand on what the remote said (`e` a bad gateway: a 404 that is
/// not an absence, such as a metadata file the remote cannot open, or a refusal of the
/// mount's credential). The read is asked again as the remote's own route, and its answer
/// mapped as a write's is, so a client sees the remote's status and type. Any other
/// failure stays as it is.
pub async fn exact(mount: &Mount, read: Request<'_>, e: Error) -> Error {
    if !matches!(e, Error::BadGateway(_)) || !mount.backend.forwards() {
        return e;
    }
    match send(mount, &HeaderMap::new(), read).await {
        Err(exact) => exact,
        Ok(_) => e,
    }
}

/// The error a remote's non-2xx answer means, naming the mount.
fn refusal(mount: &Mount, endpoint: Endpoint, status: StatusCode, body: &[u8]) -> Error {
    let (kind, message) = error_model(body);
    // The remote's words first: clients (and Iceberg's compatibility kit) match on how
    // they start.
    let said = format!("{message} (from {})", mount.label());
    match status.as_u16() {
        // To a sign request, a 403 is the remote's signer judging it: kept as it is.
        401 | 403 if endpoint != Endpoint::SignRequest => Error::BadGateway(format!(
            "{}: the remote refused this mount's credential (HTTP {status}: {message}); \
             the server's configuration of the mount needs fixing",
            mount.label()
        )),
        501 => Error::Unsupported(said),
        // A change answered with a server error may have been made before the error
        // (a proxy's, or the remote's own bookkeeping after its commit).
        500..=599 if endpoint.mutating() => Error::CommitStateUnknown(
            if status == StatusCode::INTERNAL_SERVER_ERROR { StatusCode::BAD_GATEWAY } else { status },
            format!("the commit state is unknown: {said}"),
        ),
        503 => Error::Unavailable(said),
        500..=599 => Error::BadGateway(format!("{said} (HTTP {status})")),
        400..=499 => {
            let kind = kind.filter(|k| !k.is_empty()).unwrap_or_else(|| default_type(endpoint, status).into());
            Error::Remote { status, kind, message: said }
        }
        // A redirect or an informational status: nothing the protocol answers with.
        _ => Error::BadGateway(format!("{}: the remote answered HTTP {status}", mount.label())),
    }
}

fn is_json(body: &[u8]) -> bool {
    serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok()
}

/// The Iceberg error type and message of an error answer, or its text.
fn error_model(body: &[u8]) -> (Option<String>, String) {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    let field = |name: &str| error.and_then(|e| e.get(name)).and_then(Value::as_str).map(str::to_string);
    match field("message") {
        Some(message) => (field("type"), message),
        None => (None, String::from_utf8_lossy(body).chars().take(300).collect()),
    }
}

/// The type an error answer without one gets (Nessie sends `""`), by its status and what
/// was asked, as Iceberg's Java client reads such an answer.
fn default_type(endpoint: Endpoint, status: StatusCode) -> &'static str {
    let path = endpoint.path();
    match status.as_u16() {
        400 => "BadRequestException",
        404 if path.contains("{view}") || endpoint == Endpoint::RenameView => "NoSuchViewException",
        404 if path.contains("{table}") || endpoint == Endpoint::RenameTable => "NoSuchTableException",
        404 => "NoSuchNamespaceException",
        409 if endpoint.commits() => "CommitFailedException",
        409 if endpoint == Endpoint::DropNamespace => "NamespaceNotEmptyException",
        409 => "AlreadyExistsException",
        422 => "UnprocessableEntityException",
        _ => "RESTException",
    }
}

/// Refuses a location a client gave for something created in a forwarding mount
/// (a table's or view's `location`, a namespace's `location` property, a registered
/// table's metadata file) unless it lies in the mount's own warehouse where one is
/// configured, and never in a warehouse another mount or the root catalog governs: the
/// remote would write there with its own credentials, over tables it does not own.
pub fn check_location(mounts: &Mounts, mount: &Mount, raw: &str, what: &str) -> Result<(), Error> {
    let location = match Location::parse(&comparable(raw)) {
        Ok(location) => location,
        // A store this server manages none of (gs://, abfss://): no warehouse here is there.
        Err(LocationError::Scheme) if mount.warehouse.is_none() => return Ok(()),
        Err(e) => return Err(Error::BadRequest(format!("{what} {raw:?} is refused: {e}"))),
    };
    if let Some(own) = &mount.warehouse {
        return match own.root().contains(&location) {
            true => Ok(()),
            false => Err(Error::Forbidden(format!(
                "{what} {raw:?} is outside the warehouse of {} ({})",
                mount.label(),
                own.root()
            ))),
        };
    }
    for other in mounts.all().filter(|m| !std::ptr::eq(*m, mount)) {
        if let Some(warehouse) = other.warehouse.as_ref().filter(|w| w.root().contains(&location)) {
            return Err(Error::Forbidden(format!(
                "{what} {raw:?} lies in the warehouse of {} ({}); a table of {} cannot be placed there",
                other.label(),
                warehouse.root(),
                mount.label()
            )));
        }
    }
    Ok(())
}

/// A location as this server's stores would name the same place: a bare path is a
/// file (as Iceberg's reference server writes them), `s3a://` and `s3n://` are `s3://`.
fn comparable(raw: &str) -> String {
    if raw.starts_with('/') {
        return format!("file://{raw}");
    }
    match raw.split_once("://") {
        Some(("s3a" | "s3n", rest)) => format!("s3://{rest}"),
        _ => raw.to_string(),
    }
}

/// A JSON body with the mount name stripped from the identifiers it names at `pointer`s
/// (an identifier's `namespace` is the client's; the remote knows only its own).
pub fn strip_identifiers(mount: &Mount, body: &mut Value, identifiers: &[&str]) -> Result<(), Error> {
    for pointer in identifiers {
        let Some(namespace) = body.pointer_mut(&format!("{pointer}/namespace")) else { continue };
        let Some(levels) = namespace.as_array_mut() else {
            return Err(Error::BadRequest(format!("{pointer}: the identifier's namespace is not a list")));
        };
        if mount.name.is_some() && !levels.is_empty() {
            levels.remove(0);
        }
    }
    Ok(())
}

/// A JSON answer as the client should see it: with the mount name restored in the
/// `namespace` it names at the top level (a created namespace's answer).
pub fn restore_namespace(mount: &Mount, body: &[u8]) -> Result<Bytes, Error> {
    let mut value: Value = serde_json::from_slice(body)
        .map_err(|e| Error::BadGateway(format!("{}: the remote's answer is not JSON: {e}", mount.label())))?;
    if let (Some(name), Some(Value::Array(levels))) = (&mount.name, value.get_mut("namespace")) {
        levels.insert(0, Value::String(name.clone()));
    }
    Ok(Bytes::from(serde_json::to_vec(&value).expect("a JSON value serializes")))
}

/// A table's load result as the remote answered a create or a register, its signer
/// settings pointed at this server's route for the table (see [`super::signing::confined`]):
/// signing then goes through the host, which asks the remote's signer with the mount's
/// credential. `namespace` is the client's, the mount name restored.
pub fn confine_signer(
    answer: Bytes,
    base: impl FnOnce() -> String,
    tokens: &PageTokens,
    namespace: &[String],
    name: &str,
) -> Result<Bytes, Error> {
    let Ok(mut result) = serde_json::from_slice::<Value>(&answer) else { return Ok(answer) };
    let Some(config) = result.get("config").and_then(Value::as_object) else { return Ok(answer) };
    let pairs: Vec<(String, String)> =
        config.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect();
    let Some(confined) = super::signing::confined(&pairs, base, tokens, namespace, name) else { return Ok(answer) };
    result["config"] = confined.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
    Ok(body(&result))
}

/// A remote's answer about a table (a create, a registration) for a caller a read
/// policy restricts: without its `config` and `storage-credentials`, where the remote's
/// own credentials and signer ride.
pub fn without_delegation(answer: Bytes) -> Bytes {
    let Ok(mut result) = serde_json::from_slice::<Value>(&answer) else { return answer };
    let Some(fields) = result.as_object_mut() else { return answer };
    let removed = ["config", "storage-credentials", "remote-signing-config"].map(|key| fields.remove(key).is_some());
    if removed.contains(&true) {
        body(&result)
    } else {
        answer
    }
}

/// A JSON value as a body to forward.
pub fn body(value: &Value) -> Bytes {
    Bytes::from(serde_json::to_vec(value).expect("a JSON value serializes"))
}

/// Parses a body the client sent (already parsed once into its typed request).
pub fn parse(raw: &[u8]) -> Result<Value, Error> {
    serde_json::from_slice(raw).map_err(|e| Error::BadRequest(format!("invalid request body: {e}")))
}

/// A 2xx answer's JSON body, handed on as it came.
pub fn json(body: Bytes) -> axum::response::Response {
    use axum::response::IntoResponse;
    ([(axum::http::header::CONTENT_TYPE, "application/json")], body).into_response()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_restricted_callers_answer_keeps_no_credentials_or_signer() {
        let answer = json!({
            "metadata-location": "s3://b/t/metadata/1.json", "metadata": {"format-version": 2},
            "config": {"s3.access-key-id": "AKIA", "s3.secret-access-key": "s"},
            "storage-credentials": [{"prefix": "s3://b/t", "config": {"s3.session-token": "x"}}],
            "remote-signing-config": {}
        });
        let kept: Value = serde_json::from_slice(&without_delegation(body(&answer))).unwrap();
        assert_eq!(kept, json!({"metadata-location": "s3://b/t/metadata/1.json", "metadata": {"format-version": 2}}));
        let plain = body(&json!({"metadata": {}}));
        assert_eq!(without_delegation(plain.clone()), plain, "an answer with nothing to take is passed on as it came");
    }
}
