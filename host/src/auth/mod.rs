//! Authentication: who is calling.
//!
//! Every request but `/v1/oauth/tokens`, `/health` and `/ready` carries
//! `Authorization: Bearer <token>`: a token this server issued for a principal's
//! client credentials, or a JWT of the configured OpenID Connect issuer. Missing,
//! invalid and expired tokens get 401. In the explicit anonymous mode (loopback
//! only) a request without a token acts as an anonymous server admin.

mod directory;
pub mod minted_admin;
mod tokens;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::http::header::AUTHORIZATION;
use axum::http::HeaderMap;

pub use directory::{hash_secret, Directory, OidcIdentity, Principal, Role};
pub use tokens::{Bearer, Oidc, TokenIssuer, Verified};

use crate::error::Error;
use crate::logs::RequestContext;

/// The authenticated caller of a request, and the request (a request extension): what
/// an authorization decision needs, and what its audit record names.
#[derive(Clone, Debug)]
pub struct Caller {
    pub principal: Arc<Principal>,
    pub request: RequestContext,
}

impl std::ops::Deref for Caller {
    type Target = Principal;

    fn deref(&self) -> &Principal {
        &self.principal
    }
}

/// Turns credentials into principals.
pub struct Authenticator {
    pub directory: Directory,
    issuer: TokenIssuer,
    oidc: Option<Oidc>,
    anonymous: Option<Arc<Principal>>,
    /// Tokens already verified: the principal they name and when they expire. A
    /// signature check costs more than the rest of a loadTable; a lookup does not.
    /// (Hashed with foldhash, seeded per process: a token is a few hundred bytes hashed
    /// on every request, and only tokens that verified are ever stored.)
    verified: Mutex<HashMap<String, Arc<Verified>, foldhash::fast::RandomState>>,
}

/// Verified tokens remembered at most; the memory is cleared when it fills.
const VERIFIED_CAPACITY: usize = 10_000;

impl Authenticator {
    pub fn new(directory: Directory, issuer: TokenIssuer, oidc: Option<Oidc>, anonymous: bool) -> Self {
        let anonymous = anonymous.then(|| {
            Arc::new(Principal {
                id: String::new(),
                name: "anonymous".into(),
                tenant: "default".into(),
                role: Role::Admin,
                server_admin: true,
                secret_hash: None,
                oidc: None,
            })
        });
        Self { directory, issuer, oidc, anonymous, verified: Mutex::new(HashMap::default()) }
    }

    /// The OpenID Connect issuer whose users principals may be mapped to.
    pub fn oidc_issuer(&self) -> Option<&str> {
        self.oidc.as_ref().map(Oidc::issuer)
    }

    /// The principal behind a request's `Authorization` header.
    pub async fn authenticate(&self, headers: &HeaderMap) -> Result<Arc<Principal>, Error> {
        let Some(value) = headers.get(AUTHORIZATION) else {
            return self.anonymous.clone().ok_or_else(|| Error::NotAuthorized("missing bearer token".into()));
        };
        let token = value
            .to_str()
            .ok()
            .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
            .map(str::trim)
            .ok_or_else(|| Error::NotAuthorized("the Authorization header is not a bearer token".into()))?;
        self.principal_of(token).await
    }

    /// The principal a bearer token stands for.
    async fn principal_of(&self, token: &str) -> Result<Arc<Principal>, Error> {
        let principal = match &self.verify(token).await?.bearer {
            Bearer::Issued { name, id } => {
                let principal = self
                    .directory
                    .principal(name)
                    .await?
                    .ok_or_else(|| Error::NotAuthorized(format!("unknown principal {name}")))?;
                // A token names the principal it was issued to, not whoever holds the name now.
                if id.as_deref().is_some_and(|id| id != principal.id()) {
                    return Err(Error::NotAuthorized(format!(
                        "the principal {name} this token was issued to no longer exists"
                    )));
                }
                principal
            }
            // Only an explicit mapping makes an OIDC user a principal: its subject is
            // never read as a principal's name.
            Bearer::Oidc(identity) => self
                .directory
                .principal_for(identity)
                .await?
                .ok_or_else(|| Error::NotAuthorized(format!("no principal is mapped to the OIDC {identity}")))?,
        };
        Ok(principal)
    }

    /// The principal a token names, from memory when it was verified before and has
    /// not expired since.
    async fn verify(&self, token: &str) -> Result<Arc<Verified>, Error> {
        let now = tokens::now();
        if let Some(verified) = self.verified.lock().expect("token memory").get(token) {
            if now < verified.exp {
                return Ok(verified.clone());
            }
        }
        let verified = Arc::new(match &self.oidc {
            // Boxed: fetching the issuer's keys would size every request's future.
            Some(oidc) if !tokens::is_self_issued(token) => Box::pin(oidc.verify(token)).await?,
            _ => self.issuer.verify(token)?,
        });
        let mut memory = self.verified.lock().expect("token memory");
        if memory.len() >= VERIFIED_CAPACITY {
            memory.clear();
        }
        memory.insert(token.to_string(), verified.clone());
        Ok(verified)
    }

    /// The token-exchange grant (RFC 8693) as Iceberg's Java client uses it to refresh: a
    /// new token for the principal a valid, unexpired `subject_token` stands for.
    pub async fn token_exchange(&self, subject_token: &str) -> Result<(String, u64), Error> {
        let principal = self.principal_of(subject_token).await?;
        Ok(self.issuer.issue(&principal.name, principal.id()))
    }

    /// The client-credentials grant: a token for a principal that proves its secret.
    pub async fn client_credentials(&self, client_id: &str, client_secret: &str) -> Result<(String, u64), Error> {
        match self.directory.verify(client_id, client_secret).await? {
            Some(principal) => Ok(self.issuer.issue(&principal.name, principal.id())),
            None => Err(Error::NotAuthorized("invalid client credentials".into())),
        }
    }
}
