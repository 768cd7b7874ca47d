//! The redb key spaces' own tests: checks, versions, group commit, snapshots.

use super::committer::Versions;
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
    let reserved = Versions::stored(&RedbStore::open(&path).unwrap().file.db().unwrap()).unwrap().reserved;
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

/// A file opened again (as the committer does after a write failed on I/O) serves on:
/// reads see what was committed before, held snapshots are let go, and commits land.
#[tokio::test]
async fn a_file_opened_again_serves_on() {
    let (_dir, a, b) = space();
    a.commit(vec![], vec![put(b"k", b"1")]).await.unwrap();
    assert!(a.get(b"k").unwrap().is_some() && b.get(b"k").unwrap().is_none(), "snapshots held");
    a.file.reopen(&a.snapshots).unwrap();
    assert_eq!(a.get(b"k").unwrap().unwrap().value, b"1");
    a.commit(vec![absent(b"j")], vec![put(b"k", b"2"), put(b"j", b"1")]).await.unwrap();
    assert_eq!(a.get(b"k").unwrap().unwrap().value, b"2");
    assert!(b.same_file(&a), "one file still");
}
