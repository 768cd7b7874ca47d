//! The one wasmtime Engine of the process, its Linker, the epoch ticker, and
//! loading a component: compiled through the cache, checked against the contract.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::bindings::{v0_1, CatalogHost};
use super::builtin::Wasm;
use super::component_cache::ComponentCache;
use super::contract::{self, Granted};
use super::host_state::{Capabilities, HostState};
use super::pool::{InstancePool, Kind};
use super::{BackendError, BackendErrorKind};
use crate::config::PluginLimits;

/// How often the epoch advances; a call's deadline is checked on every tick.
const EPOCH_TICK: Duration = Duration::from_millis(10);

/// The plugin runtime: compiles components at start-up and hands out per-mount pools.
pub struct Runtime {
    engine: Engine,
    linker: Arc<Linker<HostState>>,
    cache: Arc<ComponentCache>,
}

/// What one component instance may hold at most (its store's limits say the same).
pub const CORE_INSTANCES_PER_COMPONENT: u32 = 100;
pub const TABLES_PER_COMPONENT: u32 = 100;
pub const MEMORIES_PER_COMPONENT: u32 = 16;
/// What the pool reserves for an average instance: most components (Rust, C) hold one
/// or two core instances and one memory; Python and JavaScript ones a dozen and a few.
const AVERAGE_CORE_INSTANCES: u32 = 16;
const AVERAGE_MEMORIES: u32 = 4;

/// The pooling allocator sized for `mounts` (each mount's limits): room for every
/// instance each mount may run at once (its `pool_size`, plus one for a start-up call),
/// and no more, so the totals follow the configuration instead of wasmtime's defaults.
fn pooling_for(mounts: &[PluginLimits]) -> PoolingAllocationConfig {
    let instances: u32 = mounts.iter().map(|l| l.pool_size as u32 + 1).sum();
    let largest_memory = mounts.iter().map(PluginLimits::memory_limit_bytes).max().unwrap_or(0);
    let mut pooling = PoolingAllocationConfig::default();
    pooling
        .max_memory_size(largest_memory)
        .total_component_instances(instances)
        .total_core_instances(instances * AVERAGE_CORE_INSTANCES)
        .total_tables(instances * AVERAGE_CORE_INSTANCES)
        .total_memories(instances * AVERAGE_MEMORIES)
        .total_stacks(instances)
        .max_core_instances_per_component(CORE_INSTANCES_PER_COMPONENT)
        .max_tables_per_component(TABLES_PER_COMPONENT)
        .max_memories_per_component(MEMORIES_PER_COMPONENT);
    pooling
}

impl Runtime {
    /// Builds the engine, its instance pool sized for `mounts` (the limits of the root
    /// catalog and of every mount), and starts the epoch ticker. Compiled components
    /// are kept in `cache_dir`, under `cache_max_bytes`.
    pub fn new(mounts: &[PluginLimits], cache_dir: PathBuf, cache_max_bytes: u64) -> wasmtime::Result<Self> {
        let pooling = pooling_for(mounts);
        let mut config = Config::new();
        config
            .wasm_component_model(true)
            .epoch_interruption(true)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pooling));
        let engine = Engine::new(&config)?;

        let mut linker = Linker::<HostState>::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        // Every series the host loads, each under its own versioned names.
        CatalogHost::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |s| s)?;
        v0_1::CatalogHost::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |s| s)?;

        let ticker = engine.weak();
        std::thread::Builder::new()
            .name("wasm-epoch".into())
            .spawn(move || {
                while let Some(engine) = ticker.upgrade() {
                    engine.increment_epoch();
                    drop(engine);
                    std::thread::sleep(EPOCH_TICK);
                }
            })
            .map_err(|e| wasmtime::format_err!("starting the epoch ticker: {e}"))?;

        let cache = Arc::new(ComponentCache::new(&engine, cache_dir, cache_max_bytes));
        Ok(Self { engine, linker: Arc::new(linker), cache })
    }

    /// Compiles a component, or loads it from the cache.
    pub async fn compile(&self, wasm: Wasm, label: &str) -> Result<wasmtime::component::Component, String> {
        let cache = self.cache.clone();
        let label = label.to_string();
        tokio::task::spawn_blocking(move || cache.component(&wasm, &label))
            .await
            .map_err(|e| format!("compiling the component: {e}"))?
            .map_err(|e| format!("compiling the component: {e:#}"))
    }

    /// The names a compiled component imports and exports.
    pub fn interface(&self, component: &Component) -> (Vec<String>, Vec<String>) {
        let ty = component.component_type();
        let imports = ty.imports(&self.engine).map(|(name, _)| name.to_string()).collect();
        let exports = ty.exports(&self.engine).map(|(name, _)| name.to_string()).collect();
        (imports, exports)
    }

    /// Compiles (or loads from the cache) a component and checks its imports and exports
    /// against the contract and what is granted: what `load` checks, without loading.
    /// Answers the series it was built against too.
    pub async fn check<K: Kind>(
        &self,
        wasm: Wasm,
        label: &str,
        granted: Granted,
    ) -> Result<(Component, contract::Version), String> {
        let component = self.compile(wasm, label).await?;
        let (imports, exports) = self.interface(&component);
        let built =
            contract::check::<K>(imports.iter().map(String::as_str), exports.iter().map(String::as_str), granted)?;
        Ok((component, built))
    }

    /// Compiles (or loads from the cache) a component of kind `K` (a backend, a gate,
    /// a sink), checks its imports and exports against the contract and what its
    /// configuration grants, and prepares a warm pool for it.
    pub async fn load<K: Kind>(
        &self,
        wasm: Wasm,
        grants: Capabilities,
        limits: PluginLimits,
    ) -> Result<InstancePool<K>, BackendError> {
        let label = grants.label.clone();
        let fail = |message: String| BackendError { label: label.clone(), kind: BackendErrorKind::Internal, message };
        let (component, built) = self.check::<K>(wasm.clone(), &label, grants.granted()).await.map_err(fail)?;
        let loaded = super::pool::LoadedComponent {
            bytes: wasm.len(),
            sha256: wasm.digest().iter().map(|b| format!("{b:02x}")).collect(),
            contract: built.to_string(),
        };
        let pre = self.linker.instantiate_pre(&component).map_err(|e| fail(format!("linking the component: {e:#}")))?;
        let indices =
            K::find(&pre, built.series()).map_err(|e| fail(format!("the component is not a {}: {e:#}", K::NOUN)))?;
        Ok(InstancePool::new(pre, indices, Arc::new(grants), limits, loaded))
    }
}
