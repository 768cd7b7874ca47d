//! A mount's pool of warm instances, and the limits every call runs under.
//!
//! A fresh instance costs more than a whole request at our speed goal, so
//! instances are checked out for one call and returned. Guests keep no state
//! between calls by contract. An instance whose call trapped, timed out or ran out
//! of memory is dropped, never reused; instances are also recycled after a
//! number of calls.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use wasmtime::{Store, StoreLimitsBuilder, Trap, UpdateDeadline};

use super::attempt::Attempt;
use super::bindings::{
    map_series, optional, v0_1, BackendExport, BackendExportIndices, BackendExportPre, KeyListings, KeyListingsIndices,
    Placement, PlacementIndices, Series,
};
use super::guest_output::own_words;
use super::host_state::{Capabilities, HostState, MeteredLimits};
use super::runtime::{CORE_INSTANCES_PER_COMPONENT, MEMORIES_PER_COMPONENT, TABLES_PER_COMPONENT};
use super::{BackendError, BackendErrorKind};
use crate::config::PluginLimits;
use crate::telemetry;

struct Instance {
    store: Store<HostState>,
    exports: Exports,
    calls: u64,
}

/// What an instance exports: `backend`, and the optional interfaces it has, in the
/// series of the contract it was built against.
pub struct Exports {
    pub backend: BackendExport,
    pub placement: Option<Placement>,
    pub key_listings: Option<KeyListings>,
    /// Only in the current series (since 0.2.2).
    pub forwarding: Option<optional::Forwarding>,
}

/// The boxed future of one export call, borrowing the instance.
pub type CallFuture<'a, R> = Pin<Box<dyn Future<Output = wasmtime::Result<R>> + Send + 'a>>;

/// Warm instances of one mount's component.
pub struct InstancePool {
    pre: BackendExportPre<HostState>,
    backend: BackendExportIndices,
    /// Where the component exports `placement`, found once.
    placement: Option<PlacementIndices>,
    /// Where the component exports `key-listings`, found once.
    key_listings: Option<KeyListingsIndices>,
    /// Where the component exports `forwarding`, found once.
    forwarding: Option<optional::ForwardingIndices>,
    grants: Arc<Capabilities>,
    limits: PluginLimits,
    idle: Mutex<Vec<Instance>>,
    /// Calls running at once on this mount, at most `pool_size`: one slow or hostile
    /// mount cannot take every instance slot.
    running: tokio::sync::Semaphore,
    /// The largest linear memory any instance was allowed to grow to, in bytes.
    peak_memory: Arc<std::sync::atomic::AtomicUsize>,
    /// What was loaded.
    component: LoadedComponent,
}

/// A loaded component as an operator sees it: its size, digest and contract version.
#[derive(Debug, Clone)]
pub struct LoadedComponent {
    pub bytes: usize,
    /// SHA-256 of the component's bytes, as hex.
    pub sha256: String,
    /// The contract version it was built against.
    pub contract: String,
}

impl InstancePool {
    pub(super) fn new(
        pre: BackendExportPre<HostState>,
        grants: Arc<Capabilities>,
        limits: PluginLimits,
        component: LoadedComponent,
    ) -> wasmtime::Result<Self> {
        let running = tokio::sync::Semaphore::new(limits.pool_size);
        let (backend, placement, key_listings, forwarding) = match &pre {
            Series::V0_1(pre) => (
                Series::V0_1(v0_1::CatalogHostIndices::new(pre.instance_pre())?),
                // Absent from components built before 0.1.2, and from most after.
                v0_1::optional::PlacementIndices::new(pre.instance_pre()).ok().map(Series::V0_1),
                // Absent from components built before 0.1.3, and from every one without keys.
                v0_1::optional::KeyListingsIndices::new(pre.instance_pre()).ok().map(Series::V0_1),
                None,
            ),
            Series::V0_2(pre) => (
                Series::V0_2(super::bindings::CatalogHostIndices::new(pre.instance_pre())?),
                super::bindings::optional::PlacementIndices::new(pre.instance_pre()).ok().map(Series::V0_2),
                super::bindings::optional::KeyListingsIndices::new(pre.instance_pre()).ok().map(Series::V0_2),
                optional::ForwardingIndices::new(pre.instance_pre()).ok(),
            ),
        };
        let idle = Mutex::new(Vec::new());
        let peak_memory = Default::default();
        Ok(Self {
            pre,
            backend,
            placement,
            key_listings,
            forwarding,
            grants,
            limits,
            idle,
            running,
            peak_memory,
            component,
        })
    }

