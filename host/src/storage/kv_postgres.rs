//! Key spaces on Postgres: one table, `rustberg_kv`, keyed by (space, key). A commit
//! is one statement, a call of the function `rustberg_kv_commit_v1` (one round trip:
//! each costs the host a wake-up of the database's process), whose transaction holds
//! an advisory lock on every key it checks or writes, so
//! its checks and writes are atomic against every other commit touching those keys,
//! from any process, while commits to other keys (another table) run alongside. A
//! commit that checks a prefix is empty locks the whole space instead (every commit
//! holds the space's lock shared), since a key under the prefix could be written by
//! any other. Versions come from a sequence, so they only grow and are never reused.
//! Connections are pooled here rather than by sqlx, whose pool pings each one it takes
//! back: a second round trip for every statement (see [`Pooled`]).

use std::sync::Arc;
use std::time::Duration;

use deadpool::managed::{Metrics, Object, Pool, PoolError, RecycleError, RecycleResult};
use sha2::{Digest, Sha256};
use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::{Connection, Row};

use super::kv::{prefix_end, Check, Commit, Entry, KvError, Write};

fn store_err(e: impl std::fmt::Display) -> KvError {
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
    // A commit: the space's lock (exclusive when a prefix is checked, else shared and
    // then one per key, sorted), the checks in order (false as soon as one fails,
    // having written nothing), then the writes, every value with one new version.
    // Check kinds: 0 absent, 1 present, 2 at a version, 3 no key under a prefix.
    // Each statement in it reads what committed before it, after the locks.
    "CREATE OR REPLACE FUNCTION rustberg_kv_commit_v1(
        p_space text, check_kinds int2[], check_keys bytea[], check_versions int8[], check_ends bytea[],
        lock_high int4[], lock_low int4[], write_keys bytea[], write_values bytea[]
    ) RETURNS boolean LANGUAGE plpgsql AS $$
    DECLARE
        v bigint;
    BEGIN
        IF 3 = ANY(check_kinds) THEN
            PERFORM pg_advisory_xact_lock(hashtextextended(p_space, 0));
        ELSE
            PERFORM pg_advisory_xact_lock_shared(hashtextextended(p_space, 0));
            PERFORM pg_advisory_xact_lock(h, l) FROM unnest(lock_high, lock_low) AS k(h, l);
        END IF;
        FOR i IN 1 .. coalesce(array_length(check_kinds, 1), 0) LOOP
            IF check_kinds[i] = 3 THEN
                IF EXISTS (SELECT 1 FROM rustberg_kv WHERE space = p_space AND key >= check_keys[i]
                           AND (check_ends[i] IS NULL OR key < check_ends[i])) THEN
                    RETURN false;
                END IF;
            ELSIF check_kinds[i] = 2 THEN
                IF NOT EXISTS (SELECT 1 FROM rustberg_kv WHERE space = p_space AND key = check_keys[i]
                               AND version = check_versions[i]) THEN
                    RETURN false;
                END IF;
            ELSIF EXISTS (SELECT 1 FROM rustberg_kv WHERE space = p_space AND key = check_keys[i])
                  <> (check_kinds[i] = 1) THEN
                RETURN false;
            END IF;
        END LOOP;
        FOR i IN 1 .. coalesce(array_length(write_keys, 1), 0) LOOP
            IF write_values[i] IS NULL THEN
                DELETE FROM rustberg_kv WHERE space = p_space AND key = write_keys[i];
            ELSE
                IF v IS NULL THEN
                    v := nextval('rustberg_kv_version');
                END IF;
                INSERT INTO rustberg_kv (space, key, value, version) VALUES (p_space, write_keys[i], write_values[i], v)
                ON CONFLICT (space, key) DO UPDATE SET value = EXCLUDED.value, version = EXCLUDED.version;
            END IF;
        END LOOP;
        RETURN true;
    END $$",
    // Two spaces' commits as one (the second usually the host's, riding a backend's):
    // when the second's checks fail, the error undoes the first's writes.
    "CREATE OR REPLACE FUNCTION rustberg_kv_commit_joined_v1(
        a_space text, a_kinds int2[], a_keys bytea[], a_versions int8[], a_ends bytea[],
        a_high int4[], a_low int4[], a_write_keys bytea[], a_write_values bytea[],
        b_space text, b_kinds int2[], b_keys bytea[], b_versions int8[], b_ends bytea[],
        b_high int4[], b_low int4[], b_write_keys bytea[], b_write_values bytea[]
    ) RETURNS boolean LANGUAGE plpgsql AS $$
    BEGIN
        IF NOT rustberg_kv_commit_v1(a_space, a_kinds, a_keys, a_versions, a_ends, a_high, a_low,
                                     a_write_keys, a_write_values) THEN
            RETURN false;
        END IF;
        IF rustberg_kv_commit_v1(b_space, b_kinds, b_keys, b_versions, b_ends, b_high, b_low,
                                 b_write_keys, b_write_values) THEN
            RETURN true;
        END IF;
        RAISE EXCEPTION 'a joined commit''s check did not hold' USING ERRCODE = 'RB409';
    END $$",
];

