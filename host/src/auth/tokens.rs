//! Bearer tokens: the short-lived ones this server signs (HS256, issued by
//! `/v1/oauth/tokens`), and JWTs of an external OpenID Connect issuer (checked
//! against its key set, issuer and audience).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{decode, decode_header, encode, Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use super::OidcIdentity;
use crate::config::OidcConfig;
use crate::error::Error;

/// The `iss` and `aud` of the tokens this server signs.
const SELF_ISSUER: &str = "rustberg";

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    sub: String,
    /// The principal's id: a token outlives no principal of its name.
    #[serde(default)]
    pid: Option<String>,
    iss: String,
    aud: String,
    iat: u64,
    exp: u64,
}

fn unauthorized(why: impl std::fmt::Display) -> Error {
    Error::NotAuthorized(format!("invalid bearer token: {why}"))
}

pub(super) fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// Who a valid token names, and when the token expires.
#[derive(Debug, Clone)]
pub struct Verified {
    pub bearer: Bearer,
    pub exp: u64,
}

/// Who a valid token names.
#[derive(Debug, Clone)]
pub enum Bearer {
    /// A principal this server issued the token to: its name, and its id when the
    /// token carries one.
    Issued { name: String, id: Option<String> },
    /// A user of the OpenID Connect issuer.
    Oidc(OidcIdentity),
}

/// Signs and verifies this server's own tokens.
pub struct TokenIssuer {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
    lifetime: Duration,
}

impl TokenIssuer {
    pub fn new(key: &[u8], lifetime: Duration) -> Self {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_issuer(&[SELF_ISSUER]);
        validation.set_audience(&[SELF_ISSUER]);
        validation.leeway = 0;
        Self { encoding: EncodingKey::from_secret(key), decoding: DecodingKey::from_secret(key), validation, lifetime }
    }

    /// A token for the principal `name` with id `id`, and its lifetime in seconds.
    pub fn issue(&self, name: &str, id: &str) -> (String, u64) {
        let iat = now();
        let claims = Claims {
            sub: name.to_string(),
            pid: Some(id.to_string()),
            iss: SELF_ISSUER.into(),
            aud: SELF_ISSUER.into(),
            iat,
            exp: iat + self.lifetime.as_secs(),
        };
        let token = encode(&Header::new(Algorithm::HS256), &claims, &self.encoding).expect("HS256 signing");
        (token, self.lifetime.as_secs())
    }

    /// The principal a token was issued to, and when the token expires.
    pub fn verify(&self, token: &str) -> Result<Verified, Error> {
        decode::<Claims>(token, &self.decoding, &self.validation)
            .map(|data| Verified {
                bearer: Bearer::Issued { name: data.claims.sub, id: data.claims.pid },
                exp: data.claims.exp,
            })
            .map_err(unauthorized)
    }
}

/// An external OpenID Connect issuer.
pub struct Oidc {
    issuer: String,
    audience: String,
    claim: String,
    /// Where the key set comes from: a file path or an http(s) URL.
    source: String,
    client: reqwest::Client,
    refresh_every: Duration,
    /// The key set, and when it was read.
    keys: tokio::sync::RwLock<(JwkSet, std::time::Instant)>,
}

/// How long fetching the key set may take.
const JWKS_TIMEOUT: Duration = Duration::from_secs(5);
/// A token naming an unknown key makes the key set be read again, at most this often
/// (tokens with made-up key ids must not turn the server against the issuer).
const JWKS_REREAD_AT_MOST_EVERY: Duration = Duration::from_secs(2);

impl Oidc {
    /// Reads the key set (a file, or an http(s) URL) for the first time.
    pub async fn load(config: &OidcConfig) -> anyhow::Result<Self> {
        let client = reqwest::Client::builder()
            .connect_timeout(JWKS_TIMEOUT)
            .timeout(JWKS_TIMEOUT)
            .build()
            .map_err(|e| anyhow::anyhow!("an http client: {e}"))?;
        let oidc = Self {
            issuer: config.issuer.clone(),
            audience: config.audience.clone(),
            claim: config.principal_claim.clone(),
            source: config.jwks.clone(),
            client,
            refresh_every: Duration::from_secs(config.jwks_refresh_secs),
            keys: tokio::sync::RwLock::new((JwkSet { keys: vec![] }, std::time::Instant::now())),
        };
        let keys = oidc.read_keys().await?;
        *oidc.keys.write().await = (keys, std::time::Instant::now());
        Ok(oidc)
    }

