//! Events: one per committed change, told to consumers after the change.
//!
//! - `event`: what an event says, in the REST spec's shape and as a CloudEvent;
//! - `outbox`: the durable outbox every event passes through: written *pending* with
//!   its change, then moved by a relay into the *log*, whose order consumers read;
//! - `query`: what a consumer asks of the log, which events match, where it resumes;
//! - `teller`: one request's changes told: their events as a commit that rides the
//!   change's own, or follows it;
//! - `relay`: the background work (moving pending events into the log, pruning it);
//! - `sinks`: pushing the log to webhooks, NATS JetStream (`nats`), Kafka (`kafka`) and
//!   components (their pools live above, in `hooks`), each from its own cursor, with
//!   dead letters;
//! - `webhook`: the signature a webhook delivery carries (Standard Webhooks).
//!
//! What makes the events (the rooms that change things), how they are served
//! (`POST /v1/{prefix}/events`) and pushed (sinks) build on these.

pub mod event;
pub mod kafka;
pub mod nats;
pub mod outbox;
pub mod query;
pub mod relay;
pub mod sinks;
pub mod teller;
pub mod webhook;

pub use event::{Actor, Event, Identifier, Operation};
pub use outbox::{Logged, Outbox};
pub use teller::{Events, Teller};
