//! Key spaces on Postgres: one table, `rustberg_kv`, keyed by (space, key). A commit
//! is one transaction holding an advisory lock on every key it checks or writes, so
//! its checks and writes are atomic against every other commit touching those keys,
//! from any process, while commits to other keys (another table) run alongside. A
//! commit that checks a prefix is empty locks the whole space instead (every commit
//! holds the space's lock shared), since a key under the prefix could be written by
//! any other. Versions come from a sequence, so they only grow and are never reused.

use std::time::Duration;

use sha2::{Digest, Sha256};
use sqlx::postgres::{PgPool, PgPoolOptions, PgTransaction};
use sqlx::Row;

use super::kv::{prefix_end, Check, Entry, KvError, Write};

fn store_err(e: sqlx::Error) -> KvError {
    KvError::Store(format!("postgres: {e}"))
}

const SCHEMA: &[&str] = &[
    "CREATE TABLE IF NOT EXISTS rustberg_kv (
        space   TEXT   NOT NULL,
        key     BYTEA  NOT NULL,
        value   BYTEA  NOT NULL,
        version BIGINT NOT NULL,
        PRIMARY KEY (space, key))",
    "CREATE SEQUENCE IF NOT EXISTS rustberg_kv_version",
];

/// A connection pool to one database.
#[derive(Clone)]
pub struct PgStore {
    pool: PgPool,
}

impl PgStore {
    /// Connects (failing within `timeout` when the server is unreachable) and creates
    /// the table if missing.
    pub async fn connect(url: &str, timeout: Duration) -> Result<Self, KvError> {
        let pool =
            PgPoolOptions::new().max_connections(16).acquire_timeout(timeout).connect(url).await.map_err(store_err)?;
        let mut tx = pool.begin().await.map_err(store_err)?;
        // Concurrent CREATE ... IF NOT EXISTS can still collide: serialize them.
        sqlx::query("SELECT pg_advisory_xact_lock(7245143)").execute(&mut *tx).await.map_err(store_err)?;
        for statement in SCHEMA {
            sqlx::query(statement).execute(&mut *tx).await.map_err(store_err)?;
        }
        tx.commit().await.map_err(store_err)?;
        Ok(Self { pool })
    }

    /// A store that connects on first use and creates nothing: for a database known
    /// to be out of reach (the conformance suite's "unavailable" case).
    pub fn connect_lazy(url: &str, timeout: Duration) -> Result<Self, KvError> {
        let pool =
            PgPoolOptions::new().max_connections(1).acquire_timeout(timeout).connect_lazy(url).map_err(store_err)?;
        Ok(Self { pool })
    }

    /// The key space `name`.
    pub fn space(&self, name: &str) -> PgSpace {
        PgSpace { pool: self.pool.clone(), space: name.to_string() }
    }
}

/// One isolated key space in a Postgres database.
#[derive(Clone)]
pub struct PgSpace {
    pool: PgPool,
    space: String,
}

/// The rest of a range scan's query: a space's keys in [$2, $3) in order, at most $4.
macro_rules! range {
    () => {
        "FROM rustberg_kv WHERE space = $1 AND key >= $2 AND ($3::bytea IS NULL OR key < $3) ORDER BY key LIMIT $4"
    };
}

fn entry(row: &sqlx::postgres::PgRow) -> Entry {
    Entry { key: row.get("key"), value: row.get("value"), version: row.get::<i64, _>("version") as u64 }
}

impl PgSpace {
    /// Reads one key.
    pub async fn get(&self, key: &[u8]) -> Result<Option<Entry>, KvError> {
        let row = sqlx::query("SELECT key, value, version FROM rustberg_kv WHERE space = $1 AND key = $2")
            .bind(&self.space)
            .bind(key)
            .fetch_optional(&self.pool)
            .await
            .map_err(store_err)?;
        Ok(row.as_ref().map(entry))
    }

