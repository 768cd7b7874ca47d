//! The `http` capability: outbound requests to one mount's own `catalog_url` origin
//! and nowhere else. The host adds the mount's bearer token (the component never
//! sees it) and enforces connect and request timeouts.

use std::time::Duration;

use super::bindings::rustberg::catalog::http::{Request, Response};
use super::bindings::WitError;

/// The largest remote response a backend is handed.
const MAX_RESPONSE_BYTES: usize = 64 << 20;

/// What a mount lets its backend reach.
pub struct HttpGrant {
    /// `scheme://host[:port]`, no path.
    origin: String,
    client: reqwest::Client,
    request_timeout: Duration,
    token: Option<String>,
}

impl HttpGrant {
    pub fn new(
        origin: String,
        token: Option<String>,
        connect_timeout: Duration,
        request_timeout: Duration,
    ) -> Result<Self, String> {
        let client = reqwest::Client::builder()
            .connect_timeout(connect_timeout)
            .timeout(request_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Self { origin, client, request_timeout, token })
    }

    /// Sends a request to the origin. Transport failures and timeouts are
    /// `unavailable`; every HTTP status is a response.
    pub async fn send(&self, request: Request) -> Result<Response, WitError> {
        if !request.path.starts_with('/') || request.path.starts_with("//") {
            return Err(WitError::BadRequest(format!("{:?} is not a path on the mount's origin", request.path)));
        }
        let method = reqwest::Method::from_bytes(request.method.as_bytes())
            .map_err(|_| WitError::BadRequest(format!("invalid method {:?}", request.method)))?;
        let url = format!("{}{}", self.origin, request.path);
        let mut builder = self.client.request(method, &url);
        for (name, value) in &request.headers {
            // The credential is the host's to add.
            if !name.eq_ignore_ascii_case("authorization") && !name.eq_ignore_ascii_case("host") {
                builder = builder.header(name, value);
            }
        }
        if let Some(token) = &self.token {
            builder = builder.bearer_auth(token);
        }
        if !request.body.is_empty() {
            builder = builder.body(request.body);
        }
        let response = builder.send().await.map_err(|e| self.transport_error(&url, e))?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .filter_map(|(k, v)| Some((k.to_string(), v.to_str().ok()?.to_string())))
            .collect();
        let mut response = response;
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

    fn transport_error(&self, url: &str, e: reqwest::Error) -> WitError {
        WitError::Unavailable(if e.is_timeout() {
            format!("{url} did not answer within {} ms", self.request_timeout.as_millis())
        } else if e.is_connect() {
            format!("cannot connect to {}: {e}", self.origin)
        } else {
            format!("{url}: {e}")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn serve(body_bytes: usize) -> String {
        let app = axum::Router::new().route("/big", axum::routing::get(move || async move { vec![b'x'; body_bytes] }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let origin = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        origin
    }

    fn get(path: &str) -> Request {
        Request { method: "GET".into(), path: path.into(), headers: vec![], body: vec![] }
    }

    #[tokio::test]
    async fn a_remote_body_past_the_cap_is_refused() {
        let timeout = Duration::from_secs(10);
        let small = HttpGrant::new(serve(1 << 20).await, None, timeout, timeout).unwrap();
        assert_eq!(small.send(get("/big")).await.unwrap().body.len(), 1 << 20);
        let huge = HttpGrant::new(serve(MAX_RESPONSE_BYTES + 1).await, None, timeout, timeout).unwrap();
        match huge.send(get("/big")).await {
            Err(WitError::Unavailable(message)) => assert!(message.contains("more than 64 MiB"), "{message}"),
            other => panic!("a body past the cap was handed over: {:?}", other.map(|r| r.body.len())),
        }
    }
}
