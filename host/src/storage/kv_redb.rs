//! Key spaces on redb. One file holds any number of key spaces, one redb table
//! each. Versions come from a per-file counter that only grows.
//!
//! Commits share fsyncs (group commit). A commit that is alone syncs as it commits.
//! When other commits are under way, each is applied without syncing and waits until
//! a later durable commit covers it: whichever waiter finds no sync under way makes
//! one (an empty durable commit) for every commit applied so far, and the others wait
//! for it. So concurrent writers pay for about one fsync per batch, and no commit
//! returns before it is on disk. Such a commit is visible to this process's readers
//! up to one fsync before it is durable; a crash in that window loses a write that
//! nobody was told had landed.
//!
//! Reads reuse one read snapshot per key space until the next commit (`Snapshots`).

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use redb::{Database, Durability, ReadOnlyTable, ReadableTable, TableDefinition, TableHandle};

use super::kv::{prefix_end, Check, Entry, KvError, Write};

fn store_err(e: impl std::fmt::Display) -> KvError {
    KvError::Store(e.to_string())
}

const COUNTER: TableDefinition<&str, u64> = TableDefinition::new("rustberg:counter");
const VERSION_LEN: usize = 8;

/// A redb file holding key spaces.
#[derive(Clone)]
pub struct RedbStore {
    db: Arc<Database>,
    sync: Arc<GroupSync>,
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

/// How far the file's commits have been made durable.
#[derive(Default)]
struct GroupSync {
    state: Mutex<SyncState>,
    synced: Condvar,
}

#[derive(Default)]
struct SyncState {
    /// Write transactions numbered so far. A transaction takes its number while it
    /// holds redb's writer lock, so every lower number has finished before it.
    numbered: u64,
    /// Every transaction numbered up to this one that committed is on disk.
    durable: u64,
    /// Commits between their start and their return.
    in_flight: u64,
    /// A waiter is syncing now.
    syncing: bool,
    /// Empty durable commits made (how many fsyncs the waiters shared).
    syncs: u64,
}

impl GroupSync {
    fn state(&self) -> std::sync::MutexGuard<'_, SyncState> {
        self.state.lock().expect("group sync")
    }

    /// Numbers the write transaction the caller holds, and says whether it is the
    /// only commit under way (it then syncs itself: nobody would share the fsync).
    fn number(&self) -> (u64, bool) {
        let mut state = self.state();
        state.numbered += 1;
        (state.numbered, state.in_flight == 1 && !state.syncing)
    }

    /// Transaction `number` committed durably: it and every one before it are on disk.
    fn made_durable(&self, number: u64) {
        let mut state = self.state();
        state.durable = state.durable.max(number);
        self.synced.notify_all();
    }

    /// Returns once transaction `number` is durable, syncing for everyone if nobody is.
    fn wait_durable(&self, db: &Database, number: u64) -> Result<(), KvError> {
        let mut state = self.state();
        loop {
            if state.durable >= number {
                return Ok(());
            }
            if state.syncing {
                state = self.synced.wait(state).expect("group sync");
                continue;
            }
            state.syncing = true;
            state.syncs += 1;
            drop(state);
            let synced = self.sync(db);
            state = self.state();
            state.syncing = false;
            if let Ok(covered) = synced {
                state.durable = state.durable.max(covered);
            }
            self.synced.notify_all();
            // A failed sync fails its own commit; each waiter left tries again.
            synced?;
        }
    }

    /// An empty durable commit, which makes every earlier commit durable; its number.
    fn sync(&self, db: &Database) -> Result<u64, KvError> {
        let mut txn = db.begin_write().map_err(store_err)?;
        let (number, _) = self.number();
        txn.set_durability(Durability::Immediate);
        txn.commit().map_err(store_err)?;
        Ok(number)
    }
}

/// Counts a commit as under way while it lives.
struct InFlight<'a>(&'a GroupSync);

impl<'a> InFlight<'a> {
    fn enter(sync: &'a GroupSync) -> Self {
        sync.state().in_flight += 1;
        InFlight(sync)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.state().in_flight -= 1;
    }
}

