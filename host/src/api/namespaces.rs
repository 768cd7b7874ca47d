//! Namespace routes.

use axum::extract::{Path, State as AxState};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Extension;

use super::listing_bodies::ListNamespacesResponse;
use super::members::no_such_namespace;
use super::model::{
    CreateNamespaceRequest, ListQuery, NamespaceResponse, UpdatePropertiesRequest, UpdatePropertiesResponse,
};
use super::{parse_namespace, AppState, Json, Query, State};
use crate::auth::Caller;
use crate::authz::{Access, Effect, Privilege, Resource};
use crate::error::Error;
use crate::mounts::Mount;
use crate::paging::{self, Batch, Entry, PageAsk};
use crate::plugins::bindings::PageRequest;
use crate::plugins::riders::{Ridden, Rider};
use crate::plugins::{BackendError, BackendErrorKind, Listing};
use crate::recovery;
use crate::storage::kv::Commit;
use crate::storage::location::Location;
use crate::storage::location_index::{ClaimId, ClaimKind};
use crate::tables::locations::{self, NewClaim, Placement};
use crate::tables::serial;

/// The cursor space of the mount names in a listing of the top level.
const MOUNTS_SPACE: &str = "mounts";

fn absent(ns: &[String]) -> impl FnOnce(String) -> Error + '_ {
    move |_| no_such_namespace(ns)()
}

/// Refuses to change a mount root: it is configuration, not a namespace of a backend.
fn refuse_mount_root(mount: &Mount, local: &[String], what: &str) -> Result<(), Error> {
    match &mount.name {
        Some(name) if local.is_empty() => {
            Err(Error::BadRequest(format!("{name} is the root of {}: it cannot {what}", mount.label())))
        }
        _ => Ok(()),
    }
}

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
        .map_err(|e| Error::from_backend(e, absent(parent)))?;
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
    let access = state.authz.access(caller.0).await?;
    if parent.is_empty() {
        return list_top_level(&state, &access, q.page_token.as_deref(), q.page_size).await;
    }
    access.require(&Resource::Namespace(parent.clone()), Privilege::Read, no_such_namespace(&parent))?;
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
    Json(req): Json<CreateNamespaceRequest>,
) -> Result<impl IntoResponse, Error> {
    let ns = req.namespace;
    if ns.is_empty() || ns.iter().any(String::is_empty) {
        return Err(Error::BadRequest("the namespace must have at least one level, none empty".into()));
    }
    let tenant = caller.0.tenant.clone();
    let access = state.authz.access(caller.0).await?;
    let parent = &ns[..ns.len() - 1];
    if parent.is_empty() {
        access.require_create_root(&ns[0])?;
    } else {
        access.require(&Resource::Namespace(parent.to_vec()), Privilege::Write, no_such_namespace(parent))?;
    }
    let (mount, local) = state.mounts.route(&ns);
    if local.is_empty() {
        return Err(Error::AlreadyExists(format!("Namespace already exists: {}: it is a mount", ns[0])));
    }
    mount.check_writable()?;
    let properties: Vec<(String, String)> = req.properties.into_iter().collect();
    // Creates of one name share its location's claim (see `tables::serial`).
    let _turn = serial::namespace_one_at_a_time(&mount.space, local).await;
    let stored = if mount.name.is_none() && parent.is_empty() {
        // New in the root catalog: its owner is the creator's tenant, recorded with it.
        create_root(&state, mount, local, properties, &ns, tenant).await?
    } else {
        create_nested(mount, local, properties, &ns).await?
    };
    Ok(axum::Json(NamespaceResponse { namespace: ns, properties: stored.into_iter().collect() }))
}

