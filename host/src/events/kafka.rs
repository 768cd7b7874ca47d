//! The Kafka sink: each batch produced to partition 0 of one topic in one request (so the
//! topic holds the log's order), each record the event's CloudEvent in structured mode
//! (`content-type: application/cloudevents+json`) keyed by the event id, which a consumer
//! deduplicates by: a batch produced again after a lost acknowledgement repeats its
//! records. The topic is created (one partition) if missing.

use std::collections::BTreeMap;

use chrono::{TimeZone, Utc};
use rskafka::client::partition::{Compression, PartitionClient, UnknownTopicHandling};
use rskafka::client::ClientBuilder;
use rskafka::record::Record;
use tokio::sync::Mutex;

use super::Event;

/// How long creating the topic may take, in milliseconds.
const CREATE_TIMEOUT_MS: i32 = 5_000;

pub struct Kafka {
    brokers: Vec<String>,
    topic: String,
    replication_factor: i16,
    /// Connected on the first delivery, and again after a failure (a broker that
    /// restarted is reached anew).
    partition: Mutex<Option<PartitionClient>>,
}

impl Kafka {
    pub fn new(brokers: &[String], topic: &str, replication_factor: i16) -> Self {
        Self { brokers: brokers.to_vec(), topic: topic.into(), replication_factor, partition: Mutex::new(None) }
    }

    async fn connect(&self) -> Result<PartitionClient, String> {
        let named = || self.brokers.join(",");
        let client = ClientBuilder::new(self.brokers.clone()).build().await.map_err(|e| format!("{}: {e}", named()))?;
        let exists = client.list_topics().await.map_err(|e| format!("{}: {e}", named()))?;
        if !exists.iter().any(|t| t.name == self.topic) {
            let controller = client.controller_client().map_err(|e| format!("{}: {e}", named()))?;
            // Another host may create it first: the partition client below finds it.
            if let Err(e) = controller.create_topic(&self.topic, 1, self.replication_factor, CREATE_TIMEOUT_MS).await {
                tracing::info!(topic = %self.topic, error = %e, "events: the Kafka topic was not created");
            }
        }
        client
            .partition_client(self.topic.clone(), 0, UnknownTopicHandling::Retry)
            .await
            .map_err(|e| format!("{} topic {}: {e}", named(), self.topic))
    }

    /// Produces `events` (with their CloudEvents, `bodies`) in one request, acknowledged
    /// by the partition's leader.
    pub async fn deliver(&self, events: &[Event], bodies: Vec<Vec<u8>>) -> Result<(), String> {
        let mut partition = self.partition.lock().await;
        if partition.is_none() {
            *partition = Some(self.connect().await?);
        }
        let records = events
            .iter()
            .zip(bodies)
            .map(|(event, body)| Record {
                key: Some(event.event_id.clone().into_bytes()),
                value: Some(body),
                headers: BTreeMap::from([("content-type".into(), b"application/cloudevents+json".to_vec())]),
                timestamp: Utc.timestamp_millis_opt(event.timestamp_ms).single().unwrap_or_else(Utc::now),
            })
            .collect();
        let produced = partition.as_ref().expect("connected above").produce(records, Compression::NoCompression).await;
        produced.map(drop).map_err(|e| {
            // Reconnect next time: the broker may have restarted or moved the partition.
            *partition = None;
            format!("{} topic {}: {e}", self.brokers.join(","), self.topic)
        })
    }
}