/// The SQLSTATE a joined commit raises when its second part's checks fail.
const JOINED_REFUSED: &str = "RB409";

/// How long a pooled connection may have been idle and still be handed out without
/// a ping first. A connection that answered within the last second is used as it is;
/// one idle for longer (a database restarted in a quiet spell) is pinged, and replaced
/// if it does not answer.
const USED_WITHOUT_PING: Duration = Duration::from_secs(1);

/// How many connections a host keeps to one database.
const MAX_CONNECTIONS: usize = 16;

/// A pooled connection, and whether the last statement run on it ran to its end.
///
/// sqlx's own pool pings every connection it takes back (it cannot be turned off in
/// sqlx 0.8), in case a statement was dropped halfway: a round trip, and a wake-up of
/// the database's process, for every statement. Here a connection whose statement did
/// not end (dropped with its request, or failed) is simply not used again.
struct Pooled {
    conn: PgConnection,
    settled: bool,
}

/// Opens and vets the pool's connections.
struct Connector {
    options: PgConnectOptions,
}

impl deadpool::managed::Manager for Connector {
    type Type = Pooled;
    type Error = sqlx::Error;

    async fn create(&self) -> Result<Pooled, sqlx::Error> {
        Ok(Pooled { conn: PgConnection::connect_with(&self.options).await?, settled: true })
    }

    async fn recycle(&self, pooled: &mut Pooled, metrics: &Metrics) -> RecycleResult<sqlx::Error> {
        if !pooled.settled {
            return Err(RecycleError::message("a statement on it did not end"));
        }
        if metrics.last_used() > USED_WITHOUT_PING {
            pooled.conn.ping().await?;
        }
        Ok(())
    }
}

/// A connection lent for one statement (or transaction): returned to the pool for
/// reuse only by [`Lease::settle`] with the statement's success.
struct Lease(Object<Connector>);

impl Lease {
    fn conn(&mut self) -> &mut PgConnection {
        &mut self.0.conn
    }

    /// The statement's result; the connection is reused only if it succeeded.
    fn settle<T>(mut self, result: Result<T, sqlx::Error>) -> Result<T, KvError> {
        self.0.settled = result.is_ok();
        result.map_err(store_err)
    }
}

/// A connection pool to one database.
#[derive(Clone)]
pub struct PgStore {
    pool: Pool<Connector>,
    /// Shared by its spaces: which spaces are of one database (`PgSpace::same_store`).
    identity: Arc<()>,
}

fn pool(url: &str, size: usize, timeout: Duration) -> Result<Pool<Connector>, KvError> {
    let options: PgConnectOptions = url.parse().map_err(store_err)?;
    Pool::builder(Connector { options })
        .max_size(size)
        .runtime(deadpool::Runtime::Tokio1)
        .wait_timeout(Some(timeout))
        .create_timeout(Some(timeout))
        .recycle_timeout(Some(timeout))
        // The connection returned last: the fewest database processes kept busy.
        .queue_mode(deadpool::managed::QueueMode::Lifo)
        .build()
        .map_err(store_err)
}

/// A connection from `pool`, marked unsettled until its statement ends.
async fn lease(pool: &Pool<Connector>) -> Result<Lease, KvError> {
    let mut pooled = pool.get().await.map_err(|e| match e {
        // sqlx's error as it is (deadpool's wording adds nothing).
        PoolError::Backend(e) => store_err(e),
        e => store_err(e),
    })?;
    pooled.settled = false;
    Ok(Lease(pooled))
}

impl PgStore {
    /// Connects (failing within `timeout` when the server is unreachable) and creates
    /// the table if missing.
    pub async fn connect(url: &str, timeout: Duration) -> Result<Self, KvError> {
        let pool = pool(url, MAX_CONNECTIONS, timeout)?;
        let mut lease = lease(&pool).await?;
        let created = async {
            let mut tx = lease.conn().begin().await?;
            // Concurrent CREATE ... IF NOT EXISTS can still collide: serialize them.
            sqlx::query("SELECT pg_advisory_xact_lock(7245143)").execute(&mut *tx).await?;
            for statement in SCHEMA {
                sqlx::query(statement).execute(&mut *tx).await?;
            }
            tx.commit().await
        }
        .await;
        lease.settle(created)?;
        Ok(Self { pool, identity: Arc::default() })
    }

