//! loadTable: a table's pointer from its backend, and its metadata to serve or read.

use std::sync::Arc;

use iceberg::spec::TableMetadata;

use super::held;
use super::locations;
use crate::error::Error;
use crate::mounts::Mount;
use crate::sandbox::attempt::Attempt;
use crate::sandbox::bindings::{Ident, Pointer};
use crate::storage::location::Location;

use super::{invalid_metadata, no_such_table};

/// Loads a table's pointer, passing on the client's access-delegation request.
pub async fn load(mount: &Mount, ident: &Ident, delegation: Option<String>) -> Result<Arc<Pointer>, Error> {
    load_in(mount, None, ident, delegation).await
}

/// `load`, as the first read of `attempt` where there is one.
pub(super) async fn load_in(
    mount: &Mount,
    attempt: Option<&mut Attempt>,
    ident: &Ident,
    delegation: Option<String>,
) -> Result<Arc<Pointer>, Error> {
    let loaded = mount.backend.load_table_in(attempt, ident, delegation).await;
    loaded.map_err(|e| Error::from_backend(e, no_such_table(mount, ident)))
}

/// A loaded table ready to hand to a client.
pub struct Loaded {
    /// The pointer (shared with the backend's kept answers: serve its JSON from `held`).
    pub pointer: Arc<Pointer>,
    pub held: Arc<held::Held>,
}

/// A loaded pointer with its metadata (see [`held::served`]).
pub async fn servable(mount: &Mount, pointer: impl Into<Arc<Pointer>>) -> Result<Loaded, Error> {
    let pointer = pointer.into();
    let held = held::served(mount, &pointer).await?;
    Ok(Loaded { pointer, held })
}

/// The current metadata of a loaded table, to read it (plan a scan, purge its files).
pub async fn current_metadata(mount: &Mount, pointer: &Pointer) -> Result<TableMetadata, Error> {
    let held = held::current(mount, pointer).await?;
    held.metadata().map_err(invalid_metadata(pointer))
}

/// Where a table's files live, checked.
pub fn location(mount: &Mount, held: &held::Held) -> Result<Location, Error> {
    mount.warehouse()?.locate(&held.location).map_err(locations::bad_location("the table location", &held.location))
}
