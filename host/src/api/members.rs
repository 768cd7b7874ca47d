//! What tables and views share: listing them (filtered, paged) and renaming them
//! (inside one backend only). They differ only in the backend calls that serve them
//! and in how a grant names them.

use axum::http::StatusCode;

use super::forwarded;
use super::listing_bodies::ListTablesResponse;
use super::model::{ListQuery, RenameTableRequest};
use super::{parse_namespace, AppState, Endpoint};
use crate::auth::Caller;
use crate::authz::{Access, Effect, Privilege, Resource};
use crate::backends::Listing;
use crate::error::Error;
use crate::events::event::{Identifier, Renamed};
use crate::events::Operation;
use crate::hooks::Proposed;
use crate::mounts::Mount;
use crate::paging::{self, Batch, Entry, PageAsk};
use crate::recovery;
use crate::sandbox::bindings::{Ident, PageRequest};
use crate::tables;

/// Tables or views.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    Table,
    View,
}

impl Kind {
    pub fn resource(self, namespace: &[String], name: &str) -> Resource {
        self.named(namespace.to_vec(), name.to_string())
    }

    pub fn named(self, namespace: Vec<String>, name: String) -> Resource {
        match self {
            Kind::Table => Resource::Table { namespace, name },
            Kind::View => Resource::View { namespace, name },
        }
    }

    /// "Does not exist", said the way the spec names it for this kind (formatted only
    /// when it is said: the check it goes with runs on every request).
    pub fn missing<'a>(self, namespace: &'a [String], name: &'a str) -> impl FnOnce() -> Error + 'a {
        move || {
            let what = format!("{}.{name}", namespace.join("."));
            match self {
                Kind::Table => Error::no_such_table(what),
                Kind::View => Error::no_such_view(what),
            }
        }
    }
}

/// A table or view the caller may act on, in its mount, with the caller's access as
/// it was read for the check (a vend after a load decides with it, not a second read).
pub struct Resolved<'s> {
    pub mount: &'s Mount,
    pub ident: Ident,
    pub access: Access,
}

impl Resolved<'_> {
    /// The namespace as the client names it (the mount name restored), without parsing
    /// the path again.
    pub fn namespace(&self) -> Vec<String> {
        self.mount.restore(self.ident.namespace.clone())
    }

    /// The table or view as a grant names it.
    pub fn resource(&self, kind: Kind) -> Resource {
        kind.named(self.namespace(), self.ident.name.clone())
    }
}

/// Checks that the caller holds what `endpoint` demands on a table or view and resolves
/// it to its mount: a mount root holds none, and a write under a read-only mount is
/// refused.
pub async fn resolve<'s>(
    state: &'s AppState,
    caller: Caller,
    raw_ns: &str,
    name: String,
    endpoint: Endpoint,
    kind: Kind,
) -> Result<Resolved<'s>, Error> {
    // An empty segment is the empty namespace (it has no level to parse).
    let namespace = if raw_ns.is_empty() { Vec::new() } else { parse_namespace(raw_ns)? };
    resolve_parsed(state, caller, namespace, name, endpoint, kind).await
}

/// As [`resolve`], for a namespace the handler has parsed already.
pub async fn resolve_parsed<'s>(
    state: &'s AppState,
    caller: Caller,
    namespace: Vec<String>,
    name: String,
    endpoint: Endpoint,
    kind: Kind,
) -> Result<Resolved<'s>, Error> {
    let access = state.authz.access(&caller).await?;
    let (mount, ident) = resolve_with(state, &access, namespace, name, endpoint.privilege(), kind)?;
    Ok(Resolved { mount, ident, access })
}

