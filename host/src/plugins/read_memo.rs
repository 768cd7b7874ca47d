//! Answers of a backend's reads, kept while its key space is unchanged.
//!
//! A backend that answers reads from its `kv` space alone (the built-in native one: it
//! reads no clock and no setting to answer, and keeps no state between calls) gives the
//! same answer to the same question until the space changes. On a redb file the host
//! knows when that is (the file's commit count, [`KvStore::version`]), so a repeated
//! loadTable, or the prefix of a repeated listing, is answered without a call into the
//! guest. An answer is kept under the count read before the call that gave it, and is
//! used only while the count is still that: a commit that returned before a read is
//! always seen. A Postgres space may change on another host unseen: nothing is kept for
//! one. Failures are never kept.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::future::Future;
use std::sync::Mutex;

use crate::storage::kv::KvStore;

/// Answers kept at most, per mount and kind of read; past it, all are dropped.
const MAX_ENTRIES: usize = 4096;

/// Kept answers of one kind of read, by question.
pub struct ReadMemo<V> {
    space: KvStore,
    entries: Mutex<HashMap<String, (u64, V), foldhash::fast::RandomState>>,
}

impl<V: Clone> ReadMemo<V> {
    /// A memo over `space`, if its store can tell when it changes.
    pub fn over(space: &KvStore) -> Option<Self> {
        space.version().map(|_| Self { space: space.clone(), entries: Mutex::default() })
    }

    fn version(&self) -> u64 {
        self.space.version().expect("a store that counts its changes")
    }

    /// The answer kept for `question` if nothing changed since it was read, else the
    /// one `read` gives, kept under the version read before it (a failure is not kept).
    pub async fn answer<E>(&self, question: String, read: impl Future<Output = Result<V, E>>) -> Result<V, E> {
        let version = match self.get(&question) {
            Ok(kept) => return Ok(kept),
            Err(version) => version,
        };
        let answer = read.await?;
        self.put(question, version, answer.clone());
        Ok(answer)
    }

    /// The answer kept for `question` if nothing changed since it was read; otherwise
    /// the version to keep the answer read now under.
    fn get(&self, question: &str) -> Result<V, u64> {
        let now = self.version();
        match self.entries.lock().expect("read memo").get(question) {
            Some((at, answer)) if *at == now => Ok(answer.clone()),
            _ => Err(now),
        }
    }

    /// Keeps `answer` to `question`, read at `version`.
    fn put(&self, question: String, version: u64, answer: V) {
        let mut entries = self.entries.lock().expect("read memo");
        if entries.len() >= MAX_ENTRIES && !entries.contains_key(&question) {
            entries.clear();
        }
        entries.insert(question, (version, answer));
    }
}

/// A question as a memo key: each part length-prefixed, so no two questions share one
/// (names may hold any character), `None` apart from every string.
pub fn question<'a>(parts: impl IntoIterator<Item = Option<&'a str>>) -> String {
    let mut key = String::new();
    for part in parts {
        match part {
            Some(part) => _ = write!(key, "{}:{part}", part.len()),
            None => key.push('-'),
        }
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::kv::{RedbStore, Write};

    #[test]
    fn questions_differ_whenever_their_parts_do() {
        let q = |parts: &[Option<&str>]| question(parts.iter().copied());
        assert_ne!(q(&[Some("a:b")]), q(&[Some("a"), Some("b")]));
        assert_ne!(q(&[Some("a"), Some("")]), q(&[Some("a"), None]));
        assert_ne!(q(&[Some("1:a")]), q(&[Some("a"), Some("")]));
        assert_eq!(q(&[Some("a"), None]), q(&[Some("a"), None]));
    }

    #[tokio::test]
    async fn an_answer_is_kept_until_the_space_changes() {
        let dir = tempfile::tempdir().unwrap();
        let store = RedbStore::open(&dir.path().join("m.redb")).unwrap();
        let space = KvStore::Redb(store.space("a").unwrap());
        let memo = ReadMemo::over(&space).unwrap();
        let version = memo.get("q").unwrap_err();
        memo.put("q".into(), version, 1);
        assert_eq!(memo.get("q"), Ok(1));
        // A commit to another space of the same file counts as a change too.
        let other = store.space("b").unwrap();
        other.commit(vec![], vec![Write { key: b"k".to_vec(), value: Some(vec![]) }]).await.unwrap();
        let later = memo.get("q").unwrap_err();
        assert!(later > version);
        // An answer read before a change is not kept past it.
        memo.put("q".into(), version, 2);
        assert_eq!(memo.get("q"), Err(later));
    }
}
