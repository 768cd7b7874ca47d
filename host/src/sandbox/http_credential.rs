//! The credential a mount's host adds to its component's http requests: a bearer
//! token, an AWS SigV4 signature, or an OAuth2 client-credentials token the host
//! fetches and refreshes. The component never sees any of them.

use std::time::{Duration, Instant};

use reqsign_aws_v4::{Credential, RequestSigner};
use reqsign_core::hash::hex_sha256;
use reqsign_core::{Context, SignRequest};
use serde::Deserialize;

use super::bindings::WitError;
use crate::config::MountAuth;

/// A token is renewed this long before the issuer says it expires.
const TOKEN_MARGIN: Duration = Duration::from_secs(30);

/// Headers only the host sets: a component's own values are dropped.
pub const HOST_HEADERS: &[&str] =
    &["authorization", "host", "x-amz-date", "x-amz-security-token", "x-amz-content-sha256"];

/// How the host authenticates one mount's outbound requests.
pub enum HostCredential {
    None,
    Bearer(String),
    AwsSigV4 { signer: RequestSigner, credential: Credential },
    OAuth2(OAuth2Tokens),
}

/// OAuth2 client credentials and the token they last bought.
pub struct OAuth2Tokens {
    token_url: String,
    client_id: String,
    client_secret: String,
    scope: Option<String>,
    client: reqwest::Client,
    current: tokio::sync::Mutex<Option<(String, Instant)>>,
}

fn env(name: &str, key: &str) -> Result<String, String> {
    std::env::var(name).map_err(|_| format!("{key} {name} is not set"))
}

impl HostCredential {
    /// The credential `auth` describes, with its secrets read from the environment now.
    pub fn from_config(auth: Option<MountAuth>, client: reqwest::Client) -> Result<Self, String> {
        Ok(match auth {
            None => Self::None,
            Some(MountAuth::Bearer { token_env }) => Self::Bearer(env(&token_env, "token_env")?),
            Some(MountAuth::AwsSigv4 {
                service,
                region,
                access_key_id_env,
                secret_access_key_env,
                session_token_env,
            }) => Self::AwsSigV4 {
                signer: RequestSigner::new(&service, &region),
                credential: Credential {
                    access_key_id: env(&access_key_id_env, "access_key_id_env")?,
                    secret_access_key: env(&secret_access_key_env, "secret_access_key_env")?,
                    session_token: session_token_env.map(|name| env(&name, "session_token_env")).transpose()?,
                    expires_in: None,
                },
            },
            Some(MountAuth::Oauth2 { token_url, client_id, client_secret_env, scope }) => {
                url::Url::parse(&token_url).map_err(|e| format!("token_url {token_url}: {e}"))?;
                Self::OAuth2(OAuth2Tokens {
                    token_url,
                    client_id,
                    client_secret: env(&client_secret_env, "client_secret_env")?,
                    scope,
                    client,
                    current: Default::default(),
                })
            }
        })
    }

    /// Adds the credential to a request about to be sent with `body`.
    pub async fn apply(&self, request: &mut reqwest::Request, body: &[u8]) -> Result<(), WitError> {
        let bearer = |token: &str| {
            http::HeaderValue::from_str(&format!("Bearer {token}"))
                .map_err(|_| WitError::Internal("the token is not a valid header value".into()))
        };
        match self {
            Self::None => Ok(()),
            Self::Bearer(token) => {
                request.headers_mut().insert(http::header::AUTHORIZATION, bearer(token)?);
                Ok(())
            }
            Self::AwsSigV4 { signer, credential } => {
                // reqsign signs `http` request parts: made from the request, and the
                // headers the signer set taken back. Without an expiry it signs in headers
                // and leaves the URI as it is (only a presigned URL changes the query).
                let url = request.url().as_str();
                let (mut parts, ()) = http::Request::builder()
                    .method(request.method().clone())
                    .uri(url)
                    .body(())
                    .map_err(|e| WitError::BadRequest(format!("{url}: {e}")))?
                    .into_parts();
                parts.headers = std::mem::take(request.headers_mut());
                let digest = http::HeaderValue::from_str(&hex_sha256(body)).expect("a hex digest is a header value");
                parts.headers.insert("x-amz-content-sha256", digest);
                signer
                    .sign_request(&Context::new(), &mut parts, Some(credential), None)
                    .await
                    .map_err(|e| WitError::Internal(format!("cannot sign the request: {e}")))?;
                *request.headers_mut() = parts.headers;
                Ok(())
            }
            Self::OAuth2(tokens) => {
                let token = tokens.token().await?;
                request.headers_mut().insert(http::header::AUTHORIZATION, bearer(&token)?);
                Ok(())
            }
        }
    }

    /// After the origin answered 401: whether a fresh credential might do better
    /// (the cached token is forgotten, so the next `apply` fetches one).
    pub async fn renew_after_rejection(&self) -> bool {
        match self {
            Self::OAuth2(tokens) => tokens.current.lock().await.take().is_some(),
            _ => false,
        }
    }
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    expires_in: Option<u64>,
}

impl OAuth2Tokens {
    /// The current token, fetched when there is none or it is about to expire. One
    /// fetch at a time: concurrent requests wait for it instead of each asking.
    async fn token(&self) -> Result<String, WitError> {
        let mut current = self.current.lock().await;
        if let Some((token, renew_at)) = current.as_ref() {
            if Instant::now() < *renew_at {
                return Ok(token.clone());
            }
        }
        let mut form = vec![
            ("grant_type", "client_credentials"),
            ("client_id", self.client_id.as_str()),
            ("client_secret", self.client_secret.as_str()),
        ];
        if let Some(scope) = &self.scope {
            form.push(("scope", scope));
        }
        let unavailable = |why: String| WitError::Unavailable(format!("no token from {}: {why}", self.token_url));
        let response =
            self.client.post(&self.token_url).form(&form).send().await.map_err(|e| unavailable(e.to_string()))?;
        let status = response.status();
        let text = response.text().await.map_err(|e| unavailable(e.to_string()))?;
        if !status.is_success() {
            return Err(unavailable(format!("{status}: {}", text.chars().take(300).collect::<String>())));
        }
        let parsed: TokenResponse =
            serde_json::from_str(&text).map_err(|e| unavailable(format!("not a token response: {e}")))?;
        let lifetime = Duration::from_secs(parsed.expires_in.unwrap_or(3600));
        let renew_at = Instant::now() + lifetime.saturating_sub(TOKEN_MARGIN).max(lifetime / 2);
        *current = Some((parsed.access_token.clone(), renew_at));
        Ok(parsed.access_token)
    }
}
