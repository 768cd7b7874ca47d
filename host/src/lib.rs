//! Rustberg: an Apache Iceberg REST catalog server whose backends are sandboxed
//! WebAssembly components.
//!
//! - `api`      Iceberg REST routes, the management API and the error model
//! - `auth`     who is calling: bearer tokens, client credentials, OIDC
//! - `authz`    who may do what: owners, roles, grants
//! - `mounts`   which backend and warehouse serve a namespace
//! - `paging`   page tokens and filtered paging
//! - `tables`   Iceberg semantics: create, commit, register
//! - `storage`  key spaces (redb) and warehouses (metadata files)
//! - `plugins`  the wasmtime runtime, instance pools and host capabilities

pub mod api;
pub mod auth;
pub mod authz;
pub mod config;
pub mod error;
pub mod mounts;
pub mod paging;
pub mod plugins;
pub mod server;
pub mod storage;
pub mod tables;
