//! Start-up: open the stores, load the components, bind, serve.

use std::future::IntoFuture;
use std::sync::Arc;

use anyhow::Context;
use axum::serve::ListenerExt;
use rand::RngCore;

use crate::api::idempotency::Idempotency;
use crate::api::{self, AppState, Endpoint, RequestIds};
use crate::audit::AuditLog;
use crate::auth::{minted_admin, Authenticator, Directory, Oidc, OidcIdentity, Principal, TokenIssuer};
use crate::authz::Authorizer;
use crate::backends::Backend;
use crate::config::CatalogUrl;
use crate::config::Config;
use crate::events::sinks::Sink;
use crate::events::{Events, Outbox};
use crate::hooks::Gates;
use crate::mounts::{open_mounts, refuse_shadowing, Mount, Mounts};
use crate::paging::PageTokens;
use crate::sandbox::bindings::Features;
use crate::sandbox::{builtin, Capabilities, Runtime};
use crate::scan::plans::{Limits as PlanLimits, Plans};
use crate::storage::kv::{Check, KvStore, PgStore, RedbStore, Write};
use crate::storage::location_index::LocationIndex;
use crate::storage::vending::Vendor;
use crate::storage::warehouse::Warehouse;

/// The key space the host keeps for itself (server key, later principals and grants);
/// no backend is ever granted it.
const HOST_SPACE: &str = "rustberg:host";
/// The key space of the root catalog.
const ROOT_SPACE: &str = "root";

/// A server key (for page tokens, for signing access tokens): created once, kept in
/// the host key space.
async fn server_key(space: &KvStore, name: &str) -> anyhow::Result<[u8; 32]> {
    let name = format!("key/{name}").into_bytes();
    if let Some(entry) = space.get(&name).await? {
        return entry.value.as_slice().try_into().context("a stored server key is corrupt");
    }
    let mut key = [0u8; 32];
    rand::rng().fill_bytes(&mut key);
    // Another host sharing the store may have won the race: every host keeps
    // whichever key landed first.
    let _ =
        space.commit(&[Check::Absent(name.clone())], &[Write { key: name.clone(), value: Some(key.to_vec()) }]).await;
    let stored = space.get(&name).await?.context("a server key was not stored")?;
    stored.value.as_slice().try_into().context("a stored server key is corrupt")
}

/// Builds the authenticator. Without a configured server admin (and outside the
/// anonymous mode) it uses the admin minted at the first start (minting it then), so a
/// server with no configuration is usable but never open.
async fn authenticator(config: &Config, host: &KvStore) -> anyhow::Result<Authenticator> {
    let auth = &config.auth;
    if auth.anonymous {
        anyhow::ensure!(
            config.server.listen.ip().is_loopback(),
            "auth.anonymous is only allowed on a loopback address, not {}",
            config.server.listen
        );
        tracing::warn!("anonymous mode: requests without a token act as a server admin (loopback only)");
        println!("rustberg: ANONYMOUS MODE - requests without credentials act as a server admin");
    }
    let mut principals = std::collections::BTreeMap::new();
    for (name, p) in &auth.principals {
        let role = p.role.parse().map_err(|e| anyhow::anyhow!("auth.principals.{name}.role: {e}"))?;
        let principal = Principal {
            id: String::new(),
            name: name.clone(),
            tenant: p.tenant.clone(),
            role,
            server_admin: p.server_admin,
            secret_hash: p.secret_hash.clone(),
            oidc: auth
                .oidc
                .as_ref()
                .zip(p.oidc_subject.as_ref())
                .map(|(oidc, subject)| OidcIdentity { issuer: oidc.issuer.clone(), subject: subject.clone() }),
        };
        principals.insert(name.clone(), principal);
    }
    if !auth.anonymous && !principals.values().any(|p| p.server_admin) {
        let minted = minted_admin::load_or_mint(host, &config.data_dir()).await?;
        match &minted.new_secret {
            Some(secret) => {
                println!("rustberg: no server admin is configured; minted one (kept across restarts):");
                println!("rustberg:   credential admin:{secret}   (PyIceberg: credential=\"admin:{secret}\")");
                println!("rustberg:   also written to {} (readable by you only)", minted.file.display());
            }
            None => println!(
                "rustberg: no server admin is configured; the one minted at the first start is kept \
                 (its credential: {}; `rustberg admin reset-credential` replaces it)",
                minted.file.display()
            ),
        }
        principals.insert(minted.principal.name.clone(), minted.principal);
    }
    let oidc = match &auth.oidc {
        Some(oidc) => Some(Oidc::load(oidc).await.context("loading auth.oidc")?),
        None => None,
    };
    let lifetime = std::time::Duration::from_secs(auth.token_lifetime_secs);
    let issuer = TokenIssuer::new(&server_key(host, "access-token").await?, lifetime);
    let mount_owners = config.mounts.values().map(|m| m.owner.clone());
    Ok(Authenticator::new(Directory::new(principals, mount_owners, host.clone()), issuer, oidc, auth.anonymous))
}