/// Creates a root namespace of the root catalog and records its owner. Where the
/// backend's commit can carry the owner and the location's claim (`riders`), all land
/// in that one commit. Otherwise, or when that commit is refused, the create runs under
/// an intent to own it: the intent and the claim are one commit; when either is
/// contested they are made one at a time, which tells which (and settles an earlier
/// create's intent).
async fn create_root(
    state: &AppState,
    mount: &Mount,
    local: &[String],
    mut properties: Vec<(String, String)>,
    ns: &[String],
    tenant: String,
) -> Result<Vec<(String, String)>, Error> {
    let placement = place(mount, local, &mut properties).await?;
    // The host key space: the owners' and the location claims' (one store).
    let space = state.authz.key_space();
    if mount.backend.carries_riders_to(space) {
        let mut commit = state.authz.ownership(&ns[0], &tenant);
        if let Some(placement) = &placement {
            commit = commit.join(claim_commit(mount, local, placement)?.0);
        }
        let rider = Rider { space: space.clone(), commit };
        if let Some(created) = create_carrying(mount, local, properties.clone(), ns, rider).await? {
            state.authz.learn_owner(&ns[0]).await?;
            return created;
        }
    }
    let own = Effect::Own { root: ns[0].clone(), tenant };
    let claimed = match &placement {
        Some(placement) => {
            let (claim, new) = claim_commit(mount, local, placement)?;
            state.authz.intend_with(own.clone(), claim).await?.map(|intent| (intent, Some(new)))
        }
        None => None,
    };
    match claimed {
        Some((intent, claim)) => {
            let created = create_claimed(mount, local, properties, ns, claim);
            recovery::carry_through(&state.authz, &state.mounts, intent, created).await
        }
        None => {
            let created = claim_and_create(mount, local, properties, ns, placement);
            recovery::with_intent(&state.authz, &state.mounts, own, created).await
        }
    }
}

/// Creates a namespace that is not a root of the root catalog: where the backend's
/// commit can carry the location's claim (`riders`), in that one commit; otherwise, or
/// when that commit is refused, the claim first and then the create.
async fn create_nested(
    mount: &Mount,
    local: &[String],
    mut properties: Vec<(String, String)>,
    ns: &[String],
) -> Result<Vec<(String, String)>, Error> {
    let placement = place(mount, local, &mut properties).await?;
    if let Some(placement) = &placement {
        let space = mount.warehouse()?.index().key_space();
        if mount.backend.carries_riders_to(space) {
            let rider = Rider { space: space.clone(), commit: claim_commit(mount, local, placement)?.0 };
            if let Some(created) = create_carrying(mount, local, properties.clone(), ns, rider).await? {
                return created;
            }
        }
    }
    claim_and_create(mount, local, properties, ns, placement).await
}

/// The commit that claims a new namespace's location under its name's id, to be made
/// with another (an intent, or a backend's commit), and the claim it makes new.
fn claim_commit(mount: &Mount, local: &[String], placement: &Placement) -> Result<(Commit, NewClaim), Error> {
    Ok(placement.claim_commit(mount.warehouse()?, ClaimKind::Namespace, claim_id(mount, local)))
}

/// Creates a namespace with `rider` riding the backend's commit: both land or neither
/// does. `None` when nothing was written because a check failed (the name is owned or
/// being created, the location is taken, the namespace exists, its parent does not) or
/// the backend made no commit: the create made one step at a time then tells which, and
/// answers. Otherwise the create's answer.
async fn create_carrying(
    mount: &Mount,
    local: &[String],
    properties: Vec<(String, String)>,
    ns: &[String],
    rider: Rider,
) -> Result<Option<Result<Vec<(String, String)>, Error>>, Error> {
    let (created, ridden) = mount.backend.create_namespace_carrying(local.to_vec(), properties, rider).await;
    match ridden {
        Ridden::Refused | Ridden::NotCarried if created.is_err() => Ok(None),
        Ridden::Refused | Ridden::NotCarried => {
            Err(Error::Internal(format!("{} created a namespace without its commit", mount.label())))
        }
        // Written with the namespace, or neither was.
        Ridden::Landed | Ridden::Unknown => Ok(Some(created.map_err(|e| create_failed(e, ns)))),
    }
}

/// The same namespace always claims under the same id, so a create retried after an
/// unknown outcome finds its own claim.
fn claim_id(mount: &Mount, local: &[String]) -> ClaimId {
    ClaimId::of_namespace(&mount.space, local)
}