    /// A store that connects on first use and creates nothing: for a database known
    /// to be out of reach (the conformance suite's "unavailable" case).
    pub fn connect_lazy(url: &str, timeout: Duration) -> Result<Self, KvError> {
        Ok(Self { pool: pool(url, 1, timeout)?, identity: Arc::default() })
    }

    /// The key space `name`.
    pub fn space(&self, name: &str) -> PgSpace {
        PgSpace { pool: self.pool.clone(), space: name.to_string(), identity: self.identity.clone() }
    }
}

/// One isolated key space in a Postgres database.
#[derive(Clone)]
pub struct PgSpace {
    pool: Pool<Connector>,
    space: String,
    identity: Arc<()>,
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
        let mut lease = lease(&self.pool).await?;
        let row = sqlx::query("SELECT key, value, version FROM rustberg_kv WHERE space = $1 AND key = $2")
            .bind(&self.space)
            .bind(key)
            .fetch_optional(lease.conn())
            .await;
        Ok(lease.settle(row)?.as_ref().map(entry))
    }

    /// The rows of up to `limit` keys in [start, end), in order, read by `select`.
    async fn range(
        &self,
        select: &'static str,
        start: &[u8],
        end: Option<&[u8]>,
        limit: usize,
    ) -> Result<Vec<sqlx::postgres::PgRow>, KvError> {
        let mut lease = lease(&self.pool).await?;
        let rows = sqlx::query(select)
            .bind(&self.space)
            .bind(start)
            .bind(end)
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(lease.conn())
            .await;
        lease.settle(rows)
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

    /// The advisory lock a commit takes for one key of this space.
    pub fn key_lock(&self, key: &[u8]) -> (i32, i32) {
        let digest = Sha256::new().chain_update(self.space.as_bytes()).chain_update([0]).chain_update(key).finalize();
        let word = |at: usize| i32::from_le_bytes(digest[at..at + 4].try_into().expect("four bytes"));
        (word(0), word(4))
    }

    /// Applies every write if every check holds, in one transaction: one call of
    /// `rustberg_kv_commit_v1`, handed the checks, the key locks and the writes.
    pub async fn commit(&self, checks: &[Check], writes: &[Write]) -> Result<(), KvError> {
        let args = self.commit_args(checks, writes);
        let mut lease = lease(&self.pool).await?;
        let query = sqlx::query_scalar::<_, bool>("SELECT rustberg_kv_commit_v1($1, $2, $3, $4, $5, $6, $7, $8, $9)");
        let applied = args.bind(query).fetch_one(lease.conn()).await;
        match lease.settle(applied)? {
            true => Ok(()),
            false => Err(KvError::Conflict),
        }
    }

    /// Whether `other` is a space of the same database (the same store), so that a
    /// commit to both can be one transaction (`commit_joined`).
    pub fn same_store(&self, other: &PgSpace) -> bool {
        Arc::ptr_eq(&self.identity, &other.identity)
    }

    /// Makes `own` here and `theirs` in `other` (a space of the same database) as one
    /// transaction: every check of both holds and every write of both lands, or nothing
    /// of either. One statement, as `commit`.
    pub async fn commit_joined(&self, own: &Commit, other: &PgSpace, theirs: &Commit) -> Result<(), KvError> {
        if !self.same_store(other) {
            return Err(KvError::Store("a joined commit spans two databases".into()));
        }
        let (a, b) = (self.commit_args(&own.checks, &own.writes), other.commit_args(&theirs.checks, &theirs.writes));
        let mut lease = lease(&self.pool).await?;
        let query = sqlx::query_scalar::<_, bool>(
            "SELECT rustberg_kv_commit_joined_v1($1, $2, $3, $4, $5, $6, $7, $8, $9, \
             $10, $11, $12, $13, $14, $15, $16, $17, $18)",
        );
        let applied = b.bind(a.bind(query)).fetch_one(lease.conn()).await;
        let refused =
            |e: &sqlx::Error| e.as_database_error().and_then(|e| e.code()).is_some_and(|code| code == JOINED_REFUSED);
        match applied {
            // The statement ran to its end: the connection is fit for reuse.
            Err(e) if refused(&e) => lease.settle(Ok(false)),
            applied => lease.settle(applied),
        }?
        .then_some(())
        .ok_or(KvError::Conflict)
    }

    /// A commit's arguments, in `rustberg_kv_commit_v1`'s order.
    fn commit_args<'a>(&'a self, checks: &'a [Check], writes: &'a [Write]) -> CommitArgs<'a> {
        let mut args = CommitArgs { space: &self.space, ..CommitArgs::default() };
        for check in checks {
            let (kind, key, version, end) = match check {
                Check::Absent(key) => (0i16, key, 0, None),
                Check::Present(key) => (1, key, 0, None),
                Check::AtVersion(key, version) => (2, key, *version as i64, None),
                Check::PrefixEmpty(prefix) => (3, prefix, 0, prefix_end(prefix)),
            };
            args.kinds.push(kind);
            args.keys.push(key.as_slice());
            args.versions.push(version);
            args.ends.push(end);
        }
        // One lock per key checked or written, in one order for every commit, so no
        // two commits wait for each other in a cycle (unused when a prefix is checked).
        let mut locks: Vec<(i32, i32)> = args
            .keys
            .iter()
            .copied()
            .chain(writes.iter().map(|w| w.key.as_slice()))
            .map(|k| self.key_lock(k))
            .collect();
        locks.sort_unstable();
        locks.dedup();
        (args.lock_high, args.lock_low) = locks.into_iter().unzip();
        args.write_keys = writes.iter().map(|w| w.key.as_slice()).collect();
        args.write_values = writes.iter().map(|w| w.value.as_deref()).collect();
        args
    }
}

