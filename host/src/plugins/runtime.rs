//! The one wasmtime Engine of the process, its Linker, the epoch ticker and the
//! compiled-component cache.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::bindings::{CatalogHost, CatalogHostPre};
use super::host_state::{Grants, HostState};
use super::pool::InstancePool;
use super::{BackendError, BackendErrorKind};
use crate::config::PluginLimits;

/// How often the epoch advances; a call's deadline is checked on every tick.
const EPOCH_TICK: Duration = Duration::from_millis(10);

/// The plugin runtime: compiles components at start-up and hands out per-mount pools.
pub struct Runtime {
    engine: Engine,
    linker: Arc<Linker<HostState>>,
    cache_dir: PathBuf,
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
    /// catalog and of every mount), and starts the epoch ticker.
    pub fn new(mounts: &[PluginLimits], cache_dir: PathBuf) -> wasmtime::Result<Self> {
        let pooling = pooling_for(mounts);
        let mut config = Config::new();
        config
            .wasm_component_model(true)
            .epoch_interruption(true)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pooling));
        let engine = Engine::new(&config)?;

        let mut linker = Linker::<HostState>::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        CatalogHost::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |s| s)?;

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

        Ok(Self { engine, linker: Arc::new(linker), cache_dir })
    }

    /// Compiles (or loads from the cache) a component, checks its imports against
    /// what the mount grants, and prepares a warm pool for it.
    pub async fn load(
        &self,
        wasm: Arc<[u8]>,
        grants: Grants,
        limits: PluginLimits,
    ) -> Result<InstancePool, BackendError> {
        let label = grants.label.clone();
        let fail = |message: String| BackendError { label: label.clone(), kind: BackendErrorKind::Internal, message };
        let engine = self.engine.clone();
        let cache_dir = self.cache_dir.clone();
        let component = tokio::task::spawn_blocking(move || compile_cached(&engine, &wasm, &cache_dir))
            .await
            .map_err(|e| fail(format!("compiling the component: {e}")))?
            .map_err(|e| fail(format!("compiling the component: {e:#}")))?;

        let allowed = grants.importable();
        for (name, _) in component.component_type().imports(&self.engine) {
            let interface = name.split('@').next().unwrap_or(name);
            if !interface.starts_with("wasi:") && !allowed.contains(&interface) {
                return Err(fail(format!(
                    "the component imports `{name}`, which this mount does not grant (it grants {})",
                    allowed.join(", ")
                )));
            }
        }

        let pre = self.linker.instantiate_pre(&component).map_err(|e| fail(format!("linking the component: {e:#}")))?;
        let pre = CatalogHostPre::new(pre).map_err(|e| fail(format!("the component is not a backend: {e:#}")))?;
        Ok(InstancePool::new(pre, Arc::new(grants), limits))
    }
}

/// Loads the precompiled form of `wasm` from the cache, or compiles and stores it.
/// The cache key covers the component bytes and the engine's compatibility hash, and
/// only files this host wrote are ever deserialized.
fn compile_cached(engine: &Engine, wasm: &[u8], cache_dir: &Path) -> wasmtime::Result<Component> {
    let mut engine_hash = DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut engine_hash);
    let digest = Sha256::digest(wasm);
    let file = cache_dir.join(format!(
        "{}-{:016x}.cwasm",
        base64::Engine::encode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, &digest[..16]),
        engine_hash.finish()
    ));
    if file.exists() {
        // SAFETY: the file was written by `precompile_component` of this host (the name
        // carries the digest of the source and the engine's compatibility hash).
        if let Ok(component) = unsafe { Component::deserialize_file(engine, &file) } {
            return Ok(component);
        }
    }
    let compiled = engine.precompile_component(wasm)?;
    std::fs::create_dir_all(cache_dir)?;
    let tmp = file.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, &compiled)?;
    std::fs::rename(&tmp, &file)?;
    // SAFETY: these bytes were produced by `precompile_component` just above.
    unsafe { Component::deserialize(engine, &compiled) }
}
