//! Opening the mount table at start-up, and the refusals: a mount that cannot be
//! opened or would shadow a namespace of the root catalog stops the server, with a
//! message naming the mount and the reason.

use std::collections::BTreeMap;
use std::sync::RwLock;
use std::time::Duration;

use anyhow::{anyhow, bail, Context};

use super::Mount;
use crate::backends::Backend;
use crate::config::{warehouse_url, CatalogUrl, Config, MountConfig, MountGrant};
use crate::sandbox::bindings::Features;
use crate::sandbox::{
    builtin, http, tcp, BackendErrorKind, Capabilities, HostCredential, HttpGrant, Runtime, TcpGrant,
};
use crate::storage::kv::{KvStore, PgStore, RedbStore};
use crate::storage::location_index::LocationIndex;
use crate::storage::warehouse::Warehouse;

/// The key space a native catalog uses inside its redb file or database.
const CATALOG_SPACE: &str = "catalog";
/// How long opening a mount's database may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

pub fn check_name(name: &str) -> anyhow::Result<()> {
    if name.is_empty() || name.contains('.') || name.chars().any(char::is_control) {
        bail!("a mount name must be one non-empty namespace level without dots or control characters");
    }
    Ok(())
}

async fn open_store(config: &MountConfig, root: &CatalogUrl) -> anyhow::Result<KvStore> {
    match CatalogUrl::parse(&config.catalog_url)
        .map_err(|e| anyhow!("catalog_url: {e} (the mount grants kv: a store)"))?
    {
        CatalogUrl::Redb(path) => {
            if matches!(root, CatalogUrl::Redb(root_file) if *root_file == path) {
                bail!("catalog_url {} is the root catalog's own file", config.catalog_url);
            }
            let store = RedbStore::open(&path).with_context(|| format!("cannot open {}", config.catalog_url))?;
            Ok(KvStore::Redb(store.space(CATALOG_SPACE)?))
        }
        CatalogUrl::Postgres(url) => {
            let store = PgStore::connect(&url, CONNECT_TIMEOUT)
                .await
                .map_err(|e| anyhow!("cannot open {}: {e}", redact(&url)))?;
            Ok(KvStore::Postgres(store.space(CATALOG_SPACE)))
        }
    }
}

/// A URL without its password, for messages.
fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        _ => url.to_string(),
    }
}

