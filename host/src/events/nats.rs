//! The NATS JetStream sink: each event published to `<prefix>.<namespace levels>` (the
//! first level is the mount's name for a mount's namespaces), with `Nats-Msg-Id` set to
//! the event id, so that JetStream drops a redelivery within its duplicate window, and
//! the publish acknowledged by the stream before the sink moves on. The stream (one
//! capturing `<prefix>.>`) is created if missing.

use async_nats::jetstream::{self, stream};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use tokio::sync::OnceCell;

use super::Event;

/// What a subject token keeps as it is; anything else (a `.`, a wildcard, a space) is
/// percent-encoded, so each namespace level is one token.
const TOKEN: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_');

pub struct Nats {
    url: String,
    stream: String,
    prefix: String,
    /// Connected on the first delivery (a server down at start-up is retried then).
    jetstream: OnceCell<jetstream::Context>,
}

impl Nats {
    pub fn new(url: &str, stream: &str, prefix: &str) -> Self {
        Self { url: url.into(), stream: stream.into(), prefix: prefix.into(), jetstream: OnceCell::new() }
    }

    /// The subject of an event about `namespace`.
    pub fn subject(&self, namespace: &[String]) -> String {
        let mut subject = self.prefix.clone();
        for level in namespace {
            subject.push('.');
            subject.extend(utf8_percent_encode(level, TOKEN));
        }
        subject
    }

    async fn context(&self) -> Result<&jetstream::Context, String> {
        self.jetstream
            .get_or_try_init(|| async {
                let client = async_nats::connect(&self.url).await.map_err(|e| format!("{}: {e}", self.url))?;
                let context = jetstream::new(client);
                let config = stream::Config {
                    name: self.stream.clone(),
                    subjects: vec![format!("{}.>", self.prefix)],
                    ..Default::default()
                };
                context.get_or_create_stream(config).await.map_err(|e| format!("stream {}: {e}", self.stream))?;
                Ok(context)
            })
            .await
    }

    /// Publishes `body` (the event's CloudEvent) and waits for the stream's ack.
    pub async fn deliver(&self, event: &Event, body: Vec<u8>) -> Result<(), String> {
        let context = self.context().await?;
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Nats-Msg-Id", event.event_id.as_str());
        headers.insert("content-type", "application/cloudevents+json");
        let subject = self.subject(event.operation.namespace());
        let ack = context
            .publish_with_headers(subject, headers, body.into())
            .await
            .map_err(|e| format!("{}: {e}", self.url))?;
        ack.await.map(|_| ()).map_err(|e| format!("{}: {e}", self.url))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_level_is_one_token() {
        let nats = Nats::new("nats://127.0.0.1:4222", "S", "iceberg");
        let levels = ["prod".to_string(), "a.b c*>".to_string()];
        assert_eq!(nats.subject(&levels), "iceberg.prod.a%2Eb%20c%2A%3E");
        assert_eq!(nats.subject(&[]), "iceberg");
    }
}
