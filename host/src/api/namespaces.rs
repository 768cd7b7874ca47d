//! Namespace routes.

use axum::extract::{Path, State as AxState};
use axum::http::StatusCode;
use axum::response::IntoResponse;

use super::model::{
    CreateNamespaceRequest, ListNamespacesResponse, ListQuery, NamespaceResponse,
    UpdatePropertiesRequest, UpdatePropertiesResponse,
};
use super::{parse_namespace, Json, Query, State};
use crate::error::Error;
use crate::paging::{self, Batch, PageAsk};
use crate::plugins::bindings::PageRequest;

fn no_such_namespace(ns: &[String]) -> impl FnOnce(String) -> Error + '_ {
    move |_| Error::NoSuchNamespace(format!("namespace {} does not exist", ns.join(".")))
}

pub async fn list(
    AxState(state): State,
    Query(q): Query<ListQuery>,
) -> Result<impl IntoResponse, Error> {
    let parent = match q.parent.as_deref() {
        None | Some("") => vec![],
        Some(raw) => parse_namespace(raw)?,
    };
    let (mount, local) = state.mounts.route(&parent)?;
    let ask = PageAsk::from_query(
        &state.tokens,
        &mount.space,
        q.page_token.as_deref(),
        q.page_size,
    );
    let local_parent = (!local.is_empty()).then(|| local.to_vec());
    let (namespaces, next) = paging::fill(
        ask,
        |after, limit| {
            let parent = local_parent.clone();
            async move {
                let page = mount
                    .backend
                    .list_namespaces(parent, PageRequest { after, limit })
                    .await?;
                Ok(Batch {
                    items: page
                        .items
                        .into_iter()
                        .map(|e| (e.namespace, e.cursor))
                        .collect(),
                    done: page.done,
                })
            }
        },
        |_| true,
    )
    .await
    .map_err(|e| Error::from_backend(e, no_such_namespace(&parent)))?;
    Ok(axum::Json(ListNamespacesResponse {
        namespaces,
        next_page_token: next.map(|cursor| state.tokens.issue(&mount.space, &cursor)),
    }))
}

pub async fn create(
    AxState(state): State,
    Json(req): Json<CreateNamespaceRequest>,
) -> Result<impl IntoResponse, Error> {
    if req.namespace.is_empty() || req.namespace.iter().any(String::is_empty) {
        return Err(Error::BadRequest(
            "the namespace must have at least one level, none empty".into(),
        ));
    }
    let (mount, local) = state.mounts.route(&req.namespace)?;
    let properties: Vec<(String, String)> = req.properties.into_iter().collect();
    let stored = mount
        .backend
        .create_namespace(local.to_vec(), properties)
        .await
        .map_err(|e| {
            let parent = &req.namespace[..req.namespace.len() - 1];
            Error::from_backend(e, |m| {
                Error::NoSuchNamespace(format!("cannot create {}: {m}", parent.join(".")))
            })
        })?;
    Ok(axum::Json(NamespaceResponse {
        namespace: req.namespace,
        properties: stored.into_iter().collect(),
    }))
}

pub async fn load(
    AxState(state): State,
    Path(raw): Path<String>,
) -> Result<impl IntoResponse, Error> {
    let ns = parse_namespace(&raw)?;
    let (mount, local) = state.mounts.route(&ns)?;
    let properties = mount
        .backend
        .load_namespace(local.to_vec())
        .await
        .map_err(|e| Error::from_backend(e, no_such_namespace(&ns)))?;
    Ok(axum::Json(NamespaceResponse {
        properties: properties.into_iter().collect(),
        namespace: ns,
    }))
}

pub async fn exists(state: State, path: Path<String>) -> Result<StatusCode, Error> {
    load(state, path).await.map(|_| StatusCode::NO_CONTENT)
}

pub async fn drop(AxState(state): State, Path(raw): Path<String>) -> Result<StatusCode, Error> {
    let ns = parse_namespace(&raw)?;
    let (mount, local) = state.mounts.route(&ns)?;
    match mount.backend.drop_namespace(local.to_vec()).await {
        Ok(()) => Ok(StatusCode::NO_CONTENT),
        Err(e) if e.kind == crate::plugins::BackendErrorKind::Conflict => {
            Err(Error::NamespaceNotEmpty(e.message))
        }
        Err(e) => Err(Error::from_backend(e, no_such_namespace(&ns))),
    }
}

pub async fn update_properties(
    AxState(state): State,
    Path(raw): Path<String>,
    Json(req): Json<UpdatePropertiesRequest>,
) -> Result<impl IntoResponse, Error> {
    let ns = parse_namespace(&raw)?;
    if let Some(key) = req.removals.iter().find(|k| req.updates.contains_key(*k)) {
        return Err(Error::Unprocessable(format!(
            "property {key:?} is both removed and updated"
        )));
    }
    let (mount, local) = state.mounts.route(&ns)?;
    let updates: Vec<(String, String)> = req.updates.into_iter().collect();
    let result = mount
        .backend
        .update_namespace_properties(local.to_vec(), req.removals, updates)
        .await
        .map_err(|e| Error::from_backend(e, no_such_namespace(&ns)))?;
    Ok(axum::Json(UpdatePropertiesResponse {
        updated: result.updated,
        removed: result.removed,
        missing: result.missing,
    }))
}