/// `scheme://host[:port]` of an http(s) URL, or why it has none.
fn origin_of(url: &str) -> anyhow::Result<String> {
    let parsed = url::Url::parse(url).map_err(|e| anyhow!("{url}: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        bail!("{url} is not an http(s) URL");
    }
    Ok(parsed.origin().ascii_serialization())
}

/// The `http` grant of a mount: its `catalog_url` origin and `http_origins`, with the
/// credential of `[mount.<name>.auth]`; and what the backend is told about the URL
/// (path, warehouse).
pub fn http_grant(mount: &MountConfig) -> anyhow::Result<(HttpGrant, Vec<(String, String)>)> {
    let url = url::Url::parse(&mount.catalog_url).map_err(|e| anyhow!("catalog_url {}: {e}", mount.catalog_url))?;
    let mut origins =
        vec![origin_of(&mount.catalog_url).map_err(|e| anyhow!("catalog_url: {e} (the mount grants http)"))?];
    for extra in &mount.http_origins {
        let origin = origin_of(extra).map_err(|e| anyhow!("http_origins: {e}"))?;
        if origin != extra.trim_end_matches('/') {
            bail!("http_origins: {extra} is not an origin (scheme://host[:port], no path)");
        }
        origins.push(origin);
    }
    let warehouse = url.query_pairs().find(|(k, _)| k == "warehouse").map(|(_, v)| v.into_owned());
    let settings = vec![
        ("base_path".to_string(), url.path().trim_end_matches('/').to_string()),
        ("warehouse".to_string(), warehouse.unwrap_or_default()),
    ];
    let client =
        http::client(Duration::from_millis(mount.connect_timeout_ms), Duration::from_millis(mount.request_timeout_ms))
            .map_err(|e| anyhow!("http client: {e}"))?;
    let credential = HostCredential::from_config(mount.auth(), client.clone()).map_err(|e| anyhow!("auth: {e}"))?;
    let grant = HttpGrant::new(origins, client, Duration::from_millis(mount.request_timeout_ms), credential)
        .map_err(|e| anyhow!("the origins the mount grants: {e}"))?;
    Ok((grant, settings))
}

/// The `tcp` grant of a mount (named `label` in messages): `catalog_url`'s host and port (any scheme, such as
/// `thrift://`) and `tcp_origins`; and what the backend is told (`address`).
pub fn tcp_grant(label: &str, mount: &MountConfig) -> anyhow::Result<(TcpGrant, Vec<(String, String)>)> {
    let url = url::Url::parse(&mount.catalog_url).map_err(|e| anyhow!("catalog_url {}: {e}", mount.catalog_url))?;
    let (Some(host), Some(port)) = (url.host_str(), url.port()) else {
        bail!("catalog_url {} names no host and port (the mount grants tcp: an address)", mount.catalog_url);
    };
    let address = format!("{host}:{port}");
    let mut origins = vec![tcp::parse_origin(&address).map_err(|e| anyhow!("catalog_url: {e}"))?];
    for extra in &mount.tcp_origins {
        origins.push(tcp::parse_origin(extra).map_err(|e| anyhow!("tcp_origins: {e}"))?);
    }
    Ok((TcpGrant::new(label.to_string(), origins), vec![("address".to_string(), address)]))
}

/// What mount `name` grants its component: a key space in the store at `catalog_url`,
/// requests to its origins, and its settings. `root` is the root catalog's store,
/// which no mount may share.
pub async fn mount_grants(name: &str, mount: &MountConfig, root: &CatalogUrl) -> anyhow::Result<Capabilities> {
    component_grants(&format!("mount `{name}`"), mount, root).await
}

/// What `mount` grants the component that messages call `label` (a mount's, or a gate's
/// or a sink's written as a mount: [`crate::config::HookConfig::as_mount`]).
pub async fn component_grants(label: &str, mount: &MountConfig, root: &CatalogUrl) -> anyhow::Result<Capabilities> {
    let granted = mount.grants();
    // The mount's own settings come first: `config.get` finds them before what the
    // host derives from the URL or the backend remembers.
    let mut settings: Vec<(String, String)> = mount.config.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    // Where the mount's namespaces go, for a store that gives every namespace a location
    // (the Hive Metastore) and must not pick one of its own outside the warehouse.
    settings.extend(mount.warehouse_location.clone().map(|w| ("warehouse_location".to_string(), w)));
    let http = match granted.contains(&MountGrant::Http) {
        true => {
            let (grant, derived) = http_grant(mount)?;
            settings.extend(derived);
            Some(grant)
        }
        false => None,
    };
    let tcp = match granted.contains(&MountGrant::Tcp) {
        true => {
            let (grant, derived) = tcp_grant(label, mount)?;
            settings.extend(derived);
            Some(grant)
        }
        false => None,
    };
    let kv = match granted.contains(&MountGrant::Kv) {
        true => Some(open_store(mount, root).await?),
        false => None,
    };
    Ok(Capabilities {
        label: label.to_string(),
        kv,
        http,
        tcp,
        config: RwLock::new(settings),
        log_budget: Default::default(),
    })
}

async fn open_one(
    name: &str,
    mount: &MountConfig,
    config: &Config,
    runtime: &Runtime,
    index: &LocationIndex,
) -> anyhow::Result<Mount> {
    check_name(name)?;
    if mount.owner.is_empty() {
        bail!("owner must name a tenant");
    }
    let wasm = builtin::component(&mount.backend).map_err(|e| anyhow!("backend: {e}"))?;
    // What the component may reach is what the mount grants it, and nothing else.
    let grants = mount_grants(name, mount, &config.root_catalog()?).await?;
    let keeps_state = grants.kv.is_some();
    let pool = runtime.load(wasm, grants, config.plugin_limits(name)).await?;
    let backend = Backend::open(pool).await?;
    // A warehouse where one is configured, or where the mount keeps its own state;
    // a mount of somebody else's catalog without one reads its files elsewhere.
    let location = match &mount.warehouse_location {
        Some(location) => Some(location.clone()),
        None if keeps_state => {
            Some(format!("file://{}", config.data_dir().join("mounts").join(name).join("warehouse").display()))
        }
        None => None,
    };
    let warehouse = match location {
        Some(location) => {
            let root = warehouse_url(&location).map_err(|e| anyhow!("warehouse_location: {e}"))?;
            Some(
                Warehouse::open(&root, mount.s3.as_ref().unwrap_or(&config.storage.s3), index.clone())
                    .map_err(|e| anyhow!("warehouse_location: {e}"))?
                    .with_unstructured_locations(mount.unstructured_locations),
            )
        }
        None => None,
    };
    if warehouse.as_ref().is_some_and(Warehouse::assigned) && !backend.places_tables() {
        bail!(
            "warehouse_location: a bucket pattern is for a backend whose store assigns every table its location \
             (one that exports `placement`, such as s3tables); this one does not"
        );
    }
    // The backend says whether it can write; configuration can only take that away. A
    // write landing in a catalog somebody else runs is a different promise from one
    // landing in ours: it is forwarded only where the mount asks for it.
    let read_only = mount.read_only.unwrap_or(backend.forwards()) || !backend.does(Features::WRITES);
    Ok(Mount {
        name: Some(name.to_string()),
        space: format!("mount:{name}"),
        backend,
        warehouse,
        owner: Some(mount.owner.clone()),
        read_only,
        source: mount.backend.clone(),
    })
}

/// Opens every `[mount.<name>]`, or says which one cannot be opened and why.
pub async fn open_mounts(
    config: &Config,
    runtime: &Runtime,
    index: &LocationIndex,
) -> anyhow::Result<BTreeMap<String, Mount>> {
    let mut mounts = BTreeMap::new();
    for (name, mount) in &config.mounts {
        let opened = open_one(name, mount, config, runtime, index)
            .await
            .map_err(|e| anyhow!("refusing to start: mount `{name}` cannot be opened: {e:#}"))?;
        println!("rustberg: mount `{name}` → {} backend, owner {}", mount.backend, mount.owner);
        mounts.insert(name.clone(), opened);
    }
    Ok(mounts)
}

/// Refuses a mount whose name is a top-level namespace of the root catalog: routing
/// would make that namespace, and everything beneath it, unreachable.
pub async fn refuse_shadowing<'a>(root: &Mount, names: impl Iterator<Item = &'a String>) -> anyhow::Result<()> {
    for name in names {
        match root.backend.load_namespace(vec![name.clone()]).await {
            Ok(_) => {
                let tables = root
                    .backend
                    .list_tables(vec![name.clone()], crate::sandbox::bindings::PageRequest { after: None, limit: 1 })
                    .await
                    .map(|p| if p.items.is_empty() { "" } else { " and its tables" })
                    .unwrap_or("");
                bail!(
                    "refusing to start: mount `{name}` would hide the root catalog's namespace `{name}`{tables} \
                     and everything beneath it; rename the mount or move the namespace"
                );
            }
            Err(e) if e.kind == BackendErrorKind::NotFound => {}
            Err(e) => bail!("refusing to start: cannot check whether mount `{name}` shadows a namespace: {e}"),
        }
    }
    Ok(())
}
