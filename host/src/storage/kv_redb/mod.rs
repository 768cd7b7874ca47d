//! Key spaces on redb. One file holds any number of key spaces, one redb table
//! each. Versions come from a per-file counter that only grows.
//!
//! Commits share write transactions and fsyncs (group commit): one thread per file,
//! the committer, takes every commit queued while it was busy and applies them in
//! order in one durable write transaction, each on its own checks (a commit whose
//! check fails is refused alone; the others land). So concurrent writers pay one
//! transaction and one fsync per batch, a lone writer commits at once, no commit
//! returns before it is on disk, and none is visible before it is durable.
//!
//! Except a lone commit made durable `Soon` (the only one queued): it is committed
//! without an fsync (visible at once), and made durable by the next durable
//! transaction: the next batch of several commits or of one durable `Now`, an empty
//! one of its own once the committer has been idle for a millisecond, or one forced
//! after `MAX_UNSYNCED`. A commit made after it is never on disk without it: redb
//! makes the file's transactions durable in order. So a lone writer's `Soon` commits
//! cost no fsync, and under load they batch as the others do.
//!
//! Reads reuse one read snapshot per key space until the next commit (`Snapshots`).
//!
//! After a write fails on I/O (a full disk), redb refuses every later one until the
//! file is opened again: the committer then closes and reopens it (`File`), so the
//! store writes again as soon as the disk has room, without a restart.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use redb::{Database, ReadOnlyTable, TableDefinition, TableHandle};
use tokio::sync::oneshot;

mod committer;

use super::kv::{Check, Commit, Durability, Entry, KvError, Write};
use committer::{begin, Committer, Part, Queued};

fn store_err(e: impl std::fmt::Display) -> KvError {
    KvError::Store(e.to_string())
}

/// The highest version the file's commits may have used (`Versions`).
const COUNTER: TableDefinition<&str, u64> = TableDefinition::new("rustberg:counter");
const VERSION_LEN: usize = 8;
/// How many versions the counter reserves at a time.
const VERSION_BLOCK: u64 = 1 << 16;
/// The most commits one write transaction applies (a bound on what one fsync waits for).
const MAX_BATCH: usize = 256;
/// How long the committer waits for another commit to carry `Soon` commits to disk
/// before it makes them durable alone, and how many transactions they may wait for.
const SYNC_WHEN_IDLE: std::time::Duration = std::time::Duration::from_millis(1);
const MAX_UNSYNCED: usize = 64;

/// A redb file holding key spaces.
#[derive(Clone)]
pub struct RedbStore {
    file: Arc<File>,
    committer: Arc<Committer>,
    snapshots: Arc<Snapshots>,
}

type Table = ReadOnlyTable<&'static [u8], &'static [u8]>;
type Range = redb::Range<'static, &'static [u8], &'static [u8]>;
/// Snapshots by table name (names the server chooses: a fast fixed hash will do).
type SnapshotMap = HashMap<String, (u64, Arc<Table>), foldhash::fast::FixedState>;

/// The read snapshot of each key space, reused by every read until the next commit:
/// opening a read transaction and its table costs more than a lookup in it. A commit
/// counts itself and drops them all, so old snapshots do not keep old pages from being
/// reused. One opened while a commit was under way may be older than that commit: it
/// is never used again, and is replaced by the next read of its space or dropped by
/// the next commit.
#[derive(Default)]
struct Snapshots {
    commits: AtomicU64,
    /// By table name: the snapshot, and the commit count read before it was opened.
    tables: Mutex<SnapshotMap>,
}

impl Snapshots {
    fn tables(&self) -> std::sync::MutexGuard<'_, SnapshotMap> {
        self.tables.lock().expect("read snapshots")
    }

    /// A snapshot of `table` that holds every commit that returned before this call.
    fn current(
        &self,
        file: &File,
        table: TableDefinition<'_, &'static [u8], &'static [u8]>,
    ) -> Result<Arc<Table>, KvError> {
        let commits = self.commits.load(Ordering::Acquire);
        if let Some((at, snapshot)) = self.tables().get(table.name()) {
            if *at == commits {
                return Ok(snapshot.clone());
            }
        }
        let txn = file.db()?.begin_read().map_err(store_err)?;
        let snapshot = Arc::new(txn.open_table(table).map_err(store_err)?);
        self.tables().insert(table.name().to_string(), (commits, snapshot.clone()));
        Ok(snapshot)
    }

    /// A commit landed (it is visible to new read transactions).
    fn committed(&self) {
        self.commits.fetch_add(1, Ordering::Release);
        self.tables().clear();
    }
}

