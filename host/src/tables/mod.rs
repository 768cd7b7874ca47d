//! Iceberg table semantics on top of a backend: building metadata for new tables,
//! applying requirements and updates with the `iceberg` crate's spec types,
//! writing metadata files, and the compare-and-swap of the pointer.
//!
//! One file per operation: `load`, `create`, `commit` (and transactions), `register`,
//! `drop`, `rename`; `metadata_file` writes what they commit.

pub mod backfill;
mod commit;
mod create;
mod drop;
pub mod held;
mod load;
pub mod locations;
mod metadata_file;
mod purge;
mod register;
mod rename;
mod requirements;
pub mod serial;
mod staged;
pub mod telling;
pub mod views;

pub use commit::{commit, commit_transaction, updates_json, TableChange};
pub use create::{build_new, create, NewTable};
pub use drop::{drop_table, Dropped};
pub use load::{current_metadata, load, location, servable, Loaded};
pub use metadata_file::{metadata_json, table_location};
pub use register::{register, unregister};
pub use rename::rename;

// For the views and staged creates, which share them.
use create::{created_failed, format_version};
use metadata_file::pointer_of;
use rename::{rename_outcome, require_namespace};

use bytes::Bytes;

use crate::error::{Error, Member};
use crate::mounts::Mount;
use crate::sandbox::bindings::{Ident, Pointer};

/// A table's (or view's) state after a create or a commit.
pub struct Committed {
    pub metadata_location: String,
    pub metadata_json: Bytes,
    /// The table's or view's uuid (for its events).
    pub uuid: String,
}

/// A table's name as clients see it (the mount name restored).
fn dotted(mount: &Mount, ident: &Ident) -> String {
    let mut s = mount.restore(ident.namespace.clone()).join(".");
    s.push('.');
    s.push_str(&ident.name);
    s
}

/// A table's absence, in the client's names. The backend's words are added when they
/// say more than that it does not exist (a Glue table that is not an Iceberg table).
fn no_such_table<'a>(mount: &'a Mount, ident: &'a Ident) -> impl FnOnce(String) -> Error + 'a {
    move |reason| {
        let absent = Error::no_such_table(dotted(mount, ident));
        match reason.trim_end_matches('.').ends_with("does not exist") || reason.is_empty() {
            true => absent,
            false => Error::NoSuchTable(format!("{absent}: {reason}")),
        }
    }
}

fn no_such_namespace<'a>(mount: &'a Mount, namespace: &'a [String]) -> impl FnOnce(String) -> Error + 'a {
    move |_| Error::no_such_namespace(mount.restore(namespace.to_vec()).join("."))
}

fn invalid_metadata(pointer: &Pointer) -> impl FnOnce(serde_json::Error) -> Error + '_ {
    move |e| Error::Internal(format!("the metadata of {} is invalid: {e}", pointer.metadata_location))
}

/// Which kind holds a name that a create or rename found taken (asked only then).
async fn holder_of(mount: &Mount, ident: &Ident) -> Member {
    match mount.backend.load_table(ident, None).await {
        Ok(_) => Member::Table,
        Err(_) => Member::View,
    }
}
