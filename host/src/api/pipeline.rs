//! What a routed request passes through before its handler, as one layer per group
//! of routes. Each axum layer is a boxed service that is cloned, and its future boxed,
//! on every request, and a layer's call clones every layer inside it again; so the
//! steps are plain functions called in order from one `from_fn` layer, not a stack.
//!
//! - open routes (the token endpoint, the probes), and a request no route matched:
//!   observed;
//! - every other route: observed, authenticated, then, if it may change something
//!   (as its [`Endpoint`] says), detached from its connection and replayed when its
//!   Idempotency-Key was seen.

use axum::extract::Request;
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use std::sync::Arc;

use super::{detach, idempotency, observed, AppState, Endpoint, State};
use crate::auth::Caller;
use crate::error::Error;

/// A request no route matched: observed, then answered 501 if the spec has it (and the
/// host does not yet), else 404.
pub async fn unrouted(axum::extract::State(state): State, request: Request) -> Response {
    observed::observe(&state, request, |request, _| async move {
        let (method, path) = (request.method(), request.uri().path());
        if crate::endpoints::not_yet(path) {
            Error::Unsupported(format!("{method} {path} is not implemented by this server")).into_response()
        } else {
            Error::NotFound(format!("no route for {method} {path}")).into_response()
        }
    })
    .await
}

/// The layer of the open routes.
pub async fn open(axum::extract::State(state): State, request: Request, next: Next) -> Response {
    observed::observe(&state, request, |request, _| next.run(request)).await
}

/// What the layer of a route that needs a caller knows: the endpoint it guards, if it
/// is one of the catalog's (else the route is the config's or the management API's).
#[derive(Clone)]
pub struct Guard {
    pub state: Arc<AppState>,
    pub endpoint: Option<Endpoint>,
}

impl Guard {
    /// Whether a request may change something: as its endpoint says, else unless its
    /// method cannot.
    fn mutating(&self, method: &Method) -> bool {
        match self.endpoint {
            Some(endpoint) => endpoint.mutating(),
            None => !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS),
        }
    }
}

/// The layer of the routes that need a caller.
pub async fn guarded(
    axum::extract::State(guard): axum::extract::State<Guard>,
    request: Request,
    next: Next,
) -> Response {
    let mutating = guard.mutating(request.method());
    let state = guard.state;
    let app = state.clone();
    // The rest boxed apart from the observing: each part of a request's future is then
    // under the allocator's size for a fast allocation (about a kilobyte, not two).
    observed::observe(&state, request, move |mut request, context| {
        Box::pin(async move {
            let principal = match app.auth.authenticate(request.headers()).await {
                Ok(principal) => principal,
                Err(e) => return e.into_response(),
            };
            request.extensions_mut().insert(Caller { principal, request: context });
            if !mutating {
                return next.run(request).await;
            }
            detach::run_to_completion(Box::pin(async move {
                idempotency::idempotent(app, request, next).await.unwrap_or_else(IntoResponse::into_response)
            }))
            .await
        })
    })
    .await
}
