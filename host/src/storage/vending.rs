//! Credential vending: storage credentials for one table's location, read-only for
//! a caller who may only read, read-write for a writer.
//!
//! A vend that is refused or fails is not an error for the request that asked:
//! the table still loads, without credentials, and the log says why.

use std::time::Duration;

use serde_json::json;

use super::location::{Location, Reach, Scheme};
use super::session_policy::{object_policy, session_policy};
use super::signing::StoreSigner;
use super::sts::Sts;
use crate::config::{Config, S3Config, VendingMode};

/// What the credentials may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataAccess {
    Read,
    ReadWrite,
}

/// Credentials for everything under `prefix`, as the spec's `StorageCredential`.
#[derive(Debug, Clone)]
pub struct Vended {
    pub prefix: String,
    pub config: Vec<(String, String)>,
    /// When the credentials expire (milliseconds since the epoch); static keys do not.
    pub expires_at_ms: Option<u64>,
}

impl Vended {
    /// The `storage-credentials` list holding this one credential.
    pub fn to_value(&self) -> serde_json::Value {
        let config: serde_json::Map<String, serde_json::Value> =
            self.config.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
        json!([{ "prefix": self.prefix, "config": config }])
    }
}

/// Why nothing was vended (logged, never returned to the client as an error).
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("credential vending is off ([storage.vending] mode = \"none\")")]
    Off,
    #[error("{0} is not an s3:// location")]
    NotS3(String),
    #[error("{0} is outside every prefix credentials may be vended for")]
    OutsidePrefixes(String),
    #[error("no read-only keys are configured for static vending of {0}; a reader gets none")]
    NoReaderKeys(String),
    #[error("no static keys are configured for exactly {0} ([[storage.vending.static_keys]] prefix); keys for a wider prefix are never handed out")]
    Unscoped(String),
    #[error("{0}")]
    Sts(#[from] super::sts::StsError),
    #[error("the server holds no keys for the store of {0} to sign with")]
    NoStoreKeys(String),
}

impl Refusal {
    /// The reason as a metric label.
    fn as_label(&self) -> &'static str {
        match self {
            Refusal::Off => "off",
            Refusal::NotS3(_) => "not_s3",
            Refusal::OutsidePrefixes(_) => "outside_prefixes",
            Refusal::NoReaderKeys(_) => "no_reader_keys",
            Refusal::Unscoped(_) => "unscoped",
            Refusal::Sts(_) => "sts",
            Refusal::NoStoreKeys(_) => "no_store_keys",
        }
    }
}

enum Mode {
    Off,
    Sts { role_arn: String, duration: Duration },
    Static(Vec<StaticKeys>),
}

/// An S3-compatible store warehouses live in: how clients reach it, and its STS.
struct ObjectStore {
    /// The warehouse it serves (`None`: every location no other store claims).
    root: Option<Reach>,
    /// How a client reaches the store (endpoint, region, addressing).
    client_config: Vec<(String, String)>,
    /// AssumeRole for this store, signed with its keys (mode `sts`).
    sts: Option<Sts>,
    /// Its keys, for signing clients' requests (remote signing), when the server holds them.
    signer: Option<StoreSigner>,
}

impl ObjectStore {
    fn new(root: Option<Reach>, s3: &S3Config, sts_endpoint: Option<&String>, sts: bool) -> Result<Self, String> {
        let mut client_config =
            vec![("s3.region".to_string(), s3.region.clone()), ("client.region".into(), s3.region.clone())];
        if let Some(endpoint) = &s3.endpoint {
            client_config.push(("s3.endpoint".into(), endpoint.clone()));
        }
        if s3.path_style {
            client_config.push(("s3.path-style-access".into(), "true".into()));
        }
        let sts = match sts {
            false => None,
            true => {
                let (id, secret) =
                    s3.keys().ok_or("mode = \"sts\" signs AssumeRole with the store's keys; none are set")?;
                let endpoint = sts_endpoint
                    .cloned()
                    .or_else(|| s3.endpoint.clone())
                    .unwrap_or_else(|| format!("https://sts.{}.amazonaws.com", s3.region));
                Some(Sts::new(endpoint, s3.region.clone(), id, secret))
            }
        };
        let signer = match s3.keys() {
            Some(keys) => Some(StoreSigner::new(s3.endpoint.as_deref(), &s3.region, keys, s3.remote_signing)?),
            None if s3.remote_signing => return Err("remote_signing signs with the store's keys; none are set".into()),
            None => None,
        };
        Ok(Self { root, client_config, sts, signer })
    }
}

