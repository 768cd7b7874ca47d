//! View routes.

use std::collections::HashMap;

use axum::extract::{Path, State as AxState};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use bytes::Bytes;
use iceberg::spec::{Schema, ViewVersion};
use iceberg::ViewUpdate;
use serde::Deserialize;

use super::etag::{self, IfNoneMatch, Representation, Tag};
use super::forwarded::{self, Request};
use super::members::{self, Kind, Resolved};
use super::model::{ListQuery, RenameTableRequest, TableResult};
use super::told;
use super::{parse_namespace, Endpoint, Json, JsonBody, Query, State};
use crate::auth::Caller;
use crate::authz::Effect;
use crate::error::Error;
use crate::events::Operation;
use crate::hooks::Proposed;
use crate::recovery;
use crate::sandbox::bindings::Ident;
use crate::tables;
use crate::tables::telling::uuid_of;
use crate::tables::views::{self, NewView, ViewRequirement};

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct CreateViewRequest {
    name: String,
    location: Option<String>,
    schema: Schema,
    view_version: ViewVersion,
    #[serde(default)]
    properties: HashMap<String, String>,
}

#[derive(Deserialize)]
pub struct CommitViewRequest {
    #[serde(default)]
    requirements: Vec<ViewRequirement>,
    #[serde(default)]
    updates: Vec<ViewUpdate>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct RegisterViewRequest {
    name: String,
    metadata_location: String,
}

/// A view's answer, tagged with the representation a loadView of it has.
fn result(location: &str, json: Bytes) -> Response {
    let response = TableResult {
        metadata_location: Some(location),
        metadata_json: json,
        config: Some(&[]),
        storage_credentials: "",
        remote_signing: false,
        read_restrictions: None,
    };
    let tag = Tag::new(Representation::view(location).digest(), None);
    etag::tagged(response.into_response(), Some(tag))
}

/// A view's event body after a create or a replace.
fn view_event(
    mount: &crate::mounts::Mount,
    ident: &Ident,
    committed: &tables::Committed,
    updates: Vec<serde_json::Value>,
) -> crate::events::event::ViewChange {
    let after = Some(committed.metadata_location.clone());
    told::view_change(mount, ident, committed.uuid.clone(), None, after, updates)
}

pub async fn list(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path(raw): Path<String>,
    Query(q): Query<ListQuery>,
) -> Result<impl IntoResponse, Error> {
    members::list(&state, caller, Endpoint::ListViews, &raw, q, Kind::View).await
}

pub async fn create(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path(raw): Path<String>,
    headers: HeaderMap,
    JsonBody(req, raw_body): JsonBody<CreateViewRequest>,
) -> Result<Response, Error> {
    if req.name.is_empty() {
        return Err(Error::BadRequest("the view name must not be empty".into()));
    }
    let ns = parse_namespace(&raw)?;
    let teller = state.teller(&caller);
    let (mount, local, _) = members::resolve_namespace(&state, caller, &ns).await?;
    let ident = Ident { namespace: local, name: req.name.clone() };
    let proposed = Proposed::of("create-view", &ident.namespace, &ident.name).with_properties(&req.properties);
    state.admit(&teller, mount, proposed.with_request(&raw_body)).await?;
    if mount.backend.forwards() {
        if let Some(location) = &req.location {
            forwarded::check_location(&state.mounts, mount, location, "the view location")?;
        }
        let write = Request::new(Endpoint::CreateView, raw_body).in_namespace(&ident.namespace);
        let answer = forwarded::send(mount, &headers, write).await?;
        teller.tell(vec![Operation::CreateView(told::forwarded_view(mount, &ident, &answer, vec![]))]).await;
        return Ok(forwarded::json(answer));
    }
    let new =
        NewView { location: req.location, schema: req.schema, version: req.view_version, properties: req.properties };
    let committed = views::create(mount, &ident, new).await?;
    teller.tell(vec![Operation::CreateView(view_event(mount, &ident, &committed, vec![]))]).await;
    Ok(result(&committed.metadata_location, committed.metadata_json))
}

pub async fn load(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path((raw, name)): Path<(String, String)>,
    if_none_match: IfNoneMatch,
) -> Result<Response, Error> {
    let Resolved { mount, ident, .. } =
        members::resolve(&state, caller, &raw, name, Endpoint::LoadView, Kind::View).await?;
    let pointer = views::load(mount, &ident).await?;
    if let Some(held) = if_none_match.fresh(Representation::view(&pointer.metadata_location).digest()) {
        return Ok(held.not_modified());
    }
    let loaded = tables::servable(mount, pointer).await?;
    Ok(result(&loaded.pointer.metadata_location, loaded.held.json.clone()))
}

pub async fn exists(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path((raw, name)): Path<(String, String)>,
) -> Result<StatusCode, Error> {
    let Resolved { mount, ident, .. } =
        members::resolve(&state, caller, &raw, name, Endpoint::ViewExists, Kind::View).await?;
    views::load(mount, &ident).await.map(|_| StatusCode::NO_CONTENT)
}

pub async fn replace(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path((raw, name)): Path<(String, String)>,
    headers: HeaderMap,
    JsonBody(req, raw_body): JsonBody<CommitViewRequest>,
) -> Result<Response, Error> {
    let teller = state.teller(&caller);
    let Resolved { mount, ident, .. } =
        members::resolve(&state, caller, &raw, name, Endpoint::ReplaceView, Kind::View).await?;
    let proposed = Proposed::of("update-view", &ident.namespace, &ident.name).with_request(&raw_body);
    state.admit(&teller, mount, proposed).await?;
    let updates: Vec<serde_json::Value> = req.updates.iter().filter_map(|u| serde_json::to_value(u).ok()).collect();
    if mount.backend.forwards() {
        for update in &req.updates {
            if let ViewUpdate::SetLocation { location } = update {
                forwarded::check_location(&state.mounts, mount, location, "the view location")?;
            }
        }
        let mut body = forwarded::parse(&raw_body)?;
        forwarded::strip_identifiers(mount, &mut body, &["/identifier"])?;
        let write = Request::new(Endpoint::ReplaceView, forwarded::body(&body)).in_namespace(&ident.namespace);
        let answer = forwarded::send(mount, &headers, write.named(&ident.name)).await?;
        teller.tell(vec![Operation::UpdateView(told::forwarded_view(mount, &ident, &answer, updates))]).await;
        return Ok(forwarded::json(answer));
    }
    let committed = views::replace(mount, &ident, &req.requirements, req.updates).await?;
    teller.tell(vec![Operation::UpdateView(view_event(mount, &ident, &committed, updates))]).await;
    Ok(result(&committed.metadata_location, committed.metadata_json))
}

pub async fn drop(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path((raw, name)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<StatusCode, Error> {
    let teller = state.teller(&caller);
    let resolved = members::resolve(&state, caller, &raw, name, Endpoint::DropView, Kind::View).await?;
    let resource = resolved.resource(Kind::View);
    let (mount, ident) = (resolved.mount, &resolved.ident);
    state.admit(&teller, mount, Proposed::of("drop-view", &ident.namespace, &ident.name)).await?;
    if mount.backend.forwards() {
        let write = Request::new(Endpoint::DropView, Default::default()).in_namespace(&ident.namespace);
        forwarded::drop(&state, mount, &headers, write.named(&ident.name), resource).await?;
        teller
            .tell(vec![Operation::DropView(told::view_change(mount, ident, String::new(), None, None, vec![]))])
            .await;
        return Ok(StatusCode::NO_CONTENT);
    }
    let dropped = views::drop_view(mount, ident);
    let last = recovery::with_intent(&state.authz, &state.mounts, Effect::Forget { resource }, dropped).await?;
    let before = Some(last.metadata_location.clone());
    let dropped = told::view_change(mount, ident, uuid_of(&last), before, None, vec![]);
    teller.tell(vec![Operation::DropView(dropped)]).await;
    Ok(StatusCode::NO_CONTENT)
}

pub async fn register(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path(raw): Path<String>,
    headers: HeaderMap,
    JsonBody(req, raw_body): JsonBody<RegisterViewRequest>,
) -> Result<Response, Error> {
    let ns = parse_namespace(&raw)?;
    let teller = state.teller(&caller);
    let (mount, local, _) = members::resolve_namespace(&state, caller, &ns).await?;
    let ident = Ident { namespace: local, name: req.name.clone() };
    let proposed = Proposed::of("create-view", &ident.namespace, &ident.name).with_request(&raw_body);
    state.admit(&teller, mount, proposed).await?;
    if mount.backend.forwards() {
        forwarded::check_location(&state.mounts, mount, &req.metadata_location, "the metadata location")?;
        let write = Request::new(Endpoint::RegisterView, raw_body).in_namespace(&ident.namespace);
        let answer = forwarded::send(mount, &headers, write).await?;
        teller.tell(vec![Operation::CreateView(told::forwarded_view(mount, &ident, &answer, vec![]))]).await;
        return Ok(forwarded::json(answer));
    }
    let committed = views::register(mount, &ident, &req.metadata_location).await?;
    teller.tell(vec![Operation::CreateView(view_event(mount, &ident, &committed, vec![]))]).await;
    Ok(result(&committed.metadata_location, committed.metadata_json))
}

pub async fn rename(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    Json(req): Json<RenameTableRequest>,
) -> Result<StatusCode, Error> {
    members::rename(&state, caller, Endpoint::RenameView, &headers, req, Kind::View).await
}