/// The open file, and where it is: opened again when redb asks for that.
struct File {
    path: PathBuf,
    /// `None` while it is being opened again, or could not be.
    db: RwLock<Option<Arc<Database>>>,
}

impl File {
    /// The open database; an error while it is closed for reopening.
    fn db(&self) -> Result<Arc<Database>, KvError> {
        // A panic inside redb while the file was being closed (caught by the committer)
        // leaves the lock poisoned, and the slot empty: the next commit opens it again.
        let db = self.db.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        db.ok_or_else(|| KvError::Store("the catalog file is being opened again after a failed write".into()))
    }

    /// Closes the file and opens it again (redb repairs it as it opens). Every handle on
    /// it must be gone first: the read snapshots are dropped, and reads still under way
    /// are waited for (up to a second; then the next commit tries again).
    fn reopen(&self, snapshots: &Snapshots) -> Result<(), KvError> {
        let mut slot = self.db.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        slot.take();
        for _ in 0..100 {
            snapshots.committed();
            match Database::create(&self.path) {
                Ok(db) => {
                    *slot = Some(Arc::new(db));
                    tracing::warn!(file = %self.path.display(), "the catalog file was opened again after a failed write");
                    return Ok(());
                }
                Err(redb::DatabaseError::DatabaseAlreadyOpen) => {
                    std::thread::sleep(std::time::Duration::from_millis(10))
                }
                Err(e) => return Err(KvError::Store(format!("{}: {e}", self.path.display()))),
            }
        }
        Err(KvError::Store(format!("{}: still held open by reads", self.path.display())))
    }
}

impl RedbStore {
    /// Opens (or creates) the file, and starts its committer.
    pub fn open(path: &Path) -> Result<Self, KvError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(store_err)?;
        }
        let db = Database::create(path).map_err(|e| KvError::Store(format!("{}: {e}", path.display())))?;
        create_table(&db, COUNTER)?;
        // One durable commit now, on this thread: the first one allocates about 2 MB in
        // redb that glibc keeps resident when another thread's commit is the first
        // (measured: idle RSS 3 MB anonymous this way, 5 MB the other).
        begin(&db, true)?.commit().map_err(store_err)?;
        let versions = committer::Versions::stored(&db)?;
        let file = Arc::new(File { path: path.to_path_buf(), db: RwLock::new(Some(Arc::new(db))) });
        let snapshots = Arc::<Snapshots>::default();
        let committer = Arc::new(Committer::start(file.clone(), snapshots.clone(), versions)?);
        Ok(Self { file, committer, snapshots })
    }

    /// The key space `name`, created if missing.
    pub fn space(&self, name: &str) -> Result<RedbSpace, KvError> {
        let space = RedbSpace {
            file: self.file.clone(),
            committer: self.committer.clone(),
            snapshots: self.snapshots.clone(),
            table: Arc::from(format!("kv:{name}")),
        };
        create_table(&*self.file.db()?, space.def())?;
        Ok(space)
    }
}

/// Creates `table` if the file lacks it. A file that has it is only read: a write
/// transaction would wait for an fsync, and a start opens several tables.
fn create_table<K: redb::Key + 'static, V: redb::Value + 'static>(
    db: &Database,
    table: TableDefinition<'_, K, V>,
) -> Result<(), KvError> {
    match db.begin_read().map_err(store_err)?.open_table(table) {
        Ok(_) => return Ok(()),
        Err(redb::TableError::TableDoesNotExist(_)) => {}
        Err(e) => return Err(store_err(e)),
    }
    let txn = db.begin_write().map_err(store_err)?;
    txn.open_table(table).map_err(store_err)?;
    txn.commit().map_err(store_err)
}

/// One isolated key space in a redb file.
#[derive(Clone)]
pub struct RedbSpace {
    file: Arc<File>,
    committer: Arc<Committer>,
    snapshots: Arc<Snapshots>,
    table: Arc<str>,
}

fn split(stored: &[u8]) -> (u64, &[u8]) {
    let (version, value) = stored.split_at(VERSION_LEN);
    (u64::from_le_bytes(version.try_into().expect("eight bytes")), value)
}