/// Where a new namespace is, when the host places it: not where the store assigns
/// table locations (namespaces have none to claim there).
async fn place(
    mount: &Mount,
    local: &[String],
    properties: &mut [(String, String)],
) -> Result<Option<Placement>, Error> {
    match mount.warehouse.as_ref().filter(|w| !w.assigned()) {
        Some(_) => Ok(Some(locations::place_namespace(mount, local, properties).await?)),
        None => Ok(None),
    }
}

/// Claims a new namespace's location (if placed) and creates it in its backend; the
/// stored properties.
async fn claim_and_create(
    mount: &Mount,
    local: &[String],
    properties: Vec<(String, String)>,
    ns: &[String],
    placement: Option<Placement>,
) -> Result<Vec<(String, String)>, Error> {
    let Some(placement) = placement else {
        return create_claimed(mount, local, properties, ns, None).await;
    };
    let (warehouse, id) = (mount.warehouse()?, claim_id(mount, local));
    let claim = match placement.claim(warehouse, ClaimKind::Namespace, id).await {
        Ok(claim) => claim,
        // Another namespace's location property, or a table's, took it.
        Err(e) => {
            return Err(match mount.backend.load_namespace(local.to_vec()).await {
                Ok(_) => already_exists(ns),
                Err(found) if found.kind == BackendErrorKind::NotFound => e,
                Err(failed) => Error::from_backend(failed, absent(ns)),
            })
        }
    };
    let held_before = claim.is_none();
    let stored = create_claimed(mount, local, properties, ns, claim).await?;
    if held_before {
        // The claim was there already (a retry's, or a dropped namespace's of this name
        // that another host sharing the store was releasing): make sure it still is.
        if let Err(e) = placement.claim(warehouse, ClaimKind::Namespace, id).await {
            undo_create(mount, local).await;
            return Err(e);
        }
    }
    Ok(stored)
}

/// Drops a namespace just created whose location was taken meanwhile.
async fn undo_create(mount: &Mount, local: &[String]) {
    if let Err(e) = mount.backend.drop_namespace(local.to_vec()).await {
        tracing::warn!(mount = mount.label(), error = %e, "could not drop a namespace whose location was taken");
    }
}

/// Creates a new namespace in its backend, its location claimed (`claim`: a new claim,
/// released if the create did not apply); the stored properties.
async fn create_claimed(
    mount: &Mount,
    local: &[String],
    properties: Vec<(String, String)>,
    ns: &[String],
    claim: Option<NewClaim>,
) -> Result<Vec<(String, String)>, Error> {
    match mount.backend.create_namespace(local.to_vec(), properties).await {
        Ok(stored) => Ok(stored),
        Err(e) => {
            if let (Some(claim), Ok(warehouse)) = (claim.filter(|_| e.kind.did_not_apply()), mount.warehouse()) {
                // A create of the same name on another host may have found this claim
                // made (it has the name's id) and landed first, relying on it.
                if e.kind != BackendErrorKind::AlreadyExists || !exists_at(mount, local, &claim.location).await {
                    claim.release(warehouse).await;
                }
            }
            Err(create_failed(e, ns))
        }
    }
}

/// The answer to a failed create of `ns`.
fn create_failed(e: BackendError, ns: &[String]) -> Error {
    match e.kind {
        BackendErrorKind::AlreadyExists => already_exists(ns),
        _ => Error::from_backend(e, absent(&ns[..ns.len() - 1])),
    }
}

/// Whether the existing namespace `local` is at `location`, so that a claim there under
/// its name's id is its own; kept (true) when that cannot be read.
async fn exists_at(mount: &Mount, local: &[String], location: &Location) -> bool {
    match mount.backend.load_namespace(local.to_vec()).await {
        Ok(mut properties) => match locations::place_namespace(mount, local, &mut properties).await {
            Ok(placement) => placement.location == *location,
            Err(_) => true,
        },
        Err(e) => e.kind != BackendErrorKind::NotFound,
    }
}

fn already_exists(ns: &[String]) -> Error {
    Error::namespace_exists(ns.join("."))
}

