//! Pushing the log to sinks: each sink reads the log from its cursor (kept in the
//! outbox's store, so a restart resumes where the last delivery ended) and delivers a
//! batch at a time, in order (a webhook and NATS one event after another, Kafka and a
//! plugin sink the batch in one call), moving its cursor once per batch and retrying what failed
//! with backoff. An event still undeliverable once
//! it is older than the retention is set aside as a dead letter, which the management
//! API lists, and the sink goes on. Hosts sharing a database share each sink's cursor:
//! an event is delivered at least once, and a receiver deduplicates by its id.

use std::time::Duration;

use serde::Serialize;

use super::kafka::Kafka;
use super::nats::Nats;
use super::outbox::made_at;
use super::webhook::WebhookSecret;
use super::{Event, Events, Outbox};
use crate::storage::kv::{prefix_end, Check, Durability, KvError, Write};

const SINKS: &str = "events/sinks/";
const DEAD: &str = "events/dead/";

/// How many events a sink reads from the log at once.
const READ_BATCH: usize = 64;
/// The first retry's wait, doubled per failure up to `MAX_BACKOFF`.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How long one delivery may take.
const DELIVERY_TIMEOUT: Duration = Duration::from_secs(10);

/// Where events are pushed, and the name its cursor and dead letters go by.
pub struct Sink {
    name: String,
    kind: SinkKind,
}

enum SinkKind {
    Webhook { url: String, secret: WebhookSecret, client: reqwest::Client },
    Nats(Box<Nats>),
    Kafka(Box<Kafka>),
    Plugin(Box<dyn Deliver>),
}

/// A sink written as a component (`[events.plugin.<name>]`), which takes a batch of
/// CloudEvents JSON documents in one call. Its pool lives in the sandbox, above this
/// room: `hooks::sink` gives it this shape.
pub trait Deliver: Send + Sync {
    fn deliver(
        &self,
        events: Vec<String>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send + '_>>;
}

impl Sink {
    /// A webhook sink; refused when its secret is not a Standard Webhooks secret.
    pub fn webhook(name: &str, url: &str, secret: &str) -> Result<Self, String> {
        let secret = WebhookSecret::parse(secret).map_err(|e| format!("events.webhook.{name}.secret: {e}"))?;
        let client = reqwest::Client::builder().timeout(DELIVERY_TIMEOUT).build().map_err(|e| e.to_string())?;
        let kind = SinkKind::Webhook { url: url.to_string(), secret, client };
        Ok(Sink { name: format!("webhook.{name}"), kind })
    }

    /// The sinks `[events]` names, each checked (a webhook's secret).
    pub fn configured(config: &crate::config::EventsConfig) -> Result<Vec<Sink>, String> {
        let webhooks = config.webhooks.iter().map(|(name, webhook)| Sink::webhook(name, &webhook.url, &webhook.secret));
        let nats =
            config.nats.iter().map(|(name, nats)| Ok(Sink::nats(name, &nats.url, &nats.stream, &nats.subject_prefix)));
        let kafka = config.kafka.iter().map(|(name, kafka)| {
            let client = Kafka::new(&kafka.brokers, &kafka.topic, kafka.replication_factor);
            Ok(Sink { name: format!("kafka.{name}"), kind: SinkKind::Kafka(Box::new(client)) })
        });
        webhooks.chain(nats).chain(kafka).collect()
    }

    /// A NATS JetStream sink.
    pub fn nats(name: &str, url: &str, stream: &str, subject_prefix: &str) -> Self {
        Sink { name: format!("nats.{name}"), kind: SinkKind::Nats(Box::new(Nats::new(url, stream, subject_prefix))) }
    }

    /// A sink written as a component.
    pub fn plugin(name: &str, component: Box<dyn Deliver>) -> Self {
        Sink { name: format!("plugin.{name}"), kind: SinkKind::Plugin(component) }
    }

