//! Where state lives: the key spaces behind the `kv` capability, warehouses for
//! metadata and data files, and the credentials vended (or the requests signed) for them.

pub mod kv;
mod kv_postgres;
mod kv_redb;
pub mod location;
pub mod location_index;
pub mod scoped;
pub mod session_policy;
pub mod signing;
mod sts;
pub mod vending;
pub mod warehouse;
