//! Namespace routes.

use axum::extract::{Path, State as AxState};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Extension;

use super::model::{
    CreateNamespaceRequest, ListNamespacesResponse, ListQuery, NamespaceResponse, UpdatePropertiesRequest,
    UpdatePropertiesResponse,
};
use super::{parse_namespace, Json, Query, State};
use crate::auth::Caller;
use crate::authz::{Privilege, Resource};
use crate::error::Error;
use crate::paging::{self, Batch, PageAsk};
use crate::plugins::bindings::PageRequest;

fn no_such_namespace(ns: &[String]) -> impl FnOnce() -> Error + '_ {
    move || Error::NoSuchNamespace(format!("namespace {} does not exist", ns.join(".")))
}

fn absent(ns: &[String]) -> impl FnOnce(String) -> Error + '_ {
    move |_| no_such_namespace(ns)()
}

pub async fn list(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Query(q): Query<ListQuery>,
) -> Result<impl IntoResponse, Error> {
    let parent = match q.parent.as_deref() {
        None | Some("") => vec![],
        Some(raw) => parse_namespace(raw)?,
    };
    let access = state.authz.access(caller.0)?;
    if !parent.is_empty() {
        access.require(&Resource::Namespace(parent.clone()), Privilege::Read, no_such_namespace(&parent))?;
    }
    let (mount, local) = state.mounts.route(&parent)?;
    let ask = PageAsk::from_query(&state.tokens, &mount.space, q.page_token.as_deref(), q.page_size);
    let local_parent = (!local.is_empty()).then(|| local.to_vec());
    let (namespaces, next) = paging::fill(ask, |after, limit| {
        let parent_arg = local_parent.clone();
        let access = &access;
        let parent = &parent;
        async move {
            let page = mount
                .backend
                .list_namespaces(parent_arg, PageRequest { after, limit })
                .await
                .map_err(|e| Error::from_backend(e, absent(parent)))?;
            let mut items = Vec::with_capacity(page.items.len());
            for entry in page.items {
                let ns = mount.restore(entry.namespace);
                let visible = access.can_read(&Resource::Namespace(ns.clone()))?;
                items.push((visible.then_some(ns), entry.cursor));
            }
            Ok::<_, Error>(Batch { items, done: page.done })
        }
    })
    .await?;
    Ok(axum::Json(ListNamespacesResponse {
        namespaces,
        next_page_token: next.map(|cursor| state.tokens.issue(&mount.space, &cursor)),
    }))
}

pub async fn create(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Json(req): Json<CreateNamespaceRequest>,
) -> Result<impl IntoResponse, Error> {
    if req.namespace.is_empty() || req.namespace.iter().any(String::is_empty) {
        return Err(Error::BadRequest("the namespace must have at least one level, none empty".into()));
    }
    let tenant = caller.0.tenant.clone();
    let access = state.authz.access(caller.0)?;
    let parent = &req.namespace[..req.namespace.len() - 1];
    if parent.is_empty() {
        access.require_create_root()?;
    } else {
        access.require(&Resource::Namespace(parent.to_vec()), Privilege::Write, no_such_namespace(parent))?;
    }
    let (mount, local) = state.mounts.route(&req.namespace)?;
    let properties: Vec<(String, String)> = req.properties.into_iter().collect();
    let stored = mount.backend.create_namespace(local.to_vec(), properties).await.map_err(|e| {
        Error::from_backend(e, |m| Error::NoSuchNamespace(format!("cannot create {}: {m}", parent.join("."))))
    })?;
    if parent.is_empty() {
        // The backend created it, so it is new: its owner is the creator's tenant.
        state.authz.set_owner(&req.namespace[0], &tenant)?;
    }
    Ok(axum::Json(NamespaceResponse { namespace: req.namespace, properties: stored.into_iter().collect() }))
}

pub async fn load(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path(raw): Path<String>,
) -> Result<impl IntoResponse, Error> {
    let ns = parse_namespace(&raw)?;
    let access = state.authz.access(caller.0)?;
    access.require(&Resource::Namespace(ns.clone()), Privilege::Read, no_such_namespace(&ns))?;
    let (mount, local) = state.mounts.route(&ns)?;
    let properties =
        mount.backend.load_namespace(local.to_vec()).await.map_err(|e| Error::from_backend(e, absent(&ns)))?;
    Ok(axum::Json(NamespaceResponse { properties: properties.into_iter().collect(), namespace: ns }))
}

pub async fn exists(state: State, caller: Extension<Caller>, path: Path<String>) -> Result<StatusCode, Error> {
    load(state, caller, path).await.map(|_| StatusCode::NO_CONTENT)
}

pub async fn drop(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path(raw): Path<String>,
) -> Result<StatusCode, Error> {
    let ns = parse_namespace(&raw)?;
    let resource = Resource::Namespace(ns.clone());
    state.authz.access(caller.0)?.require(&resource, Privilege::Write, no_such_namespace(&ns))?;
    let (mount, local) = state.mounts.route(&ns)?;
    match mount.backend.drop_namespace(local.to_vec()).await {
        Ok(()) => {}
        Err(e) if e.kind == crate::plugins::BackendErrorKind::Conflict => {
            return Err(Error::NamespaceNotEmpty(e.message))
        }
        Err(e) => return Err(Error::from_backend(e, absent(&ns))),
    }
    // Nothing created later under this name may inherit its grants or its owner.
    state.authz.revoke_within(&resource)?;
    if ns.len() == 1 {
        state.authz.forget_owner(&ns[0])?;
    }
    Ok(StatusCode::NO_CONTENT)
}

pub async fn update_properties(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path(raw): Path<String>,
    Json(req): Json<UpdatePropertiesRequest>,
) -> Result<impl IntoResponse, Error> {
    let ns = parse_namespace(&raw)?;
    if let Some(key) = req.removals.iter().find(|k| req.updates.contains_key(*k)) {
        return Err(Error::Unprocessable(format!("property {key:?} is both removed and updated")));
    }
    state.authz.access(caller.0)?.require(
        &Resource::Namespace(ns.clone()),
        Privilege::Write,
        no_such_namespace(&ns),
    )?;
    let (mount, local) = state.mounts.route(&ns)?;
    let updates: Vec<(String, String)> = req.updates.into_iter().collect();
    let result = mount
        .backend
        .update_namespace_properties(local.to_vec(), req.removals, updates)
        .await
        .map_err(|e| Error::from_backend(e, absent(&ns)))?;
    Ok(axum::Json(UpdatePropertiesResponse {
        updated: result.updated,
        removed: result.removed,
        missing: result.missing,
    }))
}