/// Static keys the store confines to `prefix`.
struct StaticKeys {
    prefix: Location,
    write: Option<(String, String)>,
    read: Option<(String, String)>,
}

/// Vends credentials under the server's one policy, for every warehouse it manages.
pub struct Vendor {
    mode: Mode,
    prefixes: Vec<Reach>,
    /// The stores: mounts' own (`[mount.<name>.s3]`) first, `[storage.s3]` last.
    stores: Vec<ObjectStore>,
    /// Names this policy (not its secrets): an answer's entity tag changes with it.
    fingerprint: u64,
}

impl Vendor {
    /// Builds the vendor; `warehouses` are the roots the server manages, the default
    /// prefixes. A configuration that cannot work is refused at start-up.
    pub fn new<'a>(
        config: &Config,
        warehouses: impl Iterator<Item = &'a Reach>,
        own_stores: &[(Reach, S3Config)],
    ) -> Result<Self, String> {
        let v = &config.storage.vending;
        let mode = match v.mode {
            VendingMode::None => Mode::Off,
            VendingMode::Sts => {
                let role_arn = v.role_arn.clone().ok_or("storage.vending.role_arn is required for mode = \"sts\"")?;
                // AWS takes 900 and more; an S3-compatible STS may take less.
                if !(1..=43_200).contains(&v.duration_secs) {
                    return Err("storage.vending.duration_secs must be between 1 and 43200".into());
                }
                Mode::Sts { role_arn, duration: Duration::from_secs(v.duration_secs) }
            }
            VendingMode::Static => {
                if v.static_keys.is_empty() {
                    return Err(
                        "mode = \"static\" needs [[storage.vending.static_keys]] entries, each with the prefix \
                                the store confines its keys to"
                            .into(),
                    );
                }
                let pair = |id: &Option<String>, secret: &Option<String>| id.clone().zip(secret.clone());
                let keys = v
                    .static_keys
                    .iter()
                    .map(|k| {
                        let prefix = Location::parse(&k.prefix)
                            .map_err(|e| format!("storage.vending.static_keys prefix {:?}: {e}", k.prefix))?;
                        let write = pair(&k.access_key_id, &k.secret_access_key);
                        let read = pair(&k.read_access_key_id, &k.read_secret_access_key);
                        if write.is_none() && read.is_none() {
                            return Err(format!("storage.vending.static_keys for {prefix} holds no key pair"));
                        }
                        Ok(StaticKeys { prefix, write, read })
                    })
                    .collect::<Result<_, String>>()?;
                Mode::Static(keys)
            }
        };
        let prefixes: Vec<Reach> = match &v.prefixes {
            Some(prefixes) => prefixes
                .iter()
                .map(|p| Reach::parse(p).map_err(|e| format!("storage.vending.prefixes {e}")))
                .collect::<Result<_, String>>()?,
            None => warehouses.cloned().collect(),
        };
        let sts = matches!(mode, Mode::Sts { .. });
        let mut stores = own_stores
            .iter()
            .map(|(root, s3)| {
                ObjectStore::new(Some(root.clone()), s3, None, sts).map_err(|e| format!("the store of {root}: {e}"))
            })
            .collect::<Result<Vec<_>, String>>()?;
        stores.push(ObjectStore::new(None, &config.storage.s3, v.sts_endpoint.as_ref(), sts)?);
        let fingerprint = fingerprint(&mode, &prefixes, &stores);
        Ok(Self { mode, prefixes, stores, fingerprint })
    }

    /// Names the vending policy: what is vended where, with which keys (by their ids),
    /// for how long. Two servers with the same configuration have the same.
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// Whether what it vends expires (STS credentials do; static keys do not), so that a
    /// refused vend may be a passing failure.
    pub fn expires(&self) -> bool {
        matches!(self.mode, Mode::Sts { .. })
    }

    /// The signer of the store the table at `location` lives in, if the host may sign
    /// requests for it: an `s3://` location inside the vending prefixes whose store's
    /// keys the server holds.
    pub fn signer(&self, location: &Location) -> Result<&StoreSigner, Refusal> {
        if location.scheme() != Scheme::S3 {
            return Err(Refusal::NotS3(location.to_string()));
        }
        if !self.prefixes.iter().any(|p| p.contains(location)) {
            return Err(Refusal::OutsidePrefixes(location.to_string()));
        }
        self.store_of(location).signer.as_ref().ok_or_else(|| Refusal::NoStoreKeys(location.to_string()))
    }

    /// Whether some store offers remote signing to loads that did not ask for it.
    pub fn signs_unasked(&self) -> bool {
        self.stores.iter().any(|s| s.signer.as_ref().is_some_and(|signer| signer.unasked))
    }

    /// How a client reaches the store of `location` (endpoint, region, addressing).
    pub fn client_config(&self, location: &Location) -> &[(String, String)] {
        &self.store_of(location).client_config
    }

    /// The store a location lives in: the mount's own whose warehouse holds it, else the
    /// server's.
    fn store_of(&self, location: &Location) -> &ObjectStore {
        self.stores
            .iter()
            .find(|s| s.root.as_ref().is_none_or(|root| root.contains(location)))
            .expect("the server's store claims every location")
    }

    /// Credentials for the table at `location`; `session` names the caller in STS. With
    /// `at_most`, credentials that expire live no longer than that (static keys never
    /// expire).
    pub async fn vend(
        &self,
        location: &Location,
        access: DataAccess,
        session: &str,
        at_most: Option<Duration>,
    ) -> Result<Vended, Refusal> {
        let vended = self.vend_unrecorded(location, access, session, at_most).await;
        match &vended {
            Ok(_) => crate::telemetry::vend("issued", ""),
            Err(refusal) => crate::telemetry::vend("refused", refusal.as_label()),
        }
        vended
    }

    async fn vend_unrecorded(
        &self,
        location: &Location,
        access: DataAccess,
        session: &str,
        at_most: Option<Duration>,
    ) -> Result<Vended, Refusal> {
        if matches!(self.mode, Mode::Off) {
            return Err(Refusal::Off);
        }
        if location.scheme() != Scheme::S3 {
            return Err(Refusal::NotS3(location.to_string()));
        }
        if !self.prefixes.iter().any(|p| p.contains(location)) {
            return Err(Refusal::OutsidePrefixes(location.to_string()));
        }
        let mut expires_at_ms = None;
        let keys = match &self.mode {
            Mode::Off => return Err(Refusal::Off),
            Mode::Static(keys) => {
                // Keys the store confines to this table's prefix (or to less) only.
                let scoped = keys
                    .iter()
                    .find(|k| k.prefix.is_within(location))
                    .ok_or_else(|| Refusal::Unscoped(location.to_string()))?;
                let (id, secret) = match access {
                    DataAccess::ReadWrite => scoped.write.clone().or_else(|| scoped.read.clone()),
                    DataAccess::Read => scoped.read.clone(),
                }
                .ok_or_else(|| Refusal::NoReaderKeys(location.to_string()))?;
                vec![("s3.access-key-id".to_string(), id), ("s3.secret-access-key".to_string(), secret)]
            }
            Mode::Sts { role_arn, duration } => {
                let sts = self.store_of(location).sts.as_ref().expect("every store has an STS in mode sts");
                let policy = session_policy(location, access).to_string();
                let duration = at_most.map_or(*duration, |at_most| at_most.clamp(Duration::from_secs(1), *duration));
                let c = sts.assume_role(role_arn, &session_name(session), &policy, duration).await?;
                let mut keys = vec![
                    ("s3.access-key-id".to_string(), c.access_key_id),
                    ("s3.secret-access-key".to_string(), c.secret_access_key),
                    ("s3.session-token".to_string(), c.session_token),
                ];
                expires_at_ms = c.expiration.parse::<reqsign_core::time::Timestamp>().ok().map(|t| {
                    let ms = t.as_second().max(0) as u64 * 1000;
                    keys.push(("s3.session-token-expires-at-ms".into(), ms.to_string()));
                    ms
                });
                keys
            }
        };
        let mut config = keys;
        config.extend(self.store_of(location).client_config.iter().cloned());
        Ok(Vended { prefix: location.to_string(), config, expires_at_ms })
    }
}

