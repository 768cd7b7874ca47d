//! The baseline of the rest-mount benchmark: an axum server on the same runtime
//! settings as `rustberg` that forwards every GET, with its `Authorization` header, to
//! one origin through the client a rest mount uses (`plugins::http::client`, its
//! connection kept alive) and answers with the remote's status and body, doing no other
//! work. What it adds to a request is what one HTTP hop costs without a catalog.
//!
//! Usage: noop_proxy <origin, e.g. http://127.0.0.1:18191> <listen address>

use std::time::Duration;

use axum::extract::State;
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::serve::ListenerExt;
use axum::Router;

#[derive(Clone)]
struct Remote {
    origin: String,
    client: reqwest::Client,
}

async fn forward(State(remote): State<Remote>, uri: Uri, headers: HeaderMap) -> impl IntoResponse {
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let mut request = remote.client.get(format!("{}{path}", remote.origin));
    if let Some(auth) = headers.get(AUTHORIZATION) {
        request = request.header(AUTHORIZATION, auth);
    }
    let answered = async {
        let response = request.send().await?;
        let status = StatusCode::from_u16(response.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
        Ok::<_, reqwest::Error>((status, response.bytes().await?))
    };
    match answered.await {
        Ok((status, body)) => (status, [(CONTENT_TYPE, "application/json")], body).into_response(),
        Err(e) => (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    }
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let origin = args.next().expect("usage: noop_proxy <origin> <listen address>");
    let listen = args.next().unwrap_or_else(|| "127.0.0.1:18183".into());
    // A rest mount's default timeouts (`[mount.*]` connect_timeout_ms, request_timeout_ms).
    let client = rustberg::plugins::http::client(Duration::from_secs(1), Duration::from_secs(3)).expect("a client");
    let app = Router::new().fallback(get(forward)).with_state(Remote { origin, client });
    let listener = tokio::net::TcpListener::bind(&listen).await.expect("binding");
    println!("noop proxy: listening on http://{}", listener.local_addr().unwrap());
    // As rustberg's listener.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app).await.unwrap();
}