/// As [`resolve`], for a namespace already parsed and a caller's access already read
/// (a transaction resolves each of its tables with one).
pub fn resolve_with<'s>(
    state: &'s AppState,
    access: &Access,
    namespace: Vec<String>,
    name: String,
    needed: Privilege,
    kind: Kind,
) -> Result<(&'s Mount, Ident), Error> {
    if namespace.is_empty() {
        // The empty namespace holds nothing. Spark asks it when a name could be a metadata
        // table (`db.history` as table `db`'s history): only "no such table" lets it go on.
        return Err(kind.missing(&[], &name)());
    }
    // The resource is made of the parsed names, and gives them back after the check:
    // copying them for it was a tenth of a loadTable's allocations.
    let resource = kind.named(namespace, name);
    let (ns, name) = (resource.namespace(), resource.name().unwrap_or_default());
    access.require(&resource, needed, kind.missing(ns, name))?;
    let (mount, local) = state.mounts.route_container(ns)?;
    if needed >= Privilege::Write {
        mount.check_writable()?;
    }
    // The mount's own names are what is left after its name.
    let mount_levels = ns.len() - local.len();
    let (mut namespace, name) = resource.into_parts();
    namespace.drain(..mount_levels);
    Ok((mount, Ident { namespace, name: name.unwrap_or_default() }))
}

/// Checks write access to the namespace a new table or view goes into and resolves it:
/// its mount, its names there, and the caller's access.
pub async fn resolve_namespace<'s>(
    state: &'s AppState,
    caller: Caller,
    ns: &[String],
) -> Result<(&'s Mount, Vec<String>, Access), Error> {
    let access = state.authz.access(&caller).await?;
    access.require(&Resource::Namespace(ns.to_vec()), Privilege::Write, no_such_namespace(ns))?;
    let (mount, local) = state.mounts.route_container(ns)?;
    mount.check_writable()?;
    Ok((mount, local.to_vec(), access))
}

pub fn no_such_namespace(ns: &[String]) -> impl FnOnce() -> Error + '_ {
    move || Error::no_such_namespace(ns.join("."))
}

/// Lists the tables or views of a namespace that the caller may read.
pub async fn list(
    state: &AppState,
    caller: Caller,
    endpoint: Endpoint,
    raw: &str,
    q: ListQuery,
    kind: Kind,
) -> Result<ListTablesResponse, Error> {
    let ns = parse_namespace(raw)?;
    let access = state.authz.access(&caller).await?;
    access.require(&Resource::Namespace(ns.clone()), endpoint.privilege(), no_such_namespace(&ns))?;
    let (mount, local) = state.mounts.route(&ns);
    if local.is_empty() {
        // A mount root holds namespaces only.
        return Ok(ListTablesResponse { namespace: ns, names: vec![], next_page_token: None });
    }
    let filtered = !access.can_read_all_in(&ns);
    let what = match kind {
        Kind::Table => "tables",
        Kind::View => "views",
    };
    let space = paging::listing(&mount.space, what, local);
    let ask = PageAsk::from_query(&state.tokens, &space, q.page_token.as_deref(), q.page_size);
    let listing = match kind {
        Kind::Table => Listing::Tables(local.to_vec()),
        Kind::View => Listing::Views(local.to_vec()),
    };
    let (names, next) = paging::fill(
        ask,
        |after, limit| {
            let (listing, access, ns) = (&listing, &access, &ns);
            async move {
                let listed = mount
                    .backend
                    .list(listing, PageRequest { after, limit })
                    .await
                    .map_err(|e| Error::from_backend(e, |_| no_such_namespace(ns)()))?;
                let mut entries = Vec::with_capacity(listed.items.len());
                for item in listed.items {
                    let Some(name) = item.name else {
                        entries.extend(item.cursor.map(Entry::Hidden));
                        continue;
                    };
                    let visible = !filtered || access.can_read(&kind.resource(ns, &name))?;
                    entries.push(Entry::new(name, item.cursor, visible));
                }
                Ok::<_, Error>(Batch { entries, done: listed.done })
            }
        },
        |why| mount.stuck(&why),
    )
    .await?;
    let next_page_token = next.map(|cursor| state.tokens.issue(&space, &cursor));
    Ok(ListTablesResponse { namespace: ns, names, next_page_token })
}