impl RedbStore {
    /// Opens (or creates) the file.
    pub fn open(path: &Path) -> Result<Self, KvError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(store_err)?;
        }
        let db = Database::create(path).map_err(|e| KvError::Store(format!("{}: {e}", path.display())))?;
        create_table(&db, COUNTER)?;
        // One durable commit now, on this thread: the first one allocates about 2 MB in
        // redb that glibc keeps resident when a request's commit, on a blocking thread,
        // is the first (measured: idle RSS 3 MB anonymous this way, 5 MB the other).
        let mut txn = db.begin_write().map_err(store_err)?;
        txn.set_durability(Durability::Immediate);
        txn.commit().map_err(store_err)?;
        Ok(Self { db: Arc::new(db), sync: Arc::default(), snapshots: Arc::default() })
    }

    /// The key space `name`, created if missing.
    pub fn space(&self, name: &str) -> Result<RedbSpace, KvError> {
        let space = RedbSpace {
            db: self.db.clone(),
            sync: self.sync.clone(),
            snapshots: self.snapshots.clone(),
            table: format!("kv:{name}"),
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
    sync: Arc<GroupSync>,
    snapshots: Arc<Snapshots>,
    table: String,
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

    /// Applies every write if every check holds, atomically and durably (blocking
    /// until the commit, or a group sync after it, is on disk).
    pub fn commit(&self, checks: &[Check], writes: &[Write]) -> Result<(), KvError> {
        let _in_flight = InFlight::enter(&self.sync);
        let mut txn = self.db.begin_write().map_err(store_err)?;
        let (number, alone) = self.sync.number();
        txn.set_durability(if alone { Durability::Immediate } else { Durability::None });
        {
            let mut table = txn.open_table(self.def()).map_err(store_err)?;
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
                    return Err(KvError::Conflict);
                }
            }
            let mut counter = txn.open_table(COUNTER).map_err(store_err)?;
            let version = counter.get("version").map_err(store_err)?.map(|v| v.value()).unwrap_or(0) + 1;
            counter.insert("version", version).map_err(store_err)?;
            let mut stored = Vec::new();
            for write in writes {
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
        txn.commit().map_err(store_err)?;
        self.snapshots.committed();
        if alone {
            self.sync.made_durable(number);
            Ok(())
        } else {
            self.sync.wait_durable(&self.db, number)
        }
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

    #[test]
    fn commit_applies_all_or_nothing() {
        let (_dir, a, _) = space();
        a.commit(&[Check::Absent(b"k".to_vec())], &[put(b"k", b"1")]).unwrap();
        let v1 = a.get(b"k").unwrap().unwrap();
        // A failing check leaves every write unapplied.
        let err = a.commit(&[Check::Absent(b"k".to_vec())], &[put(b"k", b"2"), put(b"x", b"2")]);
        assert!(matches!(err, Err(KvError::Conflict)));
        assert_eq!(a.get(b"k").unwrap().unwrap().value, b"1");
        assert!(a.get(b"x").unwrap().is_none());
        // Version checks are compare-and-swap.
        a.commit(&[Check::AtVersion(b"k".to_vec(), v1.version)], &[put(b"k", b"3")]).unwrap();
        let stale = a.commit(&[Check::AtVersion(b"k".to_vec(), v1.version)], &[put(b"k", b"4")]);
        assert!(matches!(stale, Err(KvError::Conflict)));
        assert_eq!(a.get(b"k").unwrap().unwrap().value, b"3");
    }

    #[test]
    fn concurrent_commits_share_syncs_and_all_land() {
        let (_dir, a, _) = space();
        let writers: Vec<_> = (0..16)
            .map(|w| {
                let a = a.clone();
                std::thread::spawn(move || {
                    for i in 0..20 {
                        a.commit(&[], &[put(format!("{w}/{i}").as_bytes(), b"")]).unwrap();
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap();
        }
        assert_eq!(a.scan(b"", None, usize::MAX).unwrap().len(), 320);
        let state = a.sync.state();
        assert_eq!(state.durable, state.numbered, "every commit returned durable");
        assert!(state.syncs < 320, "16 writers shared fsyncs: {} for 320 commits", state.syncs);
    }

    #[test]
    fn reads_see_every_commit_that_returned_before_them() {
        let dir = tempfile::tempdir().unwrap();
        let store = RedbStore::open(&dir.path().join("kv.redb")).unwrap();
        // Two handles on one key space, as two parts of the server hold.
        let (writer, reader) = (store.space("a").unwrap(), store.space("a").unwrap());
        for value in [b"1", b"2", b"3"] {
            writer.commit(&[], &[put(b"k", value)]).unwrap();
            assert_eq!(reader.get(b"k").unwrap().unwrap().value, value);
            assert_eq!(reader.scan(b"", None, 10).unwrap()[0].value, value);
            // Read again from the snapshot kept; a commit drops it.
            assert_eq!(reader.get(b"k").unwrap().unwrap().value, value);
            assert_eq!(store.snapshots.tables().len(), 1);
        }
        writer.commit(&[], &[Write { key: b"k".to_vec(), value: None }]).unwrap();
        assert!(store.snapshots.tables().is_empty(), "no snapshot outlives a commit");
        assert!(reader.get(b"k").unwrap().is_none());
    }

    #[test]
    fn versions_are_never_reused() {
        let (_dir, a, _) = space();
        a.commit(&[], &[put(b"k", b"1")]).unwrap();
        let first = a.get(b"k").unwrap().unwrap().version;
        a.commit(&[], &[Write { key: b"k".to_vec(), value: None }]).unwrap();
        a.commit(&[], &[put(b"k", b"1")]).unwrap();
        assert_ne!(a.get(b"k").unwrap().unwrap().version, first);
    }

    #[test]
    fn scans_and_prefix_checks_stay_in_their_space() {
        let (_dir, a, b) = space();
        a.commit(&[], &[put(b"p1", b""), put(b"p2", b""), put(b"q", b"")]).unwrap();
        b.commit(&[], &[put(b"p0", b"")]).unwrap();
        let keys: Vec<_> = a.scan(b"p", Some(b"q"), 10).unwrap().into_iter().map(|e| e.key).collect();
        assert_eq!(keys, vec![b"p1".to_vec(), b"p2".to_vec()]);
        assert_eq!(a.scan(b"p", None, 1).unwrap().len(), 1);
        assert!(b.commit(&[Check::PrefixEmpty(b"q".to_vec())], &[]).is_ok());
        assert!(matches!(a.commit(&[Check::PrefixEmpty(b"q".to_vec())], &[]), Err(KvError::Conflict)));
    }
}
