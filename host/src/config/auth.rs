//! `[auth]`: who may call, and how they prove it.

use serde::Deserialize;

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
