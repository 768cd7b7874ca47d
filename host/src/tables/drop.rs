//! dropTable, with or without purge.

use super::current_metadata;
use super::locations;
use crate::error::{change_failed, Error};
use crate::mounts::Mount;
use crate::sandbox::bindings::{Ident, Pointer};
use crate::storage::location::Location;

use super::purge;
use super::telling::uuid_of;
use super::{dotted, no_such_table};

/// Forgets a table. What follows the pointer's removal — the purge, if asked for,
/// then releasing the table's locations — runs as its own task, so a client that
/// disconnects cannot stop it half-way. Without a purge the answer waits for the
/// release (a dropped table's files can be registered again at once); with one, it
/// comes as soon as the pointer is gone.
pub async fn drop_table(mount: &Mount, ident: &Ident, purge: bool) -> Result<Dropped, Error> {
    let pointer =
        mount.backend.drop_table(ident.clone()).await.map_err(|e| change_failed(e, no_such_table(mount, ident)))?;
    let Some(warehouse) = mount.warehouse.clone() else {
        return Ok(Dropped { uuid: uuid_of(&pointer), pointer });
    };
    let metadata = current_metadata(mount, &pointer).await;
    let uuid = metadata.as_ref().map_or_else(|_| uuid_of(&pointer), |m| m.uuid().to_string());
    let dropped = Dropped { pointer: pointer.clone(), uuid };
    let table = dotted(mount, ident);
    let metadata_location = pointer.metadata_location.clone();
    let after = tokio::spawn(async move {
        let metadata = match metadata {
            Ok(metadata) => metadata,
            // A store that assigns locations (S3 Tables) deletes the table's bucket with
            // the table; the bucket its metadata lay in is what it held.
            Err(_) if warehouse.assigned() => {
                let bucket = Location::parse(&metadata_location).ok().and_then(|l| l.ancestors().next());
                if let Some(bucket) = bucket {
                    locations::release_all(&warehouse, &bucket).await;
                }
                return;
            }
            Err(e) => {
                return tracing::warn!(%table, error = %e, "dropped, but its metadata cannot be read: nothing purged")
            }
        };
        let location = match warehouse.locate(metadata.location()) {
            Ok(location) => location,
            Err(e) => {
                let raw = metadata.location();
                return tracing::warn!(%table, location = raw, error = %e, "dropped; its location is invalid: nothing purged");
            }
        };
        if purge {
            let report = purge::purge(&warehouse, &location, &metadata_location, &metadata).await;
            if !report.refused.is_empty() {
                tracing::warn!(%table, refused = ?report.refused, "purge: left alone files outside the table's location");
            }
            tracing::info!(%table, %location, deleted = report.deleted, refused = report.refused.len(), failed = report.failed, "purged");
        }
        locations::release_all(&warehouse, &location).await;
    });
    if !purge {
        let _ = after.await;
    }
    Ok(dropped)
}

/// A dropped table: the pointer it had when dropped, and its uuid (for its event).
pub struct Dropped {
    pub pointer: Pointer,
    pub uuid: String,
}
