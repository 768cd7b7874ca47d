//! The typed client of a mount's backend: what the rest of the host calls, above the
//! sandbox that runs it.
//!
//! - `calls`: one async method per export, each run on a pooled instance.
//! - `changes`: the calls of an attempt at a change, which take it by parameter.
//! - `listings`: a backend's listings, scanned by the host from its keys where it
//!   exports `key-listings`.
//! - `read_memo`: a backend's answers kept while its key space is unchanged.

mod calls;
mod changes;
mod listings;
mod read_memo;

pub use calls::Backend;
pub use listings::{Listed, ListedItem, Listing};
