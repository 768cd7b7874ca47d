//! The `http` capability: outbound requests to one mount's own origins and nowhere
//! else. The host adds the mount's credential (the component never sees it) and
//! enforces connect and request timeouts and a response size cap.

use std::time::Duration;

use super::bindings::rustberg::catalog::http::{Request, Response};
use super::bindings::WitError;
use super::http_credential::{HostCredential, HOST_HEADERS};

/// The largest remote response a backend is handed.
const MAX_RESPONSE_BYTES: usize = 64 << 20;

/// What a mount lets its backend reach.
pub struct HttpGrant {
    /// `scheme://host[:port]`, no path: `catalog_url`'s origin first, then `http_origins`.
    /// Parsed once: a request's URL is its origin's with the path set, so only the path
    /// is parsed per request, and the origin cannot change.
    origins: Vec<url::Url>,
    client: reqwest::Client,
    request_timeout: Duration,
    credential: HostCredential,
}

/// A client with the mount's timeouts that never follows a redirect (a redirect
/// could lead the request, and its credential, off the granted origins).
pub fn client(connect_timeout: Duration, request_timeout: Duration) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .timeout(request_timeout)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| e.to_string())
}

impl HttpGrant {
    pub fn new(
        origins: Vec<String>,
        client: reqwest::Client,
        request_timeout: Duration,
        credential: HostCredential,
    ) -> Result<Self, String> {
        assert!(!origins.is_empty(), "an http grant reaches at least catalog_url's origin");
        let origins =
            origins.iter().map(|o| url::Url::parse(o).map_err(|e| format!("{o}: {e}"))).collect::<Result<_, _>>()?;
        Ok(Self { origins, client, request_timeout, credential })
    }

    /// The URL a request goes to: a path on the first origin, or an absolute URL on
    /// any granted origin.
    fn target(&self, path: &str) -> Result<url::Url, WitError> {
        if path.starts_with('/') && !path.starts_with("//") {
            // As if parsed after the origin: a fragment is not sent, the query follows `?`.
            let path = path.split_once('#').map_or(path, |(before, _)| before);
            let (path, query) = path.split_once('?').map_or((path, None), |(p, q)| (p, Some(q)));
            let mut url = self.origins[0].clone();
            url.set_path(path);
            url.set_query(query);
            return Ok(url);
        }
        match url::Url::parse(path) {
            Ok(url) if self.origins.iter().any(|o| o.origin() == url.origin()) => Ok(url),
            _ => Err(WitError::BadRequest(format!(
                "{path:?} is neither a path on {} nor a URL on an origin the mount grants",
                self.origins[0].origin().ascii_serialization()
            ))),
        }
    }