/// The nine arguments of one space's commit.
#[derive(Default)]
struct CommitArgs<'a> {
    space: &'a str,
    kinds: Vec<i16>,
    keys: Vec<&'a [u8]>,
    versions: Vec<i64>,
    ends: Vec<Option<Vec<u8>>>,
    lock_high: Vec<i32>,
    lock_low: Vec<i32>,
    write_keys: Vec<&'a [u8]>,
    write_values: Vec<Option<&'a [u8]>>,
}

type ScalarQuery<'q> = sqlx::query::QueryScalar<'q, sqlx::Postgres, bool, sqlx::postgres::PgArguments>;

impl<'a> CommitArgs<'a> {
    /// Binds the nine, in order, as the query's next parameters.
    fn bind<'q>(self, query: ScalarQuery<'q>) -> ScalarQuery<'q>
    where
        'a: 'q,
    {
        query
            .bind(self.space)
            .bind(self.kinds)
            .bind(self.keys)
            .bind(self.versions)
            .bind(self.ends)
            .bind(self.lock_high)
            .bind(self.lock_low)
            .bind(self.write_keys)
            .bind(self.write_values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::kv::Durability;

    /// The machine's Postgres (as the end-to-end tests use it); skipped without one,
    /// except under CI.
    async fn store() -> Option<PgStore> {
        let url = std::env::var("RUSTBERG_TEST_POSTGRES").unwrap_or("postgres://postgres@127.0.0.1:5432/test".into());
        match PgStore::connect(&url, Duration::from_secs(5)).await {
            Ok(store) => Some(store),
            Err(e) if std::env::var("CI").as_deref() == Ok("true") => panic!("PostgreSQL is required under CI: {e}"),
            Err(e) => {
                eprintln!("SKIPPED: no PostgreSQL: {e}");
                None
            }
        }
    }

    fn put(key: &[u8], check: Check) -> Commit {
        Commit {
            checks: vec![check],
            writes: vec![Write { key: key.to_vec(), value: Some(b"v".to_vec()) }],
            durability: Durability::Now,
        }
    }

    /// Two spaces' commits as one: both land, or neither does, whichever's check fails.
    #[tokio::test]
    async fn a_joined_commit_lands_whole_or_not_at_all() {
        let Some(store) = store().await else { return };
        let run = uuid::Uuid::now_v7().simple().to_string();
        let (a, b) = (store.space(&format!("a-{run}")), store.space(&format!("b-{run}")));
        let absent = |key: &[u8]| Check::Absent(key.to_vec());

        a.commit_joined(&put(b"x", absent(b"x")), &b, &put(b"y", absent(b"y"))).await.unwrap();
        assert!(a.get(b"x").await.unwrap().is_some() && b.get(b"y").await.unwrap().is_some());

        // The second's check fails: the first's write is undone with it.
        let refused = a.commit_joined(&put(b"x2", absent(b"x2")), &b, &put(b"y", absent(b"y"))).await;
        assert!(matches!(refused, Err(KvError::Conflict)), "{refused:?}");
        assert!(a.get(b"x2").await.unwrap().is_none(), "nothing of the first was written");

        // The first's check fails: nothing of the second is written.
        let refused = a.commit_joined(&put(b"x", absent(b"x")), &b, &put(b"y2", absent(b"y2"))).await;
        assert!(matches!(refused, Err(KvError::Conflict)));
        assert!(b.get(b"y2").await.unwrap().is_none());

        // A space of another store is refused outright.
        let other = PgStore { pool: store.pool.clone(), identity: Arc::default() }.space("c");
        assert!(matches!(
            a.commit_joined(&put(b"z", absent(b"z")), &other, &put(b"z", absent(b"z"))).await,
            Err(KvError::Store(_))
        ));
        assert!(a.same_store(&b) && !a.same_store(&other));
    }
}