    async fn read_keys(&self) -> anyhow::Result<JwkSet> {
        let source = &self.source;
        let text = if source.starts_with("http://") || source.starts_with("https://") {
            let response =
                self.client.get(source).send().await.map_err(|e| anyhow::anyhow!("fetching {source}: {e}"))?;
            response.error_for_status()?.text().await?
        } else {
            std::fs::read_to_string(source).map_err(|e| anyhow::anyhow!("reading the JWKS file {source}: {e}"))?
        };
        let keys: JwkSet =
            serde_json::from_str(&text).map_err(|e| anyhow::anyhow!("{source} is not a JSON Web Key Set: {e}"))?;
        anyhow::ensure!(!keys.keys.is_empty(), "the JWKS {source} holds no key");
        Ok(keys)
    }

    /// Reads the key set again if `due` says so (checked under the lock, so concurrent
    /// callers read it once). A failure keeps the keys held, and is logged.
    async fn reread_if(&self, due: impl Fn(std::time::Instant) -> bool) {
        let mut held = self.keys.write().await;
        if !due(held.1) {
            return;
        }
        held.1 = std::time::Instant::now();
        match self.read_keys().await {
            Ok(keys) => held.0 = keys,
            Err(e) => tracing::warn!("keeping the key set held: cannot read it again: {e:#}"),
        }
    }

    /// The `iss` its tokens carry.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The identity a valid token names, and when the token expires.
    pub async fn verify(&self, token: &str) -> Result<Verified, Error> {
        let header = decode_header(token).map_err(unauthorized)?;
        if matches!(header.alg, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512) {
            return Err(unauthorized("symmetric algorithms are not accepted from the identity provider"));
        }
        let refresh_every = self.refresh_every;
        if self.keys.read().await.1.elapsed() >= refresh_every {
            self.reread_if(|read| read.elapsed() >= refresh_every).await;
        }
        let mut key = self.key_for(&header).await;
        if key.is_none() {
            // The issuer may have rotated its keys since they were read.
            self.reread_if(|read| read.elapsed() >= JWKS_REREAD_AT_MOST_EVERY).await;
            key = self.key_for(&header).await;
        }
        let key = key.ok_or_else(|| unauthorized("signed by an unknown key"))??;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.leeway = 0;
        let data =
            decode::<serde_json::Map<String, serde_json::Value>>(token, &key, &validation).map_err(unauthorized)?;
        let exp = data.claims.get("exp").and_then(|v| v.as_u64()).ok_or_else(|| unauthorized("no exp claim"))?;
        let subject = data.claims.get(&self.claim).and_then(|v| v.as_str()).map(str::to_string);
        let subject = subject.ok_or_else(|| unauthorized(format!("no {} claim", self.claim)))?;
        Ok(Verified { bearer: Bearer::Oidc(OidcIdentity { issuer: self.issuer.clone(), subject }), exp })
    }

    /// The key a token's header names, among the keys held.
    async fn key_for(&self, header: &Header) -> Option<Result<DecodingKey, Error>> {
        let held = self.keys.read().await;
        let keys = &held.0;
        let jwk = match &header.kid {
            Some(kid) => keys.find(kid),
            None if keys.keys.len() == 1 => keys.keys.first(),
            None => None,
        }?;
        Some(DecodingKey::from_jwk(jwk).map_err(unauthorized))
    }
}

/// Whether a token is one of ours (HS256) rather than the identity provider's.
pub fn is_self_issued(token: &str) -> bool {
    decode_header(token).is_ok_and(|h| h.alg == Algorithm::HS256)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_tokens_verify_and_expire() {
        let issuer = TokenIssuer::new(b"0123456789abcdef0123456789abcdef", Duration::from_secs(60));
        let (token, lifetime) = issuer.issue("alice", "id-1");
        assert_eq!(lifetime, 60);
        let Bearer::Issued { name, id } = issuer.verify(&token).unwrap().bearer else { panic!("issued here") };
        assert_eq!((name.as_str(), id.as_deref()), ("alice", Some("id-1")));
        assert!(is_self_issued(&token));
        let other = TokenIssuer::new(b"another key of thirty-two bytes!", Duration::from_secs(60));
        assert!(other.verify(&token).is_err(), "signed with another key");
        let expired = TokenIssuer::new(b"0123456789abcdef0123456789abcdef", Duration::from_secs(0));
        let (old, _) = expired.issue("alice", "id-1");
        std::thread::sleep(Duration::from_millis(1100));
        assert!(issuer.verify(&old).is_err(), "expired");
    }
}
