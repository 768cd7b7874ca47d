//! The typed face of one mount's backend component: one async method per export,
//! each run on a pooled instance, with the component's error variant turned into
//! a [`BackendError`] that names the mount. (The listings are in `listings`.)
//!
//! A call that is part of an attempt at a change takes the [`Attempt`] by parameter
//! (the `_in` methods): what the backend read, and a host commit to carry, travel with
//! it from call to call, and nothing else sees them.

use std::sync::Arc;

use super::listings::ScannedPage;
use super::read_memo::{question, ReadMemo, Weigh};
use crate::sandbox::attempt::Attempt;
use crate::sandbox::bindings::optional::{Answer, Forwarded};
use crate::sandbox::bindings::{
    in_series, v0_1, Description, Features, Ident, Pointer, PropertiesUpdate, Series, WitError,
};
use crate::sandbox::pool::{CallFuture, Exports, InstancePool};
use crate::sandbox::{BackendError, BackendErrorKind, HostState, LoadedComponent};
use crate::storage::kv::KvStore;

/// A loaded backend: its pool, what it said it can do, and how its last call went.
pub struct Backend {
    pool: InstancePool,
    /// What the component said of itself.
    description: Description,
    /// The last failure that said the backend's store or remote is unreachable, until a
    /// call succeeds again (for `/health`).
    unreachable: std::sync::Mutex<Option<String>>,
    /// How long each call took, by export, when someone asked (`rustberg plugin test`).
    timings: Option<CallTimings>,
    /// Answers kept while the key space is unchanged, for a backend that reads it alone.
    pub(super) memo: Option<Memos>,
}

/// The reads a backend's answers are kept for (see `read_memo`).
pub(super) struct Memos {
    tables: ReadMemo<Arc<Pointer>>,
    pub(super) prefixes: ReadMemo<Vec<u8>>,
    /// The pages the host scanned from the backend's keys.
    pub(super) pages: ReadMemo<ScannedPage>,
}

/// What each kind of kept answer may weigh, per mount, in bytes (about: an answer
/// weighs its text and [`ENTRY_WEIGHT`]).
const LOADS_BUDGET: usize = 1 << 20;
const PREFIXES_BUDGET: usize = 256 << 10;
const PAGES_BUDGET: usize = 4 << 20;
/// What a kept answer weighs beyond its text: its slot, its key's and its own headers.
pub(super) const ENTRY_WEIGHT: usize = 64;

impl Weigh for Pointer {
    fn weight(&self) -> usize {
        let config: usize = self.config.iter().map(|(k, v)| k.len() + v.len() + 48).sum();
        ENTRY_WEIGHT + self.metadata_location.len() + self.metadata_json.len() + config
    }
}

impl Weigh for Vec<u8> {
    fn weight(&self) -> usize {
        ENTRY_WEIGHT + self.len()
    }
}

/// Durations of backend calls, by export name.
pub type CallTimings = std::sync::Mutex<std::collections::BTreeMap<&'static str, Vec<std::time::Duration>>>;

/// A backend's error in the host's terms. A forwarding backend's `internal` says its
/// remote answered something unusable (or refused the mount's own credential): the
/// remote's fault as seen from here, a bad gateway, not this server's.
fn from_wit(label: &str, forwards: bool, e: WitError) -> BackendError {
    let (kind, message) = match e {
        WitError::Internal(m) if forwards => (BackendErrorKind::BadGateway, m),
        WitError::NotFound(m) => (BackendErrorKind::NotFound, m),
        WitError::AlreadyExists(m) => (BackendErrorKind::AlreadyExists, m),
        WitError::Conflict(m) => (BackendErrorKind::Conflict, m),
        WitError::Unsupported(m) => (BackendErrorKind::Unsupported, m),
        WitError::Unavailable(m) => (BackendErrorKind::Unavailable, m),
        WitError::BadRequest(m) => (BackendErrorKind::BadRequest, m),
        WitError::Internal(m) => (BackendErrorKind::Internal, m),
    };
    BackendError { label: label.to_string(), kind, message }
}

