//! Dropping a namespace: nothing created later under its name may inherit its grants,
//! its owner or its location's claim.

use super::{absent, Routed};
use crate::authz::{Authorizer, Effect, Resource};
use crate::error::{change_failed, Error};
use crate::events::{Operation, Teller};
use crate::mounts::Mounts;
use crate::recovery;
use crate::sandbox::attempt::{Ridden, Rider};
use crate::sandbox::{BackendError, BackendErrorKind};
use crate::tables::{locations, serial};

/// How many times a drop whose commit carries the host's reads what it releases: a
/// refusal may be a claim that changed since (the namespace not being empty refuses
/// every time).
const RIDER_ATTEMPTS: usize = 3;

/// Drops the empty namespace `at` and forgets what the host held for it. Where the
/// backend's commit can carry them, the grants, owner and claim go with it (the host
/// key space holds all three: one location index serves every warehouse); otherwise
/// the drop runs under an intent to forget them, and the claim is released after.
///
/// Its event rides that commit too, or follows the drop.
pub async fn drop(authz: &Authorizer, mounts: &Mounts, at: Routed<'_>, teller: &Teller) -> Result<(), Error> {
    at.refuse_mount_root("be dropped")?;
    let mount = at.mount;
    mount.check_writable()?;
    // A create of the name just after the drop would share the claim released below.
    let _turn = serial::namespace_one_at_a_time(&mount.space, at.local).await;
    let resource = Resource::Namespace(at.ns.to_vec());
    // A failure that may have come after the backend dropped it is no claim that it
    // did not.
    let failed = |e: BackendError| match e.kind {
        BackendErrorKind::Conflict => Error::NamespaceNotEmpty(format!("namespace {} is not empty", at.ns.join("."))),
        _ => change_failed(e, absent(at.ns)),
    };
    let space = authz.key_space();
    let event = teller.commit(vec![Operation::DropNamespace { namespace: at.ns.to_vec() }]);
    if mount.backend.carries_riders_to(space) {
        let mut attempt = 1;
        loop {
            let (mut commit, forgotten) = authz.forgetting(&resource).await?;
            if let Some(warehouse) = &mount.warehouse {
                // Its claim and the claims left inside it, each only as read: a rename
                // out of it marks its table's claim (to keep it) just before it empties
                // the namespace, which may be after this read.
                commit = commit.join(warehouse.index().release_unchanged(at.claim_id()).await?);
            }
            // The host key space is the outbox's.
            if let Some(event) = &event {
                commit = commit.join(event.clone());
            }
            let rider = Rider { space: space.clone(), commit };
            let (dropped, ridden) = mount.backend.drop_namespace_carrying(at.local.to_vec(), rider).await;
            if matches!(ridden, Ridden::Landed | Ridden::Unknown) {
                // What the store now holds, written or not.
                authz.learn(&forgotten).await?;
            }
            return match (dropped, ridden) {
                (Ok(()), Ridden::Landed) => {
                    teller.written();
                    Ok(())
                }
                // Something it read changed (or the namespace is not empty): read again.
                (Err(_), Ridden::Refused) if attempt < RIDER_ATTEMPTS => {
                    attempt += 1;
                    continue;
                }
                (Ok(()), _) => {
                    Err(Error::Internal(format!("{} dropped a namespace without its commit", mount.label())))
                }
                (Err(e), _) => Err(failed(e)),
            };
        }
    }
    // Read before the drop: a create of the name on another host may claim the
    // location again between the drop and the release, and keeps it then.
    let release = match &mount.warehouse {
        Some(warehouse) => Some((warehouse, warehouse.index().release_unchanged(at.claim_id()).await?)),
        None => None,
    };
    let dropped = async { mount.backend.drop_namespace(at.local.to_vec()).await.map_err(failed) };
    recovery::with_intent(authz, mounts, Effect::Forget { resource }, dropped).await?;
    if let Some((warehouse, release)) = release {
        locations::release_unchanged(warehouse, &release).await;
    }
    if let Some(event) = event {
        teller.write(event).await;
    }
    Ok(())
}
