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
//!
//! The pages of a listing the host scans from such a backend's keys are kept the same
//! way: the scan reads nothing but the space.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;

use crate::storage::kv::KvStore;

/// What a kept answer weighs against its memo's budget.
pub trait Weigh {
    fn weight(&self) -> usize;
}

impl<T: Weigh> Weigh for std::sync::Arc<T> {
    fn weight(&self) -> usize {
        T::weight(self)
    }
}

/// Kept answers of one kind of read, by question, weighing at most `budget` in all;
/// past it, all are dropped.
pub struct ReadMemo<V> {
    space: KvStore,
    budget: usize,
    entries: Mutex<Entries<V>>,
}

struct Entries<V> {
    by_question: HashMap<String, (u64, V), foldhash::fast::RandomState>,
    weight: usize,
}

impl<V> Default for Entries<V> {
    fn default() -> Self {
        Self { by_question: HashMap::default(), weight: 0 }
    }
}

impl<V: Clone + Weigh> ReadMemo<V> {
    /// A memo over `space` whose answers weigh at most `budget`, if its store can tell
    /// when it changes.
    pub fn over(space: &KvStore, budget: usize) -> Option<Self> {
        space.version().map(|_| Self { space: space.clone(), budget, entries: Mutex::default() })
    }

    fn version(&self) -> u64 {
        self.space.version().expect("a store that counts its changes")
    }

    /// The answer kept for `question` if nothing changed since it was read, else the
    /// one `read` gives, kept under the version read before it (a failure is not kept).
    /// (`read` makes the future only when it is needed: a backend call's future is
    /// large, and making it to drop it unpolled was most of what a kept answer cost.)
    pub async fn answer<E, F>(&self, question: String, read: impl FnOnce() -> F) -> Result<V, E>
    where
        F: Future<Output = Result<V, E>>,
    {
        let version = match self.get(&question) {
            Ok(kept) => return Ok(kept),
            Err(version) => version,
        };
        let answer = read().await?;
        self.put(question, version, answer.clone());
        Ok(answer)
    }

    /// The answer kept for `question` if nothing changed since it was read; otherwise
    /// the version to keep the answer read now under.
    fn get(&self, question: &str) -> Result<V, u64> {
        let now = self.version();
        match self.entries.lock().expect("read memo").by_question.get(question) {
            Some((at, answer)) if *at == now => Ok(answer.clone()),
            _ => Err(now),
        }
    }

    /// Keeps `answer` to `question`, read at `version` (unless it alone outweighs the
    /// budget).
    fn put(&self, question: String, version: u64, answer: V) {
        let weight = question.len() + answer.weight();
        if weight > self.budget {
            return;
        }
        let mut entries = self.entries.lock().expect("read memo");
        if let Some((_, replaced)) = entries.by_question.remove(&question) {
            entries.weight -= question.len() + replaced.weight();
        }
        if entries.weight + weight > self.budget {
            *entries = Entries::default();
        }
        entries.weight += weight;
        entries.by_question.insert(question, (version, answer));
    }
}

/// A question as a memo key: each part length-prefixed, so no two questions share one
/// (names may hold any character), `None` apart from every string.
pub fn question<'a>(parts: impl IntoIterator<Item = Option<&'a str>>) -> String {
    // Most questions fit: growing the key part by part reallocated it several times.
    let mut key = String::with_capacity(96);
    for part in parts {
        match part {
            Some(part) => {
                key.push_str(itoa::Buffer::new().format(part.len()));
                key.push(':');
                key.push_str(part);
            }
            None => key.push('-'),
        }
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::kv::{RedbStore, Write};

    impl Weigh for i32 {
        fn weight(&self) -> usize {
            *self as usize
        }
    }

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
        let memo = ReadMemo::over(&space, 100).unwrap();
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

    #[test]
    fn answers_weigh_at_most_the_budget() {
        let dir = tempfile::tempdir().unwrap();
        let store = RedbStore::open(&dir.path().join("m.redb")).unwrap();
        let memo = ReadMemo::over(&KvStore::Redb(store.space("a").unwrap()), 10).unwrap();
        let version = memo.get("a").unwrap_err();
        // Questions weigh their length: "a" and 4, "b" and 4.
        memo.put("a".into(), version, 4);
        memo.put("b".into(), version, 4);
        assert_eq!((memo.get("a"), memo.get("b")), (Ok(4), Ok(4)));
        // Kept again: weighed once.
        memo.put("a".into(), version, 4);
        assert_eq!(memo.entries.lock().unwrap().weight, 10);
        // One more past the budget: the rest are dropped, the new one kept.
        memo.put("c".into(), version, 1);
        assert_eq!((memo.get("a"), memo.get("c")), (Err(version), Ok(1)));
        // One that alone outweighs the budget is not kept.
        memo.put("d".into(), version, 10);
        assert_eq!((memo.get("c"), memo.get("d")), (Ok(1), Err(version)));
    }
}
