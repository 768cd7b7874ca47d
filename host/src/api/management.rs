//! `/management/v1`: tenants, principals, grants and read policies (`policies`), "what may I do here", and for
//! operators the mounts (`mount_info`), the audit log (`audit_log`) and the events no
//! sink could deliver (`events`).
//! Everything is kept in the host key space, which no backend can see.

use axum::extract::{Path, State as AxState};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{delete, get};
use axum::{Extension, Router};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use rand::RngCore;
use serde::Deserialize;
use serde_json::json;

use super::idempotency::Secrets;
use super::{parse_namespace, Json, Query, State};
use crate::auth::{hash_secret, Caller, OidcIdentity, Principal, Role};
use crate::authz::{manages_tenant, Grantee, Privilege, Resource};
use crate::error::Error;

pub fn routes() -> Router<std::sync::Arc<super::AppState>> {
    Router::new()
        .route("/whoami", get(whoami))
        .route("/tenants", get(list_tenants).post(create_tenant))
        .route("/tenants/{name}", delete(delete_tenant))
        .route("/principals", get(list_principals).post(create_principal))
        .route("/principals/{name}", delete(delete_principal))
        .route("/grants", get(list_grants).post(create_grant))
        .route("/grants/{id}", delete(revoke_grant))
        .route("/policies", get(super::policies::list).post(super::policies::create))
        .route("/policies/{id}", delete(super::policies::delete))
        .route("/permissions", get(permissions))
        .route("/mounts", get(super::mount_info::list))
        .route("/audit", get(super::audit_log::query))
        .route("/events/dead-letters", get(super::events::dead_letters))
}

/// Tells a change of the directory or the grants (the spec has no operation for them: a
/// custom one, `x-…`, which only server admins read), once it was made.
pub(super) async fn tell(state: &super::AppState, caller: &Caller, custom_type: &str, details: serde_json::Value) {
    let details = details.as_object().cloned().unwrap_or_default().into_iter().collect();
    let operation = crate::events::Operation::Custom { custom_type: custom_type.to_string(), details };
    state.teller(caller).tell(vec![operation]).await;
}

fn check_name(what: &str, name: &str) -> Result<(), Error> {
    if name.is_empty() || name.chars().any(|c| c.is_control() || c == '/' || c == ':') {
        return Err(Error::BadRequest(format!("invalid {what} name {name:?}")));
    }
    Ok(())
}

