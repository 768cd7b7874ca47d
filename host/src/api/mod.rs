//! The Iceberg REST API (axum): routes, request parsing and response shapes.
//! Handlers stay thin: Iceberg semantics live in `tables`, routing in `mounts`,
//! paging in `paging`.

mod catalog_config;
mod credentials;
mod detach;
mod endpoints;
mod health;
pub mod idempotency;
mod listing_bodies;
mod management;
mod members;
mod model;
pub mod mount_prefix;
mod namespaces;
mod oauth;
mod observed;
mod pipeline;
pub mod request_id;
mod scan;
mod tables;
mod views;

use std::sync::Arc;

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::routing::{get, post};
use axum::Router;
use serde::de::DeserializeOwned;

use crate::auth::Authenticator;
use crate::authz::Authorizer;
use crate::error::Error;
use crate::mounts::Mounts;
use crate::paging::PageTokens;
use crate::storage::vending::Vendor;

pub use endpoints::{HOST_ENDPOINTS, MUTATING_ENDPOINTS};
pub use request_id::RequestIds;

/// The REST prefix this server advertises in `/v1/config` (`overrides.prefix`).
pub const PREFIX: &str = "catalog";

/// What every handler shares.
pub struct AppState {
    pub mounts: Mounts,
    pub tokens: PageTokens,
    /// The endpoints advertised in `/v1/config`: what the host implements and every mount supports.
    pub endpoints: Vec<String>,
    /// The endpoints each named mount serves, advertised to a client that targets it.
    pub mount_endpoints: std::collections::BTreeMap<String, Vec<String>>,
    /// The endpoints the root catalog alone serves (its own prefix, without the mounts).
    pub root_endpoints: Vec<String>,
    pub auth: Arc<Authenticator>,
    pub authz: Authorizer,
    pub idempotency: Arc<idempotency::Idempotency>,
    /// Storage credentials for the tables of every warehouse the server manages.
    pub vendor: Vendor,
    /// Ids for the requests that bring none.
    pub request_ids: RequestIds,
}

pub type State = axum::extract::State<Arc<AppState>>;

/// The whole HTTP application.
pub fn router(state: Arc<AppState>) -> Router {
    let base = format!("/v1/{PREFIX}");
    let ns = format!("{base}/namespaces/{{namespace}}");
    let catalog = Router::new()
        .route(&format!("{base}/namespaces"), get(namespaces::list).post(namespaces::create))
        .route(&ns, get(namespaces::load).head(namespaces::exists).delete(namespaces::drop))
        .route(&format!("{ns}/properties"), post(namespaces::update_properties))
        .route(&format!("{ns}/tables"), get(tables::list).post(tables::create))
        .route(
            &format!("{ns}/tables/{{table}}"),
            get(tables::load).head(tables::exists).post(tables::commit).delete(tables::drop),
        )
        .route(&format!("{ns}/tables/{{table}}/metrics"), post(tables::report_metrics))
        .route(&format!("{ns}/tables/{{table}}/credentials"), get(credentials::load))
        .route(&format!("{ns}/tables/{{table}}/plan"), post(scan::plan))
        .route(&format!("{ns}/tables/{{table}}/plan/{{plan_id}}"), get(scan::fetch_result).delete(scan::cancel))
        .route(&format!("{ns}/tables/{{table}}/tasks"), post(scan::fetch_tasks))
        .route(&format!("{ns}/register"), post(tables::register))
        .route(&format!("{base}/tables/rename"), post(tables::rename))
        .route(&format!("{base}/transactions/commit"), post(tables::commit_transaction))
        .route(&format!("{ns}/views"), get(views::list).post(views::create))
        .route(
            &format!("{ns}/views/{{view}}"),
            get(views::load).head(views::exists).post(views::replace).delete(views::drop),
        )
        .route(&format!("{ns}/register-view"), post(views::register))
        .route(&format!("{base}/views/rename"), post(views::rename));
    // Everything but the token endpoint and the probes needs a caller.
    let authenticated = Router::new()
        .route("/v1/config", get(catalog_config::get_config))
        .merge(catalog)
        .nest("/management/v1", management::routes())
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), pipeline::guarded));
    let open = Router::new()
        .route("/v1/oauth/tokens", post(oauth::token))
        .route("/health", get(health::health))
        .route("/ready", get(health::ready))
        .route("/metrics", get(health::metrics))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), pipeline::open));
    let app = Router::new().merge(authenticated).merge(open).fallback(pipeline::unrouted).with_state(state.clone());
    // Around the routes, not inside them: a mount's prefix is rewritten before routing.
    Router::new().fallback_service(app).layer(axum::middleware::from_fn_with_state(state, mount_prefix::scope))
}

/// A JSON body whose rejection is a `BadRequestException` in the error model.
pub struct Json<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Json<T> {
    type Rejection = Error;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(v)) => Ok(Json(v)),
            Err(e @ JsonRejection::JsonDataError(_)) => {
                Err(Error::BadRequest(format!("invalid request body: {}", e.body_text())))
            }
            Err(e) => Err(Error::BadRequest(e.body_text())),
        }
    }
}

/// Query parameters whose rejection is a `BadRequestException` in the error model.
pub struct Query<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Query<T> {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| Query(q.0))
            .map_err(|e: QueryRejection| Error::BadRequest(e.body_text()))
    }
}

/// Parses a `{namespace}` path segment: levels joined by the unit separator (0x1F).
pub fn parse_namespace(raw: &str) -> Result<Vec<String>, Error> {
    let parts: Vec<String> = raw.split('\u{1f}').map(str::to_string).collect();
    if parts.iter().any(String::is_empty) {
        return Err(Error::BadRequest(format!("invalid namespace {raw:?}: empty level")));
    }
    Ok(parts)
}
