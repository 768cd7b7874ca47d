//! The configuration file (TOML) and its defaults. Every key is documented in
//! `docs/configuration.md`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

/// The whole configuration.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub server: ServerConfig,
    pub storage: StorageConfig,
    pub plugins: PluginLimits,
    /// `[component_cache]`: where compiled components are kept.
    pub component_cache: ComponentCacheConfig,
    /// `[log]`: how log lines are written.
    pub log: LogConfig,
    /// `[audit]`: the audit log of authorization decisions.
    pub audit: AuditConfig,
    pub auth: AuthConfig,
    /// `[mount.<name>]`: catalogs mounted under top-level names.
    #[serde(rename = "mount")]
    pub mounts: std::collections::BTreeMap<String, MountConfig>,
}

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
    /// The grants that each take `catalog_url` as their own: a store, an origin, an address.
    const READ_CATALOG_URL: [MountGrant; 3] = [MountGrant::Kv, MountGrant::Http, MountGrant::Tcp];

    fn name(self) -> &'static str {
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
    fn default_grants(self) -> &'static [MountGrant] {
        match self {
            Self::Native => &[MountGrant::Kv],
            Self::Rest | Self::Glue | Self::S3Tables => &[MountGrant::Http],
            Self::Hms => &[MountGrant::Tcp],
        }
    }
}

/// What a mount grants a drop-in component file by default: a key space.
const DROP_IN_GRANTS: &[MountGrant] = &[MountGrant::Kv];

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

/// `[log]`
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogConfig {
    pub format: LogFormat,
}

/// How log lines are written (to stderr; the filter is `RUST_LOG`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line, with the fields of the request's span (its request id).
    Json,
}

/// `[audit]`: one JSON line per authorization decision that changes something or
/// vends credentials (`crate::audit`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuditConfig {
    pub enabled: bool,
    /// Appended to; default: stdout.
    pub file: Option<PathBuf>,
    /// Also record decisions that only read (loads, the parent of a listing).
    pub reads: bool,
}

impl Default for AuditConfig {
    fn default() -> Self {
        Self { enabled: true, file: None, reads: false }
    }
}

/// `[component_cache]`: compiled components, one file per component content and
/// engine, shared by every data directory (and process) that points at it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ComponentCacheConfig {
    /// Default: `$XDG_CACHE_HOME/rustberg/components`, else `~/.cache/rustberg/components`,
    /// else `<data_dir>/component-cache`.
    pub dir: Option<PathBuf>,
    /// The cache is kept under this size: the entries used longest ago go first.
    pub max_mib: u64,
}

impl Default for ComponentCacheConfig {
    fn default() -> Self {
        Self { dir: None, max_mib: 2048 }
    }
}

impl Config {
    /// Where compiled components are cached.
    pub fn component_cache_dir(&self) -> PathBuf {
        if let Some(dir) = &self.component_cache.dir {
            return dir.clone();
        }
        let user_cache = std::env::var_os("XDG_CACHE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|h| PathBuf::from(h).join(".cache")));
        match user_cache {
            Some(dir) => dir.join("rustberg").join("components"),
            None => self.data_dir().join("component-cache"),
        }
    }
}

/// `[auth]`: who may call, and how they prove it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    /// Serve requests without credentials as an anonymous server admin. Refused unless
    /// the server listens on a loopback address; logged at start-up.
    pub anonymous: bool,
    /// Lifetime of the tokens `/v1/oauth/tokens` issues, in seconds.
    pub token_lifetime_secs: u64,
    /// Principals defined in the configuration, by name.
    pub principals: std::collections::BTreeMap<String, PrincipalConfig>,
    /// External OpenID Connect issuer whose JWTs are accepted.
    pub oidc: Option<OidcConfig>,
}

/// `[auth.principals.<name>]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrincipalConfig {
    /// The tenant the principal belongs to.
    pub tenant: String,
    /// `reader`, `writer` or `admin` inside its tenant.
    pub role: String,
    /// The argon2 hash of the client secret (`rustberg hash-secret` prints one).
    pub secret_hash: Option<String>,
    /// Manage everything on the server (tenants, principals, every owned namespace).
    #[serde(default)]
    pub server_admin: bool,
    /// The subject (`sub`, or `auth.oidc.principal_claim`) of the `[auth.oidc]` issuer's
    /// tokens that act as this principal. Without it no OIDC token does.
    pub oidc_subject: Option<String>,
}

