//! The exclusive table lock a commit holds, as Iceberg's HiveCatalogs take it: `lock`,
//! then `check_lock` with backoff while it waits (heartbeating the waiting lock so the
//! metastore does not time it out), and `unlock` whatever happens in between.
//!
//! A lock left behind by a host that was killed, or an instance that was dropped
//! mid-commit, is never heartbeated again; the metastore removes it after its lock
//! timeout (`hive.txn.timeout`), so it cannot block commits for longer than that.

use super::{
    call, CheckLockRequest, HeartbeatRequest, LockComponent, LockLevel, LockRequest, LockState, LockType, Retry,
    TThriftHiveMetastoreSyncClient, UnlockRequest,
};
use crate::rustberg::catalog::types::Error;
use crate::rustberg::catalog::{clock, config, log};

/// How long one attempt at a commit waits for the lock, unless the mount's `lock_wait_ms`
/// says: under the host's default call deadline (5 s). An attempt that cannot lock is a
/// conflict, which the host retries (a few times) before it answers 409.
const DEFAULT_WAIT_MS: u64 = 3_000;
/// The first pause between `check_lock`s, doubled up to the longest.
const FIRST_PAUSE_MS: u64 = 10;
const LONGEST_PAUSE_MS: u64 = 250;

/// A held lock; `release` unlocks it.
pub struct TableLock {
    id: i64,
}

fn wait_limit_ms() -> u64 {
    config::get("lock_wait_ms").and_then(|v| v.parse().ok()).unwrap_or(DEFAULT_WAIT_MS)
}

fn now_ms() -> u64 {
    clock::now_millis()
}

fn sleep_ms(ms: u64) {
    std::thread::sleep(std::time::Duration::from_millis(ms));
}

/// Takes the exclusive lock on `db.table`, waiting up to the mount's limit.
pub fn acquire(db: &str, table: &str) -> Result<TableLock, Error> {
    let component = LockComponent {
        type_: LockType::EXCLUSIVE,
        level: LockLevel::TABLE,
        dbname: db.to_string(),
        tablename: Some(table.to_string()),
        partitionname: None,
        operation_type: None,
        // What PyIceberg's HiveCatalog sends (Hive 4 names it isTransactional).
        is_acid: Some(true),
    };
    let request = LockRequest {
        component: vec![component],
        txnid: None,
        user: config::get("owner").unwrap_or_else(|| "rustberg".into()),
        hostname: "rustberg".into(),
        agent_info: Some("rustberg hms backend".into()),
    };
    let mut state = call("lock", Retry::Write, |c| c.lock(request.clone()))?;
    let lock = TableLock { id: state.lockid };
    let started = now_ms();
    let mut pause = FIRST_PAUSE_MS;
    while state.state == LockState::WAITING {
        if now_ms().saturating_sub(started) >= wait_limit_ms() {
            lock.release();
            return Err(Error::Conflict(format!(
                "{db}.{table} stayed locked by another writer for {} ms; retry the commit",
                wait_limit_ms()
            )));
        }
        sleep_ms(pause);
        pause = (pause * 2).min(LONGEST_PAUSE_MS);
        let heartbeat = HeartbeatRequest { lockid: Some(lock.id), txnid: None };
        if let Err(e) = call("heartbeat", Retry::Write, |c| c.heartbeat(heartbeat.clone())) {
            lock.release();
            return Err(e);
        }
        let check = CheckLockRequest { lockid: lock.id, txnid: None, elapsed_ms: None };
        state = match call("check_lock", Retry::Write, |c| c.check_lock(check.clone())) {
            Ok(state) => state,
            Err(e) => {
                lock.release();
                return Err(e);
            }
        };
    }
    if state.state != LockState::ACQUIRED {
        lock.release();
        return Err(Error::Conflict(format!("the Hive Metastore did not grant the lock on {db}.{table}")));
    }
    Ok(lock)
}

impl TableLock {
    /// Unlocks; a failure is logged, not returned: the metastore times the lock out.
    pub fn release(self) {
        let request = UnlockRequest { lockid: self.id };
        if let Err(e) = call("unlock", Retry::Write, |c| c.unlock(request.clone())) {
            let message = format!("could not unlock lock {}: {e:?}; the metastore will time it out", self.id);
            log::log(log::Level::Warn, &message);
        }
    }
}
