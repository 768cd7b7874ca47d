//! Mutating requests run to completion even when the client goes away.
//!
//! axum drops a handler's future when its connection closes, at whatever await it
//! has reached: between a namespace's create and its owner record, between a drop
//! and its revocations, or before an Idempotency-Key is finalized. Each mutating
//! request therefore runs as a task of its own: it finishes whatever the client
//! does, and a client that left just never reads the answer.

use std::future::Future;
use std::pin::Pin;

use axum::response::{IntoResponse, Response};

use crate::error::Error;

/// The rest of a request, boxed where it is made: a handler's future is large (a
/// commit's runs to many kilobytes), and spawning moves it several times over.
pub type Work = Pin<Box<dyn Future<Output = Response> + Send>>;

/// Runs `request`, the rest of a request that may change something, as its own task.
pub async fn run_to_completion(request: Work) -> Response {
    // The task keeps the request's span, so its log lines carry the request id.
    let request = tracing::Instrument::in_current_span(request);
    match tokio::spawn(request).await {
        Ok(response) => response,
        Err(e) => Error::Internal(format!("the request failed: {e}")).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use axum::body::Body;
    use axum::extract::Request;
    use axum::middleware::Next;
    use axum::routing::post;
    use axum::Router;
    use tower::ServiceExt;

    use super::*;

    /// A handler whose caller stops waiting half-way (as axum does when a connection
    /// closes) still runs to its end.
    #[tokio::test]
    async fn a_dropped_request_still_finishes() {
        let finished = Arc::new(AtomicBool::new(false));
        let flag = finished.clone();
        let handler = move || {
            let flag = flag.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                flag.store(true, Ordering::SeqCst);
            }
        };
        let detached = |request: Request, next: Next| run_to_completion(Box::pin(next.run(request)));
        let app = Router::new().route("/x", post(handler)).layer(axum::middleware::from_fn(detached));
        let request = Request::post("/x").body(Body::empty()).unwrap();
        let dropped = tokio::time::timeout(Duration::from_millis(10), app.oneshot(request)).await;
        assert!(dropped.is_err(), "the caller stopped waiting before the handler finished");
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(finished.load(Ordering::SeqCst), "the handler ran to its end");
    }
}
