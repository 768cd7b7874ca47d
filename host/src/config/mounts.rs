//! `[mounts.<name>]`: what serves a top-level namespace: its backend, what the mount
//! grants it, its warehouse, its credentials and its limits.

use std::path::PathBuf;

use serde::Deserialize;

use super::{PluginLimits, S3Config};

/// `[mount.<name>]`: a catalog that claims the top-level namespace `<name>`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MountConfig {
    /// `native`, `rest`, or the path of a component file (a drop-in backend).
    pub backend: String,
    /// Where the mounted catalog lives: `redb:///path.redb` or `postgres://…` for `native`.
    pub catalog_url: String,
    /// The warehouse this mount governs (default `<data_dir>/mounts/<name>/warehouse`).
    pub warehouse_location: Option<String>,
    /// The tenant that owns the whole mount.
    pub owner: String,
    /// Let a client place a table or view anywhere in the warehouse, not only under its
    /// namespace's location (what Iceberg's compatibility kit asks for).
    #[serde(default)]
    pub unstructured_locations: bool,
    /// What the component may use: `kv` (a key space in the store at `catalog_url`),
    /// `http` (requests to `catalog_url`'s origin) or `tcp` (connections to its host
    /// and port). Default: a built-in backend's own (`native`: kv, `rest`: http, `hms`:
    /// tcp), `kv` for a file.
    pub grants: Option<Vec<MountGrant>>,
    /// `[mount.<name>.config]`: plain string settings the component reads with
    /// `config.get`. Never secrets: those go in `[mount.<name>.auth]`.
    #[serde(default)]
    pub config: std::collections::BTreeMap<String, String>,
    /// `[mount.<name>.auth]`: the credential the host adds to the component's http
    /// requests (the component never sees it).
    pub auth: Option<MountAuth>,
    /// Shorthand for `[mount.<name>.auth] kind = "bearer"` with this `token_env`.
    pub token_env: Option<String>,
    /// Origins besides `catalog_url`'s that the http grant reaches (an API that needs
    /// two, such as a token endpoint and the catalog), as `scheme://host[:port]`.
    #[serde(default)]
    pub http_origins: Vec<String>,
    /// Addresses besides `catalog_url`'s that the tcp grant reaches, as `host:port`.
    #[serde(default)]
    pub tcp_origins: Vec<String>,
    /// Refuse every write under the mount (501). Unset: writable where the backend
    /// writes, except a backend whose remote applies writes itself (`rest`, exporting
    /// `forwarding`), which forwards them only when this says `false`.
    #[serde(default)]
    pub read_only: Option<bool>,
    /// For `rest`: how long connecting to the remote may take, in milliseconds.
    #[serde(default = "default_connect_timeout_ms")]
    pub connect_timeout_ms: u64,
    /// For `rest`: how long one remote request may take, in milliseconds.
    #[serde(default = "default_request_timeout_ms")]
    pub request_timeout_ms: u64,
    /// `[mount.<name>.plugins]`: this mount's own limits, over `[plugins]`.
    #[serde(default)]
    pub plugins: PluginOverrides,
    /// `[mount.<name>.s3]`: the S3-compatible store of this mount's `s3://` warehouse,
    /// instead of `[storage.s3]` (its IO, planning and vending).
    pub s3: Option<S3Config>,
}

/// A capability a mount grants its component.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MountGrant {
    /// A key space in the store at `catalog_url`.
    Kv,
    /// Outbound requests to `catalog_url`'s origin.
    Http,
    /// TCP connections to `catalog_url`'s host and port (wasi:sockets).
    Tcp,
}

impl MountGrant {
    /// Every grant; each takes `catalog_url` as its own: a store, an origin, an address.
    pub const ALL: [MountGrant; 3] = [MountGrant::Kv, MountGrant::Http, MountGrant::Tcp];

    /// Its name in a `grants` setting.
    pub fn name(self) -> &'static str {
        match self {
            MountGrant::Kv => "kv",
            MountGrant::Http => "http",
            MountGrant::Tcp => "tcp",
        }
    }
}

/// The backends built into the binary, by the name a `backend` setting gives them
/// (`plugins::builtin` holds their bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuiltinBackend {
    Native,
    Rest,
    Glue,
    S3Tables,
    Hms,
}

impl BuiltinBackend {
    pub const ALL: [BuiltinBackend; 5] = [Self::Native, Self::Rest, Self::Glue, Self::S3Tables, Self::Hms];

