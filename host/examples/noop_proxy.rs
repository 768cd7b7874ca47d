//! The baselines of the rest-mount benchmark: a proxy in front of one origin that
//! forwards every GET, with its `Authorization` header, over a connection kept alive,
//! and answers with the remote's status and body, doing no other work. What it adds to
//! a request is what one hop costs without a catalog, at three depths:
//!
//! - `client` (the default): an axum server forwarding through the client a rest mount
//!   uses (`plugins::http::client`), on the same runtime settings as `rustberg`; it
//!   forwards any method with its body (the commits of bench/rest_mount.sh too);
//! - `hyper`: hyper's own server and client, the library under axum and reqwest;
//! - `relay`: no HTTP library; the bytes of each request and response are relayed,
//!   reading only the framing (`Content-Length`). What the kernel and the runtime cost.
//!
//! Usage: noop_proxy <origin, e.g. http://127.0.0.1:18191> <listen address> [client|hyper|relay]

use std::time::Duration;

use axum::extract::State;
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::IntoResponse;
use axum::serve::ListenerExt;
use axum::Router;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Full};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let usage = "usage: noop_proxy <origin> <listen address> [client|hyper|relay]";
    let origin = args.next().expect(usage);
    let listen = args.next().expect(usage);
    let mode = args.next().unwrap_or_else(|| "client".into());
    let listener = TcpListener::bind(&listen).await.expect("binding");
    println!("noop proxy ({mode}): listening on http://{}", listener.local_addr().unwrap());
    match mode.as_str() {
        "client" => client(origin, listener).await,
        "hyper" => hyper(origin, listener).await,
        "relay" => relay(origin, listener).await,
        _ => panic!("{usage}"),
    }
}

#[derive(Clone)]
struct Remote {
    origin: String,
    client: reqwest::Client,
}

async fn client(origin: String, listener: TcpListener) {
    // A rest mount's default timeouts (`[mount.*]` connect_timeout_ms, request_timeout_ms).
    let client = rustberg::sandbox::http::client(Duration::from_secs(1), Duration::from_secs(3)).expect("a client");
    let app = Router::new().fallback(forward).with_state(Remote { origin, client });
    // As rustberg's listener.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app).await.unwrap();
}

/// Forwards the request (its method, path, authorization and body: a commit too).
async fn forward(
    State(remote): State<Remote>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> impl IntoResponse {
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let mut request = remote.client.request(method, format!("{}{path}", remote.origin));
    if let Some(auth) = headers.get(AUTHORIZATION) {
        request = request.header(AUTHORIZATION, auth);
    }
    if !body.is_empty() {
        request = request.header(CONTENT_TYPE, "application/json").body(body);
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

async fn hyper(origin: String, listener: TcpListener) {
    use hyper_util::client::legacy::Client;
    let mut connector = hyper_util::client::legacy::connect::HttpConnector::new();
    connector.set_nodelay(true);
    let client: Client<_, Empty<Bytes>> = Client::builder(hyper_util::rt::TokioExecutor::new()).build(connector);
    loop {
        let Ok((tcp, _)) = listener.accept().await else { continue };
        let _ = tcp.set_nodelay(true);
        let (client, origin) = (client.clone(), origin.clone());
        let service = hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
            let path = request.uri().path_and_query().map_or("/", |p| p.as_str());
            let mut forwarded = hyper::Request::get(format!("{origin}{path}"));
            if let Some(auth) = request.headers().get(AUTHORIZATION) {
                forwarded = forwarded.header(AUTHORIZATION, auth);
            }
            let client = client.clone();
            async move {
                let answered = async {
                    let response = client.request(forwarded.body(Empty::new())?).await?;
                    let status = response.status();
                    Ok::<_, Box<dyn std::error::Error + Send + Sync>>((status, response.into_body().collect().await?))
                };
                let (status, body) = match answered.await {
                    Ok((status, body)) => (status, body.to_bytes()),
                    Err(e) => (StatusCode::BAD_GATEWAY, Bytes::from(e.to_string())),
                };
                let mut response = hyper::Response::new(Full::new(body));
                *response.status_mut() = status;
                response.headers_mut().insert(CONTENT_TYPE, "application/json".parse().unwrap());
                Ok::<_, std::convert::Infallible>(response)
            }
        });
        tokio::spawn(
            hyper::server::conn::http1::Builder::new().serve_connection(hyper_util::rt::TokioIo::new(tcp), service),
        );
    }
}

async fn relay(origin: String, listener: TcpListener) {
    let address = origin.trim_start_matches("http://").trim_end_matches('/').to_string();
    loop {
        let Ok((mut downstream, _)) = listener.accept().await else { continue };
        let address = address.clone();
        tokio::spawn(async move {
            let Ok(mut upstream) = TcpStream::connect(&address).await else { return };
            let _ = (downstream.set_nodelay(true), upstream.set_nodelay(true));
            let (mut request, mut response) = (Vec::new(), Vec::new());
            while read_message(&mut downstream, &mut request).await.is_some() {
                if upstream.write_all(&request).await.is_err()
                    || read_message(&mut upstream, &mut response).await.is_none()
                {
                    return;
                }
                if downstream.write_all(&response).await.is_err() {
                    return;
                }
            }
        });
    }
}

/// Reads one HTTP/1.1 message, a head and a `Content-Length` body (enough for the GETs
/// and JSON answers of the benchmark), into `message`; `None` at the end of the stream.
async fn read_message(stream: &mut TcpStream, message: &mut Vec<u8>) -> Option<()> {
    message.clear();
    let mut length = None;
    loop {
        if length.is_none() {
            if let Some(end) = message.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = std::str::from_utf8(&message[..end]).ok()?;
                let body = head
                    .split("\r\n")
                    .filter_map(|line| line.split_once(':'))
                    .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
                    .map_or(Some(0), |(_, value)| value.trim().parse().ok())?;
                length = Some(end + 4 + body);
            }
        }
        if length.is_some_and(|length| message.len() >= length) {
            return Some(());
        }
        message.reserve(16 * 1024);
        if stream.read_buf(message).await.ok()? == 0 {
            return None;
        }
    }
}
