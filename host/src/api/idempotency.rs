//! `Idempotency-Key` on mutating requests: the first request with a key runs and its
//! final response (any status below 500) is kept for the advertised lifetime; a
//! repeat with the same key (same method, path and body) gets that response again
//! without running anything; the same key with another request is 422.
//! 5xx responses are never kept, so a retry after one runs again. Keys are scoped to
//! the caller (its principal id) and kept in the host key space.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::{to_bytes, Body};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::auth::Caller;
use crate::error::Error;
use crate::storage::kv::{Check, KvError, KvStore, Write};

/// How long a finalized response is replayed (advertised in `/v1/config`).
pub const LIFETIME: Duration = Duration::from_secs(30 * 60);
/// The advertised lifetime, as an ISO-8601 duration.
pub const LIFETIME_ISO: &str = "PT30M";
/// Responses larger than this are not kept (the request is not replayable).
const MAX_BODY: usize = 16 << 20;

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

    async fn put(&self, key: &[u8], record: &Record, check: Check) -> Result<bool, Error> {
        let value = serde_json::to_vec(record).map_err(|e| Error::Internal(e.to_string()))?;
        match self.space.commit(&[check], &[Write { key: key.to_vec(), value: Some(value) }]).await {
            Ok(()) => Ok(true),
            Err(KvError::Conflict) => Ok(false),
            Err(e) => Err(store_err(e)),
        }
    }

    async fn forget(&self, key: &[u8]) {
        let _ = self.space.commit(&[], &[Write { key: key.to_vec(), value: None }]).await;
    }

    /// Removes expired keys.
    pub async fn sweep(&self) {
        let prefix = b"idempotency/";
        let Ok(entries) = self.space.scan(prefix, Some(b"idempotency0"), usize::MAX).await else { return };
        let now = now();
        for entry in entries {
            if serde_json::from_slice::<Record>(&entry.value).is_ok_and(|r| r.expires < now) {
                let check = [Check::AtVersion(entry.key.clone(), entry.version)];
                let _ = self.space.commit(&check, &[Write { key: entry.key, value: None }]).await;
            }
        }
    }
}

fn replay(stored: &Stored) -> Response {
    let body = STANDARD.decode(&stored.body).unwrap_or_default();
    let mut response = (StatusCode::from_u16(stored.status).unwrap_or(StatusCode::OK), body).into_response();
    if let Some(ct) = stored.content_type.as_deref().and_then(|c| HeaderValue::from_str(c).ok()) {
        response.headers_mut().insert(axum::http::header::CONTENT_TYPE, ct);
    }
    response
}

/// Middleware for mutating routes (after authentication).
pub async fn idempotent(
    State(store): State<Arc<Idempotency>>,
    request: Request,
    next: Next,
) -> Result<Response, Error> {
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
    // The caller's id, not its name: a principal created again under a deleted one's
    // name must not be replayed the old one's answers.
    let caller = request.extensions().get::<Caller>().map(|c| c.0.id().to_string()).unwrap_or_default();
    let slot = format!("idempotency/{caller}/{key}").into_bytes();
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
        None => store.put(&slot, &reserve, Check::Absent(slot.clone())).await?,
        Some((old, version)) if old.expires < now() => {
            store.put(&slot, &reserve, Check::AtVersion(slot.clone(), version)).await?
        }
        Some((old, _)) if old.request != described => {
            return Err(Error::Unprocessable(format!(
                "Idempotency-Key {key} was used for another request ({}): a different method, path or body",
                old.request.split(" sha256:").next().unwrap_or_default()
            )))
        }
        Some((Record { response: Some(stored), .. }, _)) => return Ok(replay(&stored)),
        Some(_) => false,
    };
    if !reserved {
        return Err(Error::Conflict(format!("a request with Idempotency-Key {key} is still running")));
    }

    let response = next.run(request).await;
    if response.status().is_server_error() {
        // Not final: a retry must run again.
        store.forget(&slot).await;
        return Ok(response);
    }
    let (parts, body) = response.into_parts();
    let Ok(bytes) = to_bytes(body, MAX_BODY).await else {
        store.forget(&slot).await;
        return Err(Error::Internal("a response too large to keep for its Idempotency-Key".into()));
    };
    let stored = Stored {
        status: parts.status.as_u16(),
        content_type: parts
            .headers
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        body: STANDARD.encode(&bytes),
    };
    let record = Record { request: described, expires: now() + LIFETIME.as_secs(), response: Some(stored) };
    let value = serde_json::to_vec(&record).map_err(|e| Error::Internal(e.to_string()))?;
    store.space.commit(&[], &[Write { key: slot, value: Some(value) }]).await.map_err(store_err)?;
    Ok(Response::from_parts(parts, Body::from(bytes)))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use axum::routing::post;
    use axum::Router;
    use tower::ServiceExt;

    use super::*;
    use crate::storage::kv::RedbStore;

    const KEY: &str = "017f22e2-79b0-7cc3-98c4-dc0c0c07398f";

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
        let store = Arc::new(Idempotency::new(KvStore::Redb(
            RedbStore::open(&dir.path().join("h.redb")).unwrap().space("h").unwrap(),
        )));
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
            .layer(axum::middleware::from_fn_with_state(store, idempotent));
        assert_eq!(send(&app, "/x", KEY).await, (500, "try again".into()));
        assert_eq!(send(&app, "/x", KEY).await, (409, "answer 1".into()), "a 5xx was not kept: this ran");
        assert_eq!(send(&app, "/x", KEY).await, (409, "answer 1".into()), "replayed");
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        assert_eq!(send(&app, "/y", KEY).await.0, 422, "a key belongs to one request");
        assert_eq!(send_body(&app, "/x", KEY, "{}").await.0, 422, "and to one body");
        assert_eq!(send(&app, "/x", "not-a-uuid").await.0, 400);
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }
}
