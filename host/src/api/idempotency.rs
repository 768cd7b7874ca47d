//! `Idempotency-Key` on mutating requests: the first request with a key runs and its
//! final response (any status below 500) is kept for the advertised lifetime, counted
//! from the first request; a repeat with the same key (same method, path and body)
//! gets that response again without running anything; the same key with another
//! request is 422. 5xx responses are never kept, so a retry after one runs again, and
//! a request that never finishes gives its key back. Keys are scoped to the caller
//! (its principal id) and kept in the host key space.
//!
//! Secrets are never kept: a response with vended credentials is stored without them
//! and vended anew when replayed; a response showing a secret once (a new principal's
//! client secret) is not stored, and a repeat is told so.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::{to_bytes, Body};
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};

use super::{credentials, AppState};
use crate::auth::Caller;
use crate::error::Error;
use crate::storage::kv::{Check, KvError, KvStore, Write};

/// How long a finalized response is replayed (advertised in `/v1/config`).
pub const LIFETIME: Duration = Duration::from_secs(30 * 60);
/// The advertised lifetime, as an ISO-8601 duration.
pub const LIFETIME_ISO: &str = "PT30M";
/// Responses larger than this are not kept (the request is not replayable).
const MAX_BODY: usize = 16 << 20;

const SLOT: &str = "idempotency/";
/// `idempotency-expiry/<expires, 20 digits>/<slot>`: what the sweep reads, so it
/// never loads a stored response.
const EXPIRY: &str = "idempotency-expiry/";

/// What a response holds that must never be kept in clear: a response extension set
/// by the handler.
#[derive(Debug, Clone)]
pub enum Secrets {
    /// A secret shown once (a new principal's client secret): the response is not
    /// kept, and a repeat of the request is told why.
    ShownOnce,
    /// Vended credentials: the response is kept without them, and a replay vends anew.
    Vended(Revend),
}

/// What to vend for when replaying a response whose credentials were not kept.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Revend {
    pub namespace: Vec<String>,
    pub table: String,
    pub location: String,
    /// The `config` keys that held the credential.
    pub config_keys: Vec<String>,
}

/// What is stored under a key: in progress, or the final response.
#[derive(Serialize, Deserialize)]
struct Record {
    /// `METHOD path sha256:<body hash>`: a key may not be reused for another request.
    request: String,
    expires: u64,
    /// `None` while the first request runs.
    response: Option<Stored>,
}

#[derive(Serialize, Deserialize)]
struct Stored {
    status: u16,
    content_type: Option<String>,
    body: String,
    /// The response showed a secret once and was not kept.
    #[serde(default)]
    withheld: bool,
    /// The credentials the response carried, to vend anew on replay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    revend: Option<Revend>,
}

/// The keys, in the host key space.
pub struct Idempotency {
    space: KvStore,
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

fn store_err(e: KvError) -> Error {
    Error::Unavailable(format!("the host store: {e}"))
}

fn expiry_key(expires: u64, slot: &[u8]) -> Vec<u8> {
    let mut key = format!("{EXPIRY}{expires:020}/").into_bytes();
    key.extend_from_slice(slot);
    key
}

impl Idempotency {
    pub fn new(space: KvStore) -> Self {
        Self { space }
    }

    async fn get(&self, key: &[u8]) -> Result<Option<(Record, u64)>, Error> {
        match self.space.get(key).await.map_err(store_err)? {
            Some(e) => Ok(serde_json::from_slice(&e.value).ok().map(|r| (r, e.version))),
            None => Ok(None),
        }
    }

    /// Reserves `slot` for `record` if `check` holds, replacing an expired `old`
    /// reservation's expiry entry.
    async fn reserve(&self, slot: &[u8], record: &Record, check: Check, old: Option<u64>) -> Result<bool, Error> {
        let value = serde_json::to_vec(record).map_err(|e| Error::Internal(e.to_string()))?;
        let mut writes = vec![
            Write { key: slot.to_vec(), value: Some(value) },
            Write { key: expiry_key(record.expires, slot), value: Some(vec![]) },
        ];
        if let Some(old) = old.filter(|old| *old != record.expires) {
            writes.push(Write { key: expiry_key(old, slot), value: None });
        }
        match self.space.commit(&[check], &writes).await {
            Ok(()) => Ok(true),
            Err(KvError::Conflict) => Ok(false),
            Err(e) => Err(store_err(e)),
        }
    }