/// One export's call on the pool, lending it `$attempt`: the (owned) arguments moved
/// into the call and lent to the guest, the guest's `result<_, error>` flattened into
/// `Result<_, BackendError>`. (A future: the caller awaits it.)
macro_rules! call_export {
    ($backend:expr, $name:ident, $attempt:expr, $call:ident ( $( $borrow:expr ),* )) => {
        $backend.invoke(stringify!($name), $attempt, move |store, exports| {
            Box::pin(async move {
                in_series!(&exports.backend, |world| world.rustberg_catalog_backend().$call(store, $( $borrow ),*).await)
            })
        })
    };
}
pub(super) use call_export;

/// Generates one method per export, each a call on its own (in no attempt).
macro_rules! exports {
    ($( $(#[$doc:meta])* fn $name:ident => $call:ident ( $( $arg:ident : $ty:ty = $borrow:expr ),* ) -> $ret:ty; )*) => {
        $(
            $(#[$doc])*
            pub async fn $name(&self, $( $arg: $ty ),* ) -> Result<$ret, BackendError> {
                call_export!(self, $name, None, $call($( $borrow ),*)).await
            }
        )*
    };
}

impl Backend {
    /// Wraps a pool, asking the component once what it does ([`Features`]) and keeping
    /// what it asks to remember in the mount's configuration.
    ///
    /// What it declares beyond endpoints, the host takes at its word: one that answers
    /// from its key space alone has its loads, listing prefixes and the pages scanned
    /// under them kept while the space is unchanged, where the store can tell (redb);
    /// one that records only a table's location is sent no metadata JSON on a table's
    /// create and commit; one that checks what it read reads a key once per attempt at
    /// a change; one that creates a namespace in one commit may carry a host's commit.
    /// A false declaration harms only its own mount.
    pub async fn open(pool: InstancePool) -> Result<Self, BackendError> {
        let description = pool
            .call(None, |store, exports| {
                Box::pin(async move {
                    Ok(match &exports.backend {
                        Series::V0_1(world) => {
                            world.rustberg_catalog_backend().call_capabilities(store).await?.map(v0_1::describe)
                        }
                        Series::V0_2(world) => world.rustberg_catalog_backend().call_describe(store).await?,
                    })
                })
            })
            .await?;
        let description = description.map_err(|e| from_wit(pool.label(), pool.forwards(), e))?;
        pool.grants().config.write().expect("mount config").extend(description.remember.iter().cloned());
        let space = pool.grants().kv.as_ref().filter(|_| description.features.contains(Features::ANSWERS_FROM_KEYS));
        let memo = space.and_then(|space| {
            Some(Memos {
                tables: ReadMemo::over(space, LOADS_BUDGET)?,
                prefixes: ReadMemo::over(space, PREFIXES_BUDGET)?,
                pages: ReadMemo::over(space, PAGES_BUDGET)?,
            })
        });
        Ok(Self { pool, description, unreachable: std::sync::Mutex::new(None), timings: None, memo })
    }

    /// The component it runs, and what its mount grants it.
    pub fn component(&self) -> (&LoadedComponent, crate::sandbox::contract::Granted) {
        (self.pool.component(), self.pool.grants().granted())
    }

    /// Whether its mount grants it a key space.
    pub fn has_key_space(&self) -> bool {
        self.key_space().is_some()
    }

    /// The key space its mount grants it, if any.
    pub(super) fn key_space(&self) -> Option<&KvStore> {
        self.pool.grants().kv.as_ref()
    }

    /// Whether the backend declared `feature`.
    pub fn does(&self, feature: Features) -> bool {
        self.description.features.contains(feature)
    }

    /// Whether a table's create and commit carry its metadata JSON to this backend.
    pub fn wants_table_json(&self) -> bool {
        !self.does(Features::TABLE_LOCATION_ONLY)
    }

    /// Like `open`, and records how long every later call takes.
    pub async fn open_timed(pool: InstancePool) -> Result<Self, BackendError> {
        Ok(Self { timings: Some(Default::default()), ..Self::open(pool).await? })
    }

    /// The calls timed so far, by export (empty unless opened with `open_timed`).
    pub fn timings(&self) -> std::collections::BTreeMap<&'static str, Vec<std::time::Duration>> {
        self.timings.as_ref().map(|t| t.lock().expect("timings").clone()).unwrap_or_default()
    }

    /// How many of its instances are idle, and how many calls are running.
    pub fn occupancy(&self) -> (usize, usize) {
        self.pool.occupancy()
    }

    /// The most linear memory any instance of this backend has held.
    pub fn peak_memory_bytes(&self) -> usize {
        self.pool.peak_memory_bytes()
    }

    /// Runs one export call on the pool: the guest's `result<_, error>` flattened into
    /// `Result<_, BackendError>`, its health, metrics and timing recorded.
    pub(super) async fn invoke<R, F>(
        &self,
        name: &'static str,
        attempt: Option<&mut Attempt>,
        call: F,
    ) -> Result<R, BackendError>
    where
        F: for<'a> FnOnce(&'a mut wasmtime::Store<HostState>, &'a Exports) -> CallFuture<'a, Result<R, WitError>>,
    {
        let started = std::time::Instant::now();
        let forwards = self.pool.forwards();
        let result =
            self.pool.call(attempt, call).await.and_then(|r| r.map_err(|e| from_wit(self.pool.label(), forwards, e)));
        self.record(&result);
        let took = started.elapsed();
        let outcome = result.as_ref().map_or_else(|e| e.kind.as_label(), |_| "ok");
        crate::telemetry::backend_call(self.pool.label(), name, outcome, took);
        if let Some(timings) = &self.timings {
            timings.lock().expect("timings").entry(name).or_default().push(took);
        }
        result
    }

    /// Whether the backend's remote applies writes itself (it exports `forwarding`):
    /// the host forwards a write ([`Backend::forward`]) instead of writing files and
    /// swapping the pointer.
    pub fn forwards(&self) -> bool {
        self.pool.forwards()
    }

    /// Sends one write to the remote; its answer, whatever its status.
    pub async fn forward(&self, request: Forwarded) -> Result<Answer, BackendError> {
        self.invoke("forward", None, move |store, exports| {
            Box::pin(async move {
                match &exports.forwarding {
                    Some(forwarding) => forwarding.call_forward(store, &request).await,
                    None => Ok(Err(WitError::Unsupported("the backend forwards no writes".into()))),
                }
            })
        })
        .await
    }

    /// Whether the backend's store assigns table locations (it exports `placement`).
    pub fn places_tables(&self) -> bool {
        self.pool.places_tables()
    }

    /// The key space the host scans for this backend's listings, where it exports
    /// `key-listings` and its mount grants one.
    pub(super) fn listed_space(&self) -> Option<&KvStore> {
        self.pool.lists_keys().then(|| self.key_space()).flatten()
    }

    /// Loads a table pointer (forwarding the client's access-delegation header), or
    /// gives the answer kept since the key space last changed.
    /// (The table is copied only for a call, and a kept answer is shared, not copied.)
    pub async fn load_table(&self, table: &Ident, delegation: Option<String>) -> Result<Arc<Pointer>, BackendError> {
        self.load_table_in(None, table, delegation).await
    }

    /// `load_table`, as the first read of `attempt` where there is one.
    pub async fn load_table_in(
        &self,
        attempt: Option<&mut Attempt>,
        table: &Ident,
        delegation: Option<String>,
    ) -> Result<Arc<Pointer>, BackendError> {
        // Boxed: a guest call's future is kilobytes, and would size every load's.
        let Some(memo) = &self.memo else {
            return Box::pin(self.call_load_table(attempt, table.clone(), delegation)).await.map(Arc::new);
        };
        let parts = table.namespace.iter().chain([&table.name]).map(|p| Some(p.as_str()));
        let asked = question(parts.chain([delegation.as_deref()]));
        let call =
            || Box::pin(async move { self.call_load_table(attempt, table.clone(), delegation).await.map(Arc::new) });
        memo.tables.answer(asked, call).await
    }

    /// Loads a table pointer from the backend itself.
    async fn call_load_table(
        &self,
        attempt: Option<&mut Attempt>,
        table: Ident,
        delegation: Option<String>,
    ) -> Result<Pointer, BackendError> {
        self.invoke("load_table", attempt, move |store, exports| {
            Box::pin(async move {
                in_series!(&exports.backend, |world| {
                    world.rustberg_catalog_backend().call_load_table(store, &table, delegation.as_deref()).await
                })
            })
        })
        .await
    }

    /// Reserves `table` and returns the location its store assigned.
    pub async fn reserve_table(&self, table: Ident) -> Result<String, BackendError> {
        self.invoke("reserve_table", None, move |store, exports| {
            Box::pin(async move {
                match &exports.placement {
                    Some(placement) => in_series!(placement, |p| p.call_reserve_table(store, &table).await),
                    None => Ok(Err(WitError::Unsupported("the backend assigns no table locations".into()))),
                }
            })
        })
        .await
    }

    /// Forgets a reservation that `create_table` did not complete.
    pub async fn release_table(&self, table: Ident) -> Result<(), BackendError> {
        self.invoke("release_table", None, move |store, exports| {
            Box::pin(async move {
                match &exports.placement {
                    Some(placement) => in_series!(placement, |p| p.call_release_table(store, &table).await),
                    None => Ok(Ok(())),
                }
            })
        })
        .await
    }

    pub(super) fn record<T>(&self, result: &Result<T, BackendError>) {
        let failure = match result {
            Err(e) if matches!(e.kind, BackendErrorKind::Unavailable | BackendErrorKind::TimedOut) => {
                Some(e.to_string())
            }
            Err(_) => return,
            Ok(_) => None,
        };
        *self.unreachable.lock().expect("backend health") = failure;
    }

    /// `None` when the backend's last verdict was that it can reach what it needs;
    /// otherwise the error that said it cannot.
    pub fn unreachable(&self) -> Option<String> {
        self.unreachable.lock().expect("backend health").clone()
    }

    /// How the mount is named in messages.
    pub fn label(&self) -> &str {
        self.pool.label()
    }

    /// What the backend said it does.
    pub fn features(&self) -> Features {
        self.description.features
    }

    exports! {
        /// Loads a namespace's properties.
        fn load_namespace => call_load_namespace(ns: Vec<String> = &ns) -> Vec<(String, String)>;
        /// Creates a namespace.
        fn create_namespace => call_create_namespace(ns: Vec<String> = &ns, props: Vec<(String, String)> = &props) -> Vec<(String, String)>;
        /// Drops an empty namespace.
        fn drop_namespace => call_drop_namespace(ns: Vec<String> = &ns) -> ();
        /// Removes and sets namespace properties.
        fn update_namespace_properties => call_update_namespace_properties(ns: Vec<String> = &ns, removals: Vec<String> = &removals, updates: Vec<(String, String)> = &updates) -> PropertiesUpdate;
        /// Records a new table.
        fn create_table => call_create_table(table: Ident = &table, state: Pointer = &state) -> ();
        /// Forgets a table, returning its last pointer.
        fn drop_table => call_drop_table(table: Ident = &table) -> Pointer;
        /// Renames a table inside the backend.
        fn rename_table => call_rename_table(source: Ident = &source, destination: Ident = &destination) -> ();
        /// Loads a view pointer.
        fn load_view => call_load_view(view: Ident = &view) -> Pointer;
        /// Records a new view.
        fn create_view => call_create_view(view: Ident = &view, state: Pointer = &state) -> ();
        /// Compare-and-swap of a view pointer.
        fn commit_view => call_commit_view(view: Ident = &view, expected: String = &expected, new: Pointer = &new) -> ();
        /// Forgets a view, returning its last pointer.
        fn drop_view => call_drop_view(view: Ident = &view) -> Pointer;
        /// Renames a view inside the backend.
        fn rename_view => call_rename_view(source: Ident = &source, destination: Ident = &destination) -> ();
    }
}
