//! Transactional key spaces: the state behind the `kv` capability, on a redb file
//! (`kv_redb`) or a Postgres database (`kv_postgres`).
//!
//! A key space is one mount's alone. Keys sort bytewise. Every stored value carries
//! a version that only grows and is never reused (no ABA on delete and re-create).
//! A commit applies every write if every check holds, atomically, or nothing.

pub use super::kv_postgres::{PgSpace, PgStore};
pub use super::kv_redb::{RedbSpace, RedbStore};

/// A stored value with its version.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    pub version: u64,
}

/// A condition checked atomically with a commit.
#[derive(Debug, Clone)]
pub enum Check {
    Absent(Vec<u8>),
    Present(Vec<u8>),
    AtVersion(Vec<u8>, u64),
    PrefixEmpty(Vec<u8>),
}

/// A write applied by a commit; `None` deletes.
#[derive(Debug, Clone)]
pub struct Write {
    pub key: Vec<u8>,
    pub value: Option<Vec<u8>>,
}

/// When a commit is on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Before the commit returns, and before anybody sees it.
    Now,
    /// Visible when the commit returns, on disk then or a moment later, and never
    /// later than a commit made after it to the same store. Only for a write that a
    /// crash may lose: one whose loss start-up repair makes good (settling an intent),
    /// or one that the durable commit it comes before carries to disk with it.
    Soon,
}

/// A commit not yet made: what it checks and writes, and when it must be on disk.
/// Two meant for one key space can be made as one (`join`).
#[derive(Debug, Clone)]
pub struct Commit {
    pub checks: Vec<Check>,
    pub writes: Vec<Write>,
    pub durability: Durability,
}

impl Commit {
    /// Both commits as one: every check of each, every write of each, on disk as soon
    /// as either must be.
    pub fn join(mut self, other: Commit) -> Commit {
        self.checks.extend(other.checks);
        self.writes.extend(other.writes);
        self.durability = self.durability.stricter(other.durability);
        self
    }
}

impl Durability {
    /// On disk as soon as either must be.
    pub fn stricter(self, other: Durability) -> Durability {
        if self == Durability::Now || other == Durability::Now {
            Durability::Now
        } else {
            Durability::Soon
        }
    }
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum KvError {
    #[error("a check did not hold")]
    Conflict,
    #[error("catalog store: {0}")]
    Store(String),
}

/// A mount's key space, on whichever store its `catalog_url` names.
#[derive(Clone)]
pub enum KvStore {
    Redb(RedbSpace),
    Postgres(PgSpace),
}

impl KvStore {
    /// Reads one key.
    pub async fn get(&self, key: &[u8]) -> Result<Option<Entry>, KvError> {
        self.count_read();
        match self {
            KvStore::Redb(s) => s.get(key),
            KvStore::Postgres(s) => s.get(key).await,
        }
    }

    /// A number that changes whenever anything in the key space may have changed, where
    /// the store can tell: a redb file's commit count. A Postgres space can be written
    /// by other hosts unseen: `None`.
    pub fn version(&self) -> Option<u64> {
        match self {
            KvStore::Redb(s) => Some(s.version()),
            KvStore::Postgres(_) => None,
        }
    }

    /// Reads up to `limit` keys in [start, end).
    pub async fn scan(&self, start: &[u8], end: Option<&[u8]>, limit: usize) -> Result<Vec<Entry>, KvError> {
        self.count_read();
        match self {
            KvStore::Redb(s) => s.scan(start, end, limit),
            KvStore::Postgres(s) => s.scan(start, end, limit).await,
        }
    }

    /// Hands `each` the keys (not the values) of up to `limit` entries in [start, end),
    /// in order.
    pub async fn scan_keys(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        limit: usize,
        each: impl FnMut(&[u8]),
    ) -> Result<(), KvError> {
        self.count_read();
        match self {
            KvStore::Redb(s) => s.scan_keys(start, end, limit, each),
            KvStore::Postgres(s) => s.scan_keys(start, end, limit, each).await,
        }
    }

    /// Counts a read (for Postgres, a round trip) in the store's metric.
    fn count_read(&self) {
        crate::telemetry::kv_read(matches!(self, KvStore::Postgres(_)));
    }

