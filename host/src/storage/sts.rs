//! STS `AssumeRole` with an inline session policy: the one AWS call credential
//! vending makes. Signed with SigV4 by `reqsign`, sent with `reqwest`, so that it
//! reaches any STS-compatible endpoint (AWS, or a local one such as moto).

use std::time::Duration;

use reqsign_aws_v4::{Credential, RequestSigner};
use reqsign_core::hash::hex_sha256;
use reqsign_core::{Context, SignRequest};
use serde::Deserialize;

/// Temporary credentials STS returned.
#[derive(Debug, Clone)]
pub struct SessionCredentials {
    pub access_key_id: String,
    pub secret_access_key: String,
    pub session_token: String,
    /// When they expire, as STS wrote it (ISO 8601).
    pub expiration: String,
}

/// Why STS gave nothing.
#[derive(Debug, thiserror::Error)]
pub enum StsError {
    #[error("cannot sign the AssumeRole request: {0}")]
    Sign(String),
    #[error("cannot reach STS at {endpoint}: {reason}")]
    Unreachable { endpoint: String, reason: String },
    #[error("STS refused AssumeRole ({status}): {body}")]
    Refused { status: u16, body: String },
    #[error("STS answered something that is not an AssumeRole result: {0}")]
    Malformed(String),
}

/// A client for one STS endpoint, signing with the server's own keys.
#[derive(Debug, Clone)]
pub struct Sts {
    endpoint: String,
    region: String,
    source: Credential,
    http: reqwest::Client,
}

impl Sts {
    pub fn new(endpoint: String, region: String, access_key_id: String, secret_access_key: String) -> Self {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(2))
            .timeout(Duration::from_secs(10))
            .build()
            .expect("a client with timeouts builds");
        let source = Credential { access_key_id, secret_access_key, session_token: None, expires_in: None };
        Self { endpoint: endpoint.trim_end_matches('/').to_string(), region, source, http }
    }

    /// Assumes `role_arn` for `duration`, narrowed to what `policy` allows.
    pub async fn assume_role(
        &self,
        role_arn: &str,
        session_name: &str,
        policy: &str,
        duration: Duration,
    ) -> Result<SessionCredentials, StsError> {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("Action", "AssumeRole")
            .append_pair("Version", "2011-06-15")
            .append_pair("RoleArn", role_arn)
            .append_pair("RoleSessionName", session_name)
            .append_pair("DurationSeconds", &duration.as_secs().to_string())
            .append_pair("Policy", policy)
            .finish();
        let request = http::Request::post(format!("{}/", self.endpoint))
            .header(http::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header("x-amz-content-sha256", hex_sha256(body.as_bytes()))
            .body(())
            .map_err(|e| StsError::Sign(e.to_string()))?;
        let (mut parts, ()) = request.into_parts();
        RequestSigner::new("sts", &self.region)
            .sign_request(&Context::new(), &mut parts, Some(&self.source), None)
            .await
            .map_err(|e| StsError::Sign(e.to_string()))?;

        let unreachable =
            |e: reqwest::Error| StsError::Unreachable { endpoint: self.endpoint.clone(), reason: e.to_string() };
        let response = self
            .http
            .post(parts.uri.to_string())
            .headers(parts.headers)
            .body(body)
            .send()
            .await
            .map_err(unreachable)?;
        let status = response.status().as_u16();
        let text = response.text().await.map_err(unreachable)?;
        if status != 200 {
            return Err(StsError::Refused { status, body: text.chars().take(500).collect() });
        }
        let parsed: AssumeRoleResponse =
            quick_xml::de::from_str(&text).map_err(|e| StsError::Malformed(e.to_string()))?;
        let c = parsed.result.credentials;
        Ok(SessionCredentials {
            access_key_id: c.access_key_id,
            secret_access_key: c.secret_access_key,
            session_token: c.session_token,
            expiration: c.expiration,
        })
    }
}

#[derive(Deserialize)]
struct AssumeRoleResponse {
    #[serde(rename = "AssumeRoleResult")]
    result: AssumeRoleResult,
}

#[derive(Deserialize)]
struct AssumeRoleResult {
    #[serde(rename = "Credentials")]
    credentials: StsCredentials,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct StsCredentials {
    access_key_id: String,
    secret_access_key: String,
    session_token: String,
    expiration: String,
}
