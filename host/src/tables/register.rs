//! registerTable: an existing metadata file recorded as a table; and its undoing.

use bytes::Bytes;
use iceberg::spec::TableMetadata;

use super::held;
use super::locations::{self, Placement};
use super::telling::{table_change, Telling};
use super::{drop_table, load, metadata_json, servable};
use crate::error::{change_failed, Error, Member};
use crate::events::{Operation, Teller};
use crate::mounts::Mount;
use crate::sandbox::attempt::Attempt;
use crate::sandbox::bindings::Ident;
use crate::storage::location_index::{ClaimId, ClaimKind};

use super::create::created_failed;
use super::metadata_file::table_pointer;
use super::{dotted, no_such_table, Committed};

/// Records an existing metadata file as a table (registerTable). The file and the
/// table location it names must lie under the namespace's location, and the
/// location must be free: registering the same files twice is 409.
pub async fn register(
    mount: &Mount,
    ident: &Ident,
    metadata_location: &str,
    overwrite: bool,
    teller: &Teller,
) -> Result<Committed, Error> {
    let warehouse = mount.warehouse()?;
    // A taken name is said as such, before the files (which may be that table's own).
    if !overwrite && load(mount, ident, None).await.is_ok() {
        return Err(Error::name_taken(dotted(mount, ident), Member::Table, Member::Table));
    }
    let chain = locations::chain(mount, &ident.namespace).await?;
    let file = locations::registered_file(warehouse, &chain, metadata_location)?;
    let metadata_location = file.to_string();
    // A file the client names that is missing or invalid is its mistake: a bad request.
    let metadata = TableMetadata::read_from(&warehouse.scoped_io(chain.own()), &metadata_location)
        .await
        .map_err(|e| Error::BadRequest(format!("cannot read table metadata at {metadata_location}: {e}")))?;
    let location = locations::registered_location(warehouse, &chain, &file, metadata.location())?;
    let metadata_json = Bytes::from(metadata_json(&metadata, 0)?);
    let uuid = metadata.uuid().to_string();
    held::keep_built(mount, &metadata_location, metadata_json.clone(), metadata);
    let committed = Committed { metadata_location, metadata_json, uuid };
    let existing = match overwrite {
        false => None,
        true => match load(mount, ident, None).await {
            Ok(pointer) => Some(pointer),
            Err(Error::NoSuchTable(_)) => None,
            Err(e) => return Err(e),
        },
    };
    // Its event rides the backend's commit where that goes to the outbox's store.
    let mut attempt = Attempt::default();
    let before = existing.as_ref().map(|e| e.metadata_location.as_str());
    let after = Some(committed.metadata_location.as_str());
    let registered = table_change(mount, ident, committed.uuid.clone(), before, after, vec![]);
    let telling = Telling::ride(teller, &mut attempt, vec![Operation::RegisterTable(registered)]);
    let Some(existing) = existing else {
        let claim =
            Placement { location, chain, reserved: None }.claim(warehouse, ClaimKind::Table, ClaimId::new()).await?;
        let pointer = table_pointer(mount, &committed);
        if let Err(e) = mount.backend.create_table_in(&mut attempt, ident.clone(), pointer).await {
            if e.kind.did_not_apply() {
                locations::abandon(warehouse, None, &claim).await;
            }
            return Err(created_failed(mount, ident, Member::Table, e).await);
        }
        telling.landed(teller, &attempt).await;
        return Ok(committed);
    };
    let current = held::current(mount, &existing).await?;
    let claim =
        locations::claim_move(mount, &ident.namespace, &current.location, &location.to_string(), ClaimKind::Table)
            .await?;
    let (expected, pointer) = (existing.metadata_location.clone(), table_pointer(mount, &committed));
    if let Err(e) = mount.backend.commit_table_in(&mut attempt, ident.clone(), expected, pointer).await {
        if e.kind.did_not_apply() {
            locations::abandon(warehouse, None, &claim).await;
        }
        return Err(change_failed(e, no_such_table(mount, ident)));
    }
    telling.landed(teller, &attempt).await;
    Ok(committed)
}

/// Unregisters a table: the catalog forgets it and keeps every file, and the claim on
/// its location is released (as any drop's is), so the files can be registered again
/// (here or elsewhere). Its metadata as of the drop: a commit that landed first is in it.
pub async fn unregister(mount: &Mount, ident: &Ident) -> Result<Committed, Error> {
    // Held before the drop, so the answer seldom needs a read after it.
    let before = servable(mount, load(mount, ident, None).await?).await?;
    let dropped = drop_table(mount, ident, false).await?;
    let (pointer, uuid) = (dropped.pointer, dropped.uuid);
    let last = if pointer.metadata_location == before.pointer.metadata_location {
        before
    } else {
        // A commit landed between the load and the drop: its metadata is the last.
        servable(mount, pointer).await.map_err(|e| {
            Error::Internal(format!(
                "{} was unregistered, but its last metadata cannot be read: {e}",
                dotted(mount, ident)
            ))
        })?
    };
    Ok(Committed {
        metadata_location: last.pointer.metadata_location.clone(),
        metadata_json: last.held.json.clone(),
        uuid,
    })
}
