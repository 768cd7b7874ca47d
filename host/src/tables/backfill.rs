//! Claims, once, the locations of namespaces, tables and views that existed before
//! the location index did, so that no new location can overlap them.
//!
//! It walks every mount that has a warehouse here, once per host store (a key marks
//! it done); a host that stops half-way, or finds a mount unreachable, walks again
//! at its next start and skips what it claimed. Something that cannot be claimed
//! (an older table overlapping another) is logged and left as it is.

use super::held;
use super::locations::{self, Placement};
use crate::error::Error;
use crate::mounts::{Mount, Mounts};
use crate::sandbox::bindings::{Ident, PageRequest};
use crate::sandbox::BackendErrorKind;
use crate::storage::kv::{KvStore, Write};
use crate::storage::location::Location;
use crate::storage::location_index::{ClaimId, ClaimKind};

/// Marks the backfill done in the host's key space.
const DONE: &[u8] = b"location-index/backfilled";
/// How many names one backend call lists.
const PAGE: u32 = 1000;

/// Claims what existed before the index, unless that was done already.
pub async fn backfill(mounts: &Mounts, host: &KvStore) -> Result<(), Error> {
    let store = |e: crate::storage::kv::KvError| Error::Unavailable(e.to_string());
    if host.get(DONE).await.map_err(store)?.is_some() {
        return Ok(());
    }
    let (mut claimed, mut complete) = (0, true);
    // A warehouse whose store assigns table locations gives each table a bucket of its
    // own: nothing there can overlap, and its namespaces have no location.
    for mount in mounts.all().filter(|m| m.warehouse.as_ref().is_some_and(|w| !w.assigned())) {
        match walk(mount).await {
            Ok(n) => claimed += n,
            Err(e) => {
                complete = false;
                tracing::warn!(mount = mount.label(), error = %e, "location index: cannot walk the mount; trying again at the next start");
            }
        }
    }
    if complete {
        host.commit(&[], &[Write { key: DONE.to_vec(), value: Some(vec![]) }]).await.map_err(store)?;
    }
    println!("rustberg: location index built: {claimed} existing locations claimed");
    Ok(())
}

/// Claims every namespace, table and view of one mount, outermost namespaces first.
async fn walk(mount: &Mount) -> Result<usize, Error> {
    let mut claimed = 0;
    let mut parents: Vec<Option<Vec<String>>> = vec![None];
    while let Some(parent) = parents.pop() {
        let mut after = None;
        loop {
            let page = mount
                .backend
                .list_namespaces(parent.clone(), PageRequest { after: after.take(), limit: PAGE })
                .await
                .map_err(|e| Error::from_backend(e, Error::NotFound))?;
            for entry in &page.items {
                claimed += namespace(mount, &entry.namespace).await?;
                parents.push(Some(entry.namespace.clone()));
            }
            match page.items.last() {
                Some(last) if !page.done => after = Some(last.cursor.clone()),
                _ => break,
            }
        }
    }
    Ok(claimed)
}

/// Claims one namespace and the tables and views directly in it.
async fn namespace(mount: &Mount, ns: &[String]) -> Result<usize, Error> {
    let warehouse = mount.warehouse()?;
    let chain = match locations::chain(mount, ns).await {
        Ok(chain) => chain,
        Err(e) => {
            tracing::warn!(mount = mount.label(), namespace = %ns.join("."), error = %e, "location index: not claimed");
            return Ok(0);
        }
    };
    let mut claimed = 0;
    let own = Placement { location: chain.own().clone(), chain, reserved: None };
    let id = ClaimId::of_namespace(&mount.space, ns);
    claimed += usize::from(logged(own.claim(warehouse, ClaimKind::Namespace, id).await, mount, ns).is_some());
    for kind in [ClaimKind::Table, ClaimKind::View] {
        let mut after = None;
        loop {
            let request = PageRequest { after: after.take(), limit: PAGE };
            let page = match kind {
                ClaimKind::View => mount.backend.list_views(ns.to_vec(), request).await,
                _ => mount.backend.list_tables(ns.to_vec(), request).await,
            };
            let page = match page {
                Ok(page) => page,
                // A backend without views (or tables) has none to claim.
                Err(e) if e.kind == BackendErrorKind::Unsupported => break,
                Err(e) => return Err(Error::from_backend(e, Error::NotFound)),
            };
            for entry in &page.items {
                let ident = Ident { namespace: ns.to_vec(), name: entry.name.clone() };
                claimed += member(mount, &ident, kind).await;
            }
            match page.items.last() {
                Some(last) if !page.done => after = Some(last.cursor.clone()),
                _ => break,
            }
        }
    }
    Ok(claimed)
}

/// Claims one table's or view's location, where nothing claims it yet. Its
/// namespaces are not checked: an older table may lie anywhere in the warehouse.
async fn member(mount: &Mount, ident: &Ident, kind: ClaimKind) -> usize {
    let location = match kind {
        ClaimKind::View => match mount.backend.load_view(ident.clone()).await {
            Ok(pointer) => {
                locations::recorded_location(pointer.metadata_json.as_bytes()).ok().filter(|l| !l.is_empty())
            }
            Err(_) => None,
        },
        // A table's pointer may not carry its metadata: the host holds it.
        _ => match mount.backend.load_table(ident, None).await {
            Ok(pointer) => held::current_location(mount, &pointer).await.ok(),
            Err(_) => None,
        },
    };
    let location = match location {
        Some(location) => location,
        None => {
            tracing::warn!(mount = mount.label(), name = %ident.name, "location index: cannot read its location");
            return 0;
        }
    };
    let Ok(warehouse) = mount.warehouse() else { return 0 };
    let location = match warehouse.locate(&location) {
        Ok(location) => location,
        Err(e) => {
            tracing::warn!(mount = mount.label(), name = %ident.name, %location, error = %e, "location index: not claimed");
            return 0;
        }
    };
    if matches!(warehouse.index().holder(&location).await, Ok(Some(_))) {
        return 0;
    }
    let above: Vec<Location> = location.ancestors().collect();
    let claimed = warehouse.index().claim(&location, kind, ClaimId::new(), &above).await;
    match claimed {
        Ok(_) => 1,
        Err(e) => {
            tracing::warn!(mount = mount.label(), name = %ident.name, error = %e, "location index: not claimed");
            0
        }
    }
}

/// Logs a claim that failed; the claim made, if any.
fn logged<T>(result: Result<Option<T>, Error>, mount: &Mount, ns: &[String]) -> Option<T> {
    match result {
        Ok(claim) => claim,
        Err(e) => {
            tracing::warn!(mount = mount.label(), namespace = %ns.join("."), error = %e, "location index: not claimed");
            None
        }
    }
}
