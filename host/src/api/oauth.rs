//! `POST /v1/oauth/tokens`: the OAuth2 client-credentials grant (what PyIceberg's
//! `credential="id:secret"` uses), and the token-exchange grant with the current token
//! (how Iceberg's Java client refreshes one). Answers in the OAuth error shape.

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Form, Json};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde::Deserialize;
use serde_json::json;

use super::State;

#[derive(Debug, Deserialize)]
pub struct TokenRequest {
    grant_type: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
    subject_token: Option<String>,
}

/// RFC 8693's grant type, which Iceberg's Java client sends to refresh its token.
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";

fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    (status, Json(json!({ "error": error, "error_description": description }))).into_response()
}

/// Client id and secret from the form, or from HTTP Basic authentication.
fn credentials(headers: &HeaderMap, form: &TokenRequest) -> Option<(String, String)> {
    if let (Some(id), Some(secret)) = (&form.client_id, &form.client_secret) {
        return Some((id.clone(), secret.clone()));
    }
    let basic = headers.get(axum::http::header::AUTHORIZATION)?.to_str().ok()?.strip_prefix("Basic ")?;
    let decoded = String::from_utf8(STANDARD.decode(basic.trim()).ok()?).ok()?;
    let (id, secret) = decoded.split_once(':')?;
    Some((id.to_string(), secret.to_string()))
}

pub async fn token(axum::extract::State(state): State, headers: HeaderMap, Form(form): Form<TokenRequest>) -> Response {
    let issued = match form.grant_type.as_deref() {
        Some("client_credentials") => {
            let Some((id, secret)) = credentials(&headers, &form) else {
                return oauth_error(
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    "client_id and client_secret are required",
                );
            };
            state.auth.client_credentials(&id, &secret).await
        }
        Some(TOKEN_EXCHANGE) => {
            let Some(subject) = form.subject_token.as_deref() else {
                return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", "subject_token is required");
            };
            state.auth.token_exchange(subject).await
        }
        _ => {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "unsupported_grant_type",
                "the grants are client_credentials and token-exchange (with a current token)",
            )
        }
    };
    match issued {
        Ok((token, expires_in)) => Json(json!({
            "access_token": token,
            "token_type": "bearer",
            "expires_in": expires_in,
            "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
        }))
        .into_response(),
        Err(crate::error::Error::NotAuthorized(m)) => oauth_error(StatusCode::UNAUTHORIZED, "invalid_client", &m),
        Err(e) => e.into_response(),
    }
}