impl RedbSpace {
    fn def(&self) -> TableDefinition<'_, &'static [u8], &'static [u8]> {
        TableDefinition::new(&self.table)
    }

    /// How many commits the file has taken: while it stays the same, every key space
    /// in the file reads the same (a commit counts itself once it is visible, before
    /// it returns).
    pub fn version(&self) -> u64 {
        self.snapshots.commits.load(Ordering::Acquire)
    }

    /// Reads one key.
    pub fn get(&self, key: &[u8]) -> Result<Option<Entry>, KvError> {
        let table = self.snapshots.current(&self.file, self.def())?;
        Ok(table.get(key).map_err(store_err)?.map(|v| {
            let (version, value) = split(v.value());
            Entry { key: key.to_vec(), value: value.to_vec(), version }
        }))
    }

    /// The entries in [start, end) of the current read snapshot, in order.
    fn range(&self, start: &[u8], end: Option<&[u8]>) -> Result<Option<Range>, KvError> {
        let table = self.snapshots.current(&self.file, self.def())?;
        match end {
            Some(end) if end <= start => Ok(None),
            Some(end) => table.range::<&[u8]>(start..end).map(Some),
            None => table.range::<&[u8]>(start..).map(Some),
        }
        .map_err(store_err)
    }

    /// Reads up to `limit` keys in [start, end).
    pub fn scan(&self, start: &[u8], end: Option<&[u8]>, limit: usize) -> Result<Vec<Entry>, KvError> {
        let Some(range) = self.range(start, end)? else { return Ok(vec![]) };
        range
            .take(limit)
            .map(|row| {
                let (k, v) = row.map_err(store_err)?;
                let (version, value) = split(v.value());
                Ok(Entry { key: k.value().to_vec(), value: value.to_vec(), version })
            })
            .collect()
    }

    /// Hands `each` up to `limit` keys in [start, end), without copying them.
    pub fn scan_keys(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        limit: usize,
        mut each: impl FnMut(&[u8]),
    ) -> Result<(), KvError> {
        let Some(range) = self.range(start, end)? else { return Ok(()) };
        for row in range.take(limit) {
            each(row.map_err(store_err)?.0.value());
        }
        Ok(())
    }

    /// Applies every write if every check holds, atomically and durably: queued for
    /// the file's committer, answered once the transaction that took it is on disk.
    pub async fn commit(&self, checks: Vec<Check>, writes: Vec<Write>) -> Result<(), KvError> {
        self.commit_with(checks, writes, Durability::Now).await
    }

    /// As `commit`; a `Soon` commit is answered once the transaction that took it is
    /// visible, which is before it is on disk when it was the only commit waiting.
    pub async fn commit_with(
        &self,
        checks: Vec<Check>,
        writes: Vec<Write>,
        durability: Durability,
    ) -> Result<(), KvError> {
        self.queue(vec![Part { table: self.table.clone(), checks, writes }], durability).await
    }

    /// Makes `own` in this key space and `theirs` in `other` (a key space of the same
    /// file) as one commit: every check of both holds and every write of both lands, or
    /// nothing of either; on disk as soon as either must be.
    pub async fn commit_joined(&self, own: Commit, other: &RedbSpace, theirs: Commit) -> Result<(), KvError> {
        if !self.same_file(other) {
            return Err(KvError::Store("a joined commit spans two catalog files".into()));
        }
        let durability = own.durability.stricter(theirs.durability);
        if self.table == other.table {
            let joined = own.join(theirs);
            return self.commit_with(joined.checks, joined.writes, durability).await;
        }
        let parts = vec![
            Part { table: self.table.clone(), checks: own.checks, writes: own.writes },
            Part { table: other.table.clone(), checks: theirs.checks, writes: theirs.writes },
        ];
        self.queue(parts, durability).await
    }

    /// Whether `other` is a key space of this one's file.
    pub fn same_file(&self, other: &RedbSpace) -> bool {
        Arc::ptr_eq(&self.file, &other.file)
    }

    /// Hands a commit to the file's committer and waits for its outcome.
    async fn queue(&self, parts: Vec<Part>, durability: Durability) -> Result<(), KvError> {
        let (done, outcome) = oneshot::channel();
        let queued = Queued { parts, durability, done };
        let stopped = || KvError::Store("the catalog file's committer has stopped".into());
        self.committer.queue.as_ref().ok_or_else(stopped)?.send(queued).map_err(|_| stopped())?;
        outcome.await.map_err(|_| stopped())?
    }
}

#[cfg(test)]
mod tests;
