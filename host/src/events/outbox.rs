//! The outbox, in the host's key space (a redb file or Postgres).
//!
//! - **Pending.** An event is first written under `events/pending/<event id>`, in the
//!   same commit as the change it tells of where the change commits to the same store
//!   (it rides that commit): the change and its event land together or not at all, so a
//!   crash between the commit and the publish loses nothing.
//! - **The log.** A relay moves pending events, in their ids' order, to
//!   `events/log/<sequence>`: the sequence numbers are dense and only grow, and a
//!   consumer that read up to one of them has read everything before it (the events
//!   endpoint's continuation token and each sink's cursor are such a number). A move is
//!   one commit, checked against the log's head and against each pending event being
//!   still there as it was read: relays of several hosts over one Postgres put each
//!   event in the log exactly once, whichever wins, and the loser reads again.
//!
//! Event ids are UUIDv7, so the pending order is their makers' clocks' order; two changes
//! of one table on one host are in the log in the order they were made. Between hosts
//! the order holds as long as their clocks differ by less than the time between the
//! two changes.

use crate::storage::kv::{prefix_end, Check, Entry, KvError, KvStore, Write};

const PENDING: &[u8] = b"events/pending/";
const LOG: &[u8] = b"events/log/";
const HEAD: &[u8] = b"events/head";

/// How many pending events one move takes: one commit, so bounded in size.
const MOVE_BATCH: usize = 256;

/// One event of the log: its sequence number and the event as it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Logged {
    pub sequence: u64,
    pub event: Vec<u8>,
}

/// The outbox of one host key space.
#[derive(Clone)]
pub struct Outbox {
    space: KvStore,
}

impl Outbox {
    pub fn new(space: KvStore) -> Self {
        Self { space }
    }

    /// The key space the outbox is in: a change committed there can carry its event.
    pub fn space(&self) -> &KvStore {
        &self.space
    }

    /// The write that records `event` (its JSON) pending under its id, for the change's
    /// own commit to carry, or to be committed right after it.
    pub fn pending(&self, event_id: &str, event: Vec<u8>) -> Write {
        Write { key: [PENDING, event_id.as_bytes()].concat(), value: Some(event) }
    }

    /// Moves every pending event into the log; how many it moved. A move another host
    /// made first is not an error: what is left is read again and moved.
    pub async fn relay(&self) -> Result<usize, KvError> {
        let mut moved = 0;
        loop {
            let end = prefix_end(PENDING);
            let pending = self.space.scan(PENDING, end.as_deref(), MOVE_BATCH).await?;
            if pending.is_empty() {
                return Ok(moved);
            }
            match self.move_to_log(&pending).await {
                Ok(()) => moved += pending.len(),
                // Another relay moved first (some of these, or others that took the
                // next numbers): read again.
                Err(KvError::Conflict) => tokio::task::yield_now().await,
                Err(e) => return Err(e),
            }
        }
    }

    /// One commit: `pending` appended to the log after its head, each removed from
    /// pending, the head moved; refused if the head or any of them changed meanwhile
    /// (another move may have taken them between the read of `pending` and the head's).
    async fn move_to_log(&self, pending: &[Entry]) -> Result<(), KvError> {
        let head = self.space.get(HEAD).await?;
        let (last, head_check) = match &head {
            Some(head) => (sequence_of(&head.value)?, Check::AtVersion(HEAD.to_vec(), head.version)),
            None => (0, Check::Absent(HEAD.to_vec())),
        };
        let mut checks = vec![head_check];
        let mut writes = Vec::with_capacity(2 * pending.len() + 1);
        for (sequence, entry) in (last + 1..).zip(pending) {
            checks.push(Check::AtVersion(entry.key.clone(), entry.version));
            writes.push(Write { key: log_key(sequence), value: Some(entry.value.clone()) });
            writes.push(Write { key: entry.key.clone(), value: None });
        }
        let new_last = last + pending.len() as u64;
        writes.push(Write { key: HEAD.to_vec(), value: Some(new_last.to_be_bytes().to_vec()) });
        // Durable before a consumer can read it: a sequence number once read is never
        // given to another event after a crash.
        self.space.commit(&checks, &writes).await
    }

    /// Up to `limit` events of the log after sequence number `after` (0: from the
    /// start), in order.
    pub async fn read(&self, after: u64, limit: usize) -> Result<Vec<Logged>, KvError> {
        let end = prefix_end(LOG);
        let entries = self.space.scan(&log_key(after.saturating_add(1)), end.as_deref(), limit).await?;
        entries
            .into_iter()
            .map(|entry| Ok(Logged { sequence: sequence_of(&entry.key[LOG.len()..])?, event: entry.value }))
            .collect()
    }

