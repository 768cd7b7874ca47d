//! The baseline of the loadTable benchmark: an axum server on the same runtime
//! settings as `rustberg` that answers every GET with a fixed JSON body read from a
//! file, doing no other work.
//!
//! Usage: noop_server <body.json> <listen address>

use axum::http::header::CONTENT_TYPE;
use axum::routing::get;
use axum::serve::ListenerExt;
use axum::Router;
use bytes::Bytes;

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let body_file = args.next().expect("usage: noop_server <body.json> <listen address>");
    let listen = args.next().unwrap_or_else(|| "127.0.0.1:18182".into());
    let body = Bytes::from(std::fs::read(&body_file).expect("reading the body file"));
    let app = Router::new().fallback(get(move || {
        let body = body.clone();
        async move { ([(CONTENT_TYPE, "application/json")], body) }
    }));
    let listener = tokio::net::TcpListener::bind(&listen).await.expect("binding");
    println!("noop: listening on http://{}", listener.local_addr().unwrap());
    // As rustberg's listener.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app).await.unwrap();
}