async fn whoami(Extension(caller): Extension<Caller>) -> impl IntoResponse {
    axum::Json(json!({
        "id": caller.id(), "name": caller.name, "tenant": caller.tenant, "role": caller.role,
        "server-admin": caller.server_admin
    }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewTenant {
    name: String,
}

async fn list_tenants(AxState(state): State, Extension(caller): Extension<Caller>) -> Result<impl IntoResponse, Error> {
    let tenants: Vec<String> = state
        .auth
        .directory
        .tenants()
        .await?
        .into_iter()
        .filter(|t| caller.server_admin || *t == caller.tenant)
        .collect();
    Ok(axum::Json(json!({ "tenants": tenants })))
}

async fn create_tenant(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Json(req): Json<NewTenant>,
) -> Result<impl IntoResponse, Error> {
    state.authz.access(&caller).await?.require_server_admin(&format!("create tenant {}", req.name))?;
    check_name("tenant", &req.name)?;
    state.auth.directory.add_tenant(&req.name).await?;
    tell(&state, &caller, "x-tenant-created", json!({ "tenant": req.name })).await;
    Ok((StatusCode::CREATED, axum::Json(json!({ "name": req.name }))))
}

async fn delete_tenant(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
) -> Result<StatusCode, Error> {
    state.authz.access(&caller).await?.require_server_admin(&format!("delete tenant {name}"))?;
    // A tenant created later under this name must find nothing of this one.
    if state.authz.owns_anything(&name).await? {
        return Err(Error::Conflict(format!("tenant {name} still owns namespaces or mounts")));
    }
    let removal = state.auth.directory.tenant_removal(&name).await?;
    if !state.authz.remove_grantee(&Grantee::Tenant(name.clone()), removal).await? {
        return Err(Error::NotFound(format!("tenant {name} does not exist")));
    }
    tell(&state, &caller, "x-tenant-deleted", json!({ "tenant": name })).await;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct NewPrincipal {
    name: String,
    tenant: String,
    role: Role,
    #[serde(default)]
    server_admin: bool,
    /// A subject of the `[auth.oidc]` issuer that acts as this principal; such a
    /// principal gets no client secret.
    oidc_subject: Option<String>,
}

fn public(p: &Principal, configured: bool) -> serde_json::Value {
    let mut body = json!({
        "id": p.id(), "name": p.name, "tenant": p.tenant, "role": p.role, "server-admin": p.server_admin,
        "configured": configured
    });
    if let Some(identity) = &p.oidc {
        body["oidc-issuer"] = json!(identity.issuer);
        body["oidc-subject"] = json!(identity.subject);
    }
    body
}

async fn list_principals(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
) -> Result<impl IntoResponse, Error> {
    let directory = &state.auth.directory;
    let visible: Vec<_> = directory
        .principals()
        .await?
        .iter()
        .filter(|p| manages_tenant(&caller, &p.tenant))
        .map(|p| public(p, directory.is_configured(&p.name)))
        .collect();
    Ok(axum::Json(json!({ "principals": visible })))
}

async fn create_principal(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Json(req): Json<NewPrincipal>,
) -> Result<axum::response::Response, Error> {
    check_name("principal", &req.name)?;
    let access = state.authz.access(&caller).await?;
    let what = format!("create principal {} in tenant {}", req.name, req.tenant);
    access.require_tenant_admin(&req.tenant, &what)?;
    // Binding an identity of the issuer is a decision about that person, not about a
    // tenant: a tenant admin could otherwise claim somebody's subject before the
    // server admin maps it, and that person would act inside the wrong tenant.
    if req.server_admin || req.oidc_subject.is_some() {
        access.require_server_admin(&what)?;
    }
    if !state.auth.directory.tenant_exists(&req.tenant).await? {
        return Err(Error::BadRequest(format!("tenant {} does not exist", req.tenant)));
    }
    let (oidc, secret) = match req.oidc_subject {
        Some(subject) => {
            let issuer = state
                .auth
                .oidc_issuer()
                .ok_or_else(|| Error::BadRequest("oidc-subject needs an OpenID Connect issuer ([auth.oidc])".into()))?;
            (Some(OidcIdentity { issuer: issuer.to_string(), subject }), None)
        }
        None => {
            let mut bytes = [0u8; 24];
            rand::rng().fill_bytes(&mut bytes);
            (None, Some(URL_SAFE_NO_PAD.encode(bytes)))
        }
    };
    let principal = Principal {
        id: uuid::Uuid::now_v7().simple().to_string(),
        name: req.name,
        tenant: req.tenant,
        role: req.role,
        server_admin: req.server_admin,
        secret_hash: secret.as_deref().map(hash_secret),
        oidc,
    };
    state.auth.directory.add_principal(&principal).await?;
    let mut body = public(&principal, false);
    tell(&state, &caller, "x-principal-created", json!({ "principal": body })).await;
    let Some(secret) = secret else {
        return Ok((StatusCode::CREATED, axum::Json(body)).into_response());
    };
    // The secret is shown once, now; only its hash is kept, and no idempotent replay
    // keeps the answer.
    body["client-id"] = json!(principal.name);
    body["client-secret"] = json!(secret);
    let mut response = (StatusCode::CREATED, axum::Json(body)).into_response();
    response.extensions_mut().insert(Secrets::ShownOnce);
    Ok(response)
}

async fn delete_principal(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path(name): Path<String>,
) -> Result<StatusCode, Error> {
    let directory = &state.auth.directory;
    let missing = || Error::NotFound(format!("principal {name} does not exist"));
    let principal = directory.principal(&name).await?.ok_or_else(missing)?;
    // A principal of a tenant the caller does not manage is one it cannot see.
    let what = format!("delete principal {name} of tenant {}", principal.tenant);
    state.authz.access(&caller).await?.require_tenant_admin(&principal.tenant, &what).map_err(|_| missing())?;
    if directory.is_configured(&name) {
        return Err(Error::Conflict(format!("principal {name} is defined in the configuration file")));
    }
    // Its tokens stop working now (they name its id); its grants go with it, in the
    // same commit.
    let grantee = Grantee::Principal(principal.id().to_string());
    if !state.authz.remove_grantee(&grantee, directory.principal_removal(&principal)).await? {
        return Err(Error::NotFound(format!("principal {name} does not exist")));
    }
    tell(&state, &caller, "x-principal-deleted", json!({ "principal": public(&principal, false) })).await;
    Ok(StatusCode::NO_CONTENT)
}

/// Where a grant or a permission question points: a namespace, or a table or view in it.
pub(super) struct Target {
    pub namespace: Vec<String>,
    pub table: Option<String>,
    pub view: Option<String>,
}

impl Target {
    pub fn resource(self) -> Result<Resource, Error> {
        if self.namespace.is_empty() || self.namespace.iter().any(String::is_empty) {
            return Err(Error::BadRequest("a namespace with at least one level is required".into()));
        }
        match (self.table, self.view) {
            (None, None) => Ok(Resource::Namespace(self.namespace)),
            (Some(name), None) => Ok(Resource::Table { namespace: self.namespace, name }),
            (None, Some(name)) => Ok(Resource::View { namespace: self.namespace, name }),
            (Some(_), Some(_)) => Err(Error::BadRequest("name a table or a view, not both".into())),
        }
    }
}

pub(super) fn not_found(resource: &Resource) -> impl FnOnce() -> Error + '_ {
    move || match resource {
        Resource::Namespace(_) => Error::NoSuchNamespace(format!("{resource} does not exist")),
        Resource::Table { .. } => Error::NoSuchTable(format!("{resource} does not exist")),
        Resource::View { .. } => Error::NoSuchView(format!("{resource} does not exist")),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewGrant {
    namespace: Vec<String>,
    table: Option<String>,
    view: Option<String>,
    privilege: Privilege,
    principal: Option<String>,
    tenant: Option<String>,
}

async fn create_grant(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Json(req): Json<NewGrant>,
) -> Result<impl IntoResponse, Error> {
    let resource = Target { namespace: req.namespace, table: req.table, view: req.view }.resource()?;
    state.authz.access(&caller).await?.require(&resource, Privilege::Manage, not_found(&resource))?;
    let directory = &state.auth.directory;
    let grantee = match (req.principal, req.tenant) {
        (Some(p), None) => match directory.principal(&p).await? {
            Some(principal) => Grantee::Principal(principal.id().to_string()),
            None => return Err(Error::BadRequest(format!("principal {p} does not exist"))),
        },
        (None, Some(t)) if directory.tenant_exists(&t).await? => Grantee::Tenant(t),
        (None, Some(t)) => return Err(Error::BadRequest(format!("tenant {t} does not exist"))),
        _ => return Err(Error::BadRequest("grant to exactly one of principal or tenant".into())),
    };
    let grant = state.authz.add_grant(resource, req.privilege, grantee).await?;
    tell(&state, &caller, "x-grant-created", json!({ "grant": grant })).await;
    Ok((StatusCode::CREATED, axum::Json(grant)))
}

async fn list_grants(AxState(state): State, Extension(caller): Extension<Caller>) -> Result<impl IntoResponse, Error> {
    let mine = [Grantee::Principal(caller.id().to_string()), Grantee::Tenant(caller.tenant.clone())];
    let access = state.authz.access(&caller).await?;
    let mut visible = vec![];
    for grant in state.authz.all_grants().await? {
        if mine.contains(&grant.grantee) || access.privilege(&grant.resource)? == Some(Privilege::Manage) {
            visible.push(grant);
        }
    }
    Ok(axum::Json(json!({ "grants": visible })))
}

async fn revoke_grant(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<StatusCode, Error> {
    let missing = || Error::NotFound(format!("grant {id} does not exist"));
    let grant = state.authz.grant(&id).await?.ok_or_else(missing)?;
    state.authz.access(&caller).await?.require(&grant.resource, Privilege::Manage, missing)?;
    state.authz.revoke(&id).await?;
    tell(&state, &caller, "x-grant-revoked", json!({ "grant": grant })).await;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize)]
struct PermissionQuery {
    namespace: String,
    table: Option<String>,
    view: Option<String>,
}

/// What the caller may do on a namespace, table or view.
async fn permissions(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Query(q): Query<PermissionQuery>,
) -> Result<impl IntoResponse, Error> {
    let resource = Target { namespace: parse_namespace(&q.namespace)?, table: q.table, view: q.view }.resource()?;
    let held = state.authz.access(&caller).await?.privilege(&resource)?;
    let Some(held) = held else {
        return Err(not_found(&resource)());
    };
    Ok(axum::Json(json!({
        "resource": resource,
        "privilege": held,
        "read": true,
        "write": held >= Privilege::Write,
        "manage": held >= Privilege::Manage,
    })))
}
