//! `rustberg plugin test`: the backend conformance suite. The component runs
//! in-process under the host's own runtime and limits, against an ephemeral key space
//! (or, for an http backend, the remote its mount configures), and every case of
//! [`cases::CASES`] that applies to what it declares is run and reported.

mod cases;

use std::io::Write;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};

use crate::backends::Backend;
use crate::config::{CatalogUrl, Config, MountConfig};
use crate::mounts::mount_grants;
use crate::sandbox::bindings::Features;
use crate::sandbox::builtin::Wasm;
use crate::sandbox::{BackendErrorKind, Capabilities, Runtime};
use crate::storage::kv::{KvStore, PgStore, RedbStore};
use cases::{Fixture, Needs, CASES};

/// A Postgres address nothing listens on, for the "unavailable" case of kv backends.
const UNREACHABLE_STORE: &str = "postgres://rustberg@127.0.0.1:9/unreachable";
/// An origin nothing listens on, for the "unavailable" case of http backends.
const UNREACHABLE_ORIGIN: (&str, u16) = ("127.0.0.1", 9);

/// What the component is tested against.
pub enum Target {
    /// A key space in a temporary redb file.
    EphemeralKv,
    /// The store or remote of this configured mount.
    Mount { name: String, mount: Box<MountConfig> },
}

/// Runs the suite, writing the report to `out`. Ok(true) when no case failed.
pub async fn run(wasm: Wasm, target: Target, config: &Config, out: &mut impl Write) -> anyhow::Result<bool> {
    let (name, limits) = match &target {
        Target::EphemeralKv => ("conformance".to_string(), config.plugins.clone()),
        Target::Mount { name, .. } => (name.clone(), config.plugin_limits(name)),
    };
    let runtime = Runtime::new(
        &[limits.clone(), limits.clone()],
        config.component_cache_dir(),
        config.component_cache.max_mib << 20,
    )
    .map_err(|e| anyhow!("starting the plugin runtime: {e:#}"))?;
    let scratch = tempfile::tempdir().context("a scratch directory")?;
    // A key space nobody can reach, for the "unavailable" twin of a kv backend.
    let lost_store = || -> anyhow::Result<KvStore> {
        let lost = PgStore::connect_lazy(UNREACHABLE_STORE, Duration::from_millis(250))
            .map_err(|e| anyhow!("an unreachable store: {e}"))?;
        Ok(KvStore::Postgres(lost.space("catalog")))
    };
    let (grants, unreachable_grants, against) = match &target {
        Target::EphemeralKv => {
            let store = RedbStore::open(&scratch.path().join("conformance.redb"))?;
            let kv = |space: KvStore| Capabilities {
                label: format!("mount `{name}`"),
                kv: Some(space),
                http: None,
                tcp: None,
                config: Default::default(),
                log_budget: Default::default(),
            };
            (kv(KvStore::Redb(store.space("catalog")?)), kv(lost_store()?), "an ephemeral key space".to_string())
        }
        Target::Mount { name, mount } => {
            let nowhere = CatalogUrl::Redb(scratch.path().join("no-root.redb"));
            let grants = mount_grants(name, mount, &nowhere).await?;
            let lost = match grants.kv.is_some() {
                // The same settings over a store nobody can reach.
                true => Capabilities {
                    label: grants.label.clone(),
                    kv: Some(lost_store()?),
                    http: None,
                    tcp: None,
                    config: std::sync::RwLock::new(grants.config.read().expect("mount config").clone()),
                    log_budget: Default::default(),
                },
                // The same mount with its origin (http) or address (tcp) on a closed port.
                false => {
                    let mut lost = (**mount).clone();
                    let mut url = url::Url::parse(&mount.catalog_url).map_err(|e| anyhow!("catalog_url: {e}"))?;
                    if url.set_host(Some(UNREACHABLE_ORIGIN.0)).is_err()
                        || url.set_port(Some(UNREACHABLE_ORIGIN.1)).is_err()
                    {
                        anyhow::bail!("catalog_url {} names no host and port", mount.catalog_url);
                    }
                    lost.catalog_url = url.to_string();
                    lost.http_origins.clear();
                    lost.tcp_origins.clear();
                    mount_grants(name, &lost, &nowhere).await?
                }
            };
            (grants, lost, format!("mount `{name}` ({})", mount.catalog_url))
        }
    };
    let backend = Backend::open_timed(runtime.load(wasm.clone(), grants, limits.clone()).await?).await?;
    // A backend that describes itself from its remote (rest) cannot open without it.
    let unreachable = Backend::open(runtime.load(wasm, unreachable_grants, limits).await?).await;
    let fixture = Fixture { backend, unreachable };
    writeln!(out, "conformance of the backend against {against}")?;

    let features = fixture.backend.features();
    // A backend whose remote applies writes (`forwarding`) is sent them as REST requests,
    // which these cases do not make: its writes are proven through a mount (the
    // compatibility kit through a read-write rest mount).
    let forwards = fixture.backend.forwards();
    let writes = features.contains(Features::WRITES) && !forwards;
    let nests = writes && nests(&fixture.backend).await;
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    for case in CASES {
        let skip = match case.needs {
            Needs::Nothing => None,
            _ if forwards => Some("the backend forwards writes to its remote".to_string()),
            _ if !writes => Some("the backend cannot write".to_string()),
            Needs::Writes => None,
            Needs::Nesting if !nests => Some("the backend has one level of namespaces".to_string()),
            Needs::Nesting => None,
            Needs::Endpoint(endpoint) if !endpoint.served_with(features, fixture.backend.places_tables()) => {
                Some(format!("the backend does not declare what {} needs", endpoint.operation()))
            }
            Needs::Endpoint(_) => None,
        };
        if let Some(reason) = skip {
            writeln!(out, "  skip  {} ({reason})", case.name)?;
            skipped += 1;
            continue;
        }
        let started = Instant::now();
        match (case.run)(&fixture).await {
            Ok(()) => {
                writeln!(out, "  pass  {:<36} {:>7.1} ms", case.name, started.elapsed().as_secs_f64() * 1e3)?;
                passed += 1;
            }
            Err(why) => {
                writeln!(out, "  FAIL  {}: {why}", case.name)?;
                failed += 1;
            }
        }
    }

    writeln!(out, "\nper call (ms)                   calls      p50      p99      max")?;
    for (export, mut times) in fixture.backend.timings() {
        times.sort();
        let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e3;
        writeln!(out, "  {export:<29} {:>7} {:>8.3} {:>8.3} {:>8.3}", times.len(), at(0.5), at(0.99), at(1.0))?;
    }
    writeln!(out, "peak linear memory: {:.1} MiB", fixture.backend.peak_memory_bytes() as f64 / (1 << 20) as f64)?;
    writeln!(out, "{passed} passed, {failed} failed, {skipped} skipped")?;
    Ok(failed == 0)
}

/// Whether the backend keeps namespaces inside namespaces (some, like Glue, have one level).
async fn nests(backend: &Backend) -> bool {
    let parent = vec!["c_probe".to_string()];
    if backend.create_namespace(parent.clone(), vec![]).await.is_err() {
        return true; // the namespaces case will say what is wrong
    }
    let child = vec!["c_probe".to_string(), "child".to_string()];
    let refused = backend.create_namespace(child, vec![]).await;
    !matches!(refused, Err(e) if matches!(e.kind, BackendErrorKind::BadRequest | BackendErrorKind::Unsupported))
}