/// The root catalog's key space and the host's own: both in one store, a redb file or
/// a Postgres database that several stateless hosts may share.
async fn open_stores(config: &Config) -> anyhow::Result<(KvStore, KvStore)> {
    Ok(match config.root_catalog()? {
        CatalogUrl::Redb(path) => {
            println!("rustberg: catalog {}", path.display());
            let store = RedbStore::open(&path)?;
            (KvStore::Redb(store.space(ROOT_SPACE)?), KvStore::Redb(store.space(HOST_SPACE)?))
        }
        CatalogUrl::Postgres(url) => {
            println!("rustberg: catalog in a Postgres database");
            let store = PgStore::connect(&url, std::time::Duration::from_secs(5))
                .await
                .map_err(|e| anyhow::anyhow!("refusing to start: storage.catalog_url: {e}"))?;
            (KvStore::Postgres(store.space(ROOT_SPACE)), KvStore::Postgres(store.space(HOST_SPACE)))
        }
    })
}

/// `rustberg admin reset-credential`: a new secret (and id) for the minted admin, while
/// the server is stopped (a redb file admits one process). Returns the secret and the
/// file it was written to.
pub async fn reset_admin_credential(config: &Config) -> anyhow::Result<(String, std::path::PathBuf)> {
    let data_dir = config.data_dir();
    std::fs::create_dir_all(&data_dir)?;
    let (_, host) = open_stores(config).await.context("opening the catalog (is the server still running?)")?;
    minted_admin::reset(&host, &data_dir).await
}

/// How scan plans run and are held, from `[planning]`.
fn plan_limits(planning: &crate::config::PlanningConfig) -> PlanLimits {
    PlanLimits {
        budget: std::time::Duration::from_millis(planning.budget_ms),
        concurrency: planning.concurrency,
        max_plans: planning.max_plans,
        ttl: std::time::Duration::from_secs(planning.plan_ttl_secs),
    }
}

/// Builds the application state from the configuration.
pub async fn build(config: &Config) -> anyhow::Result<AppState> {
    Ok(build_with_plugin_sinks(config).await?.0)
}

