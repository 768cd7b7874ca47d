//! How a change to owners or grants reaches every host's memory, at a cost that does
//! not grow with the number of owners and grants.
//!
//! - A redb file belongs to this process alone: after a change commits, the keys it
//!   wrote are read back and applied, one change at a time (so a later read never
//!   installs an older value).
//! - A shared (Postgres) key space also keeps a change log: each change writes
//!   `authz-log/<n>` naming the keys it wrote, and sets the version key to `n`, with a
//!   compare-and-swap on the version key, so the log has no gaps and its order is the
//!   commit order. A host that sees a newer version reads the entries it has not
//!   applied and re-reads the keys they name. A host further behind than the log
//!   reaches loads everything again.

use std::sync::Arc;

use super::state::{State, GRANT, OWNER, POLICY};
use super::{store_err, Authorizer, Known};
use crate::error::Error;
use crate::storage::kv::{prefix_end, swap_backoff, Check, Durability, Entry, KvError, KvStore, Write};

/// Holds the number of the last change (decimal); rewritten by every change.
pub(super) const VERSION: &[u8] = b"authz-version";
const LOG: &str = "authz-log/";
/// Log entries kept; older ones are deleted by the change that is this many newer.
const LOG_KEPT: u64 = 4096;
/// A change that keeps losing the version key's compare-and-swap gives up.
const ATTEMPTS: usize = 64;

fn log_key(n: u64) -> Vec<u8> {
    format!("{LOG}{n:020}").into_bytes()
}

/// The change number the version key holds (0: none yet, or written empty before
/// the log existed).
fn change_number(entry: &Option<Entry>) -> Result<u64, Error> {
    entry.as_ref().filter(|e| !e.value.is_empty()).map_or(Ok(0), |e| {
        std::str::from_utf8(&e.value)
            .ok()
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| Error::Internal("the stored authorization version is corrupt".into()))
    })
}

impl Authorizer {
    /// Whether other processes write this key space too.
    pub(super) fn shared(&self) -> bool {
        !matches!(self.space, KvStore::Redb(_))
    }

    /// Loads every owner and grant; on a shared store, as of the change number read
    /// first (the state read after it is at least that new).
    pub(super) async fn load_all(&self) -> Result<Known, Error> {
        let change = change_number(&self.space.get(VERSION).await.map_err(store_err)?)?;
        let mut state = State::default();
        for prefix in [OWNER, GRANT, POLICY] {
            let entries =
                self.space.scan(prefix.as_bytes(), prefix_end(prefix.as_bytes()).as_deref(), usize::MAX).await;
            for entry in entries.map_err(store_err)? {
                state.set(&entry.key, Some(&entry.value))?;
            }
        }
        Ok(Known { state, change })
    }

    /// Writes a change in one commit if `checks` hold (false if they did not), and
    /// applies it to memory before returning. `durability` is the redb file's; a
    /// shared store's change is on disk when it returns.
    pub(super) async fn change_if(
        &self,
        checks: &[Check],
        writes: Vec<Write>,
        durability: Durability,
    ) -> Result<bool, Error> {
        if !self.shared() {
            match self.space.commit_with(checks, &writes, durability).await {
                Ok(()) => {}
                Err(KvError::Conflict) => return Ok(false),
                Err(e) => return Err(store_err(e)),
            }
            let keys: Vec<&[u8]> = writes.iter().map(|w| w.key.as_slice()).collect();
            self.applied(&keys).await?;
            return Ok(true);
        }
        // The log entry names the keys the change writes.
        let keys: Vec<String> = writes.iter().map(|w| String::from_utf8_lossy(&w.key).into_owned()).collect();
        let entry = serde_json::to_vec(&keys).map_err(|e| Error::Internal(e.to_string()))?;
        for attempt in 0..ATTEMPTS {
            let version = self.space.get(VERSION).await.map_err(store_err)?;
            let n = change_number(&version)? + 1;
            let mut all_checks = checks.to_vec();
            all_checks.push(match &version {
                Some(entry) => Check::AtVersion(VERSION.to_vec(), entry.version),
                None => Check::Absent(VERSION.to_vec()),
            });
            let mut logged = writes.clone();
            logged.push(Write { key: log_key(n), value: Some(entry.clone()) });
            logged.push(Write { key: VERSION.to_vec(), value: Some(n.to_string().into_bytes()) });
            if n > LOG_KEPT {
                logged.push(Write { key: log_key(n - LOG_KEPT), value: None });
            }
            match self.space.commit(&all_checks, &logged).await {
                Ok(()) => {
                    self.catch_up().await?;
                    return Ok(true);
                }
                Err(KvError::Conflict) => {}
                Err(e) => return Err(store_err(e)),
            }
            // Another change took the number, or one of `checks` failed: only the
            // first is worth another attempt.
            let now = self.space.get(VERSION).await.map_err(store_err)?;
            if now.as_ref().map(|e| e.version) == version.as_ref().map(|e| e.version) {
                return Ok(false);
            }
            tokio::time::sleep(swap_backoff(attempt)).await;
        }
        Err(Error::Unavailable("authorization changes are contended; try again".into()))
    }

    /// Applies to memory the keys a change this process committed wrote (a redb
    /// file's: this process is its only writer).
    pub(super) async fn applied(&self, keys: &[&[u8]]) -> Result<(), Error> {
        let _one_at_a_time = self.applying.lock().await;
        let mut known = Known::clone(&self.known());
        self.reread(&mut known.state, keys.iter().copied()).await?;
        self.install(known);
        Ok(())
    }

    /// On a shared store, applies the changes other hosts made since this one last
    /// looked (one read of the version key when there are none, shared with the
    /// requests that ask at the same time: `version_reads`).
    pub(super) async fn catch_up(&self) -> Result<Arc<Known>, Error> {
        let held = self.known();
        let stored = change_number(&self.version_reads.read(&self.space).await.map_err(store_err)?)?;
        if held.change >= stored {
            return Ok(held);
        }
        let _one_at_a_time = self.applying.lock().await;
        // Whoever applied before may have brought this far already.
        let mut known = Known::clone(&self.known());
        if known.change >= stored {
            return Ok(self.known());
        }
        let start = log_key(known.change + 1);
        let end = prefix_end(LOG.as_bytes());
        let entries = self.space.scan(&start, end.as_deref(), usize::MAX).await.map_err(store_err)?;
        if entries.first().is_none_or(|e| e.key != start) {
            // The entries this host needs were pruned: start again from the keys.
            let loaded = self.load_all().await?;
            return Ok(self.install(loaded));
        }
        for entry in &entries {
            let keys: Vec<String> = serde_json::from_slice(&entry.value)
                .map_err(|e| Error::Internal(format!("an authorization log entry is corrupt: {e}")))?;
            self.reread(&mut known.state, keys.iter().map(String::as_bytes)).await?;
        }
        let last = String::from_utf8_lossy(&entries[entries.len() - 1].key[LOG.len()..]).into_owned();
        known.change = last.parse().map_err(|_| Error::Internal("an authorization log key is corrupt".into()))?;
        Ok(self.install(known))
    }

    /// Applies `keys` to `state` as the store holds them now.
    async fn reread<'a>(&self, state: &mut State, keys: impl Iterator<Item = &'a [u8]>) -> Result<(), Error> {
        for key in keys {
            let stored = self.space.get(key).await.map_err(store_err)?;
            state.set(key, stored.as_ref().map(|e| e.value.as_slice()))?;
        }
        Ok(())
    }
}
