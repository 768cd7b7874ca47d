//! The committer: one thread per file that takes every commit queued while it was busy
//! and applies them, each on its own checks, in one write transaction (see the room's
//! opening comment for when that transaction is made durable).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};

use redb::{Database, ReadableTable, TableDefinition, WriteTransaction};
use tokio::sync::oneshot;

use super::{split, store_err, File, Snapshots, COUNTER, MAX_BATCH, MAX_UNSYNCED, SYNC_WHEN_IDLE, VERSION_BLOCK};
use crate::storage::kv::{prefix_end, Check, Durability, KvError, Write};

/// One commit waiting for the committer: what it checks and writes in each key space
/// (one, or two for a joined commit), and where its outcome goes.
pub(super) struct Queued {
    pub(super) parts: Vec<Part>,
    pub(super) durability: Durability,
    pub(super) done: oneshot::Sender<Result<(), KvError>>,
}

/// What a commit checks and writes in one key space's table.
pub(super) struct Part {
    pub(super) table: Arc<str>,
    pub(super) checks: Vec<Check>,
    pub(super) writes: Vec<Write>,
}

/// The versions the committer gives out. The counter records a block reserved ahead
/// rather than the last version used, and is written only by the transaction that
/// uses the first version past it: one table fewer written by nearly every
/// transaction. A restart starts after the block, so no version is given twice; a
/// transaction lost in a crash loses the versions it used along with their keys.
pub(super) struct Versions {
    last: u64,
    /// What the file's counter holds (as the last committed transaction left it).
    pub(super) reserved: u64,
}

impl Versions {
    pub(super) fn stored(db: &Database) -> Result<Self, KvError> {
        let txn = db.begin_read().map_err(store_err)?;
        let counter = txn.open_table(COUNTER).map_err(store_err)?;
        let reserved = counter.get("version").map_err(store_err)?.map(|v| v.value()).unwrap_or(0);
        Ok(Versions { last: reserved, reserved })
    }
}

/// The file's committer thread and the queue to it. Dropped with the last handle on
/// the file: the queue closes, the thread finishes what it took and ends, and the
/// drop waits for it, so the file is closed when the store is gone.
pub(super) struct Committer {
    pub(super) queue: Option<mpsc::Sender<Queued>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// Durable write transactions committed (how many fsyncs the commits shared;
    /// operators see it as a metric).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(super) transactions: Arc<AtomicU64>,
}

impl Committer {
    pub(super) fn start(file: Arc<File>, snapshots: Arc<Snapshots>, mut versions: Versions) -> Result<Self, KvError> {
        let (queue, queued) = mpsc::channel();
        let transactions = Arc::new(AtomicU64::new(0));
        let counted = transactions.clone();
        let thread = std::thread::Builder::new()
            .name("redb-commit".into())
            .spawn(move || run(&file, &snapshots, &mut versions, &queued, &counted))
            .map_err(store_err)?;
        Ok(Self { queue: Some(queue), thread: Some(thread), transactions })
    }
}

/// How often a file that could not be opened again is tried again.
const REOPEN_EVERY: std::time::Duration = std::time::Duration::from_millis(200);

