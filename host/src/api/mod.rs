//! The Iceberg REST API (axum): routes, request parsing and response shapes.
//! Handlers stay thin: Iceberg semantics live in `tables`, routing in `mounts`,
//! paging in `paging`.

mod audit_log;
mod catalog_config;
mod console;
mod credentials;
mod detach;
mod etag;
mod events;
mod forwarded;
mod health;
pub mod idempotency;
mod listing_bodies;
mod management;
mod members;
mod model;
mod mount_info;
pub mod mount_prefix;
mod namespaces;
mod oauth;
mod observed;
mod pipeline;
pub mod policies;
pub mod request_id;
mod restricted;
mod scan;
mod signing;
mod tables;
mod told;
mod views;

use std::sync::Arc;

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::routing::{delete, get, head, post, MethodRouter};
use axum::Router;
use serde::de::DeserializeOwned;

use crate::auth::Authenticator;
use crate::authz::Authorizer;
use crate::error::Error;
use crate::mounts::Mounts;
use crate::paging::PageTokens;
use crate::storage::vending::Vendor;

pub use crate::endpoints::Endpoint;
pub use request_id::RequestIds;

/// What every handler shares.
pub struct AppState {
    pub mounts: Mounts,
    pub tokens: PageTokens,
    /// The scan plans this process computes or holds for their clients.
    pub plans: crate::scan::plans::Plans,
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
    /// The outbox every change's event goes to (off: `[events] enabled = false`).
    pub events: crate::events::Events,
    /// `[gates.<name>]`: asked about every change before it is made.
    pub gates: crate::hooks::Gates,
    /// `[server] public_url`: where clients are told to send signing requests.
    pub public_url: Option<Arc<str>>,
    /// Where the web console signs in with OpenID Connect: the issuer and the console's
    /// client id there (`[auth.oidc] console_client_id`).
    pub console_oidc: Option<(String, String)>,
    /// The host's key space, in the store the root catalog lives in: `/ready` reads it.
    pub host_space: crate::storage::kv::KvStore,
}

impl AppState {
    /// The teller of `caller`'s changes in this request.
    pub fn teller(&self, caller: &crate::auth::Caller) -> crate::events::Teller {
        let principal = if caller.id.is_empty() { &caller.name } else { &caller.id };
        let actor = crate::events::Actor { principal: principal.clone(), tenant: caller.tenant.clone() };
        self.events.teller(actor, caller.request.request_id.to_str().unwrap_or_default())
    }

    /// Puts a change about to be made in `mount` by the request `teller` tells of to the
    /// gates: a 403 naming the gate that refuses it.
    pub async fn admit(
        &self,
        teller: &crate::events::Teller,
        mount: &crate::mounts::Mount,
        proposed: crate::hooks::Proposed<'_>,
    ) -> Result<(), crate::error::Error> {
        self.gates.admit(teller, mount.name.as_deref(), proposed).await
    }
}

pub type State = axum::extract::State<Arc<AppState>>;

/// The handler of each endpoint: with [`Endpoint`], the only place an endpoint is named.
fn handler(endpoint: Endpoint) -> MethodRouter<Arc<AppState>> {
    use Endpoint::*;
    match endpoint {
        ListNamespaces => get(namespaces::list),
        CreateNamespace => post(namespaces::create),
        LoadNamespace => get(namespaces::load),
        NamespaceExists => head(namespaces::exists),
        DropNamespace => delete(namespaces::drop),
        UpdateNamespaceProperties => post(namespaces::update_properties),
        ListTables => get(tables::list),
        CreateTable => post(tables::create),
        LoadTable => get(tables::load),
        TableExists => head(tables::exists),
        UpdateTable => post(tables::commit),
        DropTable => delete(tables::drop),
        RegisterTable => post(tables::register),
        UnregisterTable => post(tables::unregister),
        ReportMetrics => post(tables::report_metrics),
        RenameTable => post(tables::rename),
        CommitTransaction => post(tables::commit_transaction),
        ListViews => get(views::list),
        CreateView => post(views::create),
        LoadView => get(views::load),
        ViewExists => head(views::exists),
        ReplaceView => post(views::replace),
        DropView => delete(views::drop),
        RenameView => post(views::rename),
        RegisterView => post(views::register),
        LoadCredentials => get(credentials::load),
        SignRequest => post(signing::sign),
        PlanTableScan => post(scan::plan),
        FetchPlanningResult => get(scan::fetch_result),
        CancelPlanning => delete(scan::cancel),
        FetchScanTasks => post(scan::fetch_tasks),
        QueryEvents => post(events::query),
    }
}

/// The whole HTTP application.
pub fn router(state: Arc<AppState>) -> Router {
    // Each endpoint behind the pipeline, which knows from it whether it may change
    // something (routes on one path are merged by axum).
    let catalog = Endpoint::ALL.iter().fold(Router::new(), |router, &endpoint| {
        let guarded = pipeline::Guard { state: state.clone(), endpoint: Some(endpoint) };
        router.route(
            &endpoint.route(),
            handler(endpoint).route_layer(axum::middleware::from_fn_with_state(guarded, pipeline::guarded)),
        )
    });
    // Everything but the token endpoint and the probes needs a caller; outside the
    // catalog's endpoints, a request may change something unless its method cannot.
    let unlisted = pipeline::Guard { state: state.clone(), endpoint: None };
    let authenticated = Router::new()
        .route("/v1/config", get(catalog_config::get_config))
        .nest("/management/v1", management::routes())
        .route_layer(axum::middleware::from_fn_with_state(unlisted, pipeline::guarded))
        .merge(catalog);
    let open = Router::new()
        .route("/v1/oauth/tokens", post(oauth::token))
        .route("/health", get(health::health))
        .route("/ready", get(health::ready))
        .route("/metrics", get(health::metrics))
        .merge(console::routes())
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), pipeline::open));
    let app = Router::new().merge(authenticated).merge(open).fallback(pipeline::unrouted).with_state(state.clone());
    // Around the routes, not inside them: a mount's prefix is rewritten before routing.
    Router::new().fallback_service(app).layer(axum::middleware::from_fn_with_state(state, mount_prefix::scope))
}

/// A JSON body as it came, beside what it parses to: a write to a mount whose remote
/// applies it (`forwarded`) is sent on as the client wrote it.
pub struct JsonBody<T>(pub T, pub bytes::Bytes);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = Error;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let bytes = bytes::Bytes::from_request(req, state).await.map_err(|e| Error::BadRequest(e.body_text()))?;
        match serde_json::from_slice(&bytes) {
            Ok(value) => Ok(JsonBody(value, bytes)),
            Err(e) => Err(Error::BadRequest(format!("invalid request body: {e}"))),
        }
    }
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
