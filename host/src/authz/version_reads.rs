//! Reads of the authorization version key, shared by the requests that ask at once.
//!
//! On a shared store every request reads the version key before deciding, so that a
//! change another host made is applied at once: a round trip each. Requests that ask
//! while a read is under way wait for it to end and share the next read. That read
//! starts after every one of them asked, so each still sees every change that
//! committed before it asked; under load one round trip serves many requests.

use std::sync::{Arc, Mutex};

use futures::future::{BoxFuture, FutureExt, Shared};

use crate::storage::kv::{Entry, KvError, KvStore};

type Read = Shared<BoxFuture<'static, Result<Option<Entry>, KvError>>>;

/// The shared reads of one key.
pub(super) struct SharedReads {
    key: &'static [u8],
    flights: Arc<Mutex<Flights>>,
}

#[derive(Default)]
struct Flights {
    /// The read a caller joins: it has not started yet (it waits for `started`).
    queued: Option<Read>,
    /// The read last started (it may have ended).
    started: Option<Read>,
}

impl SharedReads {
    pub(super) fn of(key: &'static [u8]) -> Self {
        Self { key, flights: Arc::default() }
    }

    /// The key as `space` holds it, read after this call began.
    pub(super) async fn read(&self, space: &KvStore) -> Result<Option<Entry>, KvError> {
        let read = {
            let mut flights = self.flights.lock().expect("shared reads");
            match &flights.queued {
                Some(queued) => queued.clone(),
                None => {
                    let read = next_read(self.key, space.clone(), flights.started.clone(), self.flights.clone());
                    flights.queued = Some(read.clone());
                    read
                }
            }
        };
        read.await
    }
}

/// A read that starts once `before` has ended, and from then on is joined by no one.
fn next_read(key: &'static [u8], space: KvStore, before: Option<Read>, flights: Arc<Mutex<Flights>>) -> Read {
    async move {
        if let Some(before) = before {
            let _ = before.await;
        }
        {
            let mut flights = flights.lock().expect("shared reads");
            flights.started = flights.queued.take();
        }
        space.get(key).await
    }
    .boxed()
    .shared()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::kv::{Check, RedbStore, Write};

    async fn put(space: &KvStore, value: &str) {
        let write = Write { key: b"v".to_vec(), value: Some(value.as_bytes().to_vec()) };
        space.commit(&[] as &[Check], &[write]).await.unwrap();
    }

    fn value(read: Result<Option<Entry>, KvError>) -> String {
        String::from_utf8(read.unwrap().unwrap().value).unwrap()
    }

    /// Readers asking at once each see every write that returned before they asked,
    /// and no read is left queued once they are answered.
    #[tokio::test]
    async fn a_shared_read_sees_every_write_that_returned_before_it_was_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let space = KvStore::Redb(RedbStore::open(&dir.path().join("kv.redb")).unwrap().space("s").unwrap());
        let reads = Arc::new(SharedReads::of(b"v"));
        for n in 0..50 {
            put(&space, &n.to_string()).await;
            let readers: Vec<_> = (0..8)
                .map(|_| {
                    let (reads, space) = (reads.clone(), space.clone());
                    tokio::spawn(async move { value(reads.read(&space).await) })
                })
                .collect();
            for reader in readers {
                assert_eq!(reader.await.unwrap(), n.to_string());
            }
        }
        let flights = reads.flights.lock().unwrap();
        assert!(flights.queued.is_none(), "no read is left waiting for a caller");
    }
}