    /// `webhook.<name>`, `nats.<name>`, `kafka.<name>` or `plugin.<name>`, as configured.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Delivers `events` in order, as CloudEvents 1.0 JSON: how many were delivered
    /// before the first failure, and that failure.
    async fn deliver(&self, events: &[Event], source: &str) -> (usize, Option<String>) {
        let body = |event: &Event| serde_json::to_vec(&event.cloud_event(source)).expect("JSON");
        // Kafka and a plugin take the whole batch, or none of it.
        let whole = match &self.kind {
            SinkKind::Plugin(component) => {
                let batch = events.iter().map(|e| String::from_utf8(body(e)).expect("JSON is UTF-8")).collect();
                Some(component.deliver(batch).await)
            }
            SinkKind::Kafka(kafka) => {
                let produced = kafka.deliver(events, events.iter().map(body).collect());
                Some(
                    tokio::time::timeout(DELIVERY_TIMEOUT, produced)
                        .await
                        .unwrap_or_else(|_| Err("no acknowledgement within 10 s".into())),
                )
            }
            _ => None,
        };
        if let Some(outcome) = whole {
            return match outcome {
                Ok(()) => (events.len(), None),
                Err(e) => (0, Some(e)),
            };
        }
        for (done, event) in events.iter().enumerate() {
            if let Err(e) = self.deliver_one(event, body(event)).await {
                return (done, Some(e));
            }
        }
        (events.len(), None)
    }

    /// Delivers one event to a webhook or NATS.
    async fn deliver_one(&self, event: &Event, body: Vec<u8>) -> Result<(), String> {
        match &self.kind {
            SinkKind::Nats(nats) => tokio::time::timeout(DELIVERY_TIMEOUT, nats.deliver(event, body))
                .await
                .unwrap_or_else(|_| Err("no acknowledgement within 10 s".into())),
            SinkKind::Webhook { url, secret, client } => {
                let mut request = client.post(url).header("content-type", "application/cloudevents+json");
                let now = jiff::Timestamp::now().as_second();
                for (name, value) in secret.headers(&event.event_id, now, &body) {
                    request = request.header(name, value);
                }
                let answer = request.body(body).send().await.map_err(|e| format!("{url}: {e}"))?;
                match answer.status().is_success() {
                    true => Ok(()),
                    false => Err(format!("{url} answered {}", answer.status())),
                }
            }
            SinkKind::Plugin(_) | SinkKind::Kafka(_) => unreachable!("takes its batch in one call"),
        }
    }
}

/// An event a sink gave up on.
#[derive(Debug, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct DeadLetter {
    pub sink: String,
    pub sequence: u64,
    pub last_error: String,
    pub event: serde_json::Value,
}

/// Delivers the log to `sink` until the process ends; events older than `retention`
/// that cannot be delivered become dead letters.
pub async fn run(events: Events, sink: Sink, source: String, retention: Duration) {
    let (Some(outbox), Some(mut heads)) = (events.outbox().cloned(), events.heads()) else { return };
    let cursor = Cursor { outbox: outbox.clone(), key: format!("{SINKS}{}/cursor", sink.name()).into_bytes() };
    loop {
        let delivered = match cursor.read().await {
            Ok((after, version)) => deliver_from(&outbox, &sink, &source, retention, &cursor, after, version).await,
            Err(e) => Err(e),
        };
        match delivered {
            // Caught up: wait for more (or look again in a second: another host's).
            Ok(0) => {
                let _ = tokio::time::timeout(Duration::from_secs(1), heads.changed()).await;
            }
            Ok(_) | Err(KvError::Conflict) => {}
            Err(e) => {
                tracing::warn!(sink = sink.name(), error = %e, "events: a sink could not read the log");
                tokio::time::sleep(MAX_BACKOFF).await;
            }
        }
    }
}

