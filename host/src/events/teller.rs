//! Telling of one request's changes: the events it makes, as a commit to the outbox's
//! store that the change's own commit carries where it can (`Teller::commit`), or that is
//! made right after the change (`Teller::write`) where the change landed elsewhere (a
//! mount's own store, a remote catalog).

use std::sync::Arc;

use tokio::sync::{watch, Notify};

use super::{Actor, Event, Operation, Outbox};
use crate::storage::kv::{Commit, Durability, KvStore};

/// The outbox, and the relay to wake when something is written to it; `None` when
/// events are off.
#[derive(Clone, Default)]
pub struct Events {
    inner: Option<Arc<EventsInner>>,
}

struct EventsInner {
    outbox: Outbox,
    relay: Notify,
    /// The last sequence number this host saw logged: the sinks wait on it.
    head: watch::Sender<u64>,
}

impl Events {
    /// Events written to `outbox`.
    pub fn on(outbox: Outbox) -> Self {
        let head = watch::Sender::new(0);
        Self { inner: Some(Arc::new(EventsInner { outbox, relay: Notify::new(), head })) }
    }

    /// No events: nothing is written, nothing served.
    pub fn off() -> Self {
        Self::default()
    }

    /// The outbox, when events are on.
    pub fn outbox(&self) -> Option<&Outbox> {
        self.inner.as_ref().map(|inner| &inner.outbox)
    }

    /// The teller of one request's changes, made by `actor`.
    pub fn teller(&self, actor: Actor, request_id: &str) -> Teller {
        Teller { events: self.clone(), actor, request_id: request_id.to_string() }
    }

    /// Wakes the relay: something was written to the outbox.
    pub fn wake_relay(&self) {
        if let Some(inner) = &self.inner {
            inner.relay.notify_one();
        }
    }

    /// The relay logged events up to `sequence`: wakes the sinks.
    pub fn logged(&self, sequence: u64) {
        if let Some(inner) = &self.inner {
            inner.head.send_if_modified(|head| std::mem::replace(head, sequence) != sequence);
        }
    }

    /// What a sink waits on: the last sequence number logged, as it changes.
    pub fn heads(&self) -> Option<watch::Receiver<u64>> {
        self.inner.as_ref().map(|inner| inner.head.subscribe())
    }

    /// Until the relay is woken (at once if it was woken since it last waited).
    pub async fn relay_woken(&self) {
        match &self.inner {
            Some(inner) => inner.relay.notified().await,
            None => std::future::pending().await,
        }
    }
}

/// Who makes one request's changes, and where their events go.
pub struct Teller {
    events: Events,
    actor: Actor,
    request_id: String,
}

impl Teller {
    /// Who makes the request's changes.
    pub fn actor(&self) -> &Actor {
        &self.actor
    }

    /// The request's id.
    pub fn request_id(&self) -> &str {
        &self.request_id
    }

    /// The store a change's commit must be to for the events to ride it.
    pub fn space(&self) -> Option<&KvStore> {
        self.events.outbox().map(Outbox::space)
    }

    /// The events of `operations` (one change, or one per table of a transaction),
    /// each pending in the outbox: one commit, durable as the change is. `None` when
    /// events are off.
    pub fn commit(&self, operations: Vec<Operation>) -> Option<Commit> {
        let outbox = self.events.outbox()?;
        let count = operations.len() as u32;
        let timestamp_ms = jiff::Timestamp::now().as_millisecond();
        let writes = operations
            .into_iter()
            .map(|operation| {
                let event = Event {
                    event_id: uuid::Uuid::now_v7().to_string(),
                    request_id: self.request_id.clone(),
                    request_event_count: count,
                    timestamp_ms,
                    actor: self.actor.clone(),
                    operation,
                };
                let json = serde_json::to_vec(&event).expect("an event is JSON");
                outbox.pending(&event.event_id, json)
            })
            .collect();
        Some(Commit { checks: Vec::new(), writes, durability: Durability::Now })
    }

    /// Makes `commit` (from [`Teller::commit`]) on its own, right after a change that
    /// landed without it. The change stands either way: a store that fails here loses
    /// these events, which is logged and counted, not answered as the change's failure.
    pub async fn write(&self, commit: Commit) {
        let Some(outbox) = self.events.outbox() else { return };
        match outbox.space().make(&commit).await {
            Ok(()) => self.written(),
            Err(e) => {
                crate::telemetry::events_lost(commit.writes.len());
                tracing::error!(error = %e, events = commit.writes.len(), "events of a change that landed were not written");
            }
        }
    }

    /// Tells `operations` of a change that landed where its events could not ride.
    pub async fn tell(&self, operations: Vec<Operation>) {
        if let Some(commit) = self.commit(operations) {
            self.write(commit).await
        }
    }

    /// The events of a change were written (with it or after it): the relay may move them.
    pub fn written(&self) {
        self.events.wake_relay()
    }
}