/// The committer's loop: takes each batch, commits it, and makes `Soon` commits durable
/// when nothing else will (see the module's comment); opens the file again after a
/// commit that failed on the store, retrying every [`REOPEN_EVERY`] while it cannot.
/// Ends when the queue closes, with every transaction durable.
pub(super) fn run(
    file: &File,
    snapshots: &Snapshots,
    versions: &mut Versions,
    queued: &mpsc::Receiver<Queued>,
    transactions: &AtomicU64,
) {
    // Transactions committed without an fsync since the last one with.
    let mut unsynced = 0;
    loop {
        // A file that could not be opened again is tried again while idle too: reads
        // fail until it is open, and a request may read before it ever commits.
        let closed = file.db().is_err() && file.reopen(snapshots).is_err();
        let first = if unsynced == 0 && !closed {
            match queued.recv() {
                Ok(first) => first,
                Err(_) => return,
            }
        } else {
            match queued.recv_timeout(if closed { REOPEN_EVERY } else { SYNC_WHEN_IDLE }) {
                Ok(first) => first,
                // Idle, or the store closing.
                Err(idle_or_closed) => {
                    if let Ok(db) = file.db() {
                        sync(&db, transactions);
                    }
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
        let db = match file.db() {
            Ok(db) => db,
            Err(e) => match file.reopen(snapshots).and_then(|()| file.db()) {
                Ok(db) => db,
                Err(_) => {
                    answer(batch, |_| Err(e.clone()));
                    continue;
                }
            },
        };
        // A failed write can leave redb's pages in memory inconsistent, and a later
        // transaction can then panic inside redb (seen with writes and syncs failing at
        // random): the batch's commits are told the committer stopped (their outcome
        // unknown), and the file is opened again, as after a refused write.
        let committed =
            catch_unwind(AssertUnwindSafe(|| commit_batch(&db, snapshots, versions, batch, durable, transactions)));
        unsynced = if durable { 0 } else { unsynced + 1 };
        let open_again = match committed {
            // After a write that failed on I/O, redb's pages in memory may no longer be
            // what the file holds, whether or not it refuses later writes: they are
            // read again from the file rather than trusted.
            Ok(failed) => failed,
            Err(_) => {
                tracing::error!("redb panicked while committing; the catalog file is opened again");
                true
            }
        };
        if open_again {
            let reopened = catch_unwind(AssertUnwindSafe(|| {
                drop(db);
                file.reopen(snapshots)
            }));
            match reopened {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    tracing::error!(error = %e, "the catalog file could not be opened again; trying again shortly")
                }
                Err(_) => tracing::error!("redb panicked closing the catalog file; opening it again shortly"),
            }
        }
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
/// (its outcome is unknown). Whether the store failed.
pub(super) fn commit_batch(
    db: &Database,
    snapshots: &Snapshots,
    versions: &mut Versions,
    batch: Vec<Queued>,
    durable: bool,
    transactions: &AtomicU64,
) -> bool {
    let applied = begin(db, durable).and_then(|txn| apply_all(&txn, versions, &batch).map(|outcomes| (txn, outcomes)));
    let (txn, (outcomes, reserved)) = match applied {
        Ok(applied) => applied,
        Err(_) if batch.len() > 1 => {
            let mut failed = false;
            for queued in batch {
                failed |= commit_batch(db, snapshots, versions, vec![queued], durable, transactions);
            }
            return failed;
        }
        Err(e) => {
            answer(batch, |_| Err(e.clone()));
            return true;
        }
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
            answer(batch, |_| outcomes.next().expect("an outcome per commit"));
            false
        }
        Err(e) => {
            answer(batch, |_| Err(e.clone()));
            true
        }
    }
}

pub(super) fn answer(batch: Vec<Queued>, mut outcome: impl FnMut(&Queued) -> Result<(), KvError>) {
    for queued in batch {
        let outcome = outcome(&queued);
        // A commit whose caller went away still landed: nobody to tell.
        let _ = queued.done.send(outcome);
    }
}

pub(super) fn begin(db: &Database, durable: bool) -> Result<WriteTransaction, KvError> {
    let mut txn = db.begin_write().map_err(store_err)?;
    txn.set_durability(if durable { redb::Durability::Immediate } else { redb::Durability::None });
    Ok(txn)
}

/// Makes every transaction committed so far durable: an empty durable one. On failure
/// the next durable transaction does it (the error is logged).
pub(super) fn sync(db: &Database, transactions: &AtomicU64) {
    match begin(db, true).and_then(|txn| txn.commit().map_err(store_err)) {
        Ok(()) => synced(transactions),
        Err(e) => tracing::error!(error = %e, "the catalog file's commits are not yet on disk"),
    }
}

/// Counts a durable transaction (an fsync).
pub(super) fn synced(transactions: &AtomicU64) {
    transactions.fetch_add(1, Ordering::Relaxed);
    crate::telemetry::redb_transaction();
}

/// The outcome of each commit of a batch, and the counter the transaction wrote (if it
/// reserved a block).
pub(super) type Applied = (Vec<Result<(), KvError>>, Option<u64>);

/// Applies each commit of `batch` in order inside `txn`: its writes if every one of
/// its checks holds, in every key space it names (each commit gets the next version),
/// else nothing of it. An error if the store failed, after which `txn` must not be
/// committed.
pub(super) fn apply_all(txn: &WriteTransaction, versions: &mut Versions, batch: &[Queued]) -> Result<Applied, KvError> {
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
pub(super) fn holds(table: &redb::Table<'_, &'static [u8], &'static [u8]>, checks: &[Check]) -> Result<bool, KvError> {
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
