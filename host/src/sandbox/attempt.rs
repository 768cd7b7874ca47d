//! One attempt of one request at a change, handed by parameter to the backend calls it
//! makes and lent to the instance running each (`pool`), whose `kv` imports use it.
//!
//! - **Reads reused.** A table commit loads the table's pointer (the backend reads its
//!   key), then asks the backend to swap it (the backend reads the same key again, for
//!   the version its compare-and-swap checks). On Postgres each read is a round trip. A
//!   backend whose every write is checked against what it read (it declares
//!   `checks-what-it-read`) may be given the first read again: if the key changed in
//!   between, its swap fails the version check and the host retries the change in a new
//!   attempt, as it would had the second read seen the change. Any commit through the
//!   key space ends the reuse, so nothing is answered from before a write.
//! - **A rider.** A new namespace needs its location's claim, and a new root namespace
//!   its owner, in the host's key space; a dropped one loses its grants, owner and
//!   claim. Where the backend keeps its namespaces in the same redb file and creates or
//!   drops one in a single commit (it declares `one-commit-namespace-changes`), the
//!   host's writes ride that commit: the namespace and the host's records change
//!   together or not at all, in one commit instead of three, and no crash can leave one
//!   without the others. A change's event rides the same way (`events::outbox`).

use crate::storage::kv::{Commit, Entry, KvError, KvStore};

/// The host's commit and the key space it is for.
pub struct Rider {
    pub space: KvStore,
    pub commit: Commit,
}

/// How a rider fared in a backend call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Ridden {
    /// The backend made no commit: nothing of the rider was written.
    #[default]
    NotCarried,
    /// The backend's first commit carried it, and landed.
    Landed,
    /// A check of that commit or of the rider failed: nothing of either was written.
    Refused,
    /// The store failed that commit, or the call ended while it ran: both were
    /// written, or neither.
    Unknown,
}

/// What one attempt carries from call to call. An attempt without reuse and without a
/// rider (`Attempt::default()`) changes nothing about a call.
#[derive(Default)]
pub struct Attempt {
    /// The backend's reads so far, where it may be given them again.
    reads: Option<Vec<(Vec<u8>, Option<Entry>)>>,
    rider: Option<Rider>,
    ridden: Ridden,
}

impl Attempt {
    /// An attempt whose backend is given what it already read (it checks what it read).
    pub fn reusing_reads() -> Self {
        Self { reads: Some(Vec::new()), ..Self::default() }
    }

    /// An attempt whose backend's first commit to `rider`'s file carries it.
    pub fn carrying(rider: Rider) -> Self {
        Self { rider: Some(rider), ..Self::default() }
    }

    /// Has the backend's first commit to `rider`'s store carry it too, joined to the
    /// rider the attempt already carries; a rider to another store than that one is
    /// handed back (an attempt carries to one store).
    pub fn carry(&mut self, rider: Rider) -> Result<(), Rider> {
        match self.rider.take() {
            None => self.rider = Some(rider),
            Some(own) if own.space.same_store(&rider.space) => {
                self.rider = Some(Rider { space: own.space, commit: own.commit.join(rider.commit) })
            }
            Some(own) => {
                self.rider = Some(own);
                return Err(rider);
            }
        }
        Ok(())
    }

    /// How the rider fared.
    pub fn ridden(&self) -> Ridden {
        self.ridden
    }

    /// What this attempt already read of `key`, if it did and may reuse it.
    pub(super) fn read_before(&self, key: &[u8]) -> Option<Option<Entry>> {
        let reads = self.reads.as_ref()?;
        reads.iter().find(|(k, _)| k == key).map(|(_, entry)| entry.clone())
    }

    /// Notes a read of the backend's key space, where reads are reused.
    pub(super) fn note(&mut self, key: &[u8], entry: &Option<Entry>) {
        if let Some(reads) = &mut self.reads {
            reads.push((key.to_vec(), entry.clone()))
        }
    }

    /// Makes a backend's commit to `space`: reads before it are no longer reused, and
    /// the rider rides the first commit to its store. A refused commit wrote nothing, so
    /// the rider waits for the next (a backend may retry); once one lands, or its
    /// outcome is unknown, no later commit carries it.
    pub(super) async fn commit(&mut self, space: &KvStore, own: Commit) -> Result<(), KvError> {
        if let Some(reads) = &mut self.reads {
            reads.clear();
        }
        let Some(rider) = self.rider.take_if(|rider| rider.space.same_store(space)) else {
            return space.make(&own).await;
        };
        let again = Rider { space: rider.space.clone(), commit: rider.commit.clone() };
        // Until the store answers: a call cut off here may have written both.
        self.ridden = Ridden::Unknown;
        let outcome = space.make_joined(own, &rider.space, rider.commit).await;
        self.ridden = match &outcome {
            Ok(()) => Ridden::Landed,
            Err(KvError::Conflict) => {
                self.rider = Some(again);
                Ridden::Refused
            }
            Err(KvError::Store(_)) => Ridden::Unknown,
        };
        outcome
    }
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
        let carrying = |key: &[u8]| Attempt::carrying(Rider { space: host.clone(), commit: put(key) });

