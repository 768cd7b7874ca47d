//! Creating a namespace: placing it, claiming its location, recording a new root's
//! owner, and undoing what a failed create left.

use super::{absent, Routed};
use crate::authz::{Authorizer, Effect};
use crate::error::{change_failed, Error};
use crate::events::{Operation, Teller};
use crate::mounts::{Mount, Mounts};
use crate::recovery;
use crate::sandbox::attempt::{Ridden, Rider};
use crate::sandbox::{BackendError, BackendErrorKind};
use crate::storage::kv::Commit;
use crate::storage::location::Location;
use crate::storage::location_index::ClaimKind;
use crate::tables::locations::{self, NewClaim, Placement};
use crate::tables::serial;

type Properties = Vec<(String, String)>;

/// Creates the namespace `at` for `tenant`; the properties stored. A new root of the
/// root catalog is owned by the creator's tenant, recorded with it. Its event rides the
/// commit that carries the host's records, where one does; else it follows the create.
pub async fn create(
    authz: &Authorizer,
    mounts: &Mounts,
    at: Routed<'_>,
    properties: Properties,
    tenant: String,
    teller: &Teller,
) -> Result<Properties, Error> {
    let asked = properties.iter().cloned().collect();
    let mut event = teller.commit(vec![Operation::CreateNamespace { namespace: at.ns.to_vec(), properties: asked }]);
    let created = create_telling(authz, mounts, at, properties, tenant, &mut event).await?;
    match event {
        Some(left) => teller.write(left).await,
        None => teller.written(),
    }
    Ok(created)
}

/// `create`, its event's commit taken from `event` by the commit that carried it.
async fn create_telling(
    authz: &Authorizer,
    mounts: &Mounts,
    at: Routed<'_>,
    properties: Properties,
    tenant: String,
    event: &mut Option<Commit>,
) -> Result<Properties, Error> {
    if at.local.is_empty() {
        return Err(Error::AlreadyExists(format!("Namespace already exists: {}: it is a mount", at.ns[0])));
    }
    at.mount.check_writable()?;
    // Creates of one name share its location's claim (see `tables::serial`).
    let _turn = serial::namespace_one_at_a_time(&at.mount.space, at.local).await;
    if at.mount.name.is_none() && at.ns.len() == 1 {
        create_root(authz, mounts, at, properties, tenant, event).await
    } else {
        create_nested(at, properties, event).await
    }
}

/// Creates a root namespace of the root catalog and records its owner. Where the
/// backend's commit can carry the owner and the location's claim (`riders`), all land
/// in that one commit. Otherwise, or when that commit is refused, the create runs under
/// an intent to own it: the intent and the claim are one commit; when either is
/// contested they are made one at a time, which tells which (and settles an earlier
/// create's intent).
async fn create_root(
    authz: &Authorizer,
    mounts: &Mounts,
    at: Routed<'_>,
    mut properties: Properties,
    tenant: String,
    event: &mut Option<Commit>,
) -> Result<Properties, Error> {
    let root = &at.ns[0];
    let placement = place(at, &mut properties).await?;
    // The host key space: the owners' and the location claims' (one store).
    let space = authz.key_space();
    if at.mount.backend.carries_riders_to(space) {
        let mut commit = authz.ownership(root, &tenant);
        if let Some(placement) = &placement {
            commit = commit.join(claim_commit(at, placement)?.0);
        }
        let rider = Rider { space: space.clone(), commit: with_event(commit, event) };
        if let Some(created) = create_carrying(at, properties.clone(), rider).await? {
            authz.learn_owner(root).await?;
            *event = None;
            return created;
        }
    }
    let own = Effect::Own { root: root.clone(), tenant };
    let claimed = match &placement {
        Some(placement) => {
            let (claim, new) = claim_commit(at, placement)?;
            authz.intend_with(own.clone(), claim).await?.map(|intent| (intent, Some(new)))
        }
        None => None,
    };
    match claimed {
        Some((intent, claim)) => {
            recovery::carry_through(authz, mounts, intent, create_claimed(at, properties, claim)).await
        }
        None => recovery::with_intent(authz, mounts, own, claim_and_create(at, properties, placement)).await,
    }
}

/// Creates a namespace that is not a root of the root catalog: where the backend's
/// commit can carry the location's claim (`riders`), in that one commit; otherwise, or
/// when that commit is refused, the claim first and then the create.
async fn create_nested(
    at: Routed<'_>,
    mut properties: Properties,
    event: &mut Option<Commit>,
) -> Result<Properties, Error> {
    let placement = place(at, &mut properties).await?;
    if let Some(placement) = &placement {
        let space = at.mount.warehouse()?.index().key_space();
        if at.mount.backend.carries_riders_to(space) {
            let rider = Rider { space: space.clone(), commit: with_event(claim_commit(at, placement)?.0, event) };
            if let Some(created) = create_carrying(at, properties.clone(), rider).await? {
                *event = None;
                return created;
            }
        }
    }
    claim_and_create(at, properties, placement).await
}

/// `commit` with the event's (both are for the host key space, the outbox's).
fn with_event(commit: Commit, event: &Option<Commit>) -> Commit {
    match event {
        Some(event) => commit.join(event.clone()),
        None => commit,
    }
}

/// The commit that claims a new namespace's location under its name's id, to be made
/// with another (an intent, or a backend's commit), and the claim it makes new.
fn claim_commit(at: Routed<'_>, placement: &Placement) -> Result<(Commit, NewClaim), Error> {
    Ok(placement.claim_commit(at.mount.warehouse()?, ClaimKind::Namespace, at.claim_id()))
}

