//! A component's pool of warm instances (a mount's backend, a gate, a sink), and the
//! limits every call runs under.
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

use wasmtime::component::InstancePre;
use wasmtime::{Store, StoreLimitsBuilder, Trap, UpdateDeadline};

use super::attempt::Attempt;
use super::guest_output::own_words;
use super::host_state::{Capabilities, HostState, MeteredLimits};
pub use super::kinds::{BackendKind, Exports, GateKind, Kind, SinkKind};
use super::runtime::{CORE_INSTANCES_PER_COMPONENT, MEMORIES_PER_COMPONENT, TABLES_PER_COMPONENT};
use super::{BackendError, BackendErrorKind};
use crate::config::PluginLimits;
use crate::telemetry;

struct Instance<K: Kind> {
    store: Store<HostState>,
    exports: K::Exports,
    calls: u64,
}

/// The boxed future of one export call, borrowing the instance.
pub type CallFuture<'a, R> = Pin<Box<dyn Future<Output = wasmtime::Result<R>> + Send + 'a>>;

/// Warm instances of one component: a mount's backend, a gate or a sink.
pub struct InstancePool<K: Kind = BackendKind> {
    pre: InstancePre<HostState>,
    /// Where the component's exports are, found once.
    indices: K::Indices,
    grants: Arc<Capabilities>,
    limits: PluginLimits,
    idle: Mutex<Vec<Instance<K>>>,
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

impl InstancePool<BackendKind> {
    /// Whether the component exports `placement` (its store assigns table locations).
    pub fn places_tables(&self) -> bool {
        self.indices.placement.is_some()
    }

    /// Whether the component exports `forwarding` (its remote applies writes itself).
    pub fn forwards(&self) -> bool {
        self.indices.forwarding.is_some()
    }

    /// Whether the component exports `key-listings` (the host may scan its keys).
    pub fn lists_keys(&self) -> bool {
        self.indices.key_listings.is_some()
    }
}

impl<K: Kind> InstancePool<K> {
    pub(super) fn new(
        pre: InstancePre<HostState>,
        indices: K::Indices,
        grants: Arc<Capabilities>,
        limits: PluginLimits,
        component: LoadedComponent,
    ) -> Self {
        let running = tokio::sync::Semaphore::new(limits.pool_size);
        let idle = Mutex::new(Vec::new());
        let peak_memory = Default::default();
        Self { pre, indices, grants, limits, idle, running, peak_memory, component }
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

    async fn instantiate(&self) -> wasmtime::Result<Instance<K>> {
        let limits = StoreLimitsBuilder::new()
            .memory_size(self.limits.memory_limit_bytes())
            .instances(CORE_INSTANCES_PER_COMPONENT as usize)
            .tables(TABLES_PER_COMPONENT as usize)
            .memories(MEMORIES_PER_COMPONENT as usize)
            .trap_on_grow_failure(true)
            .build();
        let limits = MeteredLimits::new(limits, self.peak_memory.clone());
        let mut store = Store::new(self.pre.engine(), HostState::new(self.grants.clone(), limits));
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
        let instance = self.pre.instantiate_async(&mut store).await?;
        let exports = K::load(&self.indices, &mut store, &instance)?;
        telemetry::instance_created(&self.grants.label);
        Ok(Instance { store, exports, calls: 0 })
    }

    fn checkout(&self) -> Option<Instance<K>> {
        self.idle.lock().expect("pool lock").pop()
    }

    fn give_back(&self, instance: Instance<K>) {
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
        F: for<'a> FnOnce(&'a mut Store<HostState>, &'a K::Exports) -> CallFuture<'a, R>,
    {
        // Excess calls wait briefly (half a call's budget), then give up naming the mount.
        let _slot = match tokio::time::timeout(self.limits.call_timeout() / 2, self.running.acquire()).await {
            Ok(Ok(slot)) => slot,
            _ => {
                return Err(self.failure(
                    BackendErrorKind::Busy,
                    format!("the {} is busy: all {} of its call slots stayed taken", K::NOUN, self.limits.pool_size),
                ))
            }
        };
        let mut instance = match self.checkout() {
            Some(instance) => instance,
            None => self.instantiate().await.map_err(|e| {
                self.failure(BackendErrorKind::Internal, format!("could not instantiate the {}: {e:#}", K::NOUN))
            })?,
        };
        let budget = self.limits.call_timeout();
        instance.store.data_mut().deadline = Instant::now() + budget;
        instance.store.set_epoch_deadline(1);
        instance.calls += 1;
        let swap_attempt = |instance: &mut Instance<K>, attempt: &mut Option<&mut Attempt>| {
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
                    "the {} did not answer within {} ms: what it waited on did not answer",
                    K::NOUN,
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
                format!("the {} exceeded its time limit of {} ms", K::NOUN, self.limits.call_timeout_ms),
            );
        }
        if text.contains("forcing trap when growing memory") {
            return self.failure(
                BackendErrorKind::OutOfMemory,
                format!("the {} ran out of memory (limit {} MiB)", K::NOUN, self.limits.memory_limit_mib),
            );
        }
        tracing::warn!(mount = %self.grants.label, guest = printed.trim(), trap = %text, "the {} trapped", K::NOUN);
        let said = own_words(printed).unwrap_or_else(|| e.root_cause().to_string());
        self.failure(BackendErrorKind::Trapped, format!("the {} trapped: {said}", K::NOUN))
    }
}