/// Delivers the events after `after`, advancing the cursor past each delivered batch;
/// how many it went past. `Conflict`: another host moved the cursor.
async fn deliver_from(
    outbox: &Outbox,
    sink: &Sink,
    source: &str,
    retention: Duration,
    cursor: &Cursor,
    after: u64,
    mut version: Option<u64>,
) -> Result<usize, KvError> {
    let batch = outbox.read(after, READ_BATCH).await?;
    // A logged event that does not read is a failure of its own, at its place.
    let readable: Vec<Result<Event, String>> = batch
        .iter()
        .map(|logged| {
            serde_json::from_slice(&logged.event).map_err(|e| format!("the logged event is not readable: {e}"))
        })
        .collect();
    let (mut at, mut wait) = (0, FIRST_BACKOFF);
    while at < batch.len() {
        let events: Vec<Event> = readable[at..].iter().map_while(|e| e.as_ref().ok().cloned()).collect();
        let (delivered, failure) = match events.is_empty() {
            true => (0, readable[at].as_ref().err().cloned()),
            false => match sink.deliver(&events, source).await {
                (delivered, None) if delivered < readable.len() - at => {
                    (delivered, readable[at + delivered].as_ref().err().cloned())
                }
                outcome => outcome,
            },
        };
        if delivered > 0 {
            crate::telemetry::event_delivery(sink.name(), "delivered", delivered);
            version = Some(cursor.advance(batch[at + delivered - 1].sequence, version, None).await?);
            at += delivered;
            wait = FIRST_BACKOFF;
        }
        let Some(e) = failure else { continue };
        crate::telemetry::event_delivery(sink.name(), "failed", 1);
        let logged = &batch[at];
        let expired = made_at(&logged.event)
            .is_none_or(|made| made + (retention.as_millis() as i64) < jiff::Timestamp::now().as_millisecond());
        if !expired {
            tracing::warn!(sink = sink.name(), sequence = logged.sequence, error = %e, "events: delivery failed; retrying");
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(MAX_BACKOFF);
            continue;
        }
        crate::telemetry::event_delivery(sink.name(), "dead_lettered", 1);
        tracing::error!(sink = sink.name(), sequence = logged.sequence, error = %e, "events: an event past its retention was set aside");
        let letter = DeadLetter {
            sink: sink.name().to_string(),
            sequence: logged.sequence,
            last_error: e,
            event: serde_json::from_slice(&logged.event).unwrap_or(serde_json::Value::Null),
        };
        let dead = Write {
            key: dead_key(sink.name(), logged.sequence),
            value: Some(serde_json::to_vec(&letter).expect("JSON")),
        };
        version = Some(cursor.advance(logged.sequence, version, Some(dead)).await?);
        at += 1;
    }
    Ok(batch.len())
}

/// A sink's position in the log.
struct Cursor {
    outbox: Outbox,
    key: Vec<u8>,
}

impl Cursor {
    /// The last sequence number delivered, and the cursor's version.
    async fn read(&self) -> Result<(u64, Option<u64>), KvError> {
        match self.outbox.space().get(&self.key).await? {
            Some(entry) => {
                let bytes: [u8; 8] = entry
                    .value
                    .as_slice()
                    .try_into()
                    .map_err(|_| KvError::Store("events: a malformed sink cursor".into()))?;
                Ok((u64::from_be_bytes(bytes), Some(entry.version)))
            }
            None => Ok((0, None)),
        }
    }

    /// Moves past `sequence` (with a dead letter for it, if given), checked against
    /// the version read; the new version. Soon on disk: a cursor a crash loses only
    /// delivers an event again.
    async fn advance(&self, sequence: u64, version: Option<u64>, dead: Option<Write>) -> Result<u64, KvError> {
        let check = match version {
            Some(version) => Check::AtVersion(self.key.clone(), version),
            None => Check::Absent(self.key.clone()),
        };
        let mut writes = vec![Write { key: self.key.clone(), value: Some(sequence.to_be_bytes().to_vec()) }];
        writes.extend(dead);
        let space = self.outbox.space();
        space.commit_with(&[check], &writes, Durability::Soon).await?;
        space.get(&self.key).await?.map(|entry| entry.version).ok_or(KvError::Conflict)
    }
}

fn dead_key(sink: &str, sequence: u64) -> Vec<u8> {
    [DEAD.as_bytes(), sink.as_bytes(), b"/", &sequence.to_be_bytes()].concat()
}

/// Up to `limit` dead letters, every sink's, by sink and sequence.
pub async fn dead_letters(outbox: &Outbox, limit: usize) -> Result<Vec<DeadLetter>, KvError> {
    let end = prefix_end(DEAD.as_bytes());
    let entries = outbox.space().scan(DEAD.as_bytes(), end.as_deref(), limit).await?;
    Ok(entries.iter().filter_map(|entry| serde_json::from_slice(&entry.value).ok()).collect())
}