/// Builds the application state, and the sinks written as components (they run on the
/// state's plugin runtime).
async fn build_with_plugin_sinks(config: &Config) -> anyhow::Result<(AppState, Vec<Sink>)> {
    config.check().map_err(|e| anyhow::anyhow!("refusing to start: {e}"))?;
    crate::telemetry::install();
    let data_dir = config.data_dir();
    std::fs::create_dir_all(&data_dir).with_context(|| format!("creating data directory {}", data_dir.display()))?;
    println!("rustberg: data directory {}", data_dir.display());
    let (root_kv, host) = open_stores(config).await?;
    // One location index for every warehouse: no two tables share files, whichever
    // mount holds them.
    let index = LocationIndex::new(host.clone());
    // The root catalog's backend commits to the store that holds the index.
    let warehouse = Warehouse::open(&config.warehouse()?, &config.storage.s3, index.ahead_of_its_store())
        .map_err(|e| anyhow::anyhow!("refusing to start: storage.warehouse_location: {e}"))?
        .with_unstructured_locations(config.storage.unstructured_locations);
    if warehouse.assigned() {
        anyhow::bail!("refusing to start: storage.warehouse_location: a bucket pattern is only for a mount whose store assigns table locations");
    }
    println!("rustberg: warehouse {}", warehouse.root());
    let tokens = PageTokens::new(server_key(&host, "page-token").await?);
    let auth = Arc::new(authenticator(config, &host).await?);
    // A mount's owner declares its tenant; one that nothing else knows may be a typo.
    for (name, mount) in &config.mounts {
        if !auth.directory.tenant_known_beyond_mounts(&mount.owner).await? {
            println!(
                "rustberg: tenant {:?} is declared only by mount `{name}` (no principal belongs to it yet)",
                mount.owner
            );
        }
    }
    let runtime =
        Runtime::new(&config.all_plugin_limits(), config.component_cache_dir(), config.component_cache.max_mib << 20)
            .map_err(|e| anyhow::anyhow!("starting the plugin runtime: {e:#}"))?;

    let grants = Capabilities {
        label: "root catalog".into(),
        kv: Some(root_kv),
        http: None,
        tcp: None,
        config: Default::default(),
        log_budget: Default::default(),
    };
    let name = config.storage.root_backend();
    let wasm = builtin::component(name).map_err(|e| anyhow::anyhow!("storage.backend: {e}"))?;
    let pool = runtime.load(wasm, grants, config.plugins.clone()).await.context("refusing to start")?;
    let backend = Backend::open(pool).await.context("refusing to start")?;
    let read_only = !backend.does(Features::WRITES);
    let mut root = Mount {
        name: None,
        space: ROOT_SPACE.into(),
        backend,
        warehouse: Some(warehouse),
        owner: None,
        read_only,
        source: name.to_string(),
    };

    let mut named = open_mounts(config, &runtime, &index).await?;
    let gates = Gates::open(config, &runtime).await.context("refusing to start")?;
    if !gates.is_empty() {
        println!("rustberg: {} admission gate(s)", gates.count());
    }
    let plugin_sinks = crate::hooks::sink::configured(config, &runtime).await.context("refusing to start")?;
    refuse_shadowing(&root, named.keys()).await?;
    exclude_nested_warehouses(std::iter::once(&mut root).chain(named.values_mut()));
    let mounts = Mounts::new(root, named);
    crate::tables::backfill::backfill(&mounts, &host)
        .await
        .map_err(|e| anyhow::anyhow!("refusing to start: building the location index: {e}"))?;
    let mount_owners = mounts.named().filter_map(|(name, m)| Some((name.clone(), m.owner.clone()?))).collect();
    let mut endpoints = advertised_endpoints(&mounts.all().collect::<Vec<_>>());
    // The log is the whole tree's: served under its prefix alone, when kept.
    let mount_endpoints = mounts.named().map(|(name, m)| (name.clone(), advertised_endpoints(&[m]))).collect();
    let root_endpoints = advertised_endpoints(&[mounts.root()]);
    if config.events.enabled {
        endpoints.push(Endpoint::QueryEvents.spec().to_string());
    }
    let warehouses = mounts.all().filter_map(|m| m.warehouse.as_ref()).map(|w| w.root());
    // Mounts whose warehouse lives in a store of its own ([mount.<name>.s3]).
    let own_stores: Vec<_> = mounts
        .named()
        .filter_map(|(name, mount)| {
            Some((mount.warehouse.as_ref()?.root().clone(), config.mounts.get(name)?.s3.clone()?))
        })
        .collect();
    let vendor = Vendor::new(config, warehouses, &own_stores).map_err(|e| anyhow::anyhow!("refusing to start: {e}"))?;
    let audit = AuditLog::open(&config.audit).context("opening the audit log ([audit] file)")?;
    let policies = configured_policies(config, &auth.directory).await?;
    let authz = Authorizer::load(host.clone(), mount_owners).await?.audited(audit).with_policies(policies);
    // Before anybody is served: a crash may have cut a change short.
    let (settled, left) = crate::recovery::repair(&authz, &mounts).await?;
    // In the host's key space: the root catalog's changes carry their events.
    let events = match config.events.enabled {
        true => Events::on(Outbox::new(host.clone())),
        false => Events::off(),
    };
    if settled + left > 0 {
        println!("rustberg: start-up repair settled {settled} interrupted change(s); {left} left (see the log)");
    }
    let state = AppState {
        mounts,
        tokens,
        plans: Plans::new(plan_limits(&config.planning)),
        endpoints,
        mount_endpoints,
        root_endpoints,
        auth,
        authz,
        idempotency: Arc::new(Idempotency::new(host.clone())),
        vendor,
        request_ids: RequestIds::new(),
        events,
        gates,
        public_url: config.server.public_url.as_deref().map(Arc::from),
        console_oidc: config
            .auth
            .oidc
            .as_ref()
            .and_then(|oidc| Some((oidc.issuer.clone(), oidc.console_client_id.clone()?))),
        host_space: host,
    };
    Ok((state, plugin_sinks))
}

/// Keeps each warehouse from reaching into the warehouses of other mounts nested in it.
fn exclude_nested_warehouses<'a>(mounts: impl Iterator<Item = &'a mut Mount>) {
    let mut warehouses: Vec<&mut Warehouse> = mounts.filter_map(|m| m.warehouse.as_mut()).collect();
    let roots: Vec<_> = warehouses.iter().map(|w| w.root().clone()).collect();
    for warehouse in &mut warehouses {
        warehouse.exclude_nested(roots.iter());
    }
}