/// `[auth.oidc]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OidcConfig {
    /// The `iss` claim tokens must carry.
    pub issuer: String,
    /// The `aud` claim tokens must carry.
    pub audience: String,
    /// The issuer's JSON Web Key Set: a file path or an http(s) URL, read at start-up,
    /// again every `jwks_refresh_secs`, and when a token names a key it does not hold.
    pub jwks: String,
    /// How long a key set is used before it is read again, in seconds.
    #[serde(default = "default_jwks_refresh_secs")]
    pub jwks_refresh_secs: u64,
    /// The claim holding the subject that `oidc_subject` of a principal names (default
    /// `sub`).
    #[serde(default = "default_principal_claim")]
    pub principal_claim: String,
    /// The web console's client at the issuer (a public client: authorization code with
    /// PKCE, redirecting to `<server>/ui/`); unset: the console signs in with client
    /// credentials only.
    pub console_client_id: Option<String>,
}

fn default_principal_claim() -> String {
    "sub".into()
}

fn default_jwks_refresh_secs() -> u64 {
    3600
}

impl Default for AuthConfig {
    fn default() -> Self {
        Self { anonymous: false, token_lifetime_secs: 3600, principals: Default::default(), oidc: None }
    }
}

/// `[server]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    /// Address and port to listen on.
    pub listen: SocketAddr,
    /// Where the embedded default keeps its state (catalog file, warehouse).
    pub data_dir: PathBuf,
    /// After SIGTERM or SIGINT, how long requests in flight may take to finish, in seconds.
    pub shutdown_grace_secs: u64,
    /// The URL clients reach the server at (e.g. `https://catalog.example.com`), where it
    /// names itself to them (the remote signer); unset: taken from each request's `Host`.
    pub public_url: Option<String>,
}

/// `[storage]`
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StorageConfig {
    /// Where the root catalog keeps its state: `redb:///path/to/file.redb` or
    /// `postgres://…`. Defaults to `<data_dir>/catalog.redb`.
    pub catalog_url: Option<String>,
    /// Where table data and metadata files go: `file:///path` or `s3://bucket/path`.
    /// Defaults to `<data_dir>/warehouse`.
    pub warehouse_location: Option<String>,
    /// The component serving the root catalog: `native` (the default, see
    /// [`StorageConfig::root_backend`]) or the path of a `.wasm` component.
    pub backend: Option<String>,
    /// Let a client place a table or view anywhere in the warehouse, not only under its
    /// namespace's location.
    pub unstructured_locations: bool,
    /// `[storage.s3]`: how the server reaches `s3://` warehouses.
    pub s3: S3Config,
    /// `[storage.vending]`: which credentials clients are handed for table data.
    pub vending: VendingConfig,
}

impl StorageConfig {
    /// The component serving the root catalog: `backend`, or the native one.
    pub fn root_backend(&self) -> &str {
        self.backend.as_deref().unwrap_or(BuiltinBackend::Native.name())
    }
}

/// `[storage.s3]`: the S3-compatible store behind every `s3://` warehouse (the root's, and
/// each mount's that has no `[mount.<name>.s3]`). Keys missing here come from
/// `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct S3Config {
    /// The store's URL, e.g. `http://127.0.0.1:9000`; unset means AWS itself.
    pub endpoint: Option<String>,
    pub region: String,
    /// Address buckets as `endpoint/bucket` rather than `bucket.endpoint`.
    pub path_style: bool,
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    /// Offer remote signing with these keys to every load of a table here, asked for or
    /// not: for a store without STS, whose clients hold no keys.
    pub remote_signing: bool,
}

impl Default for S3Config {
    fn default() -> Self {
        Self {
            endpoint: None,
            region: "us-east-1".into(),
            path_style: false,
            access_key_id: None,
            secret_access_key: None,
            remote_signing: false,
        }
    }
}

impl S3Config {
    /// The server's own keys: from this section, else from the standard AWS variables.
    pub fn keys(&self) -> Option<(String, String)> {
        let id = self.access_key_id.clone().or_else(|| std::env::var("AWS_ACCESS_KEY_ID").ok())?;
        let secret = self.secret_access_key.clone().or_else(|| std::env::var("AWS_SECRET_ACCESS_KEY").ok())?;
        Some((id, secret))
    }
}

/// How credentials are vended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VendingMode {
    /// Never vend: clients bring their own storage credentials.
    #[default]
    None,
    /// STS AssumeRole of `role_arn`, narrowed by an inline session policy to the table.
    Sts,
    /// Hand out configured keys (S3-compatible stores without STS).
    Static,
}

