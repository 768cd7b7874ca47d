//! What the Rust backend components of remote services (rest, glue, s3tables) share.

pub mod pages;
pub mod path;
