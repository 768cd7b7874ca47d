//! Namespace routes: parsed, authorized and routed here; their semantics are
//! `crate::namespaces`.

use axum::extract::{Path, State as AxState};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;

use super::forwarded::{self, Request};
use super::listing_bodies::ListNamespacesResponse;
use super::members::no_such_namespace;
use super::model::{
    CreateNamespaceRequest, ListQuery, NamespaceResponse, UpdatePropertiesRequest, UpdatePropertiesResponse,
};
use super::{parse_namespace, Endpoint, JsonBody, Query, State};
use crate::auth::Caller;
use crate::authz::{Access, Resource};
use crate::backends::Listing;
use crate::error::Error;
use crate::events::Operation;
use crate::hooks::Proposed;
use crate::mounts::Mount;
use crate::namespaces::{self, Routed};
use crate::paging::{self, Batch, Entry, PageAsk};
use crate::sandbox::bindings::PageRequest;

/// The cursor space of the mount names in a listing of the top level.
const MOUNTS_SPACE: &str = "mounts";

/// Lists one page of a mount's children of `parent` (the path the client sees;
/// `listing` is the backend's), marking the ones the caller may not read (none where
/// it may read all of `parent`).
async fn backend_page(
    mount: &Mount,
    access: &Access,
    parent: &[String],
    listing: &Listing,
    after: Option<String>,
    limit: u32,
) -> Result<Batch, Error> {
    let listed = mount
        .backend
        .list(listing, PageRequest { after, limit })
        .await
        .map_err(|e| Error::from_backend(e, namespaces::absent(parent)))?;
    let mut entries = Vec::with_capacity(listed.items.len());
    let mut children = (parent.is_empty() || !access.can_read_all_in(parent)).then(|| Children::of(parent));
    for item in listed.items {
        // Not a child of `parent`: never shown, its cursor counts.
        let Some(name) = item.name else {
            entries.extend(item.cursor.map(Entry::Hidden));
            continue;
        };
        let visible = match &mut children {
            Some(children) => children.readable(access, &name)?,
            None => true,
        };
        entries.push(Entry::new(name, item.cursor, visible));
    }
    Ok(Batch { entries, done: listed.done })
}

/// Checks the caller's read access to one child of a namespace after another, on one
/// resource reused for all (a page of 100 would otherwise build 100 paths).
struct Children(Resource);

impl Children {
    fn of(parent: &[String]) -> Self {
        let mut path = Vec::with_capacity(parent.len() + 1);
        path.extend_from_slice(parent);
        path.push(String::new());
        Self(Resource::Namespace(path))
    }

    fn child(&mut self) -> &mut String {
        match &mut self.0 {
            Resource::Namespace(path) => path.last_mut().expect("the child's level"),
            _ => unreachable!("built as a namespace"),
        }
    }

    /// Whether the caller may read the child `name`.
    fn readable(&mut self, access: &Access, name: &str) -> Result<bool, Error> {
        let child = self.child();
        child.clear();
        child.push_str(name);
        access.can_read(&self.0)
    }
}