/// `[storage.vending]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VendingConfig {
    pub mode: VendingMode,
    /// For `sts`: the role assumed for every vend.
    pub role_arn: Option<String>,
    /// For `sts`: the STS URL; defaults to `storage.s3.endpoint`, else AWS's regional STS.
    pub sts_endpoint: Option<String>,
    /// For `sts`: how long vended credentials live (900 to 43200 seconds).
    pub duration_secs: u64,
    /// For `static`: keys the store confines to one prefix each; a table is vended the
    /// keys configured for its own location (or for less), never wider ones.
    pub static_keys: Vec<StaticKeysConfig>,
    /// The locations credentials may be vended for; defaults to every warehouse the
    /// server manages (its own and each native mount's).
    pub prefixes: Option<Vec<String>>,
}

impl Default for VendingConfig {
    fn default() -> Self {
        Self {
            mode: VendingMode::None,
            role_arn: None,
            sts_endpoint: None,
            duration_secs: 3600,
            static_keys: Vec::new(),
            prefixes: None,
        }
    }
}

/// `[[storage.vending.static_keys]]`: keys the object store itself confines to `prefix`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaticKeysConfig {
    /// The location these keys can reach and nothing beyond (a table's location).
    pub prefix: String,
    /// Handed to callers who may write the table.
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
    /// Handed to callers who may only read; without them a reader is vended nothing.
    pub read_access_key_id: Option<String>,
    pub read_secret_access_key: Option<String>,
}

/// `[plugins]`: the limits every backend call runs under.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PluginLimits {
    /// Wall-clock budget of one backend call, in milliseconds.
    pub call_timeout_ms: u64,
    /// Linear memory one backend instance may grow to, in MiB.
    pub memory_limit_mib: u64,
    /// Warm instances kept per mount.
    pub pool_size: usize,
    /// Calls after which an instance is discarded and replaced by a fresh one.
    pub recycle_after_calls: u64,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8181)),
            data_dir: PathBuf::from("rustberg-data"),
            shutdown_grace_secs: 30,
            public_url: None,
        }
    }
}

impl Default for PluginLimits {
    fn default() -> Self {
        Self { call_timeout_ms: 5_000, memory_limit_mib: 256, pool_size: 64, recycle_after_calls: 10_000 }
    }
}

impl PluginLimits {
    pub fn call_timeout(&self) -> Duration {
        Duration::from_millis(self.call_timeout_ms)
    }

    pub fn memory_limit_bytes(&self) -> usize {
        (self.memory_limit_mib as usize) << 20
    }
}

/// A configuration error, reported at start-up.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("invalid config file {path}: {source}")]
    Parse { path: PathBuf, source: toml::de::Error },
    #[error("invalid value for {key}: {reason}")]
    Invalid { key: &'static str, reason: String },
    #[error("the configuration cannot work:\n  - {}", .0.join("\n  - "))]
    Contradictions(Vec<String>),
}