pub async fn load(
    AxState(state): State,
    Extension(caller): Extension<Caller>,
    Path(raw): Path<String>,
) -> Result<impl IntoResponse, Error> {
    let ns = parse_namespace(&raw)?;
    let access = state.authz.access(caller.0).await?;
    access.require(&Resource::Namespace(ns.clone()), Privilege::Read, no_such_namespace(&ns))?;
    let (mount, local) = state.mounts.route(&ns);
    if local.is_empty() {
        // A mount root is synthetic: it exists because the mount does.
        return Ok(axum::Json(NamespaceResponse { namespace: ns, properties: Default::default() }));
    }
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
    state.authz.access(caller.0).await?.require(&resource, Privilege::Write, no_such_namespace(&ns))?;
    let (mount, local) = state.mounts.route(&ns);
    refuse_mount_root(mount, local, "be dropped")?;
    mount.check_writable()?;
    // A create of the name just after the drop would share the claim released below.
    let _turn = serial::namespace_one_at_a_time(&mount.space, local).await;
    let claim = ClaimId::of_namespace(&mount.space, local);
    let failed = |e: BackendError| match e.kind {
        BackendErrorKind::Conflict => Error::NamespaceNotEmpty(format!("namespace {} is not empty", ns.join("."))),
        _ => Error::from_backend(e, absent(&ns)),
    };
    // Where the backend's commit can carry them, the grants, owner and claim go with it
    // (the host key space holds all three: one location index serves every warehouse).
    let space = state.authz.key_space();
    if mount.backend.carries_riders_to(space) {
        let (mut commit, forgotten) = state.authz.forgetting(&resource).await?;
        if let Some(warehouse) = &mount.warehouse {
            let release = warehouse.index().release_commit(claim).await.map_err(|e| Error::Internal(e.to_string()))?;
            commit = commit.join(release);
        }
        let (dropped, ridden) =
            mount.backend.drop_namespace_carrying(local.to_vec(), Rider { space: space.clone(), commit }).await;
        if matches!(ridden, Ridden::Landed | Ridden::Unknown) {
            // What the store now holds, written or not.
            state.authz.learn(&forgotten).await?;
        }
        return match (dropped, ridden) {
            (Ok(()), Ridden::Landed) => Ok(StatusCode::NO_CONTENT),
            (Ok(()), _) => Err(Error::Internal(format!("{} dropped a namespace without its commit", mount.label()))),
            (Err(e), _) => Err(failed(e)),
        };
    }
    let dropped = async { mount.backend.drop_namespace(local.to_vec()).await.map_err(failed) };
    // Nothing created later under this name may inherit its grants or its owner.
    recovery::with_intent(&state.authz, &state.mounts, Effect::Forget { resource }, dropped).await?;
    if let Some(warehouse) = &mount.warehouse {
        locations::release_id(warehouse, &claim).await;
    }
    Ok(StatusCode::NO_CONTENT)
}

/// A namespace's location is set when it is created: its tables and views were
/// placed and claimed under it, so changing it later is refused.
async fn refuse_location_change(
    mount: &Mount,
    local: &[String],
    updates: &std::collections::HashMap<String, String>,
    removals: &[String],
    ns: &[String],
) -> Result<(), Error> {
    let key = locations::LOCATION_PROPERTY;
    if !updates.contains_key(key) && !removals.iter().any(|k| k == key) {
        return Ok(());
    }
    let current = mount.backend.load_namespace(local.to_vec()).await.map_err(|e| Error::from_backend(e, absent(ns)))?;
    let current = current.into_iter().find(|(k, _)| k == key).map(|(_, v)| v);
    if updates.get(key).is_some_and(|new| Some(new) == current.as_ref()) && !removals.iter().any(|k| k == key) {
        return Ok(());
    }
    Err(Error::BadRequest(format!(
        "the location of namespace {} is set when it is created and cannot change",
        ns.join(".")
    )))
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
    state.authz.access(caller.0).await?.require(
        &Resource::Namespace(ns.clone()),
        Privilege::Write,
        no_such_namespace(&ns),
    )?;
    let (mount, local) = state.mounts.route(&ns);
    refuse_mount_root(mount, local, "have its properties changed")?;
    mount.check_writable()?;
    refuse_location_change(mount, local, &req.updates, &req.removals, &ns).await?;
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
