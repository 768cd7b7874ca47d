//! A commit of the host's carried by a backend's own commit.
//!
//! A new namespace needs its location's claim, and a new root namespace its owner, in
//! the host's key space; a dropped one loses its grants, owner and claim. Where the
//! root catalog's backend keeps its namespaces in the same redb file and creates or
//! drops one in a single commit (it declares `one-commit-namespace-changes`), the
//! host's writes ride that commit: the namespace and the host's records change together
//! or not at all, in one round of the file's committer instead of three (an intent, the
//! backend's commit, the intent's settlement and the claim's), and no crash can leave
//! one without the others.

use std::cell::RefCell;
use std::future::Future;

use crate::storage::kv::{Commit, KvError, KvStore};

/// The host's commit and the key space it is for.
pub struct Rider {
    pub space: KvStore,
    pub commit: Commit,
}

/// How a rider fared in a backend call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ridden {
    /// The backend made no commit: nothing of the rider was written.
    NotCarried,
    /// The backend's first commit carried it, and landed.
    Landed,
    /// A check of that commit or of the rider failed: nothing of either was written.
    Refused,
    /// The store failed that commit: both were written, or neither.
    Unknown,
}

struct Seat {
    rider: Option<Rider>,
    ridden: Ridden,
}

tokio::task_local! {
    static SEAT: RefCell<Seat>;
}

/// Runs a backend call whose first commit carries `rider`; the call's outcome and the
/// rider's.
pub(super) async fn carrying<F: Future>(rider: Rider, call: F) -> (F::Output, Ridden) {
    let seat = RefCell::new(Seat { rider: Some(rider), ridden: Ridden::NotCarried });
    SEAT.scope(seat, async {
        let outcome = call.await;
        (outcome, SEAT.with(|seat| seat.borrow().ridden))
    })
    .await
}

/// Makes a backend's commit to `space`, with the rider waiting for the running call's
/// first commit to that file if there is one. A refused commit wrote nothing, so the
/// rider waits for the next (a backend may retry); once one lands, or its outcome is
/// unknown, no later commit carries it.
pub(super) async fn commit(space: &KvStore, own: Commit) -> Result<(), KvError> {
    let Some(rider) = take_for(space) else { return space.make(&own).await };
    let again = Rider { space: rider.space.clone(), commit: rider.commit.clone() };
    let outcome = space.make_joined(own, &rider.space, rider.commit).await;
    let _ = SEAT.try_with(|seat| {
        let mut seat = seat.borrow_mut();
        seat.ridden = match &outcome {
            Ok(()) => Ridden::Landed,
            Err(KvError::Conflict) => {
                seat.rider = Some(again);
                Ridden::Refused
            }
            Err(KvError::Store(_)) => Ridden::Unknown,
        }
    });
    outcome
}

fn take_for(space: &KvStore) -> Option<Rider> {
    SEAT.try_with(|seat| {
        let mut seat = seat.borrow_mut();
        match &seat.rider {
            Some(rider) if rider.space.same_file(space) => seat.rider.take(),
            _ => None,
        }
    })
    .ok()
    .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::kv::{Check, Durability, RedbStore, Write};

    fn put(key: &[u8]) -> Commit {
        Commit {
            checks: vec![Check::Absent(key.to_vec())],
            writes: vec![Write { key: key.to_vec(), value: Some(vec![]) }],
            durability: Durability::Now,
        }
    }

    #[tokio::test]
    async fn a_rider_lands_with_the_first_commit_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let store = RedbStore::open(&dir.path().join("kv.redb")).unwrap();
        let (host, backend) = (KvStore::Redb(store.space("h").unwrap()), KvStore::Redb(store.space("b").unwrap()));
        let rider = |key: &[u8]| Rider { space: host.clone(), commit: put(key) };

        let (first, ridden) = carrying(rider(b"owner/a"), async {
            (commit(&backend, put(b"ns/a")).await, commit(&backend, put(b"ns/other")).await)
        })
        .await;
        assert!(first.0.is_ok() && first.1.is_ok());
        assert_eq!(ridden, Ridden::Landed);
        assert!(host.get(b"owner/a").await.unwrap().is_some(), "written with the backend's commit");

        // The rider's check fails: the backend's commit is refused with it.
        let (refused, ridden) = carrying(rider(b"owner/a"), commit(&backend, put(b"ns/b"))).await;
        assert!(matches!(refused, Err(KvError::Conflict)));
        assert_eq!(ridden, Ridden::Refused);
        assert!(backend.get(b"ns/b").await.unwrap().is_none(), "nothing of either was written");

        // The backend's check fails: nothing of the rider is written.
        let (refused, ridden) = carrying(rider(b"owner/c"), commit(&backend, put(b"ns/a"))).await;
        assert!(matches!(refused, Err(KvError::Conflict)));
        assert_eq!(ridden, Ridden::Refused);
        assert!(host.get(b"owner/c").await.unwrap().is_none());

        // A backend that retries a refused commit carries the rider on the retry.
        let (retried, ridden) = carrying(rider(b"owner/e"), async {
            (commit(&backend, put(b"ns/a")).await, commit(&backend, put(b"ns/e")).await)
        })
        .await;
        assert!(matches!(retried.0, Err(KvError::Conflict)) && retried.1.is_ok());
        assert_eq!(ridden, Ridden::Landed);
        assert!(host.get(b"owner/e").await.unwrap().is_some(), "written with the retry");

        let ((), ridden) = carrying(rider(b"owner/d"), async {}).await;
        assert_eq!(ridden, Ridden::NotCarried);
        assert!(host.get(b"owner/d").await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_rider_rides_no_commit_to_another_file() {
        let dir = tempfile::tempdir().unwrap();
        let one = KvStore::Redb(RedbStore::open(&dir.path().join("one.redb")).unwrap().space("h").unwrap());
        let other = KvStore::Redb(RedbStore::open(&dir.path().join("other.redb")).unwrap().space("b").unwrap());
        let rider = Rider { space: one.clone(), commit: put(b"owner/a") };
        let (made, ridden) = carrying(rider, commit(&other, put(b"ns/a"))).await;
        assert!(made.is_ok());
        assert_eq!(ridden, Ridden::NotCarried);
        assert!(one.get(b"owner/a").await.unwrap().is_none());
    }
}