    /// Removes the events of the log made before `cutoff_ms` (oldest first, stopping
    /// at the first one made after it); how many it removed. The log's numbers stay:
    /// a consumer behind them resumes at the oldest event kept.
    pub async fn prune(&self, cutoff_ms: i64) -> Result<usize, KvError> {
        let mut removed = 0;
        loop {
            let end = prefix_end(LOG);
            let oldest = self.space.scan(LOG, end.as_deref(), MOVE_BATCH).await?;
            let expired: Vec<Write> = oldest
                .iter()
                .take_while(|entry| made_at(&entry.value).is_none_or(|at| at < cutoff_ms))
                .map(|entry| Write { key: entry.key.clone(), value: None })
                .collect();
            if expired.is_empty() {
                return Ok(removed);
            }
            let full = expired.len() == oldest.len();
            removed += expired.len();
            // A logged event never changes: nothing to check.
            self.space.commit(&[], &expired).await?;
            if !full {
                return Ok(removed);
            }
        }
    }

    /// The sequence number of the last event in the log (0 when none ever was).
    pub async fn last(&self) -> Result<u64, KvError> {
        self.space.get(HEAD).await?.map_or(Ok(0), |head| sequence_of(&head.value))
    }
}

/// When the event in `json` was made (`None`: unreadable, so kept no longer than
/// any).
pub fn made_at(json: &[u8]) -> Option<i64> {
    #[derive(serde::Deserialize)]
    struct Made {
        #[serde(rename = "timestamp-ms")]
        timestamp_ms: i64,
    }
    serde_json::from_slice::<Made>(json).ok().map(|made| made.timestamp_ms)
}

/// Big-endian, so that the keys sort as the numbers do.
fn log_key(sequence: u64) -> Vec<u8> {
    [LOG, &sequence.to_be_bytes()].concat()
}