        let mut attempt = carrying(b"owner/a");
        assert!(attempt.commit(&backend, put(b"ns/a")).await.is_ok());
        assert!(attempt.commit(&backend, put(b"ns/other")).await.is_ok());
        assert_eq!(attempt.ridden(), Ridden::Landed);
        assert!(host.get(b"owner/a").await.unwrap().is_some(), "written with the backend's commit");

        // The rider's check fails: the backend's commit is refused with it.
        let mut attempt = carrying(b"owner/a");
        assert!(matches!(attempt.commit(&backend, put(b"ns/b")).await, Err(KvError::Conflict)));
        assert_eq!(attempt.ridden(), Ridden::Refused);
        assert!(backend.get(b"ns/b").await.unwrap().is_none(), "nothing of either was written");

        // The backend's check fails: nothing of the rider is written.
        let mut attempt = carrying(b"owner/c");
        assert!(matches!(attempt.commit(&backend, put(b"ns/a")).await, Err(KvError::Conflict)));
        assert_eq!(attempt.ridden(), Ridden::Refused);
        assert!(host.get(b"owner/c").await.unwrap().is_none());

        // A backend that retries a refused commit carries the rider on the retry.
        let mut attempt = carrying(b"owner/e");
        assert!(matches!(attempt.commit(&backend, put(b"ns/a")).await, Err(KvError::Conflict)));
        assert!(attempt.commit(&backend, put(b"ns/e")).await.is_ok());
        assert_eq!(attempt.ridden(), Ridden::Landed);
        assert!(host.get(b"owner/e").await.unwrap().is_some(), "written with the retry");

        let attempt = carrying(b"owner/d");
        assert_eq!(attempt.ridden(), Ridden::NotCarried);
        assert!(host.get(b"owner/d").await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_rider_rides_no_commit_to_another_file() {
        let dir = tempfile::tempdir().unwrap();
        let one = KvStore::Redb(RedbStore::open(&dir.path().join("one.redb")).unwrap().space("h").unwrap());
        let other = KvStore::Redb(RedbStore::open(&dir.path().join("other.redb")).unwrap().space("b").unwrap());
        let mut attempt = Attempt::carrying(Rider { space: one.clone(), commit: put(b"owner/a") });
        assert!(attempt.commit(&other, put(b"ns/a")).await.is_ok());
        assert_eq!(attempt.ridden(), Ridden::NotCarried);
        assert!(one.get(b"owner/a").await.unwrap().is_none());
    }

    /// A second rider to the same store joins the first (both land with the backend's
    /// commit); one to another store is handed back, for its caller to write itself.
    #[tokio::test]
    async fn riders_to_one_store_join_and_another_is_handed_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = RedbStore::open(&dir.path().join("kv.redb")).unwrap();
        let (host, backend) = (KvStore::Redb(store.space("h").unwrap()), KvStore::Redb(store.space("b").unwrap()));
        let elsewhere = KvStore::Redb(RedbStore::open(&dir.path().join("other.redb")).unwrap().space("h").unwrap());
        let mut attempt = Attempt::reusing_reads();
        assert!(attempt.carry(Rider { space: host.clone(), commit: put(b"owner/a") }).is_ok());
        assert!(attempt.carry(Rider { space: host.clone(), commit: put(b"events/pending/1") }).is_ok());
        let handed_back = attempt.carry(Rider { space: elsewhere.clone(), commit: put(b"x") });
        assert!(handed_back.is_err_and(|rider| rider.space.same_file(&elsewhere)));
        attempt.commit(&backend, put(b"ns/a")).await.unwrap();
        assert_eq!(attempt.ridden(), Ridden::Landed);
        assert!(host.get(b"owner/a").await.unwrap().is_some());
        assert!(host.get(b"events/pending/1").await.unwrap().is_some(), "the joined rider landed too");
        assert!(elsewhere.get(b"x").await.unwrap().is_none());
    }

    fn entry(version: u64) -> Option<Entry> {
        Some(Entry { key: b"k".to_vec(), value: b"v".to_vec(), version })
    }

    #[tokio::test]
    async fn a_read_is_reused_only_where_asked_and_until_a_write() {
        let mut plain = Attempt::default();
        plain.note(b"k", &entry(1));
        assert_eq!(plain.read_before(b"k"), None, "an attempt that reuses nothing keeps nothing");

        let dir = tempfile::tempdir().unwrap();
        let space = KvStore::Redb(RedbStore::open(&dir.path().join("kv.redb")).unwrap().space("b").unwrap());
        let mut attempt = Attempt::reusing_reads();
        assert_eq!(attempt.read_before(b"k"), None);
        attempt.note(b"k", &entry(1));
        attempt.note(b"gone", &None);
        assert_eq!(attempt.read_before(b"k"), Some(entry(1)));
        assert_eq!(attempt.read_before(b"gone"), Some(None), "an absence is a read too");
        assert_eq!(attempt.read_before(b"other"), None);
        attempt.commit(&space, put(b"x")).await.unwrap();
        assert_eq!(attempt.read_before(b"k"), None, "a write ends the reuse");
        assert_eq!(Attempt::reusing_reads().read_before(b"k"), None, "a new attempt reads anew");
    }
}
