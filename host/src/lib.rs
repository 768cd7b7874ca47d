//! Rustberg: an Apache Iceberg REST catalog server whose backends are sandboxed
//! WebAssembly components.
//!
//! - `api`      Iceberg REST routes, the management API and the error model
//! - `audit`    one record per authorization decision that changes something or vends
//! - `auth`     who is calling: bearer tokens, client credentials, OIDC
//! - `authz`    who may do what: owners, roles, grants
//! - `mounts`   which backend and warehouse serve a namespace
//! - `paging`   page tokens and filtered paging
//! - `tables`   Iceberg semantics: create, commit, register
//! - `scan`     server-side scan planning over a snapshot's manifests
//! - `storage`  key spaces (redb, Postgres), warehouses (file, S3), credential vending
//! - `plugins`  the wasmtime runtime, instance pools, host capabilities and the contract
//! - `authoring` `rustberg plugin`: check a component, scaffold one, run the conformance suite
//! - `preflight` `rustberg check-config`: what `serve` checks, without serving
//! - `telemetry` Prometheus metrics, named once
//! - `logs`     log lines, text or JSON, each carrying its request's id
//! - `recovery` backend changes and their authorization effects, carried through crashes

pub mod api;
pub mod audit;
pub mod auth;
pub mod authoring;
pub mod authz;
pub mod config;
pub mod error;
pub mod logs;
pub mod mounts;
pub mod namespaces;
pub mod paging;
pub mod plugins;
pub mod preflight;
pub mod recovery;
pub mod scan;
pub mod server;
pub mod storage;
pub mod tables;
pub mod telemetry;