/// The top level: the mount names (configuration, sorted) followed by the root
/// catalog's top-level namespaces. A token says which of the two cursor spaces it
/// belongs to; one this server did not issue restarts the listing.
async fn list_top_level(
    state: &super::AppState,
    access: &Access,
    token: Option<&str>,
    size: Option<u32>,
) -> Result<ListNamespacesResponse, Error> {
    let tokens = &state.tokens;
    let root = state.mounts.root();
    // A token of the root catalog's cursor space resumes there. Anything else (a
    // mount-name token, none, one this server did not issue) starts in the mount
    // names, after the one it names if any.
    let root_space = paging::listing(&root.space, "namespaces", &[]);
    let root_cursor = token.and_then(|t| tokens.verify(&root_space, t));
    let after_mount = token.and_then(|t| tokens.verify(MOUNTS_SPACE, t));
    let want = PageAsk::from_query(tokens, MOUNTS_SPACE, token, size).size().map(|w| w as usize);
    let full = |served: &Vec<paging::Name>| want.is_some_and(|w| served.len() >= w);
    let mut names = Vec::new();
    if root_cursor.is_none() {
        let mut examined = after_mount.clone();
        for (name, _) in state.mounts.named().filter(|(n, _)| after_mount.as_ref().is_none_or(|a| *n > a)) {
            if full(&names) {
                break;
            }
            if access.can_read(&Resource::Namespace(vec![name.clone()]))? {
                names.push(name.as_str().into());
            }
            examined = Some(name.clone());
        }
        if full(&names) {
            // Resume after the last mount name examined (the root catalog follows).
            let next_page_token = examined.map(|m| tokens.issue(MOUNTS_SPACE, &m));
            return Ok(ListNamespacesResponse { parent: vec![], names, next_page_token });
        }
    }
    let ask = match want {
        None => PageAsk::All,
        Some(w) => PageAsk::Page { after: root_cursor, size: (w - names.len()) as u32 },
    };
    let listing = Listing::Namespaces(None);
    let (more, next) = paging::fill(
        ask,
        |after, limit| backend_page(root, access, &[], &listing, after, limit),
        |why| root.stuck(&why),
    )
    .await?;
    names.extend(more);
    let next_page_token = next.map(|c| tokens.issue(&root_space, &c));
    Ok(ListNamespacesResponse { parent: vec![], names, next_page_token })
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
    let access = state.authz.access(&caller).await?;
    if parent.is_empty() {
        return list_top_level(&state, &access, q.page_token.as_deref(), q.page_size).await;
    }
    access.require(
        &Resource::Namespace(parent.clone()),
        Endpoint::ListNamespaces.privilege(),
        no_such_namespace(&parent),
    )?;
    let (mount, local) = state.mounts.route(&parent);
    let space = paging::listing(&mount.space, "namespaces", local);
    let ask = PageAsk::from_query(&state.tokens, &space, q.page_token.as_deref(), q.page_size);
    let listing = Listing::Namespaces((!local.is_empty()).then(|| local.to_vec()));
    let (names, next) = paging::fill(
        ask,
        |after, limit| backend_page(mount, &access, &parent, &listing, after, limit),
        |why| mount.stuck(&why),
    )
    .await?;
    let next_page_token = next.map(|cursor| state.tokens.issue(&space, &cursor));
    Ok(ListNamespacesResponse { parent, names, next_page_token })
}

pub async fn create(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    JsonBody(req, raw): JsonBody<CreateNamespaceRequest>,
) -> Result<Response, Error> {
    let ns = req.namespace;
    if ns.is_empty() || ns.iter().any(String::is_empty) {
        return Err(Error::BadRequest("the namespace must have at least one level, none empty".into()));
    }
    let tenant = caller.tenant.clone();
    let teller = state.teller(&caller);
    let access = state.authz.access(&caller).await?;
    let parent = &ns[..ns.len() - 1];
    if parent.is_empty() {
        access.require_create_root(&ns[0])?;
    } else {
        access.require(
            &Resource::Namespace(parent.to_vec()),
            Endpoint::CreateNamespace.privilege(),
            no_such_namespace(parent),
        )?;
    }
    let (mount, local) = state.mounts.route(&ns);
    let proposed = Proposed::of("create-namespace", local, "").with_properties(&req.properties);
    state.admit(&teller, mount, proposed.with_request(&raw)).await?;
    if mount.backend.forwards() && !local.is_empty() {
        if let Some(location) = req.properties.get("location") {
            forwarded::check_location(&state.mounts, mount, location, "the namespace location")?;
        }
        let mut body = forwarded::parse(&raw)?;
        body["namespace"] = serde_json::json!(local);
        let write = Request::new(Endpoint::CreateNamespace, forwarded::body(&body));
        let answer = forwarded::send(mount, &headers, write).await?;
        let properties = req.properties.into_iter().collect();
        teller.tell(vec![Operation::CreateNamespace { namespace: ns.clone(), properties }]).await;
        return Ok(forwarded::json(forwarded::restore_namespace(mount, &answer)?));
    }
    let at = Routed { mount, local, ns: &ns };
    let properties = req.properties.into_iter().collect();
    let stored = namespaces::create(&state.authz, &state.mounts, at, properties, tenant, &teller).await?;
    Ok(axum::Json(NamespaceResponse { namespace: ns, properties: stored.into_iter().collect() }).into_response())
}