    /// Gives a reservation back.
    async fn release(&self, slot: &[u8], expires: u64) {
        let writes = [Write { key: slot.to_vec(), value: None }, Write { key: expiry_key(expires, slot), value: None }];
        if let Err(e) = self.space.commit(&[], &writes).await {
            tracing::warn!(error = %e, "an Idempotency-Key reservation stays until it expires");
        }
    }

    /// Removes expired keys, reading only the expiry entries.
    pub async fn sweep(&self) {
        let end = expiry_key(now(), b"");
        let Ok(entries) = self.space.scan(EXPIRY.as_bytes(), Some(&end), 10_000).await else { return };
        for entry in entries {
            let Some(slot) = entry.key.get(EXPIRY.len() + 21..) else { continue };
            // A slot taken over after expiring has a newer entry; this one is gone then.
            let check = [Check::Present(entry.key.clone())];
            let writes = [Write { key: slot.to_vec(), value: None }, Write { key: entry.key.clone(), value: None }];
            let _ = self.space.commit(&check, &writes).await;
        }
    }
}

/// Gives the reservation back if the request never finishes (its task panicked or
/// was dropped), so the key is not left "still running".
struct Reservation {
    store: Option<Arc<Idempotency>>,
    slot: Vec<u8>,
    expires: u64,
}

impl Reservation {
    async fn release(mut self) {
        if let Some(store) = self.store.take() {
            store.release(&self.slot, self.expires).await;
        }
    }

    fn keep(mut self) {
        self.store = None;
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if let Some(store) = self.store.take() {
            let (slot, expires) = (std::mem::take(&mut self.slot), self.expires);
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move { store.release(&slot, expires).await });
            }
        }
    }
}

async fn replay(state: &AppState, caller: Option<&Caller>, key: &str, stored: Stored) -> Response {
    crate::telemetry::idempotent_replay();
    let status = StatusCode::from_u16(stored.status).unwrap_or(StatusCode::OK);
    if stored.withheld {
        return Error::Conflict(format!(
            "the request with Idempotency-Key {key} completed ({status}), but its answer showed a secret once \
             and is not replayed: look the result up instead"
        ))
        .into_response();
    }
    let mut body = STANDARD.decode(&stored.body).unwrap_or_default();
    if let (Some(revend), Some(caller)) = (&stored.revend, caller) {
        body = vend_anew(state, caller, revend, body).await;
    }
    let mut response = (status, body).into_response();
    if let Some(ct) = stored.content_type.as_deref().and_then(|c| HeaderValue::from_str(c).ok()) {
        response.headers_mut().insert(axum::http::header::CONTENT_TYPE, ct);
    }
    response
}

/// A stored table response with freshly vended credentials, for the caller as it is
/// now (nothing when it may no longer have them).
async fn vend_anew(state: &AppState, caller: &Caller, revend: &Revend, body: Vec<u8>) -> Vec<u8> {
    let Ok(mut json) = serde_json::from_slice::<serde_json::Value>(&body) else { return body };
    let (mount, _) = state.mounts.route(&revend.namespace);
    let Some(location) = mount.warehouse.as_ref().and_then(|w| w.locate(&revend.location).ok()) else { return body };
    // The replay reads the caller's access once, here: it made no other check.
    let access = match state.authz.access(caller).await {
        Ok(access) => access,
        Err(e) => {
            tracing::warn!(table = %revend.table, error = %e, "no credentials vended: cannot check access");
            return body;
        }
    };
    if let Some(vended) =
        credentials::vend(state, &access, mount, &revend.namespace, &revend.table, &location, None).await
    {
        json["storage-credentials"] = vended.to_value();
        if let Some(config) = json.get_mut("config").and_then(|c| c.as_object_mut()) {
            config.extend(vended.config.into_iter().map(|(k, v)| (k, serde_json::Value::String(v))));
        }
    }
    serde_json::to_vec(&json).unwrap_or(body)
}

