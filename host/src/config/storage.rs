//! `[storage]`: the root catalog's key space and warehouse, S3, and credential vending.

use serde::Deserialize;

use super::BuiltinBackend;

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
