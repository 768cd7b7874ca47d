//! `[events]`: whether changes are told, how long the log keeps them, and the sinks
//! each is pushed to.

use std::collections::BTreeMap;

use serde::Deserialize;

/// `[events]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EventsConfig {
    /// Every committed change writes an event (served by `POST /v1/{prefix}/events`).
    pub enabled: bool,
    /// How long the log keeps an event, and a sink keeps retrying one, in hours.
    pub retention_hours: u64,
    /// The CloudEvents `source` of pushed events; default `[server] public_url`, else
    /// `rustberg`.
    pub source: Option<String>,
    /// `[events.webhook.<name>]`: HTTP endpoints each event is posted to.
    #[serde(rename = "webhook")]
    pub webhooks: BTreeMap<String, WebhookConfig>,
    /// `[events.nats.<name>]`: NATS JetStream servers each event is published to.
    pub nats: BTreeMap<String, NatsConfig>,
    /// `[events.kafka.<name>]`: Kafka clusters each batch of events is produced to.
    pub kafka: BTreeMap<String, KafkaConfig>,
    /// `[events.plugin.<name>]`: sinks written as components (`event-sink`), handed the
    /// events in batches.
    #[serde(rename = "plugin")]
    pub plugins: BTreeMap<String, super::HookConfig>,
}

impl Default for EventsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            retention_hours: 24 * 7,
            source: None,
            webhooks: BTreeMap::new(),
            nats: BTreeMap::new(),
            kafka: BTreeMap::new(),
            plugins: BTreeMap::new(),
        }
    }
}

impl EventsConfig {
    /// What cannot work: sinks without events, a log that keeps nothing, a webhook
    /// that is not http(s).
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let sinks =
            !self.webhooks.is_empty() || !self.nats.is_empty() || !self.kafka.is_empty() || !self.plugins.is_empty();
        if !self.enabled && sinks {
            problems.push("events has sinks but events.enabled is false: nothing would be sent".to_string());
        }
        if self.retention_hours == 0 {
            problems.push("events.retention_hours is 0: no event would be kept to be read or sent".to_string());
        }
        for (name, webhook) in &self.webhooks {
            if !(webhook.url.starts_with("http://") || webhook.url.starts_with("https://")) {
                problems.push(format!("events.webhook.{name}.url is not an http(s) URL: {}", webhook.url));
            }
        }
        for (name, nats) in &self.nats {
            if !nats.url.starts_with("nats://") {
                problems.push(format!("events.nats.{name}.url is not a nats:// URL: {}", nats.url));
            }
        }
        for (name, kafka) in &self.kafka {
            if kafka.brokers.is_empty() || kafka.brokers.iter().any(|b| b.rsplit_once(':').is_none()) {
                problems.push(format!("events.kafka.{name}.brokers must list host:port addresses"));
            }
            if kafka.replication_factor < 1 {
                problems.push(format!("events.kafka.{name}.replication_factor must be at least 1"));
            }
        }
        problems
    }
}

/// `[events.kafka.<name>]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KafkaConfig {
    /// Bootstrap brokers, `host:port`.
    pub brokers: Vec<String>,
    /// The topic the events go to (created with one partition if missing); every event
    /// is produced to its partition 0, which keeps the log's order.
    #[serde(default = "default_topic")]
    pub topic: String,
    /// The replication factor of a topic created here.
    #[serde(default = "default_replication_factor")]
    pub replication_factor: i16,
}

fn default_topic() -> String {
    "iceberg-events".into()
}

fn default_replication_factor() -> i16 {
    1
}

/// `[events.webhook.<name>]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookConfig {
    /// Where each event is POSTed.
    pub url: String,
    /// The Standard Webhooks signing secret, `whsec_` and base64 of at least 24 bytes.
    pub secret: String,
}

/// `[events.nats.<name>]`
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NatsConfig {
    /// The server, `nats://host:port`.
    pub url: String,
    /// The JetStream stream the events go to (created if missing, capturing
    /// `<subject_prefix>.>`).
    #[serde(default = "default_stream")]
    pub stream: String,
    /// Each event's subject is this and the namespace's levels.
    #[serde(default = "default_subject_prefix")]
    pub subject_prefix: String,
}

fn default_stream() -> String {
    "ICEBERG_EVENTS".into()
}

fn default_subject_prefix() -> String {
    "iceberg".into()
}
