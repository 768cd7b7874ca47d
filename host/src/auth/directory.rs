//! Principals and tenants: the ones defined in the configuration, and the ones
//! created through the management API (kept in the host key space, which no backend
//! is ever granted). Secrets are stored as argon2 hashes only.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use rand::RngCore;
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::storage::kv::{Check, KvError, KvStore, Write};

/// A principal's role inside its tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Reader,
    Writer,
    Admin,
}

impl std::str::FromStr for Role {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "reader" => Ok(Role::Reader),
            "writer" => Ok(Role::Writer),
            "admin" => Ok(Role::Admin),
            other => Err(format!("unknown role {other:?} (reader, writer or admin)")),
        }
    }
}

/// Somebody who can call the server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Principal {
    /// Immutable, never reused: tokens and grants name a principal by it, so a
    /// principal created again under a deleted one's name inherits nothing. Empty for
    /// principals of the configuration file and those recorded before ids existed:
    /// their name is their id.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    pub name: String,
    pub tenant: String,
    pub role: Role,
    #[serde(default)]
    pub server_admin: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_hash: Option<String>,
    /// The OpenID Connect identity that acts as this principal, if any. Nothing else
    /// does: a token's subject is never taken for a principal's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oidc: Option<OidcIdentity>,
}

/// A user of an OpenID Connect issuer: the pair is unique, the subject alone is not.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct OidcIdentity {
    pub issuer: String,
    pub subject: String,
}

impl OidcIdentity {
    /// Its key in the host key space (the name of the principal it maps to is the value).
    fn key(&self) -> Vec<u8> {
        format!("{OIDC}{}\n{}", self.issuer, self.subject).into_bytes()
    }
}

impl Principal {
    /// What tokens and grants name this principal by.
    pub fn id(&self) -> &str {
        if self.id.is_empty() {
            &self.name
        } else {
            &self.id
        }
    }
}

const PRINCIPAL: &str = "principal/";
const TENANT: &str = "tenant/";
const OIDC: &str = "oidc-identity/";

fn store_err(e: KvError) -> Error {
    Error::Unavailable(format!("the host store: {e}"))
}

/// Hashes a client secret with argon2 (a PHC string).
pub fn hash_secret(secret: &str) -> String {
    let mut salt = [0u8; 16];
    rand::rng().fill_bytes(&mut salt);
    let salt = SaltString::encode_b64(&salt).expect("16 bytes make a valid salt");
    Argon2::default().hash_password(secret.as_bytes(), &salt).expect("argon2 with default parameters").to_string()
}

/// Checks a secret against a stored hash.
fn secret_matches(hash: &str, secret: &str) -> bool {
    PasswordHash::new(hash).is_ok_and(|h| Argon2::default().verify_password(secret.as_bytes(), &h).is_ok())
}

/// Where principals and tenants are found.
pub struct Directory {
    /// Shared, not copied, with every request they make.
    configured: BTreeMap<String, Arc<Principal>>,
    /// The configured principals OIDC identities map to.
    configured_identities: HashMap<OidcIdentity, String>,
    /// The tenants the configuration declares: its principals' and its mounts' owners.
    configured_tenants: BTreeSet<String>,
    space: KvStore,
}

impl Directory {
    /// `mount_owners`: the tenants mounts declare (a mount's `owner` declares its tenant,
    /// as a configured principal's `tenant` does).
    pub fn new(
        configured: BTreeMap<String, Principal>,
        mount_owners: impl IntoIterator<Item = String>,
        space: KvStore,
    ) -> Self {
        let configured_identities =
            configured.values().filter_map(|p| Some((p.oidc.clone()?, p.name.clone()))).collect();
        let configured_tenants = configured.values().map(|p| p.tenant.clone()).chain(mount_owners).collect();
        let configured = configured.into_iter().map(|(name, p)| (name, Arc::new(p))).collect();
        Self { configured, configured_identities, configured_tenants, space }
    }

    /// The principal an OIDC identity acts as, if one is mapped to it.
    pub async fn principal_for(&self, identity: &OidcIdentity) -> Result<Option<Arc<Principal>>, Error> {
        let name = match self.configured_identities.get(identity) {
            Some(name) => name.clone(),
            None => match self.space.get(&identity.key()).await.map_err(store_err)? {
                Some(entry) => String::from_utf8_lossy(&entry.value).into_owned(),
                None => return Ok(None),
            },
        };
        // The mapping and the principal are written and removed together; the check
        // keeps it so should anything ever leave one without the other.
        Ok(self.principal(&name).await?.filter(|p| p.oidc.as_ref() == Some(identity)))
    }

    /// Whether `name` is defined in the configuration (and so cannot be changed here).
    pub fn is_configured(&self, name: &str) -> bool {
        self.configured.contains_key(name)
    }

    /// Looks a principal up by name.
    pub async fn principal(&self, name: &str) -> Result<Option<Arc<Principal>>, Error> {
        if let Some(p) = self.configured.get(name) {
            return Ok(Some(p.clone()));
        }
        let key = format!("{PRINCIPAL}{name}");
        // Boxed: a store read would size the future of every request that authenticates.
        match Box::pin(self.space.get(key.as_bytes())).await.map_err(store_err)? {
            Some(entry) => serde_json::from_slice(&entry.value)
                .map(|p| Some(Arc::new(p)))
                .map_err(|e| Error::Internal(format!("stored principal {name} is corrupt: {e}"))),
            None => Ok(None),
        }
    }