impl Config {
    /// Reads a TOML configuration file.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.to_owned(), source })?;
        toml::from_str(&text).map_err(|source| ConfigError::Parse { path: path.to_owned(), source })
    }

    /// The limits the calls of mount `name` run under.
    pub fn plugin_limits(&self, name: &str) -> PluginLimits {
        match self.mounts.get(name) {
            Some(mount) => mount.plugins.over(&self.plugins),
            None => self.plugins.clone(),
        }
    }

    /// Refuses limits and mounts that cannot work together, listing every problem.
    pub fn check(&self) -> Result<(), ConfigError> {
        let mut problems = Vec::new();
        let scopes = std::iter::once(("plugins".to_string(), self.plugins.clone()))
            .chain(self.mounts.keys().map(|name| (format!("mount.{name}.plugins"), self.plugin_limits(name))));
        for (scope, limits) in scopes {
            for (key, value) in [
                ("call_timeout_ms", limits.call_timeout_ms),
                ("memory_limit_mib", limits.memory_limit_mib),
                ("pool_size", limits.pool_size as u64),
                ("recycle_after_calls", limits.recycle_after_calls),
            ] {
                if value == 0 {
                    problems.push(format!("{scope}.{key} is 0: no backend call could run"));
                }
            }
        }
        let mut subjects = std::collections::HashMap::new();
        for (name, principal) in &self.auth.principals {
            let Some(subject) = &principal.oidc_subject else { continue };
            if self.auth.oidc.is_none() {
                problems.push(format!("auth.principals.{name}.oidc_subject is set, but there is no [auth.oidc]"));
            }
            if let Some(other) = subjects.insert(subject, name) {
                problems.push(format!("auth.principals.{name} and auth.principals.{other} name the same oidc_subject"));
            }
        }
        let mut stores: std::collections::HashMap<CatalogUrl, &str> = std::collections::HashMap::new();
        for (name, mount) in &self.mounts {
            if crate::prefixes::RESERVED.contains(&name.as_str()) {
                problems.push(format!(
                    "mount.{name}: `{name}` is a REST prefix of the catalog's own; name the mount otherwise"
                ));
            }
            let limits = self.plugin_limits(name);
            let grants = mount.grants();
            let readers: Vec<&str> =
                MountGrant::READ_CATALOG_URL.iter().filter(|g| grants.contains(g)).map(|g| g.name()).collect();
            if readers.len() > 1 {
                problems.push(format!(
                    "mount.{name} grants {}: its catalog_url is one of a store (kv), an origin (http) or an address (tcp)",
                    readers.join(" and ")
                ));
            }
            if !mount.tcp_origins.is_empty() && !grants.contains(&MountGrant::Tcp) {
                problems.push(format!("mount.{name}.tcp_origins is set but the mount does not grant tcp"));
            }
            if mount.auth.is_some() && mount.token_env.is_some() {
                problems.push(format!("mount.{name} sets both token_env and [mount.{name}.auth]: keep one"));
            }
            if mount.auth().is_some() && !grants.contains(&MountGrant::Http) {
                problems.push(format!("mount.{name} has a credential for http requests but does not grant http"));
            }
            if !mount.http_origins.is_empty() && !grants.contains(&MountGrant::Http) {
                problems.push(format!("mount.{name}.http_origins is set but the mount does not grant http"));
            }
            if grants.contains(&MountGrant::Http) {
                if mount.request_timeout_ms > limits.call_timeout_ms {
                    problems.push(format!(
                        "mount.{name}.request_timeout_ms ({}) is above {} ({}): the call would be cut off before the remote's answer could be reported",
                        mount.request_timeout_ms,
                        match mount.plugins.call_timeout_ms {
                            Some(_) => format!("mount.{name}.plugins.call_timeout_ms"),
                            None => "plugins.call_timeout_ms".into(),
                        },
                        limits.call_timeout_ms
                    ));
                }
                continue;
            }
            if let Ok(url) = CatalogUrl::parse(&mount.catalog_url) {
                if let Some(other) = stores.insert(url, name) {
                    problems.push(format!(
                        "mount.{name} and mount.{other} use the same catalog_url: one store would serve two catalogs"
                    ));
                }
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            problems.sort();
            Err(ConfigError::Contradictions(problems))
        }
    }

    /// The data directory as an absolute path.
    pub fn data_dir(&self) -> PathBuf {
        std::path::absolute(&self.server.data_dir).unwrap_or_else(|_| self.server.data_dir.clone())
    }

    /// Where the root catalog (and the host's own key space) lives: a redb file
    /// (default `<data_dir>/catalog.redb`) or a Postgres database shared by several hosts.
    pub fn root_catalog(&self) -> Result<CatalogUrl, ConfigError> {
        match &self.storage.catalog_url {
            None => Ok(CatalogUrl::Redb(self.data_dir().join("catalog.redb"))),
            Some(url) => {
                CatalogUrl::parse(url).map_err(|reason| ConfigError::Invalid { key: "storage.catalog_url", reason })
            }
        }
    }

    /// The root warehouse, as a `file://` or `s3://` URL without a trailing slash.
    pub fn warehouse(&self) -> Result<String, ConfigError> {
        let location = match &self.storage.warehouse_location {
            Some(location) => location.clone(),
            None => format!("file://{}", self.data_dir().join("warehouse").display()),
        };
        warehouse_url(&location).map_err(|reason| ConfigError::Invalid { key: "storage.warehouse_location", reason })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scale-out example's configuration stays one `serve` accepts.
    #[test]
    fn the_scale_out_example_is_a_valid_configuration() {
        let config: Config = toml::from_str(include_str!("../../deploy/rustberg.toml")).unwrap();
        config.check().unwrap();
        assert!(matches!(config.root_catalog(), Ok(CatalogUrl::Postgres(_))));
        assert!(config.audit.enabled && config.audit.file.is_some());
    }

    #[test]
    fn contradictions_are_all_listed() {
        let config: Config = toml::from_str(
            r#"
            [plugins]
            call_timeout_ms = 1000
            pool_size = 0
            [mount.a]
            backend = "native"
            catalog_url = "redb:///x/a.redb"
            owner = "t"
            [mount.b]
            backend = "native"
            catalog_url = "redb:///x/a.redb"
            owner = "t"
            [mount.r]
            backend = "rest"
            catalog_url = "http://127.0.0.1:1"
            owner = "t"
            request_timeout_ms = 5000
            "#,
        )
        .unwrap();
        let message = config.check().unwrap_err().to_string();
        for expected in [
            "plugins.pool_size is 0",
            "mount.b and mount.a use the same catalog_url",
            "mount.r.request_timeout_ms (5000)",
        ] {
            assert!(message.contains(expected), "{expected} in {message}");
        }
        assert!(Config::default().check().is_ok());
    }
}