    /// Applies every write if every check holds, atomically and durably.
    pub async fn commit(&self, checks: &[Check], writes: &[Write]) -> Result<(), KvError> {
        self.commit_with(checks, writes, Durability::Now).await
    }

    /// Puts on disk every commit made so far: on redb, those made durable `Soon` (an
    /// empty commit that is durable `Now` carries them); a Postgres commit always is.
    pub async fn sync(&self) -> Result<(), KvError> {
        match self {
            KvStore::Redb(_) => self.commit(&[], &[]).await,
            KvStore::Postgres(_) => Ok(()),
        }
    }

    /// Makes `commit`.
    pub async fn make(&self, commit: &Commit) -> Result<(), KvError> {
        self.commit_with(&commit.checks, &commit.writes, commit.durability).await
    }

    /// Applies every write if every check holds, atomically, on disk when `durability`
    /// says (a Postgres commit is always on disk when it returns).
    pub async fn commit_with(&self, checks: &[Check], writes: &[Write], durability: Durability) -> Result<(), KvError> {
        let (store, result) = match self {
            // The file's committer thread waits for the fsync, not an async worker.
            KvStore::Redb(s) => ("redb", s.commit_with(checks.to_vec(), writes.to_vec(), durability).await),
            KvStore::Postgres(s) => ("postgres", s.commit(checks, writes).await),
        };
        counted(store, result)
    }

    /// Whether `other` is a key space of the same redb file.
    pub fn same_file(&self, other: &KvStore) -> bool {
        matches!((self, other), (KvStore::Redb(a), KvStore::Redb(b)) if a.same_file(b))
    }

    /// Whether `other` is a key space of the same store (one redb file, or one
    /// Postgres database), so that the two can be committed to as one (`make_joined`).
    pub fn same_store(&self, other: &KvStore) -> bool {
        match (self, other) {
            (KvStore::Redb(a), KvStore::Redb(b)) => a.same_file(b),
            (KvStore::Postgres(a), KvStore::Postgres(b)) => a.same_store(b),
            _ => false,
        }
    }

    /// Makes `own` here and `theirs` in `other` as one commit, both or neither: only
    /// where the two are key spaces of the same store (`same_store`).
    pub async fn make_joined(&self, own: Commit, other: &KvStore, theirs: Commit) -> Result<(), KvError> {
        let (store, result) = match (self, other) {
            (KvStore::Redb(a), KvStore::Redb(b)) => ("redb", a.commit_joined(own, b, theirs).await),
            (KvStore::Postgres(a), KvStore::Postgres(b)) => ("postgres", a.commit_joined(&own, b, &theirs).await),
            _ => ("redb", Err(KvError::Store("only key spaces of one store commit as one".into()))),
        };
        counted(store, result)
    }
}

/// Counts a commit's outcome in the store's metric.
fn counted(store: &'static str, result: Result<(), KvError>) -> Result<(), KvError> {
    let outcome = match &result {
        Ok(()) => "ok",
        Err(KvError::Conflict) => "conflict",
        Err(KvError::Store(_)) => "error",
    };
    crate::telemetry::kv_commit(store, outcome);
    result
}

/// How long to wait before retrying a compare-and-swap lost for the `attempt`-th
/// time: a random share of a window that doubles up to 64 ms, so writers on other
/// hosts that lost together do not meet again.
pub fn swap_backoff(attempt: usize) -> std::time::Duration {
    use rand::Rng as _;
    let window_ms = 1u64 << attempt.min(6);
    std::time::Duration::from_micros(rand::rng().random_range(0..=window_ms * 1000))
}

/// The first key after every key that starts with `prefix` (`None`: no such key).
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_joined_commit_is_on_disk_as_soon_as_either_part_must_be() {
        let part = |durability| Commit { checks: vec![], writes: vec![], durability };
        for (a, b, joined) in [
            (Durability::Soon, Durability::Soon, Durability::Soon),
            (Durability::Soon, Durability::Now, Durability::Now),
            (Durability::Now, Durability::Soon, Durability::Now),
        ] {
            assert_eq!(part(a).join(part(b)).durability, joined, "{a:?} with {b:?}");
        }
    }
}
