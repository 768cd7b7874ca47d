//! Components that are not backends: admission gates (`[gates.<name>]`), which see every
//! change before it is made and may refuse it, and plugin sinks
//! (`[events.plugin.<name>]`), which are handed the log's events. Each runs in the
//! sandbox under its own limits, with what its configuration grants (`http` or `tcp`,
//! never a key space).
//!
//! - `gates`: the gates, and a proposed change put to each in turn.
//! - `sink`: a plugin sink as the events room's sinks see one.

pub mod gates;
pub mod sink;

use anyhow::anyhow;

use crate::config::{CatalogUrl, Config, HookConfig};
use crate::mounts::component_grants;
use crate::sandbox::contract::Granted;
use crate::sandbox::pool::{GateKind, Kind, SinkKind};
use crate::sandbox::{builtin, Capabilities, InstancePool, Runtime};

pub use gates::{Gates, Proposed};

/// What `hook` grants the component messages call `label`. It has no key space, so no
/// store is opened (the root's is named only to satisfy the shared rules).
async fn grants(label: &str, hook: &HookConfig) -> anyhow::Result<Capabilities> {
    let nowhere = CatalogUrl::Redb(std::path::PathBuf::new());
    component_grants(label, &hook.as_mount(), &nowhere).await
}

/// Loads the component of `hook` as a `K`, named `label`.
async fn load<K: Kind>(
    label: String,
    hook: &HookConfig,
    config: &Config,
    runtime: &Runtime,
) -> anyhow::Result<InstancePool<K>> {
    let wasm = builtin::component(&hook.plugin).map_err(|e| anyhow!("{label}: plugin: {e}"))?;
    let grants = grants(&label, hook).await.map_err(|e| anyhow!("{label}: {e:#}"))?;
    Ok(runtime.load::<K>(wasm, grants, hook.plugins.over(&config.plugins)).await?)
}

/// Every problem with the gates' and plugin sinks' components: what `serve` would
/// refuse, for `check-config`.
pub async fn problems(config: &Config, runtime: &Runtime) -> Vec<String> {
    let mut problems = Vec::new();
    let gates = config.gates.iter().map(|(name, hook)| (format!("gates.{name}"), hook, GateKind::NOUN));
    let sinks =
        config.events.plugins.iter().map(|(name, hook)| (format!("events.plugin.{name}"), hook, SinkKind::NOUN));
    for (scope, hook, noun) in gates.chain(sinks) {
        let granted = Granted::from(hook.grants.as_slice());
        let checked = match builtin::component(&hook.plugin) {
            Ok(wasm) if noun == GateKind::NOUN => runtime.check::<GateKind>(wasm, &scope, granted).await.map(drop),
            Ok(wasm) => runtime.check::<SinkKind>(wasm, &scope, granted).await.map(drop),
            Err(e) => Err(e),
        };
        problems.extend(checked.err().map(|e| format!("{scope}.plugin: {e}")));
        problems.extend(grants(&scope, hook).await.err().map(|e| format!("{scope}: {e:#}")));
    }
    problems
}