    /// Sends a request. Transport failures and timeouts are `unavailable`; every
    /// HTTP status is a response.
    pub async fn send(&self, request: Request) -> Result<Response, WitError> {
        let url = self.target(&request.path)?;
        let method = http::Method::from_bytes(request.method.as_bytes())
            .map_err(|_| WitError::BadRequest(format!("invalid method {:?}", request.method)))?;
        let mut headers = http::HeaderMap::new();
        for (name, value) in &request.headers {
            if HOST_HEADERS.iter().any(|h| name.eq_ignore_ascii_case(h)) {
                continue;
            }
            let name = http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| WitError::BadRequest(format!("invalid header name {name:?}")))?;
            let value = http::HeaderValue::from_str(value)
                .map_err(|_| WitError::BadRequest(format!("invalid value for header {name}")))?;
            headers.append(name, value);
        }
        let mut response = self.send_once(&method, &url, &headers, &request.body).await?;
        if response.status() == reqwest::StatusCode::UNAUTHORIZED && self.credential.renew_after_rejection().await {
            response = self.send_once(&method, &url, &headers, &request.body).await?;
        }
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .filter_map(|(k, v)| Some((k.to_string(), v.to_str().ok()?.to_string())))
            .collect();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| self.transport_error(&url, e))? {
            if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
                return Err(WitError::Unavailable(format!(
                    "{url} answered more than {} MiB; refused",
                    MAX_RESPONSE_BYTES >> 20
                )));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Response { status, headers, body })
    }

    /// One attempt, with the credential applied afresh.
    async fn send_once(
        &self,
        method: &http::Method,
        url: &url::Url,
        headers: &http::HeaderMap,
        body: &[u8],
    ) -> Result<reqwest::Response, WitError> {
        let mut request = reqwest::Request::new(method.clone(), url.clone());
        *request.headers_mut() = headers.clone();
        if !body.is_empty() {
            *request.body_mut() = Some(body.to_vec().into());
        }
        self.credential.apply(&mut request, body).await?;
        self.client.execute(request).await.map_err(|e| self.transport_error(url, e))
    }

    fn transport_error(&self, url: &url::Url, e: reqwest::Error) -> WitError {
        WitError::Unavailable(if e.is_timeout() {
            format!("{url} did not answer within {} ms", self.request_timeout.as_millis())
        } else if e.is_connect() {
            format!("cannot connect to {url}: {e}")
        } else {
            format!("{url}: {e}")
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use axum::routing::{any, get, post};

    use super::*;
    use crate::config::MountAuth;

    /// A remote that answers `/big` with `body_bytes` bytes, `/echo` with the request's
    /// headers as JSON, `/token` with a new OAuth2 token each time (counting them), and
    /// `/guarded` with 401 unless it carries the newest token.
    async fn serve(body_bytes: usize) -> (String, Arc<AtomicUsize>) {
        let issued = Arc::new(AtomicUsize::new(0));
        let (count, check) = (issued.clone(), issued.clone());
        let app = axum::Router::new()
            .route("/big", get(move || async move { vec![b'x'; body_bytes] }))
            .route(
                "/echo",
                any(|headers: http::HeaderMap| async move {
                    let map: std::collections::BTreeMap<String, String> = headers
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or_default().to_string()))
                        .collect();
                    axum::Json(map)
                }),
            )
            .route(
                "/token",
                post(move |axum::Form(form): axum::Form<std::collections::HashMap<String, String>>| async move {
                    assert_eq!(form["grant_type"], "client_credentials");
                    assert_eq!(form["client_secret"], "s3cret");
                    let n = count.fetch_add(1, Ordering::SeqCst) + 1;
                    axum::Json(serde_json::json!({"access_token": format!("tok-{n}"), "expires_in": 1}))
                }),
            )
            .route(
                "/guarded",
                get(move |headers: http::HeaderMap| async move {
                    let newest = format!("Bearer tok-{}", check.load(Ordering::SeqCst));
                    let sent = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default();
                    if sent == newest {
                        http::StatusCode::OK
                    } else {
                        http::StatusCode::UNAUTHORIZED
                    }
                }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (origin, issued)
    }

    fn grant(origins: Vec<String>, auth: Option<MountAuth>) -> HttpGrant {
        let timeout = Duration::from_secs(10);
        let client = client(timeout, timeout).unwrap();
        HttpGrant::new(origins, client.clone(), timeout, HostCredential::from_config(auth, client).unwrap()).unwrap()
    }

    fn request(method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Request {
        Request {
            method: method.into(),
            path: path.into(),
            headers: headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            body: body.to_vec(),
        }
    }

    async fn echoed(grant: &HttpGrant, req: Request) -> serde_json::Value {
        let response = grant.send(req).await.unwrap();
        assert_eq!(response.status, 200);
        serde_json::from_slice(&response.body).unwrap()
    }

    #[tokio::test]
    async fn a_remote_body_past_the_cap_is_refused() {
        let small = grant(vec![serve(1 << 20).await.0], None);
        assert_eq!(small.send(request("GET", "/big", &[], b"")).await.unwrap().body.len(), 1 << 20);
        let huge = grant(vec![serve(MAX_RESPONSE_BYTES + 1).await.0], None);
        match huge.send(request("GET", "/big", &[], b"")).await {
            Err(WitError::Unavailable(message)) => assert!(message.contains("more than 64 MiB"), "{message}"),
            other => panic!("a body past the cap was handed over: {:?}", other.map(|r| r.body.len())),
        }
    }

    #[tokio::test]
    async fn requests_reach_the_granted_origins_and_no_other() {
        let (first, _) = serve(0).await;
        let (second, _) = serve(0).await;
        let (elsewhere, _) = serve(0).await;
        let grant = grant(vec![first.clone(), second.clone()], None);
        echoed(&grant, request("GET", "/echo", &[], b"")).await;
        echoed(&grant, request("GET", &format!("{second}/echo"), &[], b"")).await;
        for path in [format!("{elsewhere}/echo"), "//evil.example/echo".into(), "echo".into()] {
            match grant.send(request("GET", &path, &[], b"")).await {
                Err(WitError::BadRequest(message)) => {
                    assert!(message.contains("an origin the mount grants"), "{message}")
                }
                other => panic!("{path} was not refused: {:?}", other.map(|r| r.status)),
            }
        }
    }

    /// A path is set on the first origin (parsed alone) and makes the URL the origin and
    /// the path written together parse to, less the fragment, which is never sent; it
    /// cannot lead anywhere else.
    #[tokio::test]
    async fn a_path_makes_the_url_written_after_the_first_origin() {
        let (origin, _) = serve(0).await;
        let grant = grant(vec![origin.clone()], None);
        let paths = [
            "/",
            "/v1/config?warehouse=a%20b",
            "/v1/namespaces/a%1Fb/tables/t",
            "/a b/ü?q=ü&r=%2F#fragment",
            "/a/../../echo",
            "/./x/.",
            "/\\evil.example/echo",
            "/%2F%2Fevil.example/x",
            "/x?y#z?w",
            "/x#",
            "/?",
        ];
        for path in paths {
            let mut written = url::Url::parse(&format!("{origin}{path}")).unwrap();
            written.set_fragment(None);
            assert_eq!(grant.target(path).unwrap(), written, "{path}");
        }
        // A backslash is a slash in an http URL: after the origin it starts the path.
        assert_eq!(grant.send(request("GET", "/\\evil.example/echo", &[], b"")).await.unwrap().status, 404);
        assert_eq!(grant.send(request("GET", "/a/../echo?x=1#f", &[], b"")).await.unwrap().status, 200);
    }

    #[tokio::test]
    async fn the_host_credential_replaces_whatever_the_component_sends() {
        let (origin, _) = serve(0).await;
        std::env::set_var("RUSTBERG_TEST_HTTP_BEARER", "host-token");
        let auth = MountAuth::Bearer { token_env: "RUSTBERG_TEST_HTTP_BEARER".into() };
        let grant = grant(vec![origin], Some(auth));
        let seen =
            echoed(&grant, request("GET", "/echo", &[("Authorization", "Bearer forged"), ("x-a", "1")], b"")).await;
        assert_eq!(seen["authorization"], "Bearer host-token");
        assert_eq!(seen["x-a"], "1");
    }

    #[tokio::test]
    async fn aws_sigv4_signs_every_request_with_its_session_token() {
        let (origin, _) = serve(0).await;
        std::env::set_var("RUSTBERG_TEST_SIGV4_ID", "AKIDTEST");
        std::env::set_var("RUSTBERG_TEST_SIGV4_SECRET", "secret");
        std::env::set_var("RUSTBERG_TEST_SIGV4_TOKEN", "session-token");
        let auth = MountAuth::AwsSigv4 {
            service: "glue".into(),
            region: "eu-west-1".into(),
            access_key_id_env: "RUSTBERG_TEST_SIGV4_ID".into(),
            secret_access_key_env: "RUSTBERG_TEST_SIGV4_SECRET".into(),
            session_token_env: Some("RUSTBERG_TEST_SIGV4_TOKEN".into()),
        };
        let grant = grant(vec![origin], Some(auth));
        let body = br#"{"Name":"db"}"#;
        let headers = [("X-Amz-Target", "AWSGlue.GetDatabase"), ("X-Amz-Date", "19700101T000000Z")];
        let seen = echoed(&grant, request("POST", "/echo", &headers, body)).await;
        let authorization = seen["authorization"].as_str().unwrap();
        assert!(authorization.starts_with("AWS4-HMAC-SHA256 Credential=AKIDTEST/"), "{authorization}");
        assert!(authorization.contains("/eu-west-1/glue/aws4_request"), "{authorization}");
        assert!(authorization.contains("x-amz-target"), "the component's headers are signed: {authorization}");
        assert_eq!(seen["x-amz-security-token"], "session-token");
        assert_eq!(seen["x-amz-content-sha256"], reqsign_core::hash::hex_sha256(body));
        assert_ne!(seen["x-amz-date"], "19700101T000000Z", "the date is the host's");
    }

    #[tokio::test]
    async fn oauth2_tokens_are_fetched_once_renewed_before_expiry_and_after_a_401() {
        let (origin, issued) = serve(0).await;
        std::env::set_var("RUSTBERG_TEST_OAUTH_SECRET", "s3cret");
        let auth = MountAuth::Oauth2 {
            token_url: format!("{origin}/token"),
            client_id: "rustberg".into(),
            client_secret_env: "RUSTBERG_TEST_OAUTH_SECRET".into(),
            scope: Some("catalog".into()),
        };
        let grant = grant(vec![origin], Some(auth));
        for _ in 0..3 {
            assert_eq!(echoed(&grant, request("GET", "/echo", &[], b"")).await["authorization"], "Bearer tok-1");
        }
        assert_eq!(issued.load(Ordering::SeqCst), 1, "one token for three requests");
        // The token lives 1 s; the host renews it at half its life.
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert_eq!(echoed(&grant, request("GET", "/echo", &[], b"")).await["authorization"], "Bearer tok-2");
        // Somebody else took a token: ours is now refused, and renewed once.
        issued.fetch_add(1, Ordering::SeqCst);
        assert_eq!(grant.send(request("GET", "/guarded", &[], b"")).await.unwrap().status, 200);
        assert_eq!(issued.load(Ordering::SeqCst), 4);
    }
}