/// What `/v1/config` promises for these mounts: what the host implements and every one
/// of them supports; a read-only mount removes every mutating endpoint. Never empty.
fn advertised_endpoints(mounts: &[&Mount]) -> Vec<String> {
    let any_read_only = mounts.iter().any(|m| m.read_only);
    let endpoints: Vec<String> = Endpoint::ALL
        .iter()
        .filter(|e| **e != Endpoint::QueryEvents)
        .filter(|e| mounts.iter().all(|m| m.supports(**e)))
        .filter(|e| !(any_read_only && e.mutating()))
        .map(|e| e.spec().to_string())
        .collect();
    if endpoints.is_empty() {
        // An empty list would read as "everything" to clients: promise the one read
        // every backend must serve.
        return vec![Endpoint::ListNamespaces.spec().to_string()];
    }
    endpoints
}

/// Runs the server until SIGTERM or SIGINT, then lets the requests in flight finish
/// (for at most `server.shutdown_grace_secs`) and returns.
pub async fn serve(config: Config) -> anyhow::Result<()> {
    let mut sinks = Sink::configured(&config.events).map_err(|e| anyhow::anyhow!("refusing to start: {e}"))?;
    let (state, plugin_sinks) = build_with_plugin_sinks(&config).await?;
    let state = Arc::new(state);
    sinks.extend(plugin_sinks);
    let retention = std::time::Duration::from_secs(config.events.retention_hours * 3600);
    tokio::spawn(crate::events::relay::run(state.events.clone(), retention));
    let source = config.events.source.clone().or(config.server.public_url.clone()).unwrap_or("rustberg".into());
    for sink in sinks {
        tokio::spawn(crate::events::sinks::run(state.events.clone(), sink, source.clone(), retention));
    }
    // Expired idempotency keys are removed in the background.
    let sweeper = state.clone();
    tokio::spawn(async move {
        let mut every = tokio::time::interval(std::time::Duration::from_secs(60));
        loop {
            every.tick().await;
            sweeper.idempotency.sweep().await;
        }
    });
    // Intents a failing store left while serving are settled without a restart.
    let repairer = state.clone();
    tokio::spawn(async move { crate::recovery::repair_while_serving(&repairer.authz, &repairer.mounts).await });
    let listener = tokio::net::TcpListener::bind(config.server.listen)
        .await
        .with_context(|| format!("binding {}", config.server.listen))?;
    let addr = listener.local_addr()?;
    println!("rustberg: listening on http://{addr} (Iceberg REST catalog at http://{addr}/v1)");
    let app = api::router(state.clone());

    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    // A response goes out as soon as it is written: its last small part (a load's body
    // is sent as the parts around the metadata) must not wait for the peer's ACK.
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY");
        }
    });
    let server = axum::serve(listener, app).with_graceful_shutdown(async {
        let _ = stopped.await;
    });
    let mut server = std::pin::pin!(server.into_future());
    tokio::select! {
        result = &mut server => return Ok(result?),
        signal = shutdown_signal() => println!("rustberg: {signal}: finishing the requests in flight"),
    }
    let _ = stop.send(());
    let grace = std::time::Duration::from_secs(config.server.shutdown_grace_secs);
    match tokio::time::timeout(grace, server).await {
        Ok(result) => result?,
        Err(_) => println!("rustberg: requests still running after {} s are cut off", grace.as_secs()),
    }
    if let Err(e) = state.authz.sync().await {
        tracing::error!(error = %e, "the last settled changes are not on disk: the next start settles them again");
    }
    println!("rustberg: stopped");
    Ok(())
}

/// Resolves on SIGTERM or SIGINT, saying which.
async fn shutdown_signal() -> &'static str {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) else {
        let _ = tokio::signal::ctrl_c().await;
        return "SIGINT";
    };
    tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    }
}

/// The read policies `[policy.<name>]` defines, each principal found by its name.
async fn configured_policies(
    config: &Config,
    directory: &crate::auth::Directory,
) -> anyhow::Result<Vec<crate::authz::Policy>> {
    let mut policies = crate::api::policies::configured(config)
        .map_err(|problems| anyhow::anyhow!("refusing to start: {}", problems.join("; ")))?;
    for policy in &mut policies {
        if let crate::authz::Subject::Principal(name) = &policy.subject {
            let principal = directory.principal(name).await?.ok_or_else(|| {
                anyhow::anyhow!("refusing to start: policy.{}: principal {name} does not exist", policy.name)
            })?;
            policy.subject = crate::authz::Subject::Principal(principal.id().to_string());
        }
    }
    Ok(policies)
}
