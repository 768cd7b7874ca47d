//! `rustberg check-config`: what `serve` checks before it answers anybody, without
//! serving or changing anything — the file parses, its limits and mounts agree, every
//! store and remote it names can be reached, every component compiles and imports only
//! what its mount grants. (Whether a mount's owner tenant exists is known only to the
//! root catalog's store, and is checked at start-up.)

use std::path::Path;
use std::time::Duration;

use sqlx::Connection;

use crate::config::{warehouse_url, CatalogUrl, Config};
use crate::mounts::{check_name, http_grant, tcp_grant};
use crate::sandbox::contract::Granted;
use crate::sandbox::pool::BackendKind;
use crate::sandbox::{builtin, Runtime};

/// How long reaching a database may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Every problem found, each naming where it is; empty when `serve` would start.
pub async fn check(path: &Path) -> Vec<String> {
    let config = match Config::load(path) {
        Ok(config) => config,
        Err(e) => return vec![e.to_string()],
    };
    let mut problems = match config.check() {
        Ok(()) => vec![],
        Err(e) => vec![e.to_string()],
    };
    let runtime = match Runtime::new(
        &config.all_plugin_limits(),
        config.component_cache_dir(),
        config.component_cache.max_mib << 20,
    ) {
        Ok(runtime) => runtime,
        Err(e) => return [problems, vec![format!("the plugin runtime: {e:#}")]].concat(),
    };

    let root = config.root_catalog();
    match &root {
        // The default file lies in the data directory, which `serve` creates.
        Ok(url) if config.storage.catalog_url.is_some() => {
            problems.extend(reachable(url).await.err().map(|e| format!("storage.catalog_url: {e}")))
        }
        Ok(_) => {}
        Err(e) => problems.push(e.to_string()),
    }
    if let Err(e) = config.warehouse().map_err(|e| e.to_string()) {
        problems.push(format!("storage.warehouse_location: {e}"));
    }
    if let Some(file) = config.audit.file.as_ref().filter(|_| config.audit.enabled) {
        problems.extend(appendable(file).err().map(|e| format!("audit.file: {}: {e}", file.display())));
    }
    let backend = config.storage.root_backend();
    let granted = Granted { kv: true, http: false, tcp: false };
    problems.extend(component(&runtime, backend, granted).await.err().map(|e| format!("storage.backend: {e}")));
    problems.extend(crate::events::sinks::Sink::configured(&config.events).err());
    problems.extend(crate::hooks::problems(&config, &runtime).await);
    problems.extend(crate::api::policies::configured(&config).err().unwrap_or_default());

    for (name, mount) in &config.mounts {
        let mut found = vec![];
        found.extend(check_name(name).err().map(|e| e.to_string()));
        if mount.owner.is_empty() {
            found.push("owner must name a tenant".into());
        }
        if let Some(location) = &mount.warehouse_location {
            found.extend(warehouse_url(location).err().map(|e| format!("warehouse_location: {e}")));
        }
        let granted = Granted::from(mount.grants().as_slice());
        if granted.kv {
            match CatalogUrl::parse(&mount.catalog_url) {
                Ok(url) if root.as_ref().is_ok_and(|root| *root == url) => {
                    found.push(format!("catalog_url {} is the root catalog's own store", mount.catalog_url))
                }
                Ok(url) => found.extend(reachable(&url).await.err().map(|e| format!("catalog_url: {e}"))),
                Err(e) => found.push(format!("catalog_url: {e}")),
            }
        }
        if granted.http {
            found.extend(http_grant(mount).err().map(|e| format!("{e:#}")));
        }
        if granted.tcp {
            found.extend(tcp_grant(&format!("mount `{name}`"), mount).err().map(|e| format!("{e:#}")));
        }
        found.extend(component(&runtime, &mount.backend, granted).await.err().map(|e| format!("backend: {e}")));
        problems.extend(found.into_iter().map(|e| format!("mount `{name}`: {e}")));
    }
    problems
}

/// Whether a store can be opened: a redb file's folder exists, a database answers.
async fn reachable(url: &CatalogUrl) -> Result<(), String> {
    match url {
        CatalogUrl::Redb(path) => match path.parent() {
            Some(dir) if dir.is_dir() => Ok(()),
            _ => Err(format!("the folder of {} does not exist", path.display())),
        },
        CatalogUrl::Postgres(url) => {
            let connect = sqlx::PgConnection::connect(url);
            match tokio::time::timeout(CONNECT_TIMEOUT, connect).await {
                Ok(Ok(connection)) => connection.close().await.map_err(|e| e.to_string()),
                Ok(Err(e)) => Err(format!("cannot connect: {e}")),
                Err(_) => Err(format!("no answer within {} s", CONNECT_TIMEOUT.as_secs())),
            }
        }
    }
}

/// Whether `serve` can append to an existing file (a new one it creates).
fn appendable(file: &Path) -> std::io::Result<()> {
    if file.exists() {
        std::fs::OpenOptions::new().append(true).open(file)?;
    }
    Ok(())
}

/// Compiles a component and checks its imports and exports against what is granted.
async fn component(runtime: &Runtime, backend: &str, granted: Granted) -> Result<(), String> {
    runtime.check::<BackendKind>(builtin::component(backend)?, backend, granted).await.map(drop)
}
