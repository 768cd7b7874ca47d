//! What the Rust backend components of remote services (rest, glue, s3tables, hms) share.

pub mod hive_schema;
pub mod one_level;
pub mod pages;
pub mod path;
pub mod properties;