    /// The rows of up to `limit` keys in [start, end), in order, read by `select`.
    async fn range(
        &self,
        select: &'static str,
        start: &[u8],
        end: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<sqlx::postgres::PgRow>, KvError> {
        sqlx::query(select)
            .bind(&self.space)
            .bind(start)
            .bind(end)
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await
            .map_err(store_err)
    }

    /// Reads up to `limit` keys in [start, end).
    pub async fn scan(&self, start: &[u8], end: Option<&[u8]>, limit: usize) -> Result<Vec<Entry>, KvError> {
        let rows = self.range(concat!("SELECT key, value, version ", range!()), start, end, limit).await?;
        Ok(rows.iter().map(entry).collect())
    }

    /// Hands `each` up to `limit` keys in [start, end), in order.
    pub async fn scan_keys(
        &self,
        start: &[u8],
        end: Option<&[u8]>,
        limit: usize,
        mut each: impl FnMut(&[u8]),
    ) -> Result<(), KvError> {
        let rows = self.range(concat!("SELECT key ", range!()), start, end, limit).await?;
        for row in &rows {
            each(row.get::<&[u8], _>("key"));
        }
        Ok(())
    }

    /// Takes the locks a commit needs, in one order for every commit (so no two wait
    /// for each other in a cycle): the space's lock, then one per key. Key locks use the
    /// two-integer advisory lock space, apart from the space locks' single integer.
    async fn lock(&self, tx: &mut PgTransaction<'_>, checks: &[Check], writes: &[Write]) -> Result<(), KvError> {
        let whole_space = checks.iter().any(|c| matches!(c, Check::PrefixEmpty(_)));
        let space_lock = if whole_space {
            "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))"
        } else {
            "SELECT pg_advisory_xact_lock_shared(hashtextextended($1, 0))"
        };
        sqlx::query(space_lock).bind(&self.space).execute(&mut **tx).await.map_err(store_err)?;
        if whole_space {
            return Ok(());
        }
        let checked = checks.iter().map(|c| match c {
            Check::Absent(key) | Check::Present(key) | Check::AtVersion(key, _) | Check::PrefixEmpty(key) => key,
        });
        let mut locks: Vec<(i32, i32)> =
            checked.chain(writes.iter().map(|w| &w.key)).map(|key| self.key_lock(key)).collect();
        locks.sort_unstable();
        locks.dedup();
        let (high, low): (Vec<i32>, Vec<i32>) = locks.into_iter().unzip();
        sqlx::query("SELECT pg_advisory_xact_lock(h, l) FROM unnest($1::int4[], $2::int4[]) AS k(h, l)")
            .bind(high)
            .bind(low)
            .execute(&mut **tx)
            .await
            .map_err(store_err)?;
        Ok(())
    }

    /// The advisory lock a commit takes for one key of this space.
    pub fn key_lock(&self, key: &[u8]) -> (i32, i32) {
        let digest = Sha256::new().chain_update(self.space.as_bytes()).chain_update([0]).chain_update(key).finalize();
        let word = |at: usize| i32::from_le_bytes(digest[at..at + 4].try_into().expect("four bytes"));
        (word(0), word(4))
    }

    /// Applies every write if every check holds, in one transaction.
    pub async fn commit(&self, checks: &[Check], writes: &[Write]) -> Result<(), KvError> {
        let mut tx = self.pool.begin().await.map_err(store_err)?;
        self.lock(&mut tx, checks, writes).await?;
        for check in checks {
            let holds = match check {
                Check::Absent(key) | Check::Present(key) => {
                    let found = sqlx::query("SELECT 1 FROM rustberg_kv WHERE space = $1 AND key = $2")
                        .bind(&self.space)
                        .bind(key)
                        .fetch_optional(&mut *tx)
                        .await
                        .map_err(store_err)?
                        .is_some();
                    found == matches!(check, Check::Present(_))
                }
                Check::AtVersion(key, version) => {
                    sqlx::query("SELECT 1 FROM rustberg_kv WHERE space = $1 AND key = $2 AND version = $3")
                        .bind(&self.space)
                        .bind(key)
                        .bind(*version as i64)
                        .fetch_optional(&mut *tx)
                        .await
                        .map_err(store_err)?
                        .is_some()
                }
                Check::PrefixEmpty(prefix) => sqlx::query(
                    "SELECT 1 FROM rustberg_kv
                     WHERE space = $1 AND key >= $2 AND ($3::bytea IS NULL OR key < $3) LIMIT 1",
                )
                .bind(&self.space)
                .bind(prefix)
                .bind(prefix_end(prefix))
                .fetch_optional(&mut *tx)
                .await
                .map_err(store_err)?
                .is_none(),
            };
            if !holds {
                return Err(KvError::Conflict);
            }
        }
        if !writes.is_empty() {
            let version: i64 = sqlx::query_scalar("SELECT nextval('rustberg_kv_version')")
                .fetch_one(&mut *tx)
                .await
                .map_err(store_err)?;
            for write in writes {
                let query = match &write.value {
                    Some(value) => sqlx::query(
                        "INSERT INTO rustberg_kv (space, key, value, version) VALUES ($1, $2, $3, $4)
                         ON CONFLICT (space, key) DO UPDATE SET value = EXCLUDED.value, version = EXCLUDED.version",
                    )
                    .bind(&self.space)
                    .bind(&write.key)
                    .bind(value)
                    .bind(version),
                    None => sqlx::query("DELETE FROM rustberg_kv WHERE space = $1 AND key = $2")
                        .bind(&self.space)
                        .bind(&write.key),
                };
                query.execute(&mut *tx).await.map_err(store_err)?;
            }
        }
        tx.commit().await.map_err(store_err)
    }
}
