//! The native Rustberg catalog backend.
//!
//! Namespaces with properties, and table and view pointers (metadata location
//! plus the metadata JSON, so a load is one lookup), all in the kv key space the
//! host hands the mount. Every change is one conditional kv commit, which makes
//! commits compare-and-swap and renames atomic. The component keeps no state
//! between calls.
//!
//! (Over 400 lines: the component's exports, one short function each over the key
//! space, in the contract's order.)

mod codec;
mod keys;

wit_bindgen::generate!({
    world: "listing-kv-backend",
    path: "../../wit",
});

use exports::rustberg::catalog::backend::Guest;
use exports::rustberg::catalog::key_listings::Guest as KeyListings;
use rustberg::catalog::kv::{self, Check, Entry, Write};
use rustberg::catalog::types::{
    Description, Error, Features, Ident, NameEntry, NamePage, NamespaceEntry, NamespacePage, PageRequest, Pointer,
    Properties, PropertiesUpdate, TableCommit,
};

/// How often an optimistic read-modify-write is retried when a concurrent writer
/// changed the key in between. Each retry re-reads, so no update is lost.
const RETRIES: usize = 8;

struct Native;

fn dotted(parts: &[String]) -> String {
    parts.join(".")
}

fn what(kind: u8) -> &'static str {
    if kind == keys::VIEW {
        "view"
    } else {
        "table"
    }
}

fn other(kind: u8) -> u8 {
    if kind == keys::VIEW {
        keys::TABLE
    } else {
        keys::VIEW
    }
}

fn get(key: &[u8]) -> Result<Option<Entry>, Error> {
    kv::get(key)
}

fn exists(key: &[u8]) -> Result<bool, Error> {
    Ok(get(key)?.is_some())
}

fn require_namespace(ns: &[String]) -> Result<(), Error> {
    if exists(&keys::namespace(ns)?)? {
        Ok(())
    } else {
        Err(Error::NotFound(format!("namespace {} does not exist", dotted(ns))))
    }
}

fn has_any(prefix: &[u8]) -> Result<bool, Error> {
    Ok(!kv::scan(prefix, Some(&keys::prefix_end(prefix)), 1)?.is_empty())
}