    /// Its name in a `backend` setting.
    pub fn name(self) -> &'static str {
        match self {
            Self::Native => "native",
            Self::Rest => "rest",
            Self::Glue => "glue",
            Self::S3Tables => "s3tables",
            Self::Hms => "hms",
        }
    }

    /// The built-in a `backend` setting names, if it names one rather than a file.
    pub fn named(backend: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|b| b.name() == backend)
    }

    /// What a mount of it grants unless its configuration says otherwise.
    pub fn default_grants(self) -> &'static [MountGrant] {
        match self {
            Self::Native => &[MountGrant::Kv],
            Self::Rest | Self::Glue | Self::S3Tables => &[MountGrant::Http],
            Self::Hms => &[MountGrant::Tcp],
        }
    }
}

/// What a mount grants a drop-in component file by default: a key space.
pub const DROP_IN_GRANTS: &[MountGrant] = &[MountGrant::Kv];

/// `[mount.<name>.auth]`: how the host authenticates a component's http requests.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum MountAuth {
    /// `Authorization: Bearer <the value of token_env>`, read at start-up.
    Bearer { token_env: String },
    /// Every request signed with AWS Signature Version 4 for `service` in `region`, with
    /// keys read from the environment at start-up (a session token too, if named).
    AwsSigv4 {
        service: String,
        region: String,
        #[serde(default = "default_access_key_id_env")]
        access_key_id_env: String,
        #[serde(default = "default_secret_access_key_env")]
        secret_access_key_env: String,
        session_token_env: Option<String>,
    },
    /// OAuth2 client credentials: the host fetches a token from `token_url`, keeps it
    /// until shortly before it expires (or the origin answers 401), and sends it as a
    /// bearer token.
    Oauth2 { token_url: String, client_id: String, client_secret_env: String, scope: Option<String> },
}

fn default_access_key_id_env() -> String {
    "AWS_ACCESS_KEY_ID".into()
}

fn default_secret_access_key_env() -> String {
    "AWS_SECRET_ACCESS_KEY".into()
}

impl MountConfig {
    /// What the mount grants its component.
    pub fn grants(&self) -> Vec<MountGrant> {
        match &self.grants {
            Some(grants) => grants.clone(),
            None => {
                BuiltinBackend::named(&self.backend).map_or(DROP_IN_GRANTS, BuiltinBackend::default_grants).to_vec()
            }
        }
    }

    /// The credential for the component's http requests (`auth`, or `token_env`).
    pub fn auth(&self) -> Option<MountAuth> {
        self.auth.clone().or_else(|| self.token_env.clone().map(|token_env| MountAuth::Bearer { token_env }))
    }
}

/// Limits of one mount that differ from `[plugins]`; unset ones are taken from there.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginOverrides {
    pub call_timeout_ms: Option<u64>,
    pub memory_limit_mib: Option<u64>,
    pub pool_size: Option<usize>,
    pub recycle_after_calls: Option<u64>,
}

impl PluginOverrides {
    /// `defaults` with these overrides applied.
    pub fn over(&self, defaults: &PluginLimits) -> PluginLimits {
        PluginLimits {
            call_timeout_ms: self.call_timeout_ms.unwrap_or(defaults.call_timeout_ms),
            memory_limit_mib: self.memory_limit_mib.unwrap_or(defaults.memory_limit_mib),
            pool_size: self.pool_size.unwrap_or(defaults.pool_size),
            recycle_after_calls: self.recycle_after_calls.unwrap_or(defaults.recycle_after_calls),
        }
    }
}

fn default_connect_timeout_ms() -> u64 {
    1_000
}

fn default_request_timeout_ms() -> u64 {
    3_000
}

/// Where a native catalog keeps its state.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CatalogUrl {
    /// An embedded redb file.
    Redb(PathBuf),
    /// A Postgres database (the URL as given).
    Postgres(String),
}

impl CatalogUrl {
    pub fn parse(url: &str) -> Result<Self, String> {
        if let Some(path) = url.strip_prefix("redb://") {
            if path.starts_with('/') {
                return Ok(CatalogUrl::Redb(PathBuf::from(path)));
            }
            return Err(format!("{url:?}: a redb URL needs an absolute path (redb:///path/file.redb)"));
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(CatalogUrl::Postgres(url.to_string()));
        }
        Err(format!("{url:?} is neither redb:///path nor postgres://…"))
    }
}

/// A warehouse location (`file:///absolute/path` or `s3://bucket/path`) without a
/// trailing slash, or why it is not one.
pub fn warehouse_url(location: &str) -> Result<String, String> {
    let location = location.trim_end_matches('/').to_string();
    let bucket = location.strip_prefix("s3://").map(|rest| rest.split('/').next().unwrap_or_default());
    if !location.starts_with("file:///") && bucket.is_none_or(str::is_empty) {
        return Err(format!("{location:?}: a warehouse is file:///absolute/path or s3://bucket/path"));
    }
    Ok(location)
}
