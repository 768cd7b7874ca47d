//! Where state lives: the key spaces behind the `kv` capability, and warehouses
//! for metadata and data files.

pub mod kv;
mod kv_postgres;
mod kv_redb;
pub mod warehouse;