    /// The principal whose secret this is, if any. (argon2 is slow by design: it runs
    /// off the async workers.)
    pub async fn verify(&self, name: &str, secret: &str) -> Result<Option<Arc<Principal>>, Error> {
        let Some(principal) = self.principal(name).await? else { return Ok(None) };
        let Some(hash) = principal.secret_hash.clone() else { return Ok(None) };
        let secret = secret.to_string();
        let matches = tokio::task::spawn_blocking(move || secret_matches(&hash, &secret)).await.unwrap_or(false);
        Ok(matches.then_some(principal))
    }

    /// Every principal, configured ones first.
    pub async fn principals(&self) -> Result<Vec<Principal>, Error> {
        let mut all: Vec<Principal> = self.configured.values().map(|p| Principal::clone(p)).collect();
        for entry in self.scan(PRINCIPAL).await? {
            let p: Principal = serde_json::from_slice(&entry.value)
                .map_err(|e| Error::Internal(format!("a stored principal is corrupt: {e}")))?;
            if !self.configured.contains_key(&p.name) {
                all.push(p);
            }
        }
        Ok(all)
    }

    async fn scan(&self, prefix: &str) -> Result<Vec<crate::storage::kv::Entry>, Error> {
        let mut end = prefix.as_bytes().to_vec();
        *end.last_mut().expect("a non-empty prefix") += 1;
        self.space.scan(prefix.as_bytes(), Some(&end), usize::MAX).await.map_err(store_err)
    }

    /// Records a new principal; 409 if the name is taken.
    pub async fn add_principal(&self, principal: &Principal) -> Result<(), Error> {
        if self.is_configured(&principal.name) {
            return Err(Error::AlreadyExists(format!("principal {} already exists", principal.name)));
        }
        let key = format!("{PRINCIPAL}{}", principal.name).into_bytes();
        let value = serde_json::to_vec(principal).map_err(|e| Error::Internal(e.to_string()))?;
        let mut checks = vec![Check::Absent(key.clone())];
        let mut writes = vec![Write { key, value: Some(value) }];
        if let Some(identity) = &principal.oidc {
            if self.configured_identities.contains_key(identity) {
                return Err(Error::AlreadyExists(format!("{identity} already acts as another principal")));
            }
            checks.push(Check::Absent(identity.key()));
            writes.push(Write { key: identity.key(), value: Some(principal.name.clone().into_bytes()) });
        }
        match self.space.commit(&checks, &writes).await {
            Ok(()) => Ok(()),
            Err(KvError::Conflict) => Err(Error::AlreadyExists(format!(
                "principal {} already exists, or its OIDC identity acts as another",
                principal.name
            ))),
            Err(e) => Err(store_err(e)),
        }
    }

    /// The check and write that remove a principal created through the API (committed
    /// with the revocation of its grants).
    pub fn principal_removal(&self, principal: &Principal) -> (Check, Vec<Write>) {
        let key = format!("{PRINCIPAL}{}", principal.name).into_bytes();
        let mut writes = vec![Write { key: key.clone(), value: None }];
        if let Some(identity) = &principal.oidc {
            writes.push(Write { key: identity.key(), value: None });
        }
        (Check::Present(key), writes)
    }

    /// Every tenant: created ones and those the configuration declares.
    pub async fn tenants(&self) -> Result<Vec<String>, Error> {
        let mut all = self.configured_tenants.clone();
        for entry in self.scan(TENANT).await? {
            all.insert(String::from_utf8_lossy(&entry.key[TENANT.len()..]).into_owned());
        }
        Ok(all.into_iter().collect())
    }

    pub async fn tenant_exists(&self, name: &str) -> Result<bool, Error> {
        Ok(self.configured_tenants.contains(name) || self.tenant_recorded(name).await?)
    }

    /// Whether a configured principal belongs to the tenant, or it was created through
    /// the API: what a tenant that only mounts declare (perhaps a typo) lacks.
    pub async fn tenant_known_beyond_mounts(&self, name: &str) -> Result<bool, Error> {
        Ok(self.configured.values().any(|p| p.tenant == name) || self.tenant_recorded(name).await?)
    }

    /// Whether the tenant was created through the API (recorded in the host's store).
    async fn tenant_recorded(&self, name: &str) -> Result<bool, Error> {
        Ok(self.space.get(format!("{TENANT}{name}").as_bytes()).await.map_err(store_err)?.is_some())
    }

    /// Records a tenant; 409 if it exists.
    pub async fn add_tenant(&self, name: &str) -> Result<(), Error> {
        if self.tenant_exists(name).await? {
            return Err(Error::AlreadyExists(format!("tenant {name} already exists")));
        }
        let key = format!("{TENANT}{name}").into_bytes();
        match self.space.commit(&[Check::Absent(key.clone())], &[Write { key, value: Some(vec![]) }]).await {
            Ok(()) => Ok(()),
            Err(KvError::Conflict) => Err(Error::AlreadyExists(format!("tenant {name} already exists"))),
            Err(e) => Err(store_err(e)),
        }
    }

    /// The check and write that remove a tenant created through the API (committed
    /// with the revocation of its grants). 409 while principals belong to it.
    pub async fn tenant_removal(&self, name: &str) -> Result<(Check, Vec<Write>), Error> {
        if self.principals().await?.iter().any(|p| p.tenant == name) {
            return Err(Error::Conflict(format!("tenant {name} still has principals")));
        }
        let key = format!("{TENANT}{name}").into_bytes();
        Ok((Check::Present(key.clone()), vec![Write { key, value: None }]))
    }
}

impl std::fmt::Display for OidcIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "subject {:?} of issuer {}", self.subject, self.issuer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_verify_against_their_hash_only() {
        let hash = hash_secret("s3cret");
        assert!(hash.starts_with("$argon2"));
        assert!(secret_matches(&hash, "s3cret"));
        assert!(!secret_matches(&hash, "S3cret"));
        assert!(!secret_matches("not a hash", "s3cret"));
    }
}