/// Scans one page under `prefix` and pairs each item name with its cursor.
fn scan_names(prefix: &[u8], page: &PageRequest) -> Result<(Vec<String>, bool), Error> {
    let start = match &page.after {
        Some(cursor) => keys::resume_after(prefix, cursor),
        None => prefix.to_vec(),
    };
    let limit = page.limit.max(1);
    // One extra row tells whether anything follows the page.
    let rows = kv::scan(&start, Some(&keys::prefix_end(prefix)), limit.saturating_add(1))?;
    let done = rows.len() <= limit as usize;
    let names = rows
        .into_iter()
        .take(limit as usize)
        .map(|e| {
            // The name is the key's tail: moved down in the key's own buffer, not copied.
            let mut name = e.key;
            name.drain(..prefix.len());
            String::from_utf8(name).map_err(|_| Error::Internal("a stored key is not UTF-8".into()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((names, done))
}

fn load_pointer(kind: u8, id: &Ident) -> Result<(Entry, Pointer), Error> {
    let key = keys::member(kind, &id.namespace, &id.name)?;
    match get(&key)? {
        Some(entry) => {
            let pointer = codec::decode_pointer(&entry.value)?;
            Ok((entry, pointer))
        }
        None => Err(Error::NotFound(format!("{} {}.{} does not exist", what(kind), dotted(&id.namespace), id.name))),
    }
}

/// The prefix of `parent`'s child namespaces, once `parent` is known to exist.
fn child_namespaces(parent: &[String]) -> Result<Vec<u8>, Error> {
    if !parent.is_empty() {
        require_namespace(parent)?;
    }
    keys::child_namespaces(parent)
}

/// The prefix of the tables or views (by `kind`) of `ns`, once `ns` is known to exist.
fn members(kind: u8, ns: &[String]) -> Result<Vec<u8>, Error> {
    require_namespace(ns)?;
    keys::members(kind, ns)
}

fn list_members(kind: u8, ns: &[String], page: &PageRequest) -> Result<NamePage, Error> {
    let (names, done) = scan_names(&members(kind, ns)?, page)?;
    let items = names.into_iter().map(|name| NameEntry { cursor: name.clone(), name }).collect();
    Ok(NamePage { items, done })
}

/// Explains why a create of a table or view lost, by looking again.
fn explain_create_conflict(kind: u8, id: &Ident) -> Error {
    let name = format!("{}.{}", dotted(&id.namespace), id.name);
    match (
        keys::namespace(&id.namespace).and_then(|k| exists(&k)),
        keys::member(kind, &id.namespace, &id.name).and_then(|k| exists(&k)),
        keys::member(other(kind), &id.namespace, &id.name).and_then(|k| exists(&k)),
    ) {
        (Ok(false), _, _) => Error::NotFound(format!("namespace {} does not exist", dotted(&id.namespace))),
        (_, Ok(true), _) => Error::AlreadyExists(format!("{} {name} already exists", what(kind))),
        (_, _, Ok(true)) => Error::AlreadyExists(format!("a {} named {name} already exists", what(other(kind)))),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => e,
        _ => Error::Conflict(format!("{} {name} changed concurrently", what(kind))),
    }
}

/// What is recorded of a table or view. A table's metadata JSON is not: the host
/// holds it (the metadata file, and memory), so loading a table moves only its
/// pointer across the boundary. A view's is kept beside its pointer.
fn record(kind: u8, mut state: Pointer) -> Vec<u8> {
    if kind == keys::TABLE {
        state.metadata_json.clear();
    }
    codec::encode_pointer(&state)
}

fn create_member(kind: u8, id: Ident, state: Pointer) -> Result<(), Error> {
    let ns_key = keys::namespace(&id.namespace)?;
    let key = keys::member(kind, &id.namespace, &id.name)?;
    let twin = keys::member(other(kind), &id.namespace, &id.name)?;
    let checks = [Check::Present(ns_key), Check::Absent(key.clone()), Check::Absent(twin)];
    let writes = [Write { key, value: Some(record(kind, state)) }];
    match kv::commit(&checks, &writes) {
        Err(Error::Conflict(_)) => Err(explain_create_conflict(kind, &id)),
        other => other,
    }
}

fn commit_member(kind: u8, id: Ident, expected: String, new: Pointer) -> Result<(), Error> {
    let (entry, current) = load_pointer(kind, &id)?;
    if current.metadata_location != expected {
        return Err(Error::Conflict(format!(
            "{} {}.{} is at {}, not {expected}",
            what(kind),
            dotted(&id.namespace),
            id.name,
            current.metadata_location
        )));
    }
    let checks = [Check::AtVersion((entry.key.clone(), entry.version))];
    let writes = [Write { key: entry.key, value: Some(record(kind, new)) }];
    kv::commit(&checks, &writes).map_err(|e| match e {
        Error::Conflict(_) => Error::Conflict(format!(
            "{} {}.{} was changed by a concurrent commit",
            what(kind),
            dotted(&id.namespace),
            id.name
        )),
        e => e,
    })
}

fn drop_member(kind: u8, id: Ident) -> Result<Pointer, Error> {
    for _ in 0..RETRIES {
        let (entry, pointer) = load_pointer(kind, &id)?;
        let checks = [Check::AtVersion((entry.key.clone(), entry.version))];
        let writes = [Write { key: entry.key, value: None }];
        match kv::commit(&checks, &writes) {
            Ok(()) => return Ok(pointer),
            Err(Error::Conflict(_)) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(Error::Conflict(format!("{} {} kept changing while being dropped", what(kind), id.name)))
}

fn rename_member(kind: u8, source: Ident, destination: Ident) -> Result<(), Error> {
    let (entry, pointer) = load_pointer(kind, &source)?;
    let dest_ns = keys::namespace(&destination.namespace)?;
    if !exists(&dest_ns)? {
        return Err(Error::NotFound(format!("namespace {} does not exist", dotted(&destination.namespace))));
    }
    let dest = keys::member(kind, &destination.namespace, &destination.name)?;
    let twin = keys::member(other(kind), &destination.namespace, &destination.name)?;
    if dest == entry.key {
        return Ok(());
    }
    let checks = [
        Check::AtVersion((entry.key.clone(), entry.version)),
        Check::Present(dest_ns),
        Check::Absent(dest.clone()),
        Check::Absent(twin),
    ];
    let writes =
        [Write { key: entry.key, value: None }, Write { key: dest, value: Some(codec::encode_pointer(&pointer)) }];
    match kv::commit(&checks, &writes) {
        Err(Error::Conflict(_)) => match explain_create_conflict(kind, &destination) {
            Error::Conflict(_) => {
                Err(Error::Conflict(format!("{} {} changed while being renamed", what(kind), source.name)))
            }
            e => Err(e),
        },
        other => other,
    }
}

impl Guest for Native {
    fn describe() -> Result<Description, Error> {
        // Everything a catalog does, and a pointer store over its key space and nothing
        // else: the host plans and vends from the warehouse, holds the metadata, and may
        // keep its answers while the keys are unchanged.
        let features = Features::WRITES
            | Features::NAMESPACE_PROPERTIES
            | Features::VIEWS
            | Features::RENAME
            | Features::MULTI_TABLE_COMMIT
            | Features::HOST_READABLE_MANIFESTS
            | Features::TABLE_LOCATION_ONLY
            | Features::ANSWERS_FROM_KEYS
            | Features::CHECKS_WHAT_IT_READ
            | Features::ONE_COMMIT_NAMESPACE_CHANGES;
        Ok(Description { features, remember: vec![] })
    }

    fn list_namespaces(parent: Option<Vec<String>>, page: PageRequest) -> Result<NamespacePage, Error> {
        let parent = parent.unwrap_or_default();
        let (names, done) = scan_names(&child_namespaces(&parent)?, &page)?;
        let items = names
            .into_iter()
            .map(|name| {
                let mut namespace = parent.clone();
                namespace.push(name.clone());
                NamespaceEntry { namespace, cursor: name }
            })
            .collect();
        Ok(NamespacePage { items, done })
    }

    fn load_namespace(ns: Vec<String>) -> Result<Properties, Error> {
        match get(&keys::namespace(&ns)?)? {
            Some(entry) => codec::decode_properties(&entry.value),
            None => Err(Error::NotFound(format!("namespace {} does not exist", dotted(&ns)))),
        }
    }

    fn create_namespace(ns: Vec<String>, props: Properties) -> Result<Properties, Error> {
        let key = keys::namespace(&ns)?;
        let mut checks = vec![Check::Absent(key.clone())];
        let parent = &ns[..ns.len() - 1];
        if !parent.is_empty() {
            checks.push(Check::Present(keys::namespace(parent)?));
        }
        let writes = [Write { key: key.clone(), value: Some(codec::encode_properties(&props)) }];
        match kv::commit(&checks, &writes) {
            Ok(()) => Ok(props),
            Err(Error::Conflict(_)) if exists(&key)? => {
                Err(Error::AlreadyExists(format!("namespace {} already exists", dotted(&ns))))
            }
            Err(Error::Conflict(_)) => {
                Err(Error::NotFound(format!("parent namespace {} does not exist", dotted(parent))))
            }
            Err(e) => Err(e),
        }
    }

    fn drop_namespace(ns: Vec<String>) -> Result<(), Error> {
        let key = keys::namespace(&ns)?;
        let children =
            [keys::child_namespaces(&ns)?, keys::members(keys::TABLE, &ns)?, keys::members(keys::VIEW, &ns)?];
        for _ in 0..RETRIES {
            let Some(entry) = get(&key)? else {
                return Err(Error::NotFound(format!("namespace {} does not exist", dotted(&ns))));
            };
            for prefix in &children {
                if has_any(prefix)? {
                    return Err(Error::Conflict(format!("namespace {} is not empty", dotted(&ns))));
                }
            }
            let mut checks = vec![Check::AtVersion((key.clone(), entry.version))];
            checks.extend(children.iter().cloned().map(Check::PrefixEmpty));
            match kv::commit(&checks, &[Write { key: key.clone(), value: None }]) {
                Ok(()) => return Ok(()),
                Err(Error::Conflict(_)) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(Error::Conflict(format!("namespace {} kept changing while being dropped", dotted(&ns))))
    }

    fn update_namespace_properties(
        ns: Vec<String>,
        removals: Vec<String>,
        updates: Properties,
    ) -> Result<PropertiesUpdate, Error> {
        let key = keys::namespace(&ns)?;
        for _ in 0..RETRIES {
            let Some(entry) = get(&key)? else {
                return Err(Error::NotFound(format!("namespace {} does not exist", dotted(&ns))));
            };
            let mut props = codec::decode_properties(&entry.value)?;
            let mut result = PropertiesUpdate { updated: vec![], removed: vec![], missing: vec![] };
            for k in &removals {
                let before = props.len();
                props.retain(|(pk, _)| pk != k);
                if props.len() < before {
                    result.removed.push(k.clone());
                } else {
                    result.missing.push(k.clone());
                }
            }
            for (k, v) in &updates {
                match props.iter_mut().find(|(pk, _)| pk == k) {
                    Some(slot) => slot.1 = v.clone(),
                    None => props.push((k.clone(), v.clone())),
                }
                result.updated.push(k.clone());
            }
            let checks = [Check::AtVersion((key.clone(), entry.version))];
            let writes = [Write { key: key.clone(), value: Some(codec::encode_properties(&props)) }];
            match kv::commit(&checks, &writes) {
                Ok(()) => return Ok(result),
                Err(Error::Conflict(_)) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(Error::Conflict(format!("namespace {} kept changing", dotted(&ns))))
    }

    fn list_tables(ns: Vec<String>, page: PageRequest) -> Result<NamePage, Error> {
        list_members(keys::TABLE, &ns, &page)
    }

    fn load_table(table: Ident, _access_delegation: Option<String>) -> Result<Pointer, Error> {
        load_pointer(keys::TABLE, &table).map(|(_, p)| p)
    }

    fn create_table(table: Ident, state: Pointer) -> Result<(), Error> {
        create_member(keys::TABLE, table, state)
    }

    fn commit_table(table: Ident, expected: String, new: Pointer) -> Result<(), Error> {
        commit_member(keys::TABLE, table, expected, new)
    }

    fn drop_table(table: Ident) -> Result<Pointer, Error> {
        drop_member(keys::TABLE, table)
    }

    fn rename_table(source: Ident, destination: Ident) -> Result<(), Error> {
        rename_member(keys::TABLE, source, destination)
    }

    fn list_views(ns: Vec<String>, page: PageRequest) -> Result<NamePage, Error> {
        list_members(keys::VIEW, &ns, &page)
    }

    fn load_view(view: Ident) -> Result<Pointer, Error> {
        load_pointer(keys::VIEW, &view).map(|(_, p)| p)
    }

    fn create_view(view: Ident, state: Pointer) -> Result<(), Error> {
        create_member(keys::VIEW, view, state)
    }

    fn commit_view(view: Ident, expected: String, new: Pointer) -> Result<(), Error> {
        commit_member(keys::VIEW, view, expected, new)
    }

    fn drop_view(view: Ident) -> Result<Pointer, Error> {
        drop_member(keys::VIEW, view)
    }

    fn rename_view(source: Ident, destination: Ident) -> Result<(), Error> {
        rename_member(keys::VIEW, source, destination)
    }

    fn commit_transaction(commits: Vec<TableCommit>) -> Result<(), Error> {
        let mut checks = Vec::with_capacity(commits.len());
        let mut writes = Vec::with_capacity(commits.len());
        for c in commits {
            let (entry, current) = load_pointer(keys::TABLE, &c.ident)?;
            if current.metadata_location != c.expected_metadata_location {
                return Err(Error::Conflict(format!(
                    "table {}.{} is at {}, not {}",
                    dotted(&c.ident.namespace),
                    c.ident.name,
                    current.metadata_location,
                    c.expected_metadata_location
                )));
            }
            checks.push(Check::AtVersion((entry.key.clone(), entry.version)));
            writes.push(Write { key: entry.key, value: Some(record(keys::TABLE, c.new)) });
        }
        kv::commit(&checks, &writes).map_err(|e| match e {
            Error::Conflict(_) => {
                Error::Conflict("a table in the transaction was changed by a concurrent commit".into())
            }
            e => e,
        })
    }
}

// Every listing is the keys under one prefix (keys.rs), so the host scans them itself.
impl KeyListings for Native {
    fn namespaces(parent: Option<Vec<String>>) -> Result<Vec<u8>, Error> {
        child_namespaces(parent.as_deref().unwrap_or_default())
    }

    fn tables(ns: Vec<String>) -> Result<Vec<u8>, Error> {
        members(keys::TABLE, &ns)
    }

    fn views(ns: Vec<String>) -> Result<Vec<u8>, Error> {
        members(keys::VIEW, &ns)
    }
}

export!(Native);