fn sequence_of(bytes: &[u8]) -> Result<u64, KvError> {
    let bytes: [u8; 8] = bytes.try_into().map_err(|_| KvError::Store("events: a malformed sequence number".into()))?;
    Ok(u64::from_be_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::kv::RedbStore;

    fn outbox(dir: &tempfile::TempDir) -> Outbox {
        let store = RedbStore::open(&dir.path().join("kv.redb")).unwrap();
        Outbox::new(KvStore::Redb(store.space("host").unwrap()))
    }

    fn event_id(n: u32) -> String {
        format!("0190a000-0000-7000-8000-{n:012}")
    }

    async fn put_pending(outbox: &Outbox, n: u32) {
        let write = outbox.pending(&event_id(n), format!("event {n}").into_bytes());
        outbox.space().commit(&[], &[write]).await.unwrap();
    }

    fn bodies(logged: &[Logged]) -> Vec<String> {
        logged.iter().map(|l| String::from_utf8(l.event.clone()).unwrap()).collect()
    }

    #[tokio::test]
    async fn pending_events_reach_the_log_in_order_with_dense_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let outbox = outbox(&dir);
        assert_eq!(outbox.relay().await.unwrap(), 0, "nothing pending");
        assert_eq!(outbox.last().await.unwrap(), 0);
        // Written out of their ids' order: the log follows the ids.
        for n in [2, 1, 3] {
            put_pending(&outbox, n).await;
        }
        assert_eq!(outbox.relay().await.unwrap(), 3);
        let logged = outbox.read(0, 10).await.unwrap();
        assert_eq!(logged.iter().map(|l| l.sequence).collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!(bodies(&logged), ["event 1", "event 2", "event 3"]);
        assert_eq!(outbox.relay().await.unwrap(), 0, "moved, not copied");

        put_pending(&outbox, 4).await;
        assert_eq!(outbox.relay().await.unwrap(), 1);
        assert_eq!(outbox.last().await.unwrap(), 4);
        assert_eq!(bodies(&outbox.read(2, 10).await.unwrap()), ["event 3", "event 4"], "read after a number");
        assert_eq!(bodies(&outbox.read(1, 1).await.unwrap()), ["event 2"], "at most the limit");
        assert!(outbox.read(4, 10).await.unwrap().is_empty());
    }

    /// More pending than one move takes: several commits, one sequence.
    #[tokio::test]
    async fn a_backlog_moves_in_batches() {
        let dir = tempfile::tempdir().unwrap();
        let outbox = outbox(&dir);
        let count = MOVE_BATCH as u32 * 2 + 7;
        let writes: Vec<_> = (1..=count).map(|n| outbox.pending(&event_id(n), n.to_be_bytes().to_vec())).collect();
        outbox.space().commit(&[], &writes).await.unwrap();
        assert_eq!(outbox.relay().await.unwrap(), count as usize);
        let logged = outbox.read(0, count as usize + 1).await.unwrap();
        assert_eq!(logged.len(), count as usize);
        assert!(logged.iter().zip(1..).all(|(l, n)| l.sequence == n as u64 && l.event == (n as u32).to_be_bytes()));
    }

    /// Two relays over one store (two hosts over one database) racing: every event is in
    /// the log exactly once, numbered without a gap.
    #[tokio::test]
    async fn racing_relays_log_each_event_once() {
        let dir = tempfile::tempdir().unwrap();
        let one = outbox(&dir);
        let other = one.clone();
        let count = 600u32;
        let writer = {
            let one = one.clone();
            tokio::spawn(async move {
                for n in 1..=count {
                    put_pending(&one, n).await;
                }
            })
        };
        let relay = |outbox: Outbox| {
            tokio::spawn(async move {
                let mut moved = 0;
                for _ in 0..200 {
                    moved += outbox.relay().await.unwrap();
                    tokio::task::yield_now().await;
                }
                moved
            })
        };
        let (a, b) = (relay(one.clone()), relay(other.clone()));
        writer.await.unwrap();
        let moved = a.await.unwrap() + b.await.unwrap() + one.relay().await.unwrap();
        assert_eq!(moved, count as usize);
        let logged = one.read(0, count as usize + 1).await.unwrap();
        assert_eq!(logged.iter().map(|l| l.sequence).collect::<Vec<_>>(), (1..=count as u64).collect::<Vec<_>>());
        let mut seen = bodies(&logged);
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), count as usize, "no event twice");
    }

    /// A relay whose read of the pending events is stale (another moved them, and more,
    /// before it read the head) moves nothing: no event is logged twice, none is lost.
    #[tokio::test]
    async fn a_move_read_before_another_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outbox = outbox(&dir);
        put_pending(&outbox, 1).await;
        put_pending(&outbox, 2).await;
        let stale = outbox.space().scan(PENDING, prefix_end(PENDING).as_deref(), 10).await.unwrap();
        assert_eq!(outbox.relay().await.unwrap(), 2);
        put_pending(&outbox, 3).await;
        assert_eq!(outbox.relay().await.unwrap(), 1);
        assert!(matches!(outbox.move_to_log(&stale).await, Err(KvError::Conflict)));
        assert_eq!(bodies(&outbox.read(0, 10).await.unwrap()), ["event 1", "event 2", "event 3"]);
        assert_eq!(outbox.last().await.unwrap(), 3);
    }

    /// A change that is refused writes no event: the pending write rides its commit.
    #[tokio::test]
    async fn an_event_riding_a_refused_commit_is_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let outbox = outbox(&dir);
        let change = Write { key: b"tables/t".to_vec(), value: Some(b"v2".to_vec()) };
        let refused = outbox
            .space()
            .commit(
                &[Check::Present(b"tables/t".to_vec())],
                &[change.clone(), outbox.pending(&event_id(1), b"e".to_vec())],
            )
            .await;
        assert!(matches!(refused, Err(KvError::Conflict)));
        assert_eq!(outbox.relay().await.unwrap(), 0);
        outbox.space().commit(&[], &[change, outbox.pending(&event_id(2), b"e".to_vec())]).await.unwrap();
        assert_eq!(outbox.relay().await.unwrap(), 1);
    }

    /// Pruning takes the events made before the cutoff, oldest first, and keeps the
    /// numbers: a reader after a pruned number reads on from the oldest kept.
    #[tokio::test]
    async fn pruning_removes_only_what_expired() {
        let dir = tempfile::tempdir().unwrap();
        let outbox = outbox(&dir);
        for (n, at) in [(1, 100), (2, 200), (3, 300)] {
            let json = format!(r#"{{"timestamp-ms": {at}}}"#).into_bytes();
            outbox.space().commit(&[], &[outbox.pending(&event_id(n), json)]).await.unwrap();
        }
        outbox.relay().await.unwrap();
        assert_eq!(outbox.prune(100).await.unwrap(), 0, "none made before 100");
        assert_eq!(outbox.prune(250).await.unwrap(), 2);
        let kept = outbox.read(0, 10).await.unwrap();
        assert_eq!(kept.iter().map(|l| l.sequence).collect::<Vec<_>>(), [3]);
        assert_eq!(outbox.last().await.unwrap(), 3, "the head stays");
        assert_eq!(made_at(&kept[0].event), Some(300));
    }
}
