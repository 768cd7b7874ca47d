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

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};

use redb::{Database, ReadOnlyTable, ReadableTable, TableDefinition, TableHandle, WriteTransaction};
use tokio::sync::oneshot;

use super::kv::{prefix_end, Check, Commit, Durability, Entry, KvError, Write};

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
    db: Arc<Database>,
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
        db: &Database,
        table: TableDefinition<'_, &'static [u8], &'static [u8]>,
    ) -> Result<Arc<Table>, KvError> {
        let commits = self.commits.load(Ordering::Acquire);
        if let Some((at, snapshot)) = self.tables().get(table.name()) {
            if *at == commits {
                return Ok(snapshot.clone());
            }
        }
        let txn = db.begin_read().map_err(store_err)?;
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

/// One commit waiting for the committer: what it checks and writes in each key space
/// (one, or two for a joined commit), and where its outcome goes.
struct Queued {
    parts: Vec<Part>,
    durability: Durability,
    done: oneshot::Sender<Result<(), KvError>>,
}

/// What a commit checks and writes in one key space's table.
struct Part {
    table: Arc<str>,
    checks: Vec<Check>,
    writes: Vec<Write>,
}

/// The versions the committer gives out. The counter records a block reserved ahead
/// rather than the last version used, and is written only by the transaction that
/// uses the first version past it: one table fewer written by nearly every
/// transaction. A restart starts after the block, so no version is given twice; a
/// transaction lost in a crash loses the versions it used along with their keys.
struct Versions {
    last: u64,
    /// What the file's counter holds (as the last committed transaction left it).
    reserved: u64,
}

impl Versions {
    fn stored(db: &Database) -> Result<Self, KvError> {
        let txn = db.begin_read().map_err(store_err)?;
        let counter = txn.open_table(COUNTER).map_err(store_err)?;
        let reserved = counter.get("version").map_err(store_err)?.map(|v| v.value()).unwrap_or(0);
        Ok(Versions { last: reserved, reserved })
    }
}

/// The file's committer thread and the queue to it. Dropped with the last handle on
/// the file: the queue closes, the thread finishes what it took and ends, and the
/// drop waits for it, so the file is closed when the store is gone.
struct Committer {
    queue: Option<mpsc::Sender<Queued>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// Durable write transactions committed (how many fsyncs the commits shared;
    /// operators see it as a metric).
    #[cfg_attr(not(test), allow(dead_code))]
    transactions: Arc<AtomicU64>,
}

impl Committer {
    fn start(db: Arc<Database>, snapshots: Arc<Snapshots>) -> Result<Self, KvError> {
        let mut versions = Versions::stored(&db)?;
        let (queue, queued) = mpsc::channel();
        let transactions = Arc::new(AtomicU64::new(0));
        let counted = transactions.clone();
        let thread = std::thread::Builder::new()
            .name("redb-commit".into())
            .spawn(move || run(&db, &snapshots, &mut versions, &queued, &counted))
            .map_err(store_err)?;
        Ok(Self { queue: Some(queue), thread: Some(thread), transactions })
    }
}

/// The committer's loop: takes each batch, commits it, and makes `Soon` commits durable
/// when nothing else will (see the module's comment). Ends when the queue closes, with
/// every transaction durable.
fn run(
    db: &Database,
    snapshots: &Snapshots,
    versions: &mut Versions,
    queued: &mpsc::Receiver<Queued>,
    transactions: &AtomicU64,
) {
    // Transactions committed without an fsync since the last one with.
    let mut unsynced = 0;
    loop {
        let first = if unsynced == 0 {
            match queued.recv() {
                Ok(first) => first,
                Err(_) => return,
            }
        } else {
            match queued.recv_timeout(SYNC_WHEN_IDLE) {
                Ok(first) => first,
                // Idle, or the store closing.
                Err(idle_or_closed) => {
                    sync(db, transactions);
                    unsynced = 0;
                    match idle_or_closed {
                        mpsc::RecvTimeoutError::Timeout => continue,
                        mpsc::RecvTimeoutError::Disconnected => return,
                    }
                }
            }
        };
        let mut batch = vec![first];
        batch.extend(queued.try_iter().take(MAX_BATCH - 1));
        // Commits that queued together share one fsync whatever they ask: a transaction
        // of their own for the `Soon` ones would cost more than the fsync saves.
        let durable = batch.len() > 1 || unsynced >= MAX_UNSYNCED || batch[0].durability == Durability::Now;
        commit_batch(db, snapshots, versions, batch, durable, transactions);
        unsynced = if durable { 0 } else { unsynced + 1 };
    }
}

impl Drop for Committer {
    fn drop(&mut self) {
        self.queue.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Applies a batch in one transaction (durable if `durable`) and answers each commit,
/// after counting the commit for readers (so a read made after a commit returned sees
/// it). If the store fails while applying, nothing of the batch is kept and each commit
/// is tried again in a transaction of its own, so such a failure is only the failing
/// commit's. If the transaction itself fails to commit, every commit in it is told so
/// (its outcome is unknown).
fn commit_batch(
    db: &Database,
    snapshots: &Snapshots,
    versions: &mut Versions,
    batch: Vec<Queued>,
    durable: bool,
    transactions: &AtomicU64,
) {
    let applied = begin(db, durable).and_then(|txn| apply_all(&txn, versions, &batch).map(|outcomes| (txn, outcomes)));
    let (txn, (outcomes, reserved)) = match applied {
        Ok(applied) => applied,
        Err(_) if batch.len() > 1 => {
            for queued in batch {
                commit_batch(db, snapshots, versions, vec![queued], durable, transactions);
            }
            return;
        }
        Err(e) => return answer(batch, |_| Err(e.clone())),
    };
    let committed = txn.commit().map_err(store_err);
    if let (Ok(()), Some(reserved)) = (&committed, reserved) {
        versions.reserved = reserved;
    }
    if durable {
        synced(transactions);
    }
    // Counted even when the commit failed: what it left is unknown.
    snapshots.committed();
    match committed {
        Ok(()) => {
            let mut outcomes = outcomes.into_iter();
            answer(batch, |_| outcomes.next().expect("an outcome per commit"))
        }
        Err(e) => answer(batch, |_| Err(e.clone())),
    }
}

fn answer(batch: Vec<Queued>, mut outcome: impl FnMut(&Queued) -> Result<(), KvError>) {
    for queued in batch {
        let outcome = outcome(&queued);
        // A commit whose caller went away still landed: nobody to tell.
        let _ = queued.done.send(outcome);
    }
}

fn begin(db: &Database, durable: bool) -> Result<WriteTransaction, KvError> {
    let mut txn = db.begin_write().map_err(store_err)?;
    txn.set_durability(if durable { redb::Durability::Immediate } else { redb::Durability::None });
    Ok(txn)
}

/// Makes every transaction committed so far durable: an empty durable one. On failure
/// the next durable transaction does it (the error is logged).
fn sync(db: &Database, transactions: &AtomicU64) {
    match begin(db, true).and_then(|txn| txn.commit().map_err(store_err)) {
        Ok(()) => synced(transactions),
        Err(e) => tracing::error!(error = %e, "the catalog file's commits are not yet on disk"),
    }
}

/// Counts a durable transaction (an fsync).
fn synced(transactions: &AtomicU64) {
    transactions.fetch_add(1, Ordering::Relaxed);
    crate::telemetry::redb_transaction();
}

/// The outcome of each commit of a batch, and the counter the transaction wrote (if it
/// reserved a block).
type Applied = (Vec<Result<(), KvError>>, Option<u64>);

/// Applies each commit of `batch` in order inside `txn`: its writes if every one of
/// its checks holds, in every key space it names (each commit gets the next version),
/// else nothing of it. An error if the store failed, after which `txn` must not be
/// committed.
fn apply_all(txn: &WriteTransaction, versions: &mut Versions, batch: &[Queued]) -> Result<Applied, KvError> {
    // Versions used by a transaction that is not committed are not used again.
    let version = &mut versions.last;
    let mut outcomes = Vec::with_capacity(batch.len());
    let mut stored = Vec::new();
    for queued in batch {
        let mut tables = Vec::with_capacity(queued.parts.len());
        for part in &queued.parts {
            tables.push(txn.open_table(TableDefinition::<&[u8], &[u8]>::new(&part.table)).map_err(store_err)?);
        }
        let mut held = true;
        for (table, part) in tables.iter().zip(&queued.parts) {
            held = held && holds(table, &part.checks)?;
        }
        if !held {
            outcomes.push(Err(KvError::Conflict));
            continue;
        }
        *version += 1;
        for (table, part) in tables.iter_mut().zip(&queued.parts) {
            for write in &part.writes {
                match &write.value {
                    Some(value) => {
                        stored.clear();
                        stored.extend_from_slice(&version.to_le_bytes());
                        stored.extend_from_slice(value);
                        table.insert(write.key.as_slice(), stored.as_slice()).map_err(store_err)?;
                    }
                    None => {
                        table.remove(write.key.as_slice()).map_err(store_err)?;
                    }
                }
            }
        }
        outcomes.push(Ok(()));
    }
    if *version <= versions.reserved {
        return Ok((outcomes, None));
    }
    let reserved = *version + VERSION_BLOCK;
    txn.open_table(COUNTER).map_err(store_err)?.insert("version", reserved).map_err(store_err)?;
    Ok((outcomes, Some(reserved)))
}

/// Whether every check holds in `table` as the transaction sees it.
fn holds(table: &redb::Table<'_, &'static [u8], &'static [u8]>, checks: &[Check]) -> Result<bool, KvError> {
    for check in checks {
        let holds = match check {
            Check::Absent(key) => table.get(key.as_slice()).map_err(store_err)?.is_none(),
            Check::Present(key) => table.get(key.as_slice()).map_err(store_err)?.is_some(),
            Check::AtVersion(key, want) => {
                table.get(key.as_slice()).map_err(store_err)?.is_some_and(|v| split(v.value()).0 == *want)
            }
            Check::PrefixEmpty(prefix) => {
                let end = prefix_end(prefix);
                let mut range = match &end {
                    Some(end) => table.range::<&[u8]>(prefix.as_slice()..end.as_slice()),
                    None => table.range::<&[u8]>(prefix.as_slice()..),
                }
                .map_err(store_err)?;
                range.next().is_none()
            }
        };
        if !holds {
            return Ok(false);
        }
    }
    Ok(true)
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
        let (db, snapshots) = (Arc::new(db), Arc::<Snapshots>::default());
        let committer = Arc::new(Committer::start(db.clone(), snapshots.clone())?);
        Ok(Self { db, committer, snapshots })
    }

    /// The key space `name`, created if missing.
    pub fn space(&self, name: &str) -> Result<RedbSpace, KvError> {
        let space = RedbSpace {
            db: self.db.clone(),
            committer: self.committer.clone(),
            snapshots: self.snapshots.clone(),
            table: Arc::from(format!("kv:{name}")),
        };
        create_table(&self.db, space.def())?;
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
    db: Arc<Database>,
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
        let table = self.snapshots.current(&self.db, self.def())?;
        Ok(table.get(key).map_err(store_err)?.map(|v| {
            let (version, value) = split(v.value());
            Entry { key: key.to_vec(), value: value.to_vec(), version }
        }))
    }

    /// The entries in [start, end) of the current read snapshot, in order.
    fn range(&self, start: &[u8], end: Option<&[u8]>) -> Result<Option<Range>, KvError> {
        let table = self.snapshots.current(&self.db, self.def())?;
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
        Arc::ptr_eq(&self.db, &other.db)
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
mod tests {
    use super::*;

    fn space() -> (tempfile::TempDir, RedbSpace, RedbSpace) {
        let dir = tempfile::tempdir().unwrap();
        let store = RedbStore::open(&dir.path().join("kv.redb")).unwrap();
        (dir, store.space("a").unwrap(), store.space("b").unwrap())
    }

    fn put(key: &[u8], value: &[u8]) -> Write {
        Write { key: key.to_vec(), value: Some(value.to_vec()) }
    }

    fn absent(key: &[u8]) -> Check {
        Check::Absent(key.to_vec())
    }

    #[tokio::test]
    async fn commit_applies_all_or_nothing() {
        let (_dir, a, _) = space();
        a.commit(vec![absent(b"k")], vec![put(b"k", b"1")]).await.unwrap();
        let v1 = a.get(b"k").unwrap().unwrap();
        // A failing check leaves every write unapplied.
        let err = a.commit(vec![absent(b"k")], vec![put(b"k", b"2"), put(b"x", b"2")]).await;
        assert!(matches!(err, Err(KvError::Conflict)));
        assert_eq!(a.get(b"k").unwrap().unwrap().value, b"1");
        assert!(a.get(b"x").unwrap().is_none());
        // Version checks are compare-and-swap.
        a.commit(vec![Check::AtVersion(b"k".to_vec(), v1.version)], vec![put(b"k", b"3")]).await.unwrap();
        let stale = a.commit(vec![Check::AtVersion(b"k".to_vec(), v1.version)], vec![put(b"k", b"4")]).await;
        assert!(matches!(stale, Err(KvError::Conflict)));
        assert_eq!(a.get(b"k").unwrap().unwrap().value, b"3");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_commits_share_transactions_and_all_land() {
        let (_dir, a, _) = space();
        let writers: Vec<_> = (0..16)
            .map(|w| {
                let a = a.clone();
                tokio::spawn(async move {
                    for i in 0..20 {
                        a.commit(vec![], vec![put(format!("{w}/{i}").as_bytes(), b"")]).await.unwrap();
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.await.unwrap();
        }
        assert_eq!(a.scan(b"", None, usize::MAX).unwrap().len(), 320);
        let transactions = a.committer.transactions.load(Ordering::Relaxed);
        assert!(transactions < 320, "16 writers shared transactions: {transactions} for 320 commits");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_refused_commit_in_a_batch_is_refused_alone() {
        let (_dir, a, b) = space();
        // 16 writers race to create the same key in each round: exactly one wins a
        // round, whatever batches the committer made; the losers change nothing.
        for round in 0..10 {
            let key = format!("k{round}");
            let racers: Vec<_> = (0..16)
                .map(|w| {
                    let (a, b, key) = (a.clone(), b.clone(), key.clone());
                    tokio::spawn(async move {
                        let won = a
                            .commit(vec![absent(key.as_bytes())], vec![put(key.as_bytes(), w.to_string().as_bytes())])
                            .await;
                        // A commit to another space in the same batches lands regardless.
                        b.commit(vec![], vec![put(format!("{key}/{w}").as_bytes(), b"")]).await.unwrap();
                        won.is_ok()
                    })
                })
                .collect();
            let mut winners = 0;
            for racer in racers {
                winners += usize::from(racer.await.unwrap());
            }
            assert_eq!(winners, 1, "round {round}");
        }
        assert_eq!(a.scan(b"", None, usize::MAX).unwrap().len(), 10);
        assert_eq!(b.scan(b"", None, usize::MAX).unwrap().len(), 160);
    }

    #[tokio::test]
    async fn a_commit_is_durable_and_in_the_file_when_it_returns() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kv.redb");
        let store = RedbStore::open(&path).unwrap();
        store.space("a").unwrap().commit(vec![], vec![put(b"k", b"1")]).await.unwrap();
        // Dropping the store stops its committer and closes the file: it opens again.
        drop(store);
        let again = RedbStore::open(&path).unwrap();
        assert_eq!(again.space("a").unwrap().get(b"k").unwrap().unwrap().value, b"1");
    }

    #[tokio::test]
    async fn a_commit_made_durable_soon_is_seen_at_once_and_on_disk_without_another() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kv.redb");
        let store = RedbStore::open(&path).unwrap();
        let a = store.space("a").unwrap();
        a.commit_with(vec![absent(b"k")], vec![put(b"k", b"1")], Durability::Soon).await.unwrap();
        assert_eq!(a.get(b"k").unwrap().unwrap().value, b"1", "seen when it returns");
        let refused = a.commit_with(vec![absent(b"k")], vec![put(b"k", b"2")], Durability::Soon).await;
        assert!(matches!(refused, Err(KvError::Conflict)), "checked like any commit");
        // Nothing follows it: the committer, idle, makes it durable alone.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while store.committer.transactions.load(Ordering::Relaxed) == 0 {
            assert!(std::time::Instant::now() < deadline, "no fsync followed the commit");
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        // And one the store is closed right after is durable too.
        a.commit_with(vec![], vec![put(b"j", b"1")], Durability::Soon).await.unwrap();
        drop((a, store));
        let again = RedbStore::open(&path).unwrap().space("a").unwrap();
        assert_eq!(again.scan(b"", None, 10).unwrap().len(), 2);
    }

    #[tokio::test]
    async fn a_lone_writers_soon_commits_ride_on_its_durable_ones() {
        let (_dir, a, _) = space();
        // As a root namespace is created: an intent made durable soon, then the change.
        for i in 0..20 {
            let intent = format!("intent/{i}");
            a.commit_with(vec![], vec![put(intent.as_bytes(), b"")], Durability::Soon).await.unwrap();
            a.commit(vec![], vec![put(format!("ns/{i}").as_bytes(), b"")]).await.unwrap();
        }
        let fsyncs = a.committer.transactions.load(Ordering::Relaxed);
        // 20 with none waited for; more only when a `Soon` one waited over a millisecond
        // for the commit after it (this thread was not run meanwhile), and was made
        // durable alone; 40 if each waited for an fsync of its own.
        assert!((20..35).contains(&fsyncs), "{fsyncs} fsyncs for 20 durable and 20 soon commits");
    }

    #[tokio::test]
    async fn reads_see_every_commit_that_returned_before_them() {
        let dir = tempfile::tempdir().unwrap();
        let store = RedbStore::open(&dir.path().join("kv.redb")).unwrap();
        // Two handles on one key space, as two parts of the server hold.
        let (writer, reader) = (store.space("a").unwrap(), store.space("a").unwrap());
        for value in [b"1", b"2", b"3"] {
            writer.commit(vec![], vec![put(b"k", value)]).await.unwrap();
            assert_eq!(reader.get(b"k").unwrap().unwrap().value, value);
            assert_eq!(reader.scan(b"", None, 10).unwrap()[0].value, value);
            // Read again from the snapshot kept; a commit drops it.
            assert_eq!(reader.get(b"k").unwrap().unwrap().value, value);
            assert_eq!(store.snapshots.tables().len(), 1);
        }
        writer.commit(vec![], vec![Write { key: b"k".to_vec(), value: None }]).await.unwrap();
        assert!(store.snapshots.tables().is_empty(), "no snapshot outlives a commit");
        assert!(reader.get(b"k").unwrap().is_none());
    }

    #[tokio::test]
    async fn versions_are_never_reused() {
        let (_dir, a, _) = space();
        a.commit(vec![], vec![put(b"k", b"1")]).await.unwrap();
        let first = a.get(b"k").unwrap().unwrap().version;
        a.commit(vec![], vec![Write { key: b"k".to_vec(), value: None }]).await.unwrap();
        a.commit(vec![], vec![put(b"k", b"1")]).await.unwrap();
        assert_ne!(a.get(b"k").unwrap().unwrap().version, first);
    }

    #[tokio::test]
    async fn versions_grow_across_a_reopen_though_few_commits_write_the_counter() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kv.redb");
        let mut seen = vec![];
        for _ in 0..3 {
            let store = RedbStore::open(&path).unwrap();
            let a = store.space("a").unwrap();
            for i in 0..5 {
                a.commit(vec![], vec![put(b"k", b"")]).await.unwrap();
                a.commit(vec![], vec![put(format!("{i}").as_bytes(), b"")]).await.unwrap();
                seen.push(a.get(b"k").unwrap().unwrap().version);
            }
        }
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "every version after the last: {seen:?}");
        // One block per open: the counter was written by 3 of the 30 commits.
        let reserved = Versions::stored(&RedbStore::open(&path).unwrap().db).unwrap().reserved;
        assert_eq!(reserved, seen[10] + VERSION_BLOCK, "reserved by the first commit after the last open: {seen:?}");
    }

    #[tokio::test]
    async fn scans_and_prefix_checks_stay_in_their_space() {
        let (_dir, a, b) = space();
        a.commit(vec![], vec![put(b"p1", b""), put(b"p2", b""), put(b"q", b"")]).await.unwrap();
        b.commit(vec![], vec![put(b"p0", b"")]).await.unwrap();
        let keys: Vec<_> = a.scan(b"p", Some(b"q"), 10).unwrap().into_iter().map(|e| e.key).collect();
        assert_eq!(keys, vec![b"p1".to_vec(), b"p2".to_vec()]);
        assert_eq!(a.scan(b"p", None, 1).unwrap().len(), 1);
        assert!(b.commit(vec![Check::PrefixEmpty(b"q".to_vec())], vec![]).await.is_ok());
        assert!(matches!(a.commit(vec![Check::PrefixEmpty(b"q".to_vec())], vec![]).await, Err(KvError::Conflict)));
    }
}