/// A response body without the credentials `revend` says it carries.
fn without_credentials(body: &[u8], revend: &Revend) -> Option<Vec<u8>> {
    let mut json: serde_json::Value = serde_json::from_slice(body).ok()?;
    let object = json.as_object_mut()?;
    object.remove("storage-credentials");
    if let Some(config) = object.get_mut("config").and_then(|c| c.as_object_mut()) {
        for key in &revend.config_keys {
            config.remove(key);
        }
    }
    serde_json::to_vec(&json).ok()
}

/// Runs a request that may change something (after authentication): once per
/// Idempotency-Key, whose later uses are answered from the first one.
pub async fn idempotent(state: Arc<AppState>, request: Request, next: Next) -> Result<Response, Error> {
    let Some(key) = request.headers().get("idempotency-key") else {
        return Ok(next.run(request).await);
    };
    if !matches!(*request.method(), Method::POST | Method::DELETE) {
        return Ok(next.run(request).await);
    }
    let key = key
        .to_str()
        .ok()
        .filter(|k| uuid::Uuid::try_parse(k).is_ok())
        .ok_or_else(|| Error::BadRequest("Idempotency-Key must be a UUID (a UUIDv7, 36 characters)".into()))?
        .to_ascii_lowercase();
    let store = state.idempotency.clone();
    // The caller's id, not its name: a principal created again under a deleted one's
    // name must not be replayed the old one's answers.
    let caller = request.extensions().get::<Caller>().cloned();
    let slot = format!("{SLOT}{}/{key}", caller.as_ref().map(|c| c.id()).unwrap_or_default()).into_bytes();
    // A key names one request: its method, path and body (the caller is in the slot).
    let (parts, body) = request.into_parts();
    let body = to_bytes(body, MAX_BODY)
        .await
        .map_err(|_| Error::BadRequest("a request body too large to go with an Idempotency-Key".into()))?;
    let described = {
        use sha2::Digest;
        format!("{} {} sha256:{:x}", parts.method, parts.uri.path(), sha2::Sha256::digest(&body))
    };
    let request = Request::from_parts(parts, Body::from(body));

    // Reserve the key, or find what it holds.
    let reserve = Record { request: described.clone(), expires: now() + LIFETIME.as_secs(), response: None };
    let reserved = match store.get(&slot).await? {
        None => store.reserve(&slot, &reserve, Check::Absent(slot.clone()), None).await?,
        Some((old, version)) if old.expires < now() => {
            store.reserve(&slot, &reserve, Check::AtVersion(slot.clone(), version), Some(old.expires)).await?
        }
        Some((old, _)) if old.request != described => {
            return Err(Error::Unprocessable(format!(
                "Idempotency-Key {key} was used for another request ({}): a different method, path or body",
                old.request.split(" sha256:").next().unwrap_or_default()
            )))
        }
        Some((Record { response: Some(stored), .. }, _)) => {
            return Ok(replay(&state, caller.as_ref(), &key, stored).await)
        }
        Some(_) => false,
    };
    if !reserved {
        return Err(Error::Conflict(format!("a request with Idempotency-Key {key} is still running")));
    }
    let reservation = Reservation { store: Some(store.clone()), slot: slot.clone(), expires: reserve.expires };

    let response = next.run(request).await;
    if response.status().is_server_error() {
        // Not final: a retry must run again.
        reservation.release().await;
        return Ok(response);
    }
    let secrets = response.extensions().get::<Secrets>().cloned();
    let (parts, body) = response.into_parts();
    let Ok(bytes) = to_bytes(body, MAX_BODY).await else {
        reservation.release().await;
        return Err(Error::Internal("a response too large to keep for its Idempotency-Key".into()));
    };
    let (kept, withheld, revend) = match secrets {
        None => (Some(bytes.to_vec()), false, None),
        Some(Secrets::ShownOnce) => (None, true, None),
        Some(Secrets::Vended(revend)) => (without_credentials(&bytes, &revend), false, Some(revend)),
    };
    let Some(kept) = kept.or_else(|| withheld.then(Vec::new)) else {
        // Credentials that cannot be taken out are not kept: the request is not replayable.
        reservation.release().await;
        return Ok(Response::from_parts(parts, Body::from(bytes)));
    };
    let stored = Stored {
        status: parts.status.as_u16(),
        content_type: parts
            .headers
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        body: STANDARD.encode(&kept),
        withheld,
        revend,
    };
    let record = Record { request: described, expires: reserve.expires, response: Some(stored) };
    let value = serde_json::to_vec(&record).map_err(|e| Error::Internal(e.to_string()))?;
    store.space.commit(&[], &[Write { key: slot, value: Some(value) }]).await.map_err(store_err)?;
    reservation.keep();
    Ok(Response::from_parts(parts, Body::from(bytes)))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use axum::routing::post;
    use axum::Router;
    use tower::ServiceExt;

    use super::*;

    const KEY: &str = "017f22e2-79b0-7cc3-98c4-dc0c0c07398f";

    /// `idempotent` as a layer of its own.
    async fn layer(
        axum::extract::State(state): axum::extract::State<Arc<AppState>>,
        request: Request,
        next: Next,
    ) -> Result<Response, Error> {
        idempotent(state, request, next).await
    }

    async fn state(dir: &tempfile::TempDir) -> Arc<AppState> {
        let config: crate::config::Config = toml::from_str(&format!(
            "[server]\nlisten = \"127.0.0.1:0\"\ndata_dir = {:?}\n[auth]\nanonymous = true\n",
            dir.path().display().to_string()
        ))
        .unwrap();
        Arc::new(crate::server::build(&config).await.unwrap())
    }

    async fn send(app: &Router, path: &str, key: &str) -> (u16, String) {
        send_body(app, path, key, "").await
    }

    async fn send_body(app: &Router, path: &str, key: &str, body: &'static str) -> (u16, String) {
        let request = Request::post(path).header("idempotency-key", key).body(Body::from(body)).unwrap();
        let response = app.clone().oneshot(request).await.unwrap();
        let status = response.status().as_u16();
        let body = to_bytes(response.into_body(), 1 << 20).await.unwrap();
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn server_errors_are_not_kept_and_final_answers_are_replayed() {
        let dir = tempfile::tempdir().unwrap();
        let calls = Arc::new(AtomicUsize::new(0));
        let counter = calls.clone();
        let handler = move || {
            let n = counter.fetch_add(1, Ordering::SeqCst);
            async move {
                if n == 0 {
                    (StatusCode::INTERNAL_SERVER_ERROR, "try again".to_string())
                } else {
                    (StatusCode::CONFLICT, format!("answer {n}"))
                }
            }
        };
        let app = Router::new()
            .route("/x", post(handler.clone()))
            .route("/y", post(handler))
            .layer(axum::middleware::from_fn_with_state(state(&dir).await, layer));
        assert_eq!(send(&app, "/x", KEY).await, (500, "try again".into()));
        assert_eq!(send(&app, "/x", KEY).await, (409, "answer 1".into()), "a 5xx was not kept: this ran");
        assert_eq!(send(&app, "/x", KEY).await, (409, "answer 1".into()), "replayed");
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        assert_eq!(send(&app, "/y", KEY).await.0, 422, "a key belongs to one request");
        assert_eq!(send_body(&app, "/x", KEY, "{}").await.0, 422, "and to one body");
        assert_eq!(send(&app, "/x", "not-a-uuid").await.0, 400);
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_secret_shown_once_is_never_kept_nor_replayed() {
        let dir = tempfile::tempdir().unwrap();
        let state = state(&dir).await;
        let handler = || async {
            let mut response = (StatusCode::CREATED, "client-secret: s3cr3t-value").into_response();
            response.extensions_mut().insert(Secrets::ShownOnce);
            response
        };
        let app =
            Router::new().route("/p", post(handler)).layer(axum::middleware::from_fn_with_state(state.clone(), layer));
        assert_eq!(send(&app, "/p", KEY).await, (201, "client-secret: s3cr3t-value".into()));
        let (status, body) = send(&app, "/p", KEY).await;
        assert_eq!(status, 409, "{body}");
        assert!(body.contains("not replayed") && !body.contains("s3cr3t"), "{body}");
        let kept = state.idempotency.space.scan(b"", None, usize::MAX).await.unwrap();
        assert!(kept.iter().all(|e| !String::from_utf8_lossy(&e.value).contains("s3cr3t")), "nothing holds it");
    }

    #[tokio::test]
    async fn a_request_that_never_finishes_gives_its_key_back() {
        let dir = tempfile::tempdir().unwrap();
        let state = state(&dir).await;
        let handler = || async {
            panic!("the handler dies mid-request");
            #[allow(unreachable_code)]
            StatusCode::OK
        };
        let app =
            Router::new().route("/p", post(handler)).layer(axum::middleware::from_fn_with_state(state.clone(), layer));
        let request = Request::post("/p").header("idempotency-key", KEY).body(Body::empty()).unwrap();
        let died = tokio::spawn(app.clone().oneshot(request)).await;
        assert!(died.is_err(), "the request task panicked");
        for _ in 0..100 {
            let end = crate::storage::kv::prefix_end(SLOT.as_bytes());
            if state.idempotency.space.scan(SLOT.as_bytes(), end.as_deref(), 10).await.unwrap().is_empty() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the reservation of a request that never finished is still held");
    }

    #[tokio::test]
    async fn the_sweep_reads_expiry_entries_and_spares_a_taken_over_slot() {
        let dir = tempfile::tempdir().unwrap();
        let state = state(&dir).await;
        let store = &state.idempotency;
        let record = |expires| Record { request: "POST /x sha256:0".into(), expires, response: None };
        let (old, live) = (b"idempotency/p/old".to_vec(), b"idempotency/p/live".to_vec());
        assert!(store.reserve(&old, &record(now() - 10), Check::Absent(old.clone()), None).await.unwrap());
        assert!(store.reserve(&live, &record(now() - 10), Check::Absent(live.clone()), None).await.unwrap());
        // `live` expired and was taken over by a new request: its old expiry entry goes.
        let version = store.space.get(&live).await.unwrap().unwrap().version;
        let check = Check::AtVersion(live.clone(), version);
        assert!(store.reserve(&live, &record(now() + 600), check, Some(now() - 10)).await.unwrap());
        store.sweep().await;
        assert!(store.space.get(&old).await.unwrap().is_none(), "expired: swept");
        assert!(store.space.get(&live).await.unwrap().is_some(), "taken over: kept");
    }

    #[test]
    fn vended_credentials_are_taken_out_of_a_kept_body() {
        let body = serde_json::json!({
            "metadata-location": "m",
            "config": {"s3.access-key-id": "AKIA", "s3.secret-access-key": "shh", "other": "kept"},
            "storage-credentials": [{"prefix": "s3://b/t", "config": {"s3.secret-access-key": "shh"}}]
        });
        let revend = Revend {
            namespace: vec!["n".into()],
            table: "t".into(),
            location: "s3://b/t".into(),
            config_keys: vec!["s3.access-key-id".into(), "s3.secret-access-key".into()],
        };
        let kept = without_credentials(&serde_json::to_vec(&body).unwrap(), &revend).unwrap();
        let kept: serde_json::Value = serde_json::from_slice(&kept).unwrap();
        assert_eq!(kept, serde_json::json!({"metadata-location": "m", "config": {"other": "kept"}}));
    }
}