impl Vendor {
    /// Read-only credentials for exactly one object (a restricted reader's planned file),
    /// living no longer than `at_most`: only STS can scope keys that narrowly.
    pub async fn vend_object(&self, object: &Location, session: &str, at_most: Duration) -> Result<Vended, Refusal> {
        let Mode::Sts { role_arn, duration } = &self.mode else {
            return Err(match self.mode {
                Mode::Off => Refusal::Off,
                _ => Refusal::Unscoped(object.to_string()),
            });
        };
        if object.scheme() != Scheme::S3 {
            return Err(Refusal::NotS3(object.to_string()));
        }
        if !self.prefixes.iter().any(|p| p.contains(object)) {
            return Err(Refusal::OutsidePrefixes(object.to_string()));
        }
        let sts = self.store_of(object).sts.as_ref().expect("every store has an STS in mode sts");
        let policy = object_policy(object).to_string();
        let duration = at_most.clamp(Duration::from_secs(1), *duration);
        let c = sts.assume_role(role_arn, &session_name(session), &policy, duration).await?;
        let expires_at_ms =
            c.expiration.parse::<reqsign_core::time::Timestamp>().ok().map(|t| t.as_second().max(0) as u64 * 1000);
        let mut config = vec![
            ("s3.access-key-id".to_string(), c.access_key_id),
            ("s3.secret-access-key".to_string(), c.secret_access_key),
            ("s3.session-token".to_string(), c.session_token),
        ];
        if let Some(ms) = expires_at_ms {
            config.push(("s3.session-token-expires-at-ms".into(), ms.to_string()));
        }
        config.extend(self.store_of(object).client_config.iter().cloned());
        crate::telemetry::vend("issued", "");
        Ok(Vended { prefix: object.to_string(), config, expires_at_ms })
    }
}