/// Renames a table or view. Both sides must be in one backend: a rename across mounts
/// (or between a mount and the root catalog) answers 501 naming both.
pub async fn rename(
    state: &AppState,
    caller: Caller,
    endpoint: Endpoint,
    headers: &axum::http::HeaderMap,
    req: RenameTableRequest,
    kind: Kind,
) -> Result<StatusCode, Error> {
    let (source, destination) = (&req.source, &req.destination);
    if source.namespace.iter().chain(&destination.namespace).any(String::is_empty) {
        return Err(Error::BadRequest("namespace levels must not be empty".into()));
    }
    let access = state.authz.access(&caller).await?;
    let teller = state.teller(&caller);
    let from = kind.resource(&source.namespace, &source.name);
    let to = kind.resource(&destination.namespace, &destination.name);
    let needed = endpoint.privilege();
    access.require(&from, needed, kind.missing(&source.namespace, &source.name))?;
    let destination_ns = Resource::Namespace(destination.namespace.clone());
    access.require(&destination_ns, needed, no_such_namespace(&destination.namespace))?;
    if matches!(kind, Kind::Table) {
        // A writer a read policy restricts may not move the table out from under it (a
        // namespace's policy would no longer cover it).
        super::credentials::refuse_restricted(&access, &from, "renameTable")?;
    }
    let (mount, from_local) = state.mounts.route_container(&source.namespace)?;
    let (to_mount, to_local) = state.mounts.route_container(&destination.namespace)?;
    if !std::ptr::eq(mount, to_mount) {
        return Err(Error::Unsupported(format!(
            "cannot rename across mounts: from {} to {}",
            mount.label(),
            to_mount.label()
        )));
    }
    mount.check_writable()?;
    let local_source = Ident { namespace: from_local.to_vec(), name: source.name.clone() };
    let local_destination = Ident { namespace: to_local.to_vec(), name: destination.name.clone() };
    let operation = match kind {
        Kind::Table => "rename-table",
        Kind::View => "rename-view",
    };
    if !state.gates.is_empty() {
        let asked = serde_json::json!({
            "source": { "namespace": source.namespace, "name": source.name },
            "destination": { "namespace": destination.namespace, "name": destination.name },
        });
        let asked = asked.to_string();
        let proposed = Proposed::of(operation, &local_source.namespace, &local_source.name);
        let proposed = proposed.with_request(asked.as_bytes());
        state.admit(&teller, mount, proposed).await?;
    }
    let renamed = async {
        if mount.backend.forwards() {
            let body = serde_json::json!({
                "source": { "namespace": from_local, "name": source.name },
                "destination": { "namespace": to_local, "name": destination.name },
            });
            let write = forwarded::Request::new(endpoint, forwarded::body(&body));
            return forwarded::send(mount, headers, write).await.map(|_| ());
        }
        match kind {
            Kind::Table => tables::rename(mount, &local_source, &local_destination).await,
            Kind::View => tables::views::rename(mount, &local_source, &local_destination).await,
        }
    };
    // The grants follow the new name, or stay if the rename did not happen.
    let effect = Effect::Move { from, to };
    recovery::with_intent(&state.authz, &state.mounts, effect, renamed).await?;
    let uuid = renamed_uuid(mount, kind, &local_destination).await;
    let name =
        |id: &super::model::TableIdentifier| Identifier { namespace: id.namespace.clone(), name: id.name.clone() };
    let renamed = Renamed { source: name(source), destination: name(destination), uuid };
    let operation = match kind {
        Kind::Table => Operation::RenameTable(renamed),
        Kind::View => Operation::RenameView(renamed),
    };
    teller.tell(vec![operation]).await;
    Ok(StatusCode::NO_CONTENT)
}

/// The uuid of what a rename moved to `destination`, for its event: read back from its
/// metadata (empty when that cannot be read: the rename stands).
async fn renamed_uuid(mount: &Mount, kind: Kind, destination: &Ident) -> String {
    let pointer = match kind {
        Kind::Table => tables::load(mount, destination, None).await.map(|p| (*p).clone()),
        Kind::View => tables::views::load(mount, destination).await,
    };
    match pointer {
        Ok(pointer) if !pointer.metadata_json.is_empty() => tables::telling::uuid_of(&pointer),
        Ok(pointer) => match tables::servable(mount, pointer).await {
            Ok(loaded) => tables::telling::uuid_in(&loaded.held.json),
            Err(_) => String::new(),
        },
        Err(_) => String::new(),
    }
}