/// Creates a namespace with `rider` riding the backend's commit: both land or neither
/// does. `None` when nothing was written because a check failed (the name is owned or
/// being created, the location is taken, the namespace exists, its parent does not) or
/// the backend made no commit: the create made one step at a time then tells which, and
/// answers. Otherwise the create's answer.
async fn create_carrying(
    at: Routed<'_>,
    properties: Properties,
    rider: Rider,
) -> Result<Option<Result<Properties, Error>>, Error> {
    let (created, ridden) = at.mount.backend.create_namespace_carrying(at.local.to_vec(), properties, rider).await;
    match ridden {
        Ridden::Refused | Ridden::NotCarried if created.is_err() => Ok(None),
        Ridden::Refused | Ridden::NotCarried => {
            Err(Error::Internal(format!("{} created a namespace without its commit", at.mount.label())))
        }
        // Written with the namespace, or neither was.
        Ridden::Landed | Ridden::Unknown => Ok(Some(created.map_err(|e| create_failed(e, at.ns)))),
    }
}

/// Where a new namespace is, when the host places it: not where the store assigns
/// table locations (namespaces have none to claim there).
async fn place(at: Routed<'_>, properties: &mut [(String, String)]) -> Result<Option<Placement>, Error> {
    match at.mount.warehouse.as_ref().filter(|w| !w.assigned()) {
        Some(_) => Ok(Some(locations::place_namespace(at.mount, at.local, properties).await?)),
        None => Ok(None),
    }
}

/// The longest pause between tries to claim a new namespace's location that a claim
/// below it holds (25 ms, 50 ms, … 1.6 s in all).
const CLAIM_PATIENCE: std::time::Duration = std::time::Duration::from_millis(800);

/// Claims a new namespace's location (if placed) and creates it in its backend; the
/// stored properties.
async fn claim_and_create(
    at: Routed<'_>,
    properties: Properties,
    placement: Option<Placement>,
) -> Result<Properties, Error> {
    let Some(placement) = placement else {
        return create_claimed(at, properties, None).await;
    };
    let (warehouse, id) = (at.mount.warehouse()?, at.claim_id());
    let mut pause = std::time::Duration::from_millis(25);
    let claim = loop {
        match placement.claim(warehouse, ClaimKind::Namespace, id).await {
            Ok(claim) => break claim,
            Err(e) => {
                // What a dropped namespace here left: tables of unknown outcome, or
                // renamed away.
                if let Some(claim) = placement.take_over_leftovers(warehouse, id).await? {
                    break Some(claim);
                }
                // Another namespace's location property, or a table's, took it; or a
                // table is being created in a namespace that was just dropped, its
                // claim made before claims named the location they rely on, and held
                // until its create fails: the location is waited for a little before
                // it is called taken.
                match at.mount.backend.load_namespace(at.local.to_vec()).await {
                    Ok(_) => return Err(Error::namespace_exists(at.ns.join("."))),
                    Err(found) if found.kind == BackendErrorKind::NotFound && pause <= CLAIM_PATIENCE => {
                        tokio::time::sleep(pause).await;
                        pause *= 2;
                    }
                    Err(found) if found.kind == BackendErrorKind::NotFound => return Err(e),
                    Err(failed) => return Err(Error::from_backend(failed, absent(at.ns))),
                }
            }
        }
    };
    let held_before = claim.is_none();
    let stored = create_claimed(at, properties, claim).await?;
    if held_before {
        // The claim was there already (a retry's, or a dropped namespace's of this name
        // that a drop was releasing): make sure it still is. Tables may have been
        // created in the namespace since, under its location.
        if let Err(e) = placement.restore(warehouse, id).await {
            undo_create(at.mount, at.local).await;
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
async fn create_claimed(at: Routed<'_>, properties: Properties, claim: Option<NewClaim>) -> Result<Properties, Error> {
    match at.mount.backend.create_namespace(at.local.to_vec(), properties).await {
        Ok(stored) => Ok(stored),
        Err(e) => {
            if let (Some(claim), Ok(warehouse)) = (claim.filter(|_| e.kind.did_not_apply()), at.mount.warehouse()) {
                // A create of the same name on another host may have found this claim
                // made (it has the name's id) and landed first, relying on it.
                if e.kind != BackendErrorKind::AlreadyExists || !exists_at(at, &claim.location).await {
                    claim.release(warehouse).await;
                }
            }
            Err(create_failed(e, at.ns))
        }
    }
}

/// The answer to a failed create of `ns`: a failure that may have come after the
/// backend made it (a store that failed mid-commit, a trap) is no claim that it did
/// not.
fn create_failed(e: BackendError, ns: &[String]) -> Error {
    match e.kind {
        BackendErrorKind::AlreadyExists => Error::namespace_exists(ns.join(".")),
        _ => change_failed(e, absent(&ns[..ns.len() - 1])),
    }
}

/// Whether the existing namespace is at `location`, so that a claim there under its
/// name's id is its own; kept (true) when that cannot be read.
async fn exists_at(at: Routed<'_>, location: &Location) -> bool {
    match at.mount.backend.load_namespace(at.local.to_vec()).await {
        Ok(mut properties) => match locations::place_namespace(at.mount, at.local, &mut properties).await {
            Ok(placement) => placement.location == *location,
            Err(_) => true,
        },
        Err(e) => e.kind != BackendErrorKind::NotFound,
    }
}
