//! An HTTP fault injector: put in front of a real service (moto's S3, a remote
//! catalog), it forwards every request and, for a fraction chosen by a seeded roll,
//! answers an error instead (before forwarding, so nothing was done), or forwards and
//! then answers an error (the request was carried out and its answer lost), or forwards
//! and answers garbage in place of the body. Toxiproxy works on TCP and cannot answer
//! an HTTP status, which is what an object store or a catalog under strain does.

use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use rand::{Rng, SeedableRng};

/// What goes wrong, and how often (each a fraction of the requests it applies to).
#[derive(Debug, Clone, Default)]
pub struct Faults {
    /// Requests of these methods (all, when empty) are subject to the faults.
    pub methods: Vec<Method>,
    /// Only requests whose path contains this (all, when empty).
    pub path_contains: String,
    /// Answered `status` without being forwarded.
    pub refused: f64,
    /// Forwarded, then answered `status` (the request took effect).
    pub lost_answer: f64,
    /// Forwarded, then answered with the upstream's status and a garbage body.
    pub garbage: f64,
    /// The status of a refusal or a lost answer (500 or 503).
    pub status: u16,
}

/// A running injector, until dropped; `url` is its address.
pub struct HttpFaults {
    pub url: String,
    state: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

struct Shared {
    upstream: String,
    faults: Mutex<Faults>,
    dice: Mutex<rand::rngs::StdRng>,
    client: reqwest::Client,
    /// How many requests each fault struck.
    struck: Mutex<[usize; 3]>,
}

impl HttpFaults {
    /// An injector forwarding to `upstream` (a base URL), no faults on yet, its rolls
    /// from `seed`.
    pub async fn start(upstream: &str, seed: u64) -> HttpFaults {
        let state = Arc::new(Shared {
            upstream: upstream.trim_end_matches('/').to_string(),
            faults: Mutex::default(),
            dice: Mutex::new(rand::rngs::StdRng::seed_from_u64(seed)),
            client: reqwest::Client::builder().no_proxy().build().unwrap(),
            struck: Mutex::default(),
        });
        let app = axum::Router::new().fallback(forward).with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let server = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        HttpFaults { url, state, server }
    }

    /// Turns `faults` on (`Faults::default()`: off).
    pub fn set(&self, faults: Faults) {
        *self.state.faults.lock().unwrap() = faults;
    }

    /// How many requests were refused, answered after the fact with an error, and
    /// answered with garbage, so far.
    pub fn struck(&self) -> [usize; 3] {
        *self.state.struck.lock().unwrap()
    }

    /// The injector's port.
    pub fn port(&self) -> u16 {
        self.url.rsplit(':').next().unwrap().parse().unwrap()
    }
}

impl Drop for HttpFaults {
    fn drop(&mut self) {
        self.server.abort();
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Fault {
    None,
    Refused,
    LostAnswer,
    Garbage,
}

impl Shared {
    fn roll(&self, method: &Method, path: &str) -> (Fault, StatusCode) {
        let faults = self.faults.lock().unwrap();
        let status = StatusCode::from_u16(faults.status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
        let applies = (faults.methods.is_empty() || faults.methods.contains(method))
            && (faults.path_contains.is_empty() || path.contains(&faults.path_contains));
        if !applies {
            return (Fault::None, status);
        }
        let roll: f64 = self.dice.lock().unwrap().random();
        let fault = if roll < faults.refused {
            Fault::Refused
        } else if roll < faults.refused + faults.lost_answer {
            Fault::LostAnswer
        } else if roll < faults.refused + faults.lost_answer + faults.garbage {
            Fault::Garbage
        } else {
            Fault::None
        };
        if fault != Fault::None {
            self.struck.lock().unwrap()[fault as usize - 1] += 1;
        }
        (fault, status)
    }
}

/// An error answer in the shape S3 gives one (a catalog's client reads the status).
fn error(status: StatusCode) -> Response {
    let body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code>\
                <Message>injected fault</Message></Error>";
    (status, [("content-type", "application/xml")], body).into_response()
}

async fn forward(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
    let (fault, status) = shared.roll(&parts.method, &path);
    if fault == Fault::Refused {
        return error(status);
    }
    let Ok(body) = axum::body::to_bytes(body, usize::MAX).await else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let mut headers = parts.headers.clone();
    // The upstream's own length and framing; the Host header stays the client's, which
    // a signature may cover.
    headers.remove("content-length");
    headers.remove("transfer-encoding");
    let upstream =
        shared.client.request(parts.method.clone(), format!("{}{path}", shared.upstream)).headers(headers).body(body);
    let Ok(answer) = upstream.send().await else {
        return StatusCode::BAD_GATEWAY.into_response();
    };
    let status_then = answer.status();
    let answer_headers = answer.headers().clone();
    let Ok(answer_body) = answer.bytes().await else {
        return StatusCode::BAD_GATEWAY.into_response();
    };
    match fault {
        Fault::LostAnswer => error(status),
        Fault::Garbage => {
            respond(status_then, &answer_headers, Bytes::from_static(b"{\"metadata\": <garbage \x00\x01"))
        }
        _ => respond(status_then, &answer_headers, answer_body),
    }
}

fn respond(status: StatusCode, headers: &HeaderMap, body: Bytes) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    for (name, value) in headers {
        if name != "content-length" && name != "transfer-encoding" && name != "connection" {
            response.headers_mut().append(name, value.clone());
        }
    }
    response
}
