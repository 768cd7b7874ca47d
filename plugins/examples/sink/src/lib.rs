//! An event sink in Rust: posts each batch of events, as a JSON array of CloudEvents
//! (the CloudEvents HTTP binding's batched mode), to the path of its `url`. Its
//! `[events.plugin.<name>]` grants `http` and names the `url`; the host adds any
//! credential of its `auth` and reaches nowhere else.
//!
//! A batch the receiver does not take with a 2xx is an error: the host sends it again,
//! with backoff, so the receiver deduplicates by each event's `id`.

wit_bindgen::generate!({ world: "http-sink", path: "../../../wit" });

use exports::rustberg::catalog::event_sink::Guest;
use rustberg::catalog::{config, http};

struct Sink;

impl Guest for Sink {
    fn deliver(events: Vec<String>) -> Result<(), String> {
        // `base_path` is the path of the sink's url, as the host tells it.
        let path = config::get("base_path").filter(|p| !p.is_empty()).unwrap_or_else(|| "/".into());
        let body = format!("[{}]", events.join(","));
        let request = http::Request {
            method: "POST".into(),
            path,
            headers: vec![("content-type".into(), "application/cloudevents-batch+json".into())],
            body: body.into_bytes(),
        };
        match http::send(&request) {
            Ok(answer) if (200..300).contains(&answer.status) => Ok(()),
            Ok(answer) => Err(format!("the receiver answered {}", answer.status)),
            Err(e) => Err(format!("the receiver could not be reached: {e:?}")),
        }
    }
}

export!(Sink);