fn fingerprint(mode: &Mode, prefixes: &[Reach], stores: &[ObjectStore]) -> u64 {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    let mut field = |s: &str| {
        h.update((s.len() as u64).to_le_bytes());
        h.update(s.as_bytes());
    };
    match mode {
        Mode::Off => field("off"),
        Mode::Sts { role_arn, duration } => {
            field("sts");
            field(role_arn);
            field(&duration.as_secs().to_string());
        }
        Mode::Static(keys) => {
            field("static");
            for k in keys {
                field(&k.prefix.to_string());
                field(k.write.as_ref().map_or("", |(id, _)| id));
                field(k.read.as_ref().map_or("", |(id, _)| id));
            }
        }
    }
    for p in prefixes {
        field(&p.to_string());
    }
    for store in stores {
        field(&store.root.as_ref().map(Reach::to_string).unwrap_or_default());
        for (k, v) in &store.client_config {
            field(k);
            field(v);
        }
        field(match &store.signer {
            None => "no signer",
            Some(signer) if signer.unasked => "signs unasked",
            Some(_) => "signs",
        });
    }
    let digest = h.finalize();
    u64::from_le_bytes(digest[..8].try_into().expect("8 bytes"))
}

/// STS allows 2–64 characters of `[\w+=,.@-]` in a session name.
fn session_name(caller: &str) -> String {
    let clean: String = caller
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || "+=,.@-_".contains(c) { c } else { '_' })
        .take(50)
        .collect();
    format!("rustberg-{clean}")
}
