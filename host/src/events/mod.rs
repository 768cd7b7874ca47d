//! Events: one per committed change, told to consumers after the change.
//!
//! This room holds the durable outbox the events pass through (`outbox`): an event is
//! written *pending* with its change and moved by a relay into the *log*, whose order
//! consumers read. What makes the events (the rooms that change things), how they are
//! served (`POST /v1/{prefix}/events`) and pushed (sinks) build on it.

pub mod outbox;

pub use outbox::{Logged, Outbox};