pub async fn load(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path(raw): Path<String>,
) -> Result<impl IntoResponse, Error> {
    let ns = parse_namespace(&raw)?;
    let access = state.authz.access(&caller).await?;
    access.require(&Resource::Namespace(ns.clone()), Endpoint::LoadNamespace.privilege(), no_such_namespace(&ns))?;
    let (mount, local) = state.mounts.route(&ns);
    let properties = namespaces::load_located(Routed { mount, local, ns: &ns }).await?;
    Ok(axum::Json(NamespaceResponse { properties: properties.into_iter().collect(), namespace: ns }))
}

pub async fn exists(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path(raw): Path<String>,
) -> Result<StatusCode, Error> {
    let ns = parse_namespace(&raw)?;
    let access = state.authz.access(&caller).await?;
    access.require(&Resource::Namespace(ns.clone()), Endpoint::NamespaceExists.privilege(), no_such_namespace(&ns))?;
    let (mount, local) = state.mounts.route(&ns);
    namespaces::load(Routed { mount, local, ns: &ns }).await.map(|_| StatusCode::NO_CONTENT)
}

pub async fn drop(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    Path(raw): Path<String>,
) -> Result<StatusCode, Error> {
    let ns = parse_namespace(&raw)?;
    let resource = Resource::Namespace(ns.clone());
    let teller = state.teller(&caller);
    state.authz.access(&caller).await?.require(
        &resource,
        Endpoint::DropNamespace.privilege(),
        no_such_namespace(&ns),
    )?;
    let (mount, local) = state.mounts.route(&ns);
    state.admit(&teller, mount, Proposed::of("drop-namespace", local, "")).await?;
    if mount.backend.forwards() && !local.is_empty() {
        let write = Request::new(Endpoint::DropNamespace, Default::default()).in_namespace(local);
        forwarded::drop(&state, mount, &headers, write, resource).await?;
        teller.tell(vec![Operation::DropNamespace { namespace: ns }]).await;
        return Ok(StatusCode::NO_CONTENT);
    }
    namespaces::drop(&state.authz, &state.mounts, Routed { mount, local, ns: &ns }, &teller).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub async fn update_properties(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    Path(raw): Path<String>,
    JsonBody(req, raw_body): JsonBody<UpdatePropertiesRequest>,
) -> Result<Response, Error> {
    let ns = parse_namespace(&raw)?;
    if let Some(key) = req.removals.iter().find(|k| req.updates.contains_key(*k)) {
        return Err(Error::Unprocessable(format!("property {key:?} is both removed and updated")));
    }
    let teller = state.teller(&caller);
    state.authz.access(&caller).await?.require(
        &Resource::Namespace(ns.clone()),
        Endpoint::UpdateNamespaceProperties.privilege(),
        no_such_namespace(&ns),
    )?;
    let (mount, local) = state.mounts.route(&ns);
    let proposed = Proposed::of("update-namespace-properties", local, "").with_properties(&req.updates);
    state.admit(&teller, mount, proposed.with_request(&raw_body)).await?;
    if mount.backend.forwards() && !local.is_empty() {
        if let Some(location) = req.updates.get("location") {
            forwarded::check_location(&state.mounts, mount, location, "the namespace location")?;
        }
        let write = Request::new(Endpoint::UpdateNamespaceProperties, raw_body).in_namespace(local);
        let answer = forwarded::send(mount, &headers, write).await?;
        let (updated, removed) = (req.updates.into_keys().collect(), req.removals);
        teller.tell(vec![Operation::UpdateNamespaceProperties { namespace: ns, updated, removed }]).await;
        return Ok(forwarded::json(answer));
    }
    let at = Routed { mount, local, ns: &ns };
    let result = namespaces::update_properties(at, req.removals, req.updates).await?;
    let (updated, removed) = (result.updated.clone(), result.removed.clone());
    teller.tell(vec![Operation::UpdateNamespaceProperties { namespace: ns, updated, removed }]).await;
    Ok(axum::Json(UpdatePropertiesResponse {
        updated: result.updated,
        removed: result.removed,
        missing: result.missing,
    })
    .into_response())
}