    /// Whether the component exports `placement` (its store assigns table locations).
    pub fn places_tables(&self) -> bool {
        self.placement.is_some()
    }

    /// Whether the component exports `forwarding` (its remote applies writes itself).
    pub fn forwards(&self) -> bool {
        self.forwarding.is_some()
    }

    /// Whether the component exports `key-listings` (the host may scan its keys).
    pub fn lists_keys(&self) -> bool {
        self.key_listings.is_some()
    }

    /// The largest linear memory any instance was allowed to grow to, in bytes.
    pub fn peak_memory_bytes(&self) -> usize {
        self.peak_memory.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How the mount is named in messages.
    pub fn label(&self) -> &str {
        &self.grants.label
    }

    /// What the mount grants its backend.
    pub fn grants(&self) -> &Capabilities {
        &self.grants
    }

    /// The component this pool runs.
    pub fn component(&self) -> &LoadedComponent {
        &self.component
    }

    async fn instantiate(&self) -> wasmtime::Result<Instance> {
        let limits = StoreLimitsBuilder::new()
            .memory_size(self.limits.memory_limit_bytes())
            .instances(CORE_INSTANCES_PER_COMPONENT as usize)
            .tables(TABLES_PER_COMPONENT as usize)
            .memories(MEMORIES_PER_COMPONENT as usize)
            .trap_on_grow_failure(true)
            .build();
        let limits = MeteredLimits::new(limits, self.peak_memory.clone());
        let engine = super::bindings::in_series!(&self.pre, |pre| pre.engine());
        let mut store = Store::new(engine, HostState::new(self.grants.clone(), limits));
        store.limiter(|s| &mut s.limits);
        // Yield to tokio on every tick so a long call never starves other requests,
        // and interrupt once the call's budget is spent.
        store.epoch_deadline_callback(|ctx| {
            if Instant::now() >= ctx.data().deadline {
                Ok(UpdateDeadline::Interrupt)
            } else {
                Ok(UpdateDeadline::Yield(1))
            }
        });
        // Instantiation runs guest code too: it gets the same budget as a call.
        store.data_mut().deadline = Instant::now() + self.limits.call_timeout();
        store.set_epoch_deadline(1);
        let instance =
            super::bindings::in_series!(&self.pre, |pre| pre.instance_pre().instantiate_async(&mut store).await?);
        let backend = map_series!(&self.backend, |b| b.load(&mut store, &instance)?);
        let placement = self
            .placement
            .as_ref()
            .map(|p| Ok::<_, wasmtime::Error>(map_series!(p, |p| p.load(&mut store, &instance)?)))
            .transpose()?;
        let key_listings = self
            .key_listings
            .as_ref()
            .map(|k| Ok::<_, wasmtime::Error>(map_series!(k, |k| k.load(&mut store, &instance)?)))
            .transpose()?;
        let forwarding = self.forwarding.as_ref().map(|f| f.load(&mut store, &instance)).transpose()?;
        telemetry::instance_created(&self.grants.label);
        Ok(Instance { store, exports: Exports { backend, placement, key_listings, forwarding }, calls: 0 })
    }

    fn checkout(&self) -> Option<Instance> {
        self.idle.lock().expect("pool lock").pop()
    }

    fn give_back(&self, instance: Instance) {
        if instance.calls >= self.limits.recycle_after_calls {
            return telemetry::instance_discarded(&self.grants.label, "recycled");
        }
        let mut idle = self.idle.lock().expect("pool lock");
        if idle.len() < self.limits.pool_size {
            idle.push(instance);
        } else {
            telemetry::instance_discarded(&self.grants.label, "pool_full");
        }
    }

    /// How many instances are idle, and how many calls are running.
    pub fn occupancy(&self) -> (usize, usize) {
        let idle = self.idle.lock().expect("pool lock").len();
        (idle, self.limits.pool_size - self.running.available_permits())
    }

    fn failure(&self, kind: BackendErrorKind, message: String) -> BackendError {
        BackendError { label: self.grants.label.clone(), kind, message }
    }

    /// Runs one export call on a warm instance under the call deadline and the
    /// memory cap, lending it `attempt` for the call. A trap, timeout or memory
    /// exhaustion fails only this call.
    pub async fn call<R, F>(&self, mut attempt: Option<&mut Attempt>, f: F) -> Result<R, BackendError>
    where
        F: for<'a> FnOnce(&'a mut Store<HostState>, &'a Exports) -> CallFuture<'a, R>,
    {
        // Excess calls wait briefly (half a call's budget), then give up naming the mount.
        let _slot = match tokio::time::timeout(self.limits.call_timeout() / 2, self.running.acquire()).await {
            Ok(Ok(slot)) => slot,
            _ => {
                return Err(self.failure(
                    BackendErrorKind::Unavailable,
                    format!("the backend is busy: all {} of its call slots stayed taken", self.limits.pool_size),
                ))
            }
        };
        let mut instance = match self.checkout() {
            Some(instance) => instance,
            None => self.instantiate().await.map_err(|e| {
                self.failure(BackendErrorKind::Internal, format!("could not instantiate the backend: {e:#}"))
            })?,
        };
        let budget = self.limits.call_timeout();
        instance.store.data_mut().deadline = Instant::now() + budget;
        instance.store.set_epoch_deadline(1);
        instance.calls += 1;
        let swap_attempt = |instance: &mut Instance, attempt: &mut Option<&mut Attempt>| {
            if let Some(attempt) = attempt {
                std::mem::swap(&mut instance.store.data_mut().attempt, *attempt);
            }
        };
        swap_attempt(&mut instance, &mut attempt);
        // Epochs do not interrupt time spent inside host imports; the outer timeout
        // bounds those (a little later than the epoch deadline, which usually wins).
        let outcome = tokio::time::timeout(budget + budget / 2 + std::time::Duration::from_millis(50), {
            let Instance { store, exports, .. } = &mut instance;
            f(store, exports)
        })
        .await;
        // Back to its caller, however the call ended.
        swap_attempt(&mut instance, &mut attempt);
        let printed = instance.store.data().output.take();
        let result = match outcome {
            Ok(Ok(value)) => {
                for line in printed.lines().filter(|l| !l.trim().is_empty()) {
                    tracing::info!(mount = %self.grants.label, "guest: {line}");
                }
                self.give_back(instance);
                Ok(value)
            }
            // The instance is dropped here: a trapped instance is poisoned.
            Ok(Err(e)) => Err(self.classify(e, &printed)),
            // Only time inside host imports outlives the epoch deadline: the backend was
            // waiting on its store or its network, which is unavailable, not the guest slow.
            Err(_) => Err(self.failure(
                BackendErrorKind::Unavailable,
                format!(
                    "the backend did not answer within {} ms: what it waited on did not answer",
                    budget.as_millis()
                ),
            )),
        };
        if let Err(e) = &result {
            telemetry::instance_discarded(&self.grants.label, e.kind.as_label());
        }
        result
    }

    /// Why a call failed. A trap is told to the client in the guest's own words when it
    /// printed any; the wasm backtrace goes to the log only.
    fn classify(&self, e: wasmtime::Error, printed: &str) -> BackendError {
        let text = format!("{e:#}");
        if let Some(Trap::Interrupt) = e.downcast_ref::<Trap>() {
            return self.failure(
                BackendErrorKind::TimedOut,
                format!("the backend exceeded its time limit of {} ms", self.limits.call_timeout_ms),
            );
        }
        if text.contains("forcing trap when growing memory") {
            return self.failure(
                BackendErrorKind::OutOfMemory,
                format!("the backend ran out of memory (limit {} MiB)", self.limits.memory_limit_mib),
            );
        }
        tracing::warn!(mount = %self.grants.label, guest = printed.trim(), trap = %text, "the backend trapped");
        let said = own_words(printed).unwrap_or_else(|| e.root_cause().to_string());
        self.failure(BackendErrorKind::Trapped, format!("the backend trapped: {said}"))
    }
}
