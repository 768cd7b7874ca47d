//! Rustberg: an Apache Iceberg REST catalog server whose backends are sandboxed
//! WebAssembly components.
//!
//! Each module is a room of one concern; docs/architecture.md lists them in their
//! layers (a room uses only the rooms below it, which `tests/layers.rs` checks).

pub mod api;
pub mod audit;
pub mod auth;
pub mod authoring;
pub mod authz;
pub mod backends;
pub mod config;
pub mod endpoints;
pub mod error;
pub mod events;
pub mod hooks;
pub mod logs;
pub mod mounts;
pub mod namespaces;
pub mod paging;
pub mod prefixes;
pub mod preflight;
pub mod recovery;
pub mod sandbox;
pub mod scan;
pub mod server;
pub mod storage;
pub mod tables;
pub mod telemetry;
