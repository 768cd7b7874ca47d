//! Reads reused within one attempt at a change.
//!
//! A table commit loads the table's pointer (the backend reads its key), then asks the
//! backend to swap it (the backend reads the same key again, for the version its
//! compare-and-swap checks). On Postgres each read is a round trip. A backend whose
//! every write is checked against what it read (it declares `checks-what-it-read`) may be
//! given the first read again: if the key changed in between, its swap fails the
//! version check and the host retries the change in a new attempt, as it would had
//! the second read seen the change. Any commit through the key space ends the reuse,
//! so nothing is answered from before a write.

use std::cell::RefCell;
use std::future::Future;

use super::host_state::Grants;
use crate::storage::kv::Entry;

/// The key space an attempt reuses reads of (its grants' address), and what it read.
struct Reads {
    space: usize,
    read: RefCell<Vec<(Vec<u8>, Option<Entry>)>>,
}

tokio::task_local! {
    static READS: Reads;
}

/// The key space of `grants`, as the reads name it.
pub(super) fn space_of(grants: &Grants) -> usize {
    grants as *const Grants as usize
}

/// Runs one attempt at a change, reusing what it reads of the key space `space`.
pub(super) async fn within_one_attempt<F: Future>(space: usize, attempt: F) -> F::Output {
    READS.scope(Reads { space, read: RefCell::new(Vec::new()) }, attempt).await
}

/// What this attempt already read of `key` in `space`, if it did.
pub(super) fn read_before(space: usize, key: &[u8]) -> Option<Option<Entry>> {
    READS
        .try_with(|reads| {
            let read = reads.read.borrow();
            read.iter().find(|(k, _)| reads.space == space && k == key).map(|(_, e)| e.clone())
        })
        .ok()
        .flatten()
}

/// Notes a read of `space`, where an attempt reusing its reads is running.
pub(super) fn note(space: usize, key: &[u8], entry: &Option<Entry>) {
    let _ = READS.try_with(|reads| {
        if reads.space == space {
            reads.read.borrow_mut().push((key.to_vec(), entry.clone()))
        }
    });
}

/// Forgets every read of `space`: it is about to be written.
pub(super) fn forget(space: usize) {
    let _ = READS.try_with(|reads| {
        if reads.space == space {
            reads.read.borrow_mut().clear()
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(version: u64) -> Option<Entry> {
        Some(Entry { key: b"k".to_vec(), value: b"v".to_vec(), version })
    }

    #[tokio::test]
    async fn a_read_is_reused_only_inside_its_attempt_and_its_space_until_a_write() {
        note(1, b"k", &entry(1));
        assert_eq!(read_before(1, b"k"), None, "outside an attempt nothing is kept");
        within_one_attempt(1, async {
            assert_eq!(read_before(1, b"k"), None);
            note(1, b"k", &entry(1));
            note(1, b"gone", &None);
            note(2, b"k", &entry(2));
            assert_eq!(read_before(1, b"k"), Some(entry(1)));
            assert_eq!(read_before(1, b"gone"), Some(None), "an absence is a read too");
            assert_eq!(read_before(2, b"k"), None, "another space's reads are not kept");
            assert_eq!(read_before(1, b"other"), None);
            forget(2);
            assert_eq!(read_before(1, b"k"), Some(entry(1)), "another space's write changes nothing");
            forget(1);
            assert_eq!(read_before(1, b"k"), None, "a write ends the reuse");
        })
        .await;
        within_one_attempt(1, async { assert_eq!(read_before(1, b"k"), None, "a new attempt reads anew") }).await;
    }
}
